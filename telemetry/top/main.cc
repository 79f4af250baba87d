// rtloop-top: a live terminal dashboard of a running rtloop process over gRPC.
//
//   rtloop-top [ADDR] [--interval SECONDS] [--once] [--json [--watch]] [--token-file FILE]
//              [--tls-ca FILE]
//   rtloop-top [ADDR] --reset --token-file FILE     statistics reset of every task, then exit
//
// --reset: the server's ResetStats call (min/max and windows cleared, totals kept; it needs the
// server's token): 0 reset, 2 refused or unreachable (one line on stderr says why).
// Exit codes: 0 done (a snapshot printed, interrupted, or a --json --watch run ended), 2 bad
// usage, or in one-snapshot mode (--once, --json): server unreachable, bad token, TLS mismatch
// (one line on stderr says which). --json prints one snapshot unless --watch asks for one per
// interval; --json --watch ends when nothing listens at ADDR any more (the run ended: exit 0, or
// 2 before the first snapshot). The live screen retries an unreachable server with backoff (0.5 s
// doubling to 8 s); a rejected token or request exits 2 at once. Without a TTY (or with --json)
// frames are printed one after another, without screen control codes. On a TTY each frame fits
// the terminal (RenderOptions: columns dropped by importance, tasks cut to the rows there are),
// redrawn at once when the terminal is resized.
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include "rtloop/telemetry/client.h"
#include "top_render.h"

namespace {

using rtloop::Status;
using rtloop::StatusCode;
namespace tt = rtloop::telemetry;

std::atomic<bool> g_stop{false};
std::atomic<bool> g_resized{false};

void OnSignal(int /*sig*/) { g_stop.store(true); }
void OnResize(int /*sig*/) { g_resized.store(true); }

// The terminal's size; {0, 0} when stdout is not a terminal.
std::pair<int, int> TerminalSize() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return {0, 0};
  return {ws.ws_col, ws.ws_row};
}

constexpr char kUsage[] =
    "usage: rtloop-top [ADDR] [options]\n"
    "Live dashboard of an rtloop process' telemetry server (default ADDR 127.0.0.1:50051).\n"
    "  --interval SECONDS   refresh period (default 1; 0.01 .. 3600)\n"
    "  --once               print one snapshot and exit (exit 2 when the server cannot be read)\n"
    "  --json               print one snapshot as a JSON object on one line and exit (as\n"
    "                       --once; exit 2 when the server cannot be read)\n"
    "  --watch              with --json: a snapshot every interval, until interrupted or until\n"
    "                       nothing listens at ADDR any more (the run ended: exit 0)\n"
    "  --no-histogram       leave out the per-task latency histograms\n"
    "  --reset              reset every task's statistics (min/max and the windows; counts,\n"
    "                       sums, averages and histograms are kept) and exit; needs the\n"
    "                       server's token (--token-file)\n"
    "  --token-file FILE    bearer token for a server that requires one\n"
    "  --tls-ca FILE        use TLS; FILE holds the PEM root certificate of the server\n"
    "  --tls-server-name N  name to check in the server certificate (default: ADDR's host)\n"
    "  --timeout SECONDS    per-call deadline (default 3)\n"
    "  -h, --help           this text\n";

struct Options {
  std::string address = "127.0.0.1:50051";
  double interval_s = 1.0;
  bool once = false;
  bool json = false;
  bool watch = false;  // --json: keep printing
  bool histogram = true;
  bool reset = false;
  double timeout_s = 3.0;
  std::string token_file;
  std::string tls_ca;
  std::string tls_server_name;
};

[[noreturn]] void UsageError(const std::string& message) {
  std::fprintf(stderr, "rtloop-top: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

double ParseSeconds(std::string_view flag, const char* text, double min, double max) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= min && v <= max)) {
    UsageError(std::string(flag) + " wants seconds from " + std::to_string(min) + " to " +
               std::to_string(max) + ", got \"" + text + "\"");
  }
  return v;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  bool have_address = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
        value = std::string(arg.substr(eq + 1));
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) UsageError(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--once") {
      o.once = true;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--watch") {
      o.watch = true;
    } else if (arg == "--no-histogram") {
      o.histogram = false;
    } else if (arg == "--reset") {
      o.reset = true;
    } else if (arg == "--interval") {
      o.interval_s = ParseSeconds(arg, next().c_str(), 0.01, 3600);
    } else if (arg == "--timeout") {
      o.timeout_s = ParseSeconds(arg, next().c_str(), 0.05, 3600);
    } else if (arg == "--token-file") {
      o.token_file = next();
    } else if (arg == "--tls-ca") {
      o.tls_ca = next();
    } else if (arg == "--tls-server-name") {
      o.tls_server_name = next();
    } else if (!arg.empty() && arg[0] == '-') {
      UsageError("unknown option " + std::string(arg));
    } else if (!have_address) {
      o.address = std::string(arg);
      have_address = true;
    } else {
      UsageError("more than one address given (\"" + o.address + "\", \"" + std::string(arg) +
                 "\")");
    }
  }
  if (o.watch && o.once) UsageError("--watch and --once contradict each other: give one");
  if (o.watch && !o.json) UsageError("--watch is for --json (the screen is live anyway)");
  if (o.reset && (o.json || o.once || o.watch)) {
    UsageError("--reset resets and exits: give it without --json, --once or --watch");
  }
  return o;
}

// Reads one full snapshot; `system` is fetched only when `need_system`.
Status ReadSnapshot(tt::Client& client, bool need_system, bool histogram, tt::top::Snapshot* snap) {
  if (need_system) {
    rtloop::Result<tt::v1::GetSystemInfoResponse> sys = client.GetSystemInfo();
    if (!sys.ok()) return sys.status();
    snap->system = std::move(*sys);
  }
  rtloop::Result<tt::v1::ListTasksResponse> tasks = client.ListTasks();
  if (!tasks.ok()) return tasks.status();
  snap->tasks = std::move(*tasks);
  rtloop::Result<tt::v1::GetStatsResponse> stats = client.GetStats({}, histogram);
  if (!stats.ok()) return stats.status();
  snap->stats = std::move(*stats);
  return Status::Ok();
}

// Sleeps up to `seconds`, waking early on SIGINT/SIGTERM or a terminal resize.
void SleepInterruptible(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_stop.load() && !g_resized.exchange(false) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// --reset: the exit status.
int Reset(tt::Client& client) {
  rtloop::Result<tt::v1::ResetStatsResponse> r = client.ResetStats({});
  if (!r.ok()) {
    std::fprintf(stderr, "rtloop-top: %s\n", r.status().message().c_str());
    return 2;
  }
  std::printf("rtloop-top: statistics of %d task%s reset at %s\n", r->task_ids_size(),
              r->task_ids_size() == 1 ? "" : "s", client.address().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction resize {};
  resize.sa_handler = OnResize;
  resize.sa_flags = SA_RESTART;
  sigaction(SIGWINCH, &resize, nullptr);
  signal(SIGPIPE, SIG_IGN);

  tt::ClientConfig cc;
  cc.address = o.address;
  cc.token_file = o.token_file;
  cc.tls_ca_file = o.tls_ca;
  cc.tls_server_name = o.tls_server_name;
  cc.call_timeout = std::chrono::milliseconds(static_cast<long>(o.timeout_s * 1000));
  rtloop::Result<std::unique_ptr<tt::Client>> client = tt::Client::Create(cc);
  if (!client.ok()) {
    std::fprintf(stderr, "rtloop-top: %s\n", client.status().message().c_str());
    return 2;
  }

  if (o.reset) return Reset(**client);

  const bool tty = !o.json && isatty(STDOUT_FILENO) == 1;
  tt::top::Snapshot snap;
  snap.address = (*client)->address();  // ":PORT" shown as 127.0.0.1:PORT
  // One snapshot (--once, --json without --watch) or a series that ends when the server does.
  const bool one = o.once || (o.json && !o.watch);
  bool need_system = true;
  bool printed = false;
  double backoff_s = 0.5;
  while (!g_stop.load()) {
    Status s = ReadSnapshot(**client, need_system, o.histogram || o.json, &snap);
    if (!s.ok()) {
      need_system = true;
      if (one || s.code() == StatusCode::kUnauthenticated ||
          s.code() == StatusCode::kInvalidArgument) {
        std::fprintf(stderr, "rtloop-top: %s\n", s.message().c_str());
        return 2;
      }
      if (o.json && s.sys_errno() == ECONNREFUSED) {  // --watch: the run ended, scripts go on
        std::fprintf(stderr, "rtloop-top: %s\n", s.message().c_str());
        return printed ? 0 : 2;
      }
      std::fprintf(stderr, "rtloop-top: %s; retrying in %.1f s\n", s.message().c_str(), backoff_s);
      SleepInterruptible(backoff_s);
      backoff_s = std::min(backoff_s * 2, 8.0);
      continue;
    }
    need_system = false;
    backoff_s = 0.5;
    tt::top::RenderOptions ro;
    ro.show_histograms = o.histogram;
    if (tty) std::tie(ro.width, ro.height) = TerminalSize();
    std::string frame = o.json ? tt::top::RenderJson(snap) : tt::top::RenderText(snap, ro);
    if (tty)
      frame = "\x1b[H\x1b[2J" + frame;
    else if (!o.json && !o.once)
      frame += "\n";
    std::fwrite(frame.data(), 1, frame.size(), stdout);
    std::fflush(stdout);
    printed = true;
    if (one) return 0;
    SleepInterruptible(o.interval_s);
  }
  return 0;
}
