// Command-line handling shared by the example programs (rtloop-plc, rtloop-motion,
// rtloop-gpio-toggle, rtloop-two-tasks): "--name=value" flags with range checks whose errors name
// the flag, the bad value and what to give instead, and the options every example has for how it
// runs (RunOptions: duration, the gRPC address, the HTTP /metrics endpoint, sample log, RT
// requirement).
//
//   example_cli::Args args(argc, argv, kUsage);        // kUsage ends with "run options:\n"
//   example_cli::RunOptions run;                        // defaults: until Ctrl-C, 127.0.0.1:50051
//   long cpu = -1;
//   while (args.Next()) {
//     if (args.Standard(&run)) continue;                // --help and the run options
//     if (args.Flag("--cpu", &cpu, 0, 1023)) continue;
//     return args.Unknown();                            // prints the problem, returns 2
//   }
//   if (std::optional<int> rc = example_cli::Done(args, run)) return *rc;   // --help, bad input
//   rtloop::RuntimeConfig config;
//   example_cli::Apply(run, args.program(), &config);
//
// A new option every example should have goes into RunOptions, ParseRunOption(), Apply() and
// kRunOptionsUsage, and nowhere else.
//
// Exit statuses of the examples: 0 after a run, 1 when the runtime could not start or stop (the
// message says why), 2 for a bad argument; rtloop-plc adds 3 for a PLC fault.
//
// Not RT-safe (strings, stdio): main() only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rtloop/runtime.h"
#include "rtloop/telemetry/output_file.h"

namespace example_cli {

struct RunOptions;

class Args {
 public:
  // `usage`: printed for --help, followed by kRunOptionsUsage; must outlive the Args.
  Args(int argc, char** argv, std::string_view usage);

  // Moves to the next argument; false at the end or after an error.
  bool Next();
  bool ok() const { return ok_; }
  bool help() const { return help_; }
  // The program's name without its directory ("rtloop-plc").
  const std::string& program() const { return program_; }

  // --help / -h: prints the usage on stdout (and ends the loop).
  bool Help();
  // Help() or a run option (ParseRunOption).
  bool Standard(RunOptions* options);
  // A flag without a value.
  bool Switch(std::string_view name) const { return arg_ == name; }
  // "--name" (then *value = `bare`) or "--name=value".
  bool Optional(std::string_view name, std::string* value, std::string_view bare);
  // "--name=value". Each returns true when the argument was this flag, well or badly given (a bad
  // value is printed and ends the loop).
  bool Flag(std::string_view name, std::string* value);
  bool Flag(std::string_view name, double* value, double min, double max);
  bool Flag(std::string_view name, long* value, long min, long max);

  // For an argument no Flag/Switch took: prints the problem and the usage hint; returns 2.
  int Unknown();
  // Prints "<program>: <message>" on stderr and marks the arguments bad; returns 2.
  int Fail(const std::string& message);

 private:
  const std::string* ValueOf(std::string_view name, bool* matched);
  bool Bad(std::string_view name, const std::string& value, const std::string& fix);

  int argc_;
  char** argv_;
  int index_ = 0;
  std::string arg_;
  std::string value_;
  std::string program_;
  std::string_view usage_;
  bool ok_ = true;
  bool help_ = false;
};

// How an example runs. The defaults are an example's unless it changes them before parsing.
struct RunOptions {
  double duration_s = 0.0;                    // --duration=SECONDS; 0: until Ctrl-C / SIGTERM
  std::string telemetry = "127.0.0.1:50051";  // --telemetry=ADDR|off: the gRPC API
  // --metrics[=ADDR]: the HTTP endpoint (Prometheus /metrics, the live page); "" for its default
  // address (127.0.0.1:9101). nullopt: none.
  std::optional<std::string> metrics;
  std::string record;       // --record=FILE: the sample log; empty: none
  bool require_rt = false;  // --require-rt: fail instead of falling back to SCHED_OTHER
};

// The usage lines of the run options, for the end of an example's usage text.
extern const char kRunOptionsUsage[];

// Takes the current argument when it is a run option (see Args::Flag for the return value).
bool ParseRunOption(Args& args, RunOptions* options);

// After the argument loop: the exit status when the program should end now (0 after --help, 2
// after a bad argument, which was printed, or a bad combination such as --record or --metrics
// with --telemetry=off, or a value its consumer refuses: an address that is not HOST:PORT, a
// --record path the output layer refuses (output_file.h; "-" too: the sample log is binary and
// the examples print text on stdout), which this prints), or nullopt to run. `inputs` are the
// files the example reads (its --config): --record may not name one of them (the rule of every
// rtloop tool, output_file.h CheckOutputsApart: same device and inode, under any name). Nothing
// has started then; a port in use is found later, by Runtime::Create() (exit status 1).
std::optional<int> Done(Args& args, const RunOptions& options,
                        const std::vector<rtloop::telemetry::InputPath>& inputs = {});

// Sets `config` from `options`: app_name, duration, telemetry address (or telemetry off), the
// HTTP endpoint, sample log, locked memory, and the non-RT fallback (on, printed loudly, unless
// --require-rt).
void Apply(const RunOptions& options, const std::string& app_name, rtloop::RuntimeConfig* config);

// "until Ctrl-C" or "for 2.5 s", for an example's first line.
std::string DescribeDuration(const RunOptions& options);

// The CPU an example pins its RT task to when not told: the highest isolated CPU (isolcpus=),
// else the highest CPU this process may use (CPU 0 takes most housekeeping work).
int DefaultRtCpu();

}  // namespace example_cli
