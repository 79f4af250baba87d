// Small helpers shared by rtloop-bench's subcommands: command-line words, durations, files.
//
//   rtloop::bench::Args args(argc, argv, 2);       // after "rtloop-bench run"
//   while (args.More()) {
//     if (auto v = args.Value("--out")) out = *v;  // --out=DIR or --out DIR
//     else if (args.Flag("--tune")) tune = true;
//     else return args.Unknown();                  // "unknown option '--x' for run"
//   }
//
// Threading: value types and free functions; not RT-safe (they allocate and do I/O).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::bench {

// Exit statuses shared by the subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;           // runtime error; compare: a regression
inline constexpr int kExitUsage = 2;          // bad command line or unreadable input
inline constexpr int kExitOutput = 4;         // a result could not be written (plot, run's plots)
inline constexpr int kExitInterrupted = 130;  // run: stopped by SIGINT/SIGTERM (reports written)

// Walks argv of one subcommand. Options take "--name=value" or "--name value".
class Args {
 public:
  Args(int argc, const char* const* argv, int first, std::string subcommand);
  bool More() const { return pos_ < words_.size(); }
  // The current word when it is "--name" (consumed) or "--name=..." (error).
  bool Flag(const std::string& name);
  // The value of "--name=V" or "--name V" (both consumed), or nullopt. A missing value records an
  // error that Error() returns.
  std::optional<std::string> Value(const std::string& name);
  // A word that does not start with '-' (consumed), or nullopt.
  std::optional<std::string> Positional();
  // The current word as an unknown option (consumed): sets and returns the error.
  Status Unknown();
  // The first error so far (OK when none).
  const Status& error() const { return error_; }

 private:
  std::vector<std::string> words_;
  std::size_t pos_ = 0;
  std::string subcommand_;
  Status error_;
};

// Prints "rtloop-bench: <message>" (+ "Try 'rtloop-bench SUB --help'.") and returns kExitUsage.
int UsageError(const std::string& subcommand, const std::string& message);

// The longest run: a year. Loads' timeouts and the bench's deadlines are computed from it.
inline constexpr std::int64_t kMaxDurationS = 365LL * 86400;
// "90", "90s", "15m", "2h", "1d" (cyclictest -D's suffixes) -> seconds, 1..kMaxDurationS;
// InvalidArgument else.
Result<std::int64_t> ParseDuration(const std::string& text);
// "01:02:03" for 3723 s.
std::string FormatHms(std::int64_t seconds);

// Whole file (at most `limit` bytes), read by telemetry::ReadInputFile's rules: a regular file
// only (a FIFO or device is refused without waiting on it), a larger file refused from
// its size before anything is read, errors naming the file (NotFound, ResourceExhausted, ...).
Result<std::string> ReadTextFile(const std::string& path, std::size_t limit = 256u << 20);
// Writes `path` atomically (temporary file in the same directory, fsync, rename). Errors name it.
Status WriteTextFile(const std::string& path, const std::string& content);

// The absolute path of `tool` found in $PATH, or empty.
std::string FindInPath(const std::string& tool);
// The Debian package that ships `tool` (stress-ng, hackbench -> rt-tests, ...), or empty.
std::string DebianPackageOf(const std::string& tool);
// "`stress-ng` not found in PATH: install it with apt-get install stress-ng".
std::string MissingToolMessage(const std::string& tool);

// A waitpid() status as text: "exit 1", "signal 9 (SIGKILL)" (the number scripts match, the name
// people read).
std::string WaitStatusText(int status);

// Wall-clock time as "2026-12-01T08:09:10Z".
std::string UtcTimestamp();
// The directory of the running executable (/proc/self/exe), for sibling tools.
std::string ExecutableDir();

}  // namespace rtloop::bench
