// rtloop-bench's subcommands. Each takes the whole argv (argv[1] is the subcommand) and returns
// the process exit status; bench/scenarios/README.md documents options and exit codes.
//
//   int main(int argc, char** argv) { return rtloop::bench::Main(argc, argv); }
//
// Threading: run on the main thread. `run` blocks SIGINT, SIGTERM and SIGHUP and takes them
// itself (stops the measurement, keeps the reports); not RT-safe.
#pragma once

namespace rtloop::bench {

int Main(int argc, const char* const* argv);
int DoctorCommand(int argc, const char* const* argv);
int RunCommand(int argc, const char* const* argv);
int CompareCommand(int argc, const char* const* argv);
int PlotCommand(int argc, const char* const* argv);
int ReferencesCommand(int argc, const char* const* argv);

}  // namespace rtloop::bench
