#include "scenarios.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "bench_util.h"
#include "reference.h"
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

std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

bool IsCount(const std::string& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The reference's cyclictest options with the thread and CPU options (-t N, -a [LIST], -S) taken
// out, -Sp99 kept as -p99: what --threads/--cpus replace.
std::vector<std::string> WithoutThreadOptions(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-t" || a == "-a" || a == "--threads" || a == "--affinity") {
      if (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-') ++i;
      continue;
    }
    if (a == "-S" || a == "--smp" || (a.rfind("-t", 0) == 0 && IsCount(a.substr(2))) ||
        (a.rfind("-a", 0) == 0 && a.size() > 2 && a[2] >= '0' && a[2] <= '9') ||
        a.rfind("--threads=", 0) == 0 || a.rfind("--affinity=", 0) == 0) {
      continue;
    }
    if (a.rfind("-S", 0) == 0 && a.size() > 2 && a[1] == 'S' && a[2] != '-') {
      out.push_back("-" + a.substr(2));  // -Sp99: -S and -p99
      continue;
    }
    out.push_back(a);
  }
  return out;
}

// The published load, as the commands this machine runs. `scaled_cpus`: the CPUs the load may
// use. Parts that cannot run here (words, a remote iperf3 server) are differences.
std::vector<LoadSpec> ReferenceLoads(const ScenarioRequest& r, std::size_t scaled_cpus,
                                     ScenarioPlan& p) {
  std::string text = r.reference_load;
  if (const std::size_t colon = text.find(": "); colon != std::string::npos) {
    p.how.push_back("the load's words \"" + text.substr(0, colon) +
                    "\" are the set-up around the command after them");
    text = text.substr(colon + 2);
  }
  std::vector<std::vector<std::string>> parts(1);
  for (const std::string& w : SplitWords(text)) {
    if (w == "&" || w == "+" || w == "&&" || w == ";") {
      parts.emplace_back();
    } else {
      parts.back().push_back(w);
    }
  }
  std::vector<LoadSpec> loads;
  const auto exists = [&](const std::string& tool) {
    return r.tool_exists ? r.tool_exists(tool) : !FindInPath(tool).empty();
  };
  for (std::vector<std::string>& part : parts) {
    if (part.empty()) continue;
    const std::string tool = part[0];
    if (tool == "stress" || tool == "stress-ng") {
      std::string how;
      part = ScaleStressCommand(part, scaled_cpus, Timeout(r.duration_s), &how);
      if (tool == "stress" && !exists("stress") && exists("stress-ng")) {
        part[0] = "stress-ng";
        how +=
            "; stress is not installed: its stress-ng equivalent runs (stress-ng takes "
            "stress's options --cpu, --io, --vm, --vm-bytes, --hdd and --timeout)";
      }
      p.how.push_back(how);
      loads.push_back({part, {}, 0});
    } else if (tool == "hackbench") {
      loads.push_back({part, {}, 0});
      p.how.push_back("`" + JoinWords(part) + "` as published");
    } else if (tool == "iperf3" || tool == "iperf") {
      p.differences.push_back("`" + JoinWords(part) +
                              "` needs the vendor's network peer: not run (--scenario=irq runs "
                              "iperf3 over loopback)");
    } else {
      p.differences.push_back("\"" + JoinWords(part) + "\" in the published load is not a " +
                              "command this machine can run: not run");
    }
  }
  return loads;
}

// With a reference: its cyclictest options (and -h) for the measurement, its load scaled to the
// CPUs present; whatever differs from the published run is listed in p.differences.
void PlanReference(const ScenarioRequest& r, ScenarioPlan& p) {
  const std::vector<std::string> ref = MeasureArgsFromCommand(r.reference_command, &p.histogram_us);
  if (r.threads == 0 && r.cpus.empty()) {
    if (r.name != "isolated" || p.measure_args.empty()) p.measure_args = ref;
    p.how.push_back("cyclictest options `" + JoinWords(ref) + "` as published");
  } else {
    std::vector<std::string> args = DefaultMeasure(r);
    args.resize(args.size() - 3);  // without DefaultMeasure's -m -p99 -i1000
    const std::vector<std::string> rest = WithoutThreadOptions(ref);
    args.insert(args.end(), rest.begin(), rest.end());
    p.measure_args = args;
    p.differences.push_back(std::string(r.threads > 0 ? "--threads" : "--cpus") +
                            " replaces the published thread options (`" + JoinWords(ref) + "`)");
  }
  if (p.histogram_us > 0) p.how.push_back("-h" + std::to_string(p.histogram_us) + " as published");
  if (!r.custom_loads.empty()) {
    p.differences.push_back("the load is --load's (`" + JoinWords(r.custom_loads) +
                            "`), not the published one (`" +
                            (r.reference_load.empty() ? "none" : r.reference_load) + "`)");
  } else {
    std::vector<int> load_cpus;
    if (r.name == "isolated" && !p.loads.empty()) load_cpus = p.loads.front().cpus;
    const std::size_t n =
        load_cpus.empty() ? std::max<std::size_t>(r.online_cpus.size(), 1) : load_cpus.size();
    p.loads = ReferenceLoads(r, n, p);
    for (LoadSpec& l : p.loads) l.cpus = load_cpus;
    if (!load_cpus.empty()) {
      p.how.push_back("the load kept off the measured CPU " + std::to_string(p.measured_cpu) +
                      " (CPUs " + FormatCpuList(load_cpus) + ")");
    }
    p.description = p.loads.empty() ? "the published run's load: none"
                                    : "the published run's load, scaled to this machine";
  }
  const std::string scenario = Slug(r.reference_scenario);
  if ((scenario.find("isolcpus") != std::string::npos ||
       scenario.find("isolat") != std::string::npos) &&
      r.isolated_cpus.empty()) {
    p.differences.push_back("the published run isolated a CPU (" + r.reference_scenario +
                            "); this kernel has no isolcpus");
  }
  p.like_for_like = p.differences.empty();
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

std::vector<std::string> ScaleStressCommand(std::vector<std::string> argv, std::size_t cpus,
                                            const std::string& timeout, std::string* how) {
  const std::string published = JoinWords(argv);
  // The option and its value's index, attached ("-c8") or not ("-c 8", "--cpu 8", "--cpu=8").
  struct Opt {
    std::size_t at;
    std::string value;
    bool attached;
  };
  const auto find = [&](std::initializer_list<const char*> names) -> std::optional<Opt> {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      for (const char* n : names) {
        const std::string name = n;
        if (argv[i] == name && i + 1 < argv.size()) return Opt{i + 1, argv[i + 1], false};
        if (argv[i].rfind(name, 0) == 0 && argv[i].size() > name.size()) {
          const std::string rest = argv[i].substr(name.size());
          if (name.size() == 2 && IsCount(rest)) return Opt{i, rest, true};
          if (name.size() > 2 && rest[0] == '=') return Opt{i, rest.substr(1), true};
        }
      }
    }
    return std::nullopt;
  };
  const auto set = [&](const Opt& o, const std::string& value) {
    if (!o.attached) {
      argv[o.at] = value;
    } else {
      argv[o.at] = argv[o.at].substr(0, argv[o.at].size() - o.value.size()) + value;
    }
  };
  const std::optional<Opt> cpu = find({"-c", "--cpu"});
  std::size_t published_cpus = 0;
  if (cpu && IsCount(cpu->value)) published_cpus = std::stoul(cpu->value);
  std::string changed;
  if (published_cpus > 0) {
    set(*cpu, std::to_string(cpus));
    for (const auto& names : {std::initializer_list<const char*>{"-i", "--io"},
                              std::initializer_list<const char*>{"-m", "--vm"},
                              std::initializer_list<const char*>{"-d", "--hdd"}}) {
      const std::optional<Opt> o = find(names);
      if (!o || !IsCount(o->value)) continue;
      const double scaled =
          std::round(static_cast<double>(std::stoul(o->value)) * static_cast<double>(cpus) /
                     static_cast<double>(published_cpus));
      set(*o, std::to_string(std::max<long>(1, static_cast<long>(scaled))));
    }
    changed = "worker counts scaled from the published " + std::to_string(published_cpus) +
              " CPUs (its -c) to the " + std::to_string(cpus) + " this load may use";
  } else {
    changed = "worker counts as published (no -c/--cpu to scale by)";
  }
  if (const std::optional<Opt> t = find({"-t", "--timeout"})) {
    set(*t, timeout);
  } else {
    argv.insert(argv.end(), {"--timeout", timeout});
  }
  if (how != nullptr) {
    *how = "`" + published + "` runs as `" + JoinWords(argv) + "`: " + changed +
           ", --timeout the run's duration + 60 s";
  }
  return argv;
}

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
  p.measure_args = DefaultMeasure(r);
  const std::size_t n = std::max<std::size_t>(r.online_cpus.size(), 1);
  if (!r.custom_loads.empty() && r.name != "custom") {
    if (r.reference_command.empty()) {
      return InvalidArgumentError("--load is for --scenario=custom or a --reference run");
    }
    for (const std::string& cmd : r.custom_loads) {
      p.loads.push_back({{"/bin/sh", "-c", cmd}, {}, 0});
    }
    p.description = "custom load (--load) instead of the published one";
    PlanReference(r, p);
    return p;
  }
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
    if (r.custom_loads.empty() && r.reference_command.empty()) {
      return InvalidArgumentError("custom needs --load='COMMAND' (repeatable)");
    }
    p.description = "custom load";
    for (const std::string& cmd : r.custom_loads) {
      p.loads.push_back({{"/bin/sh", "-c", cmd}, {}, 0});
    }
  }
  if (!r.reference_command.empty()) {
    const std::vector<LoadSpec> custom = r.custom_loads.empty() ? std::vector<LoadSpec>{} : p.loads;
    if (r.name == "isolated") p.measure_args.clear();  // the published options, not isolated's
    PlanReference(r, p);
    if (!custom.empty()) p.loads = custom;
  }
  return p;
}

}  // namespace rtloop::bench
