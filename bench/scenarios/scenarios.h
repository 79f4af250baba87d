// The documented benchmark scenarios: which loads run (as the vendors' documents start them,
// worker counts scaled to this machine's CPUs) and how rtloop-cyclic measures.
//
//   ScenarioRequest req;
//   req.name = "stress";
//   req.online_cpus = {0, 1};
//   Result<ScenarioPlan> plan = PlanScenario(req);
//   // plan->loads[0].argv == {"stress-ng", "-c", "2", "--io", "2", "--vm", "1", "--vm-bytes",
//   //                         "4M", "--timeout", "<duration + 60>s"}
//   // plan->measure_args == {"-S", "-m", "-p99", "-i1000"}
//
// Scenarios: idle, stress (stress-ng -c N --io 2 --vm 1 --vm-bytes 4M), stress-fft (stress-ng -c
// N --cpu-method fft --timerfd-freq 1000000), hackbench (hackbench -l -1 -g 15 -f 25 -P), irq
// (an iperf3 server and client on 127.0.0.1), isolated (measurement on one CPU, stress-ng on the
// others), custom (--load='COMMAND', repeatable). N is the number of CPUs the load may use.
// With a reference (ScenarioRequest::reference_command) the plan is the published run's: its
// cyclictest options and -h, its load scaled to N (ScaleStressCommand), and what differs from it
// in ScenarioPlan::differences.
//
// Threading: pure functions. Not RT-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rtloop/framework/status.h"

namespace rtloop::bench {

struct LoadSpec {
  std::vector<std::string> argv;  // the command, argv[0] looked up in PATH
  std::vector<int> cpus;          // CPUs it may run on; empty: any
  int listen_port = 0;            // >0: ready once 127.0.0.1:port is listening (iperf3 -s)
};

struct ScenarioRequest {
  std::string name;                       // one of ScenarioNames()
  std::int64_t duration_s = 60;           // the measurement (loads get a timeout beyond it)
  int threads = 0;                        // --threads; 0: one per CPU (-S)
  std::vector<int> cpus;                  // --cpus; empty: all
  std::vector<std::string> custom_loads;  // --load (custom), each run by /bin/sh -c
  std::vector<int> online_cpus;
  std::vector<int> isolated_cpus;  // the kernel's isolcpus
  // A reference's cyclictest command (tokens), used for the measurement when neither threads
  // nor cpus are given: its options minus -D/-l/-q/-h/-H/-n/--json/--histfile.
  // With a reference (reference_command not empty) the run is the reference's: its cyclictest
  // options (with -h) and its load, scaled to this machine; see PlanReference.
  std::vector<std::string> reference_command;
  std::string reference_load;      // the reference's load as published; "" when it ran none
  std::string reference_scenario;  // its scenario's name ("Isolated-core test (isolcpus=3...)")
  int iperf_port = 0;              // irq: a free loopback port (chosen by the caller)
  // Whether a tool is installed (stress is run as stress-ng when it is not); default: PATH.
  std::function<bool(const std::string&)> tool_exists;
};

struct ScenarioPlan {
  std::string name;
  std::string description;                // one line for report.md
  std::vector<LoadSpec> loads;            // started in this order
  std::vector<std::string> measure_args;  // rtloop-cyclic options (outputs not included)
  std::uint32_t histogram_us = 0;         // -h from the reference command, 0: the caller's default
  std::string isolation;                  // "isolcpus", "affinity", "" (not isolated)
  int measured_cpu = -1;                  // isolated: the CPU measured
  std::vector<std::string> notes;         // said on stderr and in report.md
  // With a reference: whether this run is the reference's run, why not, and how it was made
  // (scaling, tool substitutions); said on stderr, in result.json and on report.md's first line.
  bool like_for_like = true;
  std::vector<std::string> differences;
  std::vector<std::string> how;
};

const std::vector<std::string>& ScenarioNames();
// InvalidArgument naming the bad value (unknown scenario, a CPU that is not online, custom
// without --load, isolated on one CPU).
Result<ScenarioPlan> PlanScenario(const ScenarioRequest& request);

// A cyclictest command line as the measurement options: drops the program (and a leading
// "taskset -c LIST"), -D/-l/-q/-h/-H/-n/-v and their values, --json/--histfile; reports -h's
// value in `histogram_us`. Adds --keep-distance when the command had no -h/-H (its thread
// intervals keep cyclictest's 500 us distance although we add -h).
std::vector<std::string> MeasureArgsFromCommand(const std::vector<std::string>& tokens,
                                                std::uint32_t* histogram_us);
// A published stress / stress-ng command scaled to `cpus` CPUs: -c/--cpu becomes `cpus`, the other
// worker counts (--io/-i, --vm/-m, --hdd/-d) are scaled by cpus / the published -c (at least 1),
// --timeout/-t becomes `timeout`; `how` says what changed.
std::vector<std::string> ScaleStressCommand(std::vector<std::string> argv, std::size_t cpus,
                                            const std::string& timeout, std::string* how);
// Splits a command line on blanks (no quoting).
std::vector<std::string> SplitWords(const std::string& text);

}  // namespace rtloop::bench
