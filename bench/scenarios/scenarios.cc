#include "scenarios.h"

#include <algorithm>
#include <sstream>

#include "rtloop/framework/system_info.h"

namespace rtloop::bench {
namespace {

// Loads end by themselves this long after the measurement should have, should every other
// mechanism fail (hackbench has no timeout: the load group stops it).
constexpr std::int64_t kLoadTimeoutMarginS = 60;

std::string Timeout(std::int64_t duration_s) {
  return std::to_string(duration_s + kLoadTimeoutMarginS) + "s";
}

std::vector<std::string> StressNg(std::size_t cpus, std::int64_t duration_s) {
  return {"stress-ng", "-c",        std::to_string(cpus), "--io", "2", "--vm", "1", "--vm-bytes",
          "4M",        "--timeout", Timeout(duration_s)};
}

std::vector<std::string> DefaultMeasure(const ScenarioRequest& r) {
  std::vector<std::string> args;
  if (r.threads == 0 && r.cpus.empty()) {
    args = {"-S"};  // one thread per CPU: the documented "cyclictest -m -Sp99 -i1000 -h800"
  } else {
    const int n = r.threads > 0 ? r.threads : static_cast<int>(r.cpus.size());
    args = {"-t", std::to_string(n)};
    if (r.cpus.empty()) {
      args.push_back("-a");  // round robin over every CPU, as "-a -t 4"
    } else {
      args.push_back("-a");
      args.push_back(FormatCpuList(r.cpus));
    }
  }
  args.insert(args.end(), {"-m", "-p99", "-i1000"});
  return args;
}

bool TakesValue(const std::string& opt) {
  return opt == "-D" || opt == "-l" || opt == "-h" || opt == "-H" || opt == "--duration" ||
         opt == "--loops" || opt == "--histogram" || opt == "--histofall" || opt == "--json" ||
         opt == "--histfile";
}

// isolated: one CPU measured (the first isolcpus CPU, else the last online one), the load on the
// others.
Status PlanIsolated(const ScenarioRequest& r, ScenarioPlan& p) {
  if (r.online_cpus.size() < 2) {
    return InvalidArgumentError(
        "isolated needs at least 2 online CPUs (one measured, the rest "
        "loaded); this machine has " +
        std::to_string(r.online_cpus.size()));
  }
  int cpu = r.online_cpus.back();
  if (!r.isolated_cpus.empty()) {
    cpu = r.isolated_cpus.front();
    p.isolation = "isolcpus";
  } else {
    p.isolation = "affinity";
    p.notes.push_back("isolated: no isolcpus on the kernel command line: CPU " +
                      std::to_string(cpu) +
                      " is kept free of the load by CPU affinity alone (kernel threads and "
                      "IRQs still run there); boot with isolcpus=" +
                      std::to_string(cpu) + " nohz_full=" + std::to_string(cpu) +
                      " rcu_nocbs=" + std::to_string(cpu) + " for the documented set-up");
  }
  if (!r.cpus.empty()) cpu = r.cpus.front();
  std::vector<int> others;
  for (int c : r.online_cpus) {
    if (c != cpu &&
        std::find(r.isolated_cpus.begin(), r.isolated_cpus.end(), c) == r.isolated_cpus.end()) {
      others.push_back(c);
    }
  }
  if (others.empty()) return InvalidArgumentError("isolated: no CPU left for the load");
  p.measured_cpu = cpu;
  p.description = "measurement alone on CPU " + std::to_string(cpu) + ", stress-ng on CPUs " +
                  FormatCpuList(others);
  p.measure_args = {"-t", "1",    "-a",     std::to_string(cpu),
                    "-m", "-p99", "-i1000", "--mainaffinity=" + FormatCpuList(others)};
  p.loads.push_back({StressNg(others.size(), r.duration_s), others, 0});
  return Status::Ok();
}

}  // namespace

std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

const std::vector<std::string>& ScenarioNames() {
  static const std::vector<std::string> kNames = {"idle", "stress",   "stress-fft", "hackbench",
                                                  "irq",  "isolated", "custom"};
  return kNames;
}

std::vector<std::string> MeasureArgsFromCommand(const std::vector<std::string>& tokens,
                                                std::uint32_t* histogram_us) {
  std::size_t i = 0;
  while (i < tokens.size() && tokens[i].find("cyclictest") == std::string::npos) ++i;
  if (i < tokens.size()) ++i;  // the program (after "taskset -c 0-7", when present)
  std::vector<std::string> out;
  bool had_histogram = false;
  *histogram_us = 0;
  for (; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    std::string name = t;
    std::string value;
    bool attached = false;
    if (t.rfind("--", 0) == 0) {
      const std::size_t eq = t.find('=');
      name = t.substr(0, eq);
      if (eq != std::string::npos) {
        value = t.substr(eq + 1);
        attached = true;
      }
    } else if (t.size() > 2 && t[0] == '-' && TakesValue(t.substr(0, 2))) {
      name = t.substr(0, 2);
      value = t.substr(2);
      attached = true;
    }
    if (name == "-n" || name == "-q" || name == "--quiet" || name == "-v" || name == "--verbose") {
      continue;
    }
    if (TakesValue(name)) {
      if (!attached && i + 1 < tokens.size()) value = tokens[++i];
      if (name == "-h" || name == "-H" || name == "--histogram" || name == "--histofall") {
        had_histogram = true;
        try {
          *histogram_us = static_cast<std::uint32_t>(std::stoul(value));
        } catch (...) {
          *histogram_us = 0;
        }
      }
      continue;
    }
    out.push_back(t);
  }
  if (!had_histogram) out.push_back("--keep-distance");
  return out;
}

Result<ScenarioPlan> PlanScenario(const ScenarioRequest& r) {
  if (std::find(ScenarioNames().begin(), ScenarioNames().end(), r.name) == ScenarioNames().end()) {
    std::string names;
    for (const std::string& n : ScenarioNames()) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgumentError("unknown scenario '" + r.name + "': expected one of " + names);
  }
  for (int c : r.cpus) {
    if (std::find(r.online_cpus.begin(), r.online_cpus.end(), c) == r.online_cpus.end()) {
      return InvalidArgumentError("--cpus: CPU " + std::to_string(c) +
                                  " is not online (online: " + FormatCpuList(r.online_cpus) + ")");
    }
  }
  ScenarioPlan p;
  p.name = r.name;
  if (!r.reference_command.empty() && r.threads == 0 && r.cpus.empty() && r.name != "isolated") {
    p.measure_args = MeasureArgsFromCommand(r.reference_command, &p.histogram_us);
  } else {
    p.measure_args = DefaultMeasure(r);
  }
  const std::size_t n = std::max<std::size_t>(r.online_cpus.size(), 1);
  if (r.name == "idle") {
    p.description = "no load";
  } else if (r.name == "stress") {
    p.description = "stress-ng CPU, I/O and memory workers on every CPU";
    p.loads.push_back({StressNg(n, r.duration_s), {}, 0});
  } else if (r.name == "stress-fft") {
    p.description = "stress-ng FFT CPU workers on every CPU";
    p.loads.push_back({{"stress-ng", "-c", std::to_string(n), "--cpu-method", "fft",
                        "--timerfd-freq", "1000000", "--timeout", Timeout(r.duration_s)},
                       {},
                       0});
  } else if (r.name == "hackbench") {
    p.description = "hackbench: 15 groups of 25 sender/receiver process pairs (750 processes)";
    p.loads.push_back({{"hackbench", "-l", "-1", "-g", "15", "-f", "25", "-P"}, {}, 0});
  } else if (r.name == "irq") {
    if (r.iperf_port <= 0) return InvalidArgumentError("irq: no free loopback port for iperf3");
    const std::string port = std::to_string(r.iperf_port);
    p.description = "iperf3 TCP traffic over loopback (network softirq load), server and client";
    p.notes.push_back(
        "irq: loopback traffic raises network softirqs, not device interrupts; on a board run "
        "the iperf3 client on another machine for the documented interrupt load");
    p.loads.push_back({{"iperf3", "-s", "-B", "127.0.0.1", "-p", port}, {}, r.iperf_port});
    p.loads.push_back({{"iperf3", "-c", "127.0.0.1", "-p", port, "-t",
                        std::to_string(r.duration_s + kLoadTimeoutMarginS), "-i", "0"},
                       {},
                       0});
  } else if (r.name == "isolated") {
    RTLOOP_RETURN_IF_ERROR(PlanIsolated(r, p));
  } else {  // custom
    if (r.custom_loads.empty()) {
      return InvalidArgumentError("custom needs --load='COMMAND' (repeatable)");
    }
    p.description = "custom load";
    for (const std::string& cmd : r.custom_loads) {
      p.loads.push_back({{"/bin/sh", "-c", cmd}, {}, 0});
    }
  }
  return p;
}

}  // namespace rtloop::bench
