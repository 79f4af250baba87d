// rtloop-bench run: tune, start the loads, measure with rtloop-cyclic, stop everything, report.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "bench_util.h"
#include "commands.h"
#include "outliers.h"
#include "process_group.h"
#include "report.h"
#include "rtloop/framework/system_info.h"
#include "rtloop/readiness.h"
#include "rtloop/telemetry/output_file.h"
#include "run_result.h"
#include "scenarios.h"

namespace rtloop::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kDefaultHistogramUs = 10000;
constexpr const char* kTuneLock = "/tmp/rtloop-bench-tune.lock";

struct RunOptions {
  ScenarioRequest request;
  std::string out = "rtloop-bench-out";
  std::string reference;
  std::string reference_file;
  bool tune = false;
  std::uint32_t histogram_us = 0;  // 0: the reference's -h, else kDefaultHistogramUs
  std::int64_t window_ms = 1000;
  bool sparse = false;
  std::string cyclic;  // rtloop-cyclic to run
  // rtloop-cyclic --explain=DIR/outliers.json --explain-above=US; off with --no-explain.
  bool explain = true;
  std::int64_t explain_above_us = kDefaultExplainAboveUs;
  bool explain_above_given = false;
};

const char kRunHelp[] =
    "usage: rtloop-bench run --scenario=NAME [--duration=T] [--threads=N] [--cpus=LIST]\n"
    "         [--out=DIR] [--reference=BOARD/SCENARIO/KERNEL] [--tune] [--load='COMMAND']...\n"
    "         [--histogram=US] [--window=MS] [--histogram-style=2.4|sparse]\n"
    "         [--rtloop-cyclic=PATH] [--reference-file=PATH] [--explain-above=US | --no-explain]\n"
    "scenarios: idle stress stress-fft hackbench irq isolated custom\n"
    "--reference runs the published cyclictest options (and -h) and load, scaled to this\n"
    "      machine's CPUs; --cpus/--threads/--load are accepted and make it not like for like\n"
    "      (stderr, result.json and report.md's first line say why)\n"
    "--explain-above=US: why the cycles above US (default 100) were late, into outliers.json\n"
    "      and report.md's \"Why the worst cycles were late\"; --no-explain: not explained\n"
    "exit: 0 done, 1 error (missing tool, load died, measurement failed, gnuplot missing or\n"
    "      failed), 2 bad command line (every argument is checked before anything starts), 4 a\n"
    "      plot could not be written, 130 interrupted: a signal, or the measurement ended early\n"
    "      (reports of what was measured are written, with why)\n";

Result<RunOptions> ParseRunOptions(int argc, const char* const* argv) {
  RunOptions o;
  o.cyclic = ExecutableDir() + "/rtloop-cyclic";
  Args a(argc, argv, 2, "run");
  while (a.More() && a.error().ok()) {
    if (auto v = a.Value("--scenario")) {
      o.request.name = *v;
    } else if (auto d = a.Value("--duration")) {
      Result<std::int64_t> s = ParseDuration(*d);
      if (!s.ok()) return s.status();
      o.request.duration_s = *s;
    } else if (auto t = a.Value("--threads")) {
      try {
        o.request.threads = std::stoi(*t);
      } catch (...) {
        o.request.threads = -1;
      }
      if (o.request.threads < 1 || o.request.threads > 1024) {
        return InvalidArgumentError("--threads='" + *t + "': expected 1..1024");
      }
    } else if (auto c = a.Value("--cpus")) {
      Result<std::vector<int>> cpus = ParseCpuList(*c);
      if (!cpus.ok() || cpus->empty()) {
        return InvalidArgumentError("--cpus='" + *c + "': expected a CPU list such as 0-3,6");
      }
      o.request.cpus = *cpus;
    } else if (auto out = a.Value("--out")) {
      o.out = *out;
    } else if (auto r = a.Value("--reference")) {
      o.reference = *r;
    } else if (auto rf = a.Value("--reference-file")) {
      o.reference_file = *rf;
    } else if (a.Flag("--tune")) {
      o.tune = true;
    } else if (auto l = a.Value("--load")) {
      o.request.custom_loads.push_back(*l);
    } else if (auto h = a.Value("--histogram")) {
      try {
        o.histogram_us = static_cast<std::uint32_t>(std::stoul(*h));
      } catch (...) {
        o.histogram_us = 0;
      }
      if (o.histogram_us < 1 || o.histogram_us > 1000000) {
        return InvalidArgumentError("--histogram='" + *h + "': expected 1..1000000 us");
      }
    } else if (auto w = a.Value("--window")) {
      try {
        o.window_ms = std::stoll(*w);
      } catch (...) {
        o.window_ms = 0;
      }
      if (o.window_ms < 1) return InvalidArgumentError("--window='" + *w + "': expected ms >= 1");
    } else if (auto st = a.Value("--histogram-style")) {
      if (*st != "2.4" && *st != "sparse") {
        return InvalidArgumentError("--histogram-style='" + *st + "': expected 2.4 or sparse");
      }
      o.sparse = *st == "sparse";
    } else if (auto rc = a.Value("--rtloop-cyclic")) {
      o.cyclic = *rc;
    } else if (auto ea = a.Value("--explain-above")) {
      // The whole word a number: "100us" or "1e3" is refused, not read as 100 or 1.
      std::int64_t us = 0;
      const auto [end, ec] = std::from_chars(ea->data(), ea->data() + ea->size(), us);
      if (ec != std::errc() || end != ea->data() + ea->size() || us < 1 ||
          us > std::numeric_limits<std::int64_t>::max() / 1000) {
        return InvalidArgumentError("--explain-above='" + *ea +
                                    "': expected a latency in whole us >= 1, such as 100");
      }
      o.explain_above_us = us;
      o.explain_above_given = true;
    } else if (a.Flag("--no-explain")) {
      o.explain = false;
    } else {
      (void)a.Unknown();
    }
  }
  if (!a.error().ok()) return a.error();
  if (o.request.name.empty()) return InvalidArgumentError("run needs --scenario=NAME");
  if (!o.explain && o.explain_above_given) {
    return InvalidArgumentError(
        "--explain-above and --no-explain contradict each other: give one of them");
  }
  if (!o.request.custom_loads.empty() && o.request.name != "custom" && o.reference.empty()) {
    return InvalidArgumentError("--load is for --scenario=custom or a --reference run");
  }
  return o;
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// A LISTEN socket on 127.0.0.1:port or 0.0.0.0:port in /proc/net/tcp.
bool Listening(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  char want[16];
  std::snprintf(want, sizeof want, ":%04X", port);
  std::getline(in, line);
  while (std::getline(in, line)) {
    char local[64] = {0}, remote[64] = {0}, state[8] = {0};
    if (std::sscanf(line.c_str(), "%*s %63s %63s %7s", local, remote, state) != 3) continue;
    const std::string l = local;
    if (std::string(state) == "0A" && l.size() >= 5 && l.substr(l.size() - 5) == want) return true;
  }
  return false;
}

std::string Tail(const std::string& path, std::size_t max_bytes = 600) {
  Result<std::string> t = ReadTextFile(path, 64u << 20);
  if (!t.ok()) return "";
  std::string s = t->size() > max_bytes ? t->substr(t->size() - max_bytes) : *t;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

struct TuneSetting {
  std::string path, value, previous;
};

// The documented settings (printk 1, vm.overcommit_memory 1) with their current values.
std::vector<TuneSetting> ReadTuneSettings() {
  std::vector<TuneSetting> out;
  for (const auto& [path, value] : std::vector<std::pair<std::string, std::string>>{
           {"/proc/sys/kernel/printk", "1"}, {"/proc/sys/vm/overcommit_memory", "1"}}) {
    Result<std::string> cur = ReadTextFile(path, 4096);
    std::string prev = cur.ok() ? *cur : "";
    while (!prev.empty() && prev.back() == '\n') prev.pop_back();
    out.push_back({path, value, prev});
  }
  return out;
}

Status WriteSetting(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.close();
  if (!f) return ErrnoError(errno, "--tune: cannot write " + path, "run as root");
  return Status::Ok();
}

// Starts rtloop-cyclic with stdout and stderr into `log`. It gets SIGTERM (and ends in order,
// writing what it measured) should the bench die. Returns its pid, or -1 (errno set).
pid_t SpawnMeasurement(std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
  }
  execv(argv[0], argv.data());
  _exit(127);
}

class BenchRun {
 public:
  explicit BenchRun(RunOptions o) : o_(std::move(o)) {}
  int Execute();

 private:
  int Prepare();
  void PlanMeasurement();
  int CheckMeasurement();  // rtloop-cyclic --check-options on the command Measure() runs
  int StartLoads();
  int Measure();  // rtloop-cyclic's wait status, or -1 when it could not start
  void Sample();
  void Progress(Clock::time_point start);
  void Finish();
  int Report(int cyclic_status);
  std::string OutPath(const std::string& name) const { return o_.out + "/" + name; }
  // No file the run writes in --out may be one it reads (output_file.h CheckOutputsApart):
  // --reference-file=DIR/result.json with --out=DIR would be replaced by the result.
  Status CheckOutputsApart() const {
    std::vector<std::string> names = {"result.json",       "report.md",         "histogram.txt",
                                      "plot.png",          "max-over-time.png", "cyclic.json",
                                      "max-over-time.txt", "rtloop-cyclic.log", kOutliersFile};
    for (std::size_t i = 0; i < plan_.loads.size(); ++i) {
      names.push_back("load-" + std::to_string(i) + ".log");
    }
    std::vector<telemetry::OutputTarget> outputs;
    for (const std::string& name : names) {
      // A directory that does not exist yet holds no input.
      Result<telemetry::OutputTarget> t = telemetry::ResolveOutputPath(
          OutPath(name), {.what = "--out (" + name + ")", .allow_stdout = false});
      if (t.ok()) outputs.push_back(std::move(*t));
    }
    return telemetry::CheckOutputsApart(
        outputs, {{"--reference-file", o_.reference_file}, {"--rtloop-cyclic", o_.cyclic}});
  }
  int Error(const std::string& message) {
    std::fprintf(stderr, "rtloop-bench: %s\n", message.c_str());
    return kExitFail;
  }

  RunOptions o_;
  ScenarioPlan plan_;
  std::optional<ReferenceRun> reference_;
  ReadinessReport doctor_;
  std::vector<TuneSetting> tune_;
  bool tuned_ = false;
  int tune_lock_ = -1;
  std::unique_ptr<LoadGroup> group_;
  std::vector<int> load_index_;
  std::vector<bool> exited_early_;
  std::vector<std::string> exit_text_;
  int max_processes_ = 0;
  pid_t cyclic_ = -1;
  bool interrupted_ = false;
  std::string interrupted_reason_;  // why, when interrupted_
  double loadavg_start_ = -1;
  std::vector<std::string> cyclic_argv_;
  std::uint32_t hist_us_ = kDefaultHistogramUs;  // the measurement's -h
  sigset_t signals_{};
};

int BenchRun::Prepare() {
  const SystemInfo sys = ReadSystemInfo();
  o_.request.online_cpus = sys.online_cpus;
  o_.request.isolated_cpus = sys.isolated_cpus;
  if (!o_.reference.empty()) {
    Result<std::vector<ReferenceRun>> all = LoadReferences(o_.reference_file);
    if (!all.ok()) return UsageError("run", all.status().message());
    Result<ReferenceRun> ref = FindReference(*all, o_.reference);
    if (!ref.ok()) return UsageError("run", ref.status().message());
    reference_ = *ref;
    o_.request.reference_command = SplitWords(ref->command);
    o_.request.reference_load = ref->load;
    o_.request.reference_scenario = ref->scenario;
  }
  if (o_.request.name == "irq") o_.request.iperf_port = FreeLoopbackPort();
  Result<ScenarioPlan> plan = PlanScenario(o_.request);
  if (!plan.ok()) return UsageError("run", plan.status().message());
  plan_ = std::move(*plan);
  for (const LoadSpec& l : plan_.loads) {
    // custom loads: the command's first word must exist too.
    const std::string tool = l.argv[0] == "/bin/sh" ? SplitWords(l.argv[2]).at(0) : l.argv[0];
    if (FindInPath(tool).empty()) return Error(MissingToolMessage(tool));
  }
  if (access(o_.cyclic.c_str(), X_OK) != 0) {
    return Error("rtloop-cyclic not found at " + o_.cyclic + ": build it, or pass --rtloop-cyclic");
  }
  if (const Status s = CheckOutputsApart(); !s.ok()) return UsageError("run", s.message());
  std::error_code ec;
  std::filesystem::create_directories(o_.out, ec);
  if (ec || access(o_.out.c_str(), W_OK) != 0) {
    return Error("cannot create or write the output directory " + o_.out + ": " + ec.message());
  }
  // A previous run's records must not pass for this run's: the file there after the
  // measurement is the one rtloop-cyclic wrote (it writes it whole or not at all).
  if (std::filesystem::remove(OutPath(kOutliersFile), ec); ec) {
    return Error("cannot remove the previous " + OutPath(kOutliersFile) + ": " + ec.message());
  }
  PlanMeasurement();
  if (const int rc = CheckMeasurement(); rc != kExitOk) return rc;
  // Before the doctor and before --tune reads the values it will restore: a killed run's.
  for (const std::string& line : LoadGroup::UndoKilledRuns()) {
    std::fprintf(stderr, "rtloop-bench: %s\n", line.c_str());
  }
  for (const std::string& n : plan_.notes)
    std::fprintf(stderr, "rtloop-bench: note: %s\n", n.c_str());
  if (reference_) {
    for (const std::string& h : plan_.how) {
      std::fprintf(stderr, "rtloop-bench: reference: %s\n", h.c_str());
    }
    for (const std::string& d : plan_.differences) {
      std::fprintf(stderr, "rtloop-bench: not like for like: %s\n", d.c_str());
    }
  }
  doctor_ = CheckReadiness();
  std::fprintf(stderr, "rtloop-bench: doctor: %d FAIL, %d WARN (rtloop-bench doctor explains)\n",
               doctor_.Count(ReadinessLevel::kFail), doctor_.Count(ReadinessLevel::kWarn));
  for (const ReadinessFinding& f : doctor_.findings) {
    if (f.level == ReadinessLevel::kFail) {
      std::fprintf(stderr, "rtloop-bench: FAIL %s: %s; fix: %s\n", f.id.c_str(), f.summary.c_str(),
                   f.fix.c_str());
    }
  }
  loadavg_start_ = LoadAverage1m();
  return kExitOk;
}

int BenchRun::StartLoads() {
  LoadGroupConfig gc;
  gc.tag = std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
  // The loads' own end, beyond the measurement's (which is stopped at duration + 65 s at worst).
  gc.deadline_s = o_.request.duration_s + 120;
  if (o_.tune) {
    // One --tune run at a time, or the second would save the first's settings as the originals.
    // The guardian holds the lock too, so it is free only once the settings are back.
    tune_lock_ = open(kTuneLock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (tune_lock_ < 0 || flock(tune_lock_, LOCK_EX | LOCK_NB) != 0) {
      return Error(std::string("--tune: another rtloop-bench run --tune is active (") + kTuneLock +
                   " is locked); run after it ended, or without --tune");
    }
    gc.hold_fd = tune_lock_;
    tune_ = ReadTuneSettings();
    for (const TuneSetting& t : tune_) gc.restore.push_back({t.path, t.previous});
  }
  Result<std::unique_ptr<LoadGroup>> g = LoadGroup::Create(gc);
  if (!g.ok()) return Error(g.status().message());
  group_ = std::move(*g);
  if (o_.tune) {
    tuned_ = true;
    for (const TuneSetting& t : tune_) {
      if (Status s = WriteSetting(t.path, t.value); !s.ok()) return Error(s.message());
    }
  }
  for (std::size_t i = 0; i < plan_.loads.size(); ++i) {
    const LoadSpec& l = plan_.loads[i];
    Result<int> idx = group_->Spawn(l.argv, l.cpus, OutPath("load-" + std::to_string(i) + ".log"));
    if (!idx.ok()) return Error(idx.status().message());
    load_index_.push_back(*idx);
    exited_early_.push_back(false);
    exit_text_.emplace_back();
    if (l.listen_port > 0) {
      const auto deadline = Clock::now() + std::chrono::seconds(5);
      while (!Listening(l.listen_port) && group_->Alive(*idx) && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (!Listening(l.listen_port)) {
        return Error("load `" + Join(l.argv) +
                     "` is not listening on 127.0.0.1:" + std::to_string(l.listen_port) + ": " +
                     Tail(OutPath("load-" + std::to_string(i) + ".log")));
      }
    }
  }
  // Checked to be running before measuring: alive after a settle time, workers forked.
  std::this_thread::sleep_for(std::chrono::milliseconds(plan_.loads.empty() ? 0 : 700));
  for (std::size_t i = 0; i < load_index_.size(); ++i) {
    if (!group_->Alive(load_index_[i])) {
      const std::string log = OutPath("load-" + std::to_string(i) + ".log");
      return Error("load `" + Join(plan_.loads[i].argv) + "` ended before the measurement (" +
                   group_->ExitText(load_index_[i]) + "); " + log + ": " + Tail(log));
    }
  }
  max_processes_ = group_->ProcessCount();
  if (!plan_.loads.empty()) {
    std::fprintf(stderr, "rtloop-bench: %zu load command(s) running, %d processes (%s)\n",
                 plan_.loads.size(), max_processes_, group_->Mechanism().c_str());
  }
  return kExitOk;
}

void BenchRun::Sample() {
  if (group_ == nullptr) return;
  max_processes_ = std::max(max_processes_, group_->ProcessCount());
  for (std::size_t i = 0; i < load_index_.size(); ++i) {
    if (!exited_early_[i] && !group_->Alive(load_index_[i])) {
      exited_early_[i] = true;
      exit_text_[i] = group_->ExitText(load_index_[i]);
      std::fprintf(stderr, "rtloop-bench: load `%s` ended during the measurement (%s)\n",
                   Join(plan_.loads[i].argv).c_str(), group_->ExitText(load_index_[i]).c_str());
    }
  }
}

void BenchRun::Progress(Clock::time_point start) {
  if (isatty(STDERR_FILENO) == 0) return;
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count();
  std::string max = "-";
  if (Result<std::string> t = ReadTextFile(OutPath("max-over-time.txt")); t.ok()) {
    if (Result<MaxOverTime> m = ParseMaxOverTime(*t); m.ok()) {
      double v = -1;
      for (const auto& th : m->threads) {
        for (const WindowPoint& p : th) v = std::max(v, p.max_us);
      }
      if (v >= 0) max = std::to_string(static_cast<long long>(v)) + " us";
    }
  }
  std::fprintf(stderr, "\r%s elapsed, %s remaining, max so far %s   ", FormatHms(elapsed).c_str(),
               FormatHms(std::max<std::int64_t>(0, o_.request.duration_s - elapsed)).c_str(),
               max.c_str());
}

void BenchRun::PlanMeasurement() {
  const std::uint32_t hist =
      o_.histogram_us > 0 ? o_.histogram_us
                          : (plan_.histogram_us > 0 ? plan_.histogram_us : kDefaultHistogramUs);
  hist_us_ = hist;
  cyclic_argv_ = {o_.cyclic};
  cyclic_argv_.insert(cyclic_argv_.end(), plan_.measure_args.begin(), plan_.measure_args.end());
  for (const std::string& a :
       {std::string("-q"), "-D" + std::to_string(o_.request.duration_s),
        "-h" + std::to_string(hist), "--histfile=" + OutPath("histogram.txt"),
        "--json=" + OutPath("cyclic.json"), "--max-over-time=" + OutPath("max-over-time.txt"),
        "--max-window=" + std::to_string(o_.window_ms)}) {
    cyclic_argv_.push_back(a);
  }
  if (o_.sparse) cyclic_argv_.push_back("--histogram-style=sparse");
  if (o_.explain) {
    cyclic_argv_.push_back("--explain=" + OutPath(kOutliersFile));
    cyclic_argv_.push_back("--explain-above=" + std::to_string(o_.explain_above_us));
  }
}

// Every argument is checked before anything starts (the doctor, --tune, a load): by the one
// parser that will read it, rtloop-cyclic's own, on the very command Measure() runs.
int BenchRun::CheckMeasurement() {
  std::vector<std::string> check = cyclic_argv_;
  check.push_back("--check-options");
  const std::string log = OutPath("rtloop-cyclic.log");
  const pid_t pid = SpawnMeasurement(check, log);
  if (pid < 0) return Error(std::string("cannot start rtloop-cyclic: ") + std::strerror(errno));
  int status = 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Error("rtloop-cyclic --check-options did not answer within 30 s: " + o_.cyclic);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return kExitOk;
  const std::string why = Tail(log);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    return UsageError("run", "the measurement `" + Join(cyclic_argv_) +
                                 "` is refused by rtloop-cyclic: " + why.substr(0, why.find('\n')));
  }
  return Error("rtloop-cyclic --check-options failed (" + WaitStatusText(status) + "): " + why);
}

int BenchRun::Measure() {
  cyclic_ = SpawnMeasurement(cyclic_argv_, OutPath("rtloop-cyclic.log"));
  if (cyclic_ < 0) {
    (void)Error(std::string("cannot start rtloop-cyclic: ") + std::strerror(errno));
    return -1;
  }
  std::fprintf(stderr, "rtloop-bench: measuring %lld s: %s\n",
               static_cast<long long>(o_.request.duration_s), Join(cyclic_argv_).c_str());
  const Clock::time_point start = Clock::now();
  const Clock::time_point hard_end = start + std::chrono::seconds(o_.request.duration_s + 60);
  Clock::time_point next_progress = start;
  int status = 0;
  bool sent_int = false;
  for (;;) {
    const pid_t r = waitpid(cyclic_, &status, WNOHANG);
    if (r == cyclic_) break;
    timespec ts{0, 200'000'000};
    const int sig = sigtimedwait(&signals_, nullptr, &ts);
    if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !sent_int) {
      interrupted_ = true;
      interrupted_reason_ = std::string("rtloop-bench got SIG") + sigabbrev_np(sig);
      sent_int = true;
      kill(cyclic_, SIGINT);  // rtloop-cyclic stops and writes what it measured
    }
    // Any child that ends before its time interrupts the run: the guardian too (its keeper
    // still undoes the run should the bench die now, but nothing more would).
    if (const std::string how = group_ ? group_->GuardianEnded() : ""; !how.empty() && !sent_int) {
      interrupted_ = true;
      interrupted_reason_ = "the load guardian ended during the measurement (" + how + ")";
      sent_int = true;
      kill(cyclic_, SIGINT);
    }
    // rtloop-cyclic ends itself after -D; should it not, it is stopped, then killed.
    if (Clock::now() > hard_end && !sent_int) {
      sent_int = true;
      kill(cyclic_, SIGINT);
    } else if (Clock::now() > hard_end + std::chrono::seconds(5)) {
      kill(cyclic_, SIGKILL);
    }
    Sample();
    if (Clock::now() >= next_progress) {
      Progress(start);
      next_progress += std::chrono::seconds(1);
    }
  }
  if (isatty(STDERR_FILENO) != 0) std::fprintf(stderr, "\n");
  cyclic_ = -1;
  // rtloop-cyclic ends itself -D after it started, so never before start + duration: one that
  // ended sooner (a signal from outside, a kill) did not measure the whole run.
  const auto ran_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  const bool early = ran_ms < o_.request.duration_s * 1000;
  const bool failed = WIFEXITED(status) && WEXITSTATUS(status) != 0;
  if (!interrupted_ && !failed && (early || WIFSIGNALED(status))) {
    interrupted_ = true;
    char ran[32];
    std::snprintf(ran, sizeof ran, "%.1f", static_cast<double>(ran_ms) / 1000.0);
    interrupted_reason_ = "rtloop-cyclic ended after " + std::string(ran) + " s of the " +
                          std::to_string(o_.request.duration_s) + " s measurement (" +
                          WaitStatusText(status) + "), stopped from outside the bench";
  }
  return status;
}

void BenchRun::Finish() {
  if (group_ != nullptr) {
    if (Status s = group_->StopAll(); !s.ok())
      std::fprintf(stderr, "rtloop-bench: %s\n", s.message().c_str());
  }
  if (tuned_) {
    for (const TuneSetting& t : tune_) (void)WriteSetting(t.path, t.previous);
    tuned_ = false;
  }
  group_.reset();  // the guardian ends (and checks once more)
  if (tune_lock_ >= 0) close(tune_lock_);
  tune_lock_ = -1;
}

int BenchRun::Execute() {
  if (const int rc = Prepare(); rc != kExitOk) return rc;
  sigemptyset(&signals_);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals_, s);
  sigprocmask(SIG_BLOCK, &signals_, nullptr);
  int rc = StartLoads();
  int status = 0;
  if (rc == kExitOk) status = Measure();
  Finish();
  if (rc != kExitOk) return rc;
  if (status == -1) return kExitFail;  // rtloop-cyclic did not start (said why)
  return Report(status);
}

int BenchRun::Report(int status) {
  const std::string log = OutPath("rtloop-cyclic.log");
  if (!interrupted_ && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    return Error("rtloop-cyclic failed (" + WaitStatusText(status) + "): " + Tail(log));
  }
  Result<LatencyData> data = LoadLatencyData(OutPath("cyclic.json"));
  if (!data.ok())
    return Error("no measurement to report: " + data.status().message() + "; " + Tail(log));
  for (ThreadLatency& t : data->threads) {  // cyclic.json lists filled buckets only: -h is known
    if (t.histogram.size() < hist_us_) t.histogram.resize(hist_us_, 0);
    t.histogram_size_known = true;
  }
  std::optional<MaxOverTime> windows;
  if (Result<std::string> t = ReadTextFile(OutPath("max-over-time.txt")); t.ok()) {
    if (Result<MaxOverTime> m = ParseMaxOverTime(*t); m.ok()) windows = *m;
  }
  json r = ResultSkeleton();
  r["interrupted"] = interrupted_;
  r["interrupted_reason"] = interrupted_ ? json(interrupted_reason_) : json();
  r["scenario"] = {{"name", plan_.name},
                   {"description", plan_.description},
                   {"duration_s", o_.request.duration_s},
                   {"measure_command", Join(cyclic_argv_)},
                   {"isolation", plan_.isolation.empty() ? json() : json(plan_.isolation)},
                   {"measured_cpu", plan_.measured_cpu >= 0 ? json(plan_.measured_cpu) : json()}};
  json loads = json::array();
  for (std::size_t i = 0; i < plan_.loads.size(); ++i) {
    loads.push_back(
        {{"command", Join(plan_.loads[i].argv)},
         {"cpus", plan_.loads[i].cpus.empty() ? json() : json(FormatCpuList(plan_.loads[i].cpus))},
         {"max_processes_seen", max_processes_},
         {"exited_early", static_cast<bool>(exited_early_[i])},
         {"exit", exited_early_[i] ? json(exit_text_[i]) : json()}});
  }
  r["loads"] = loads;
  json settings = json::array();
  for (const TuneSetting& t : tune_)
    settings.push_back({{"path", t.path}, {"value", t.value}, {"previous", t.previous}});
  r["tune"] = {{"applied", o_.tune}, {"settings", settings}};
  r["system"] = SystemJson(loadavg_start_, LoadAverage1m());
  r["doctor"] = FindingsJson(doctor_);
  r["notes"] = plan_.notes;
  r["threads"] = ThreadsJson(*data, windows ? &*windows : nullptr);
  const Result<std::string> cyclic_log = ReadTextFile(log, 64u << 20);
  r["outliers"] = o_.explain ? OutliersResult(OutPath(kOutliersFile),
                                              cyclic_log.ok() ? *cyclic_log : "", r["threads"])
                             : OutliersOff("--no-explain was given");
  r["reference"] = reference_ ? ReferenceJson(*reference_) : json();
  r["reference_comparison"] = reference_ ? json{{"like_for_like", plan_.like_for_like},
                                                {"reasons", plan_.differences},
                                                {"how", plan_.how}}
                                         : json();
  const std::string md = FormatReportMarkdown(r);
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"result.json", JsonText(r)}, {"report.md", md}}) {
    if (Status s = WriteTextFile(OutPath(name), text); !s.ok()) return Error(s.message());
  }
  const std::string title = RunTitle(r);
  int plots_rc = kExitOk;  // kExitFail: gnuplot missing or failed; kExitOutput: a PNG not written
  // `later`: the command that makes the same plot from result.json once gnuplot works.
  auto plot = [&](const std::string& name, const std::string& kind, Result<PlotJob> job) {
    Result<telemetry::OutputTarget> out =
        telemetry::ResolveOutputPath(OutPath(name), {.what = "plot", .allow_stdout = false});
    Result<std::string> png = !job.ok() ? job.status() : RunGnuplot(*job);
    const Status s = !out.ok() ? out.status() : png.ok() ? WritePlot(*out, *png) : png.status();
    if (s.ok()) return;
    plots_rc = std::max(plots_rc, png.ok() ? kExitOutput : kExitFail);
    const std::string later = png.ok() ? std::string()
                                       : "; plot it later with: rtloop-bench plot " +
                                             OutPath("result.json") + " -o " + OutPath(name) + kind;
    std::fprintf(stderr, "rtloop-bench: %s%s\n", s.message().c_str(), later.c_str());
  };
  plot("plot.png", "", HistogramPlot(*data, "Latency histogram: " + title, PublishedMarks(r)));
  if (windows) {
    plot("max-over-time.png", " --kind=max",
         MaxOverTimePlot(*windows, "Max latency over time: " + title));
  }
  std::fputs(md.substr(0, md.find("\n## ")).c_str(), stdout);
  std::printf(
      "\nrtloop-bench: wrote "
      "%s/{result.json,report.md,histogram.txt,plot.png,max-over-time.png%s}\n",
      o_.out.c_str(), r["outliers"].value("status", "") == "ok" ? ",outliers.json" : "");
  if (interrupted_) {
    std::fprintf(stderr, "rtloop-bench: interrupted: %s; the reports cover what was measured\n",
                 interrupted_reason_.c_str());
    return kExitInterrupted;
  }
  for (bool e : exited_early_) {
    if (e) return Error("a load ended before the measurement did: see report.md");
  }
  return plots_rc;
}

}  // namespace

int RunCommand(int argc, const char* const* argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      std::fputs(kRunHelp, stdout);
      return kExitOk;
    }
  }
  Result<RunOptions> o = ParseRunOptions(argc, argv);
  if (!o.ok()) return UsageError("run", o.status().message());
  BenchRun run(std::move(*o));
  return run.Execute();
}

}  // namespace rtloop::bench
