#include "bench_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>

#include "rtloop/telemetry/input_file.h"

namespace rtloop::bench {

Args::Args(int argc, const char* const* argv, int first, std::string subcommand)
    : subcommand_(std::move(subcommand)) {
  for (int i = first; i < argc; ++i) words_.emplace_back(argv[i]);
}

bool Args::Flag(const std::string& name) {
  if (!More()) return false;
  const std::string& w = words_[pos_];
  if (w == name) {
    ++pos_;
    return true;
  }
  if (w.rfind(name + "=", 0) == 0) {
    if (error_.ok()) error_ = InvalidArgumentError(name + " takes no value (got '" + w + "')");
    ++pos_;
    return true;
  }
  return false;
}

std::optional<std::string> Args::Value(const std::string& name) {
  if (!More()) return std::nullopt;
  const std::string& w = words_[pos_];
  if (w.rfind(name + "=", 0) == 0) {
    ++pos_;
    return w.substr(name.size() + 1);
  }
  if (w != name) return std::nullopt;
  ++pos_;
  if (!More()) {
    if (error_.ok()) error_ = InvalidArgumentError(name + " needs a value (" + name + "=VALUE)");
    return std::string();
  }
  return words_[pos_++];
}

std::optional<std::string> Args::Positional() {
  if (!More()) return std::nullopt;
  const std::string& w = words_[pos_];
  if (!w.empty() && w[0] == '-' && w != "-") return std::nullopt;
  ++pos_;
  return w;
}

Status Args::Unknown() {
  const std::string w = More() ? words_[pos_++] : std::string();
  if (error_.ok()) {
    error_ = InvalidArgumentError(
        (!w.empty() && w[0] == '-' ? "unknown option '" : "unexpected argument '") + w + "' for " +
        subcommand_);
  }
  return error_;
}

int UsageError(const std::string& subcommand, const std::string& message) {
  std::fprintf(stderr, "rtloop-bench: %s\nTry 'rtloop-bench %s%s--help'.\n", message.c_str(),
               subcommand.c_str(), subcommand.empty() ? "" : " ");
  return kExitUsage;
}

Result<std::int64_t> ParseDuration(const std::string& text) {
  const std::string bad = "invalid duration '" + text +
                          "': expected a whole number with an optional s, m, h or d suffix "
                          "(e.g. 90s, 15m, 24h)";
  if (text.empty()) return InvalidArgumentError(bad);
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    return InvalidArgumentError(bad);
  }
  if (v <= 0) return InvalidArgumentError(bad);
  const std::string suffix = text.substr(used);
  static const std::map<std::string, long long> kScale = {
      {"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  std::string lower;
  for (char c : suffix)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  const auto it = kScale.find(lower);
  if (it == kScale.end()) return InvalidArgumentError(bad);
  if (v > kMaxDurationS / it->second) {
    return InvalidArgumentError("duration '" + text + "' is too long: at most " +
                                std::to_string(kMaxDurationS / 86400) + "d (" +
                                std::to_string(kMaxDurationS) + " s)");
  }
  return static_cast<std::int64_t>(v * it->second);
}

std::string FormatHms(std::int64_t seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(seconds / 3600),
                static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60));
  return buf;
}

Result<std::string> ReadTextFile(const std::string& path, std::size_t limit) {
  return telemetry::ReadInputFile(path, {.what = "file", .max_bytes = limit, .allow_empty = true});
}

Status WriteTextFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "cannot create " + path);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoError(err, "cannot write " + path);
    }
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(err, "cannot write " + path);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(err, "cannot write " + path);
  }
  return Status::Ok();
}

std::string FindInPath(const std::string& tool) {
  if (tool.find('/') != std::string::npos) return access(tool.c_str(), X_OK) == 0 ? tool : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + tool;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string DebianPackageOf(const std::string& tool) {
  static const std::map<std::string, std::string> kPackages = {
      {"stress-ng", "stress-ng"}, {"stress", "stress"},          {"hackbench", "rt-tests"},
      {"cyclictest", "rt-tests"}, {"iperf3", "iperf3"},          {"gnuplot", "gnuplot-nox"},
      {"taskset", "util-linux"},  {"cpupower", "linux-cpupower"}};
  const std::string base = tool.substr(tool.rfind('/') + 1);
  const auto it = kPackages.find(base);
  return it == kPackages.end() ? "" : it->second;
}

std::string MissingToolMessage(const std::string& tool) {
  const std::string pkg = DebianPackageOf(tool);
  return "'" + tool + "' not found in PATH" +
         (pkg.empty() ? std::string(": install it") : ": install it with apt-get install " + pkg);
}

std::string WaitStatusText(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return "signal " + std::to_string(WTERMSIG(status)) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "status " + std::to_string(status);
}

std::string UtcTimestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string ExecutableDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace rtloop::bench
