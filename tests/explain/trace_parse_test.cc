// Tests of the trace text parser and the attribution of a window (trace_internal.h), on lines
// captured from this project's VM (kernel 6.18, trace_clock mono, an rtloop instance on CPU 1
// while a 1 kHz task "task0" shared the CPU with python3) and on odd lines: comms with spaces,
// dashes and brackets, the tgid column, no irq-info column, LOST markers, every truncation and
// random corruption of a real line (the parser must never crash or read past a line).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "trace_internal.h"

namespace rtloop::explain::trace {
namespace {

// Captured from instances/<name>/per_cpu/cpu1/trace (46 lines). Note: this kernel never traces
// the switch out of idle; the parser takes the running thread from each line's TASK-PID.
constexpr std::string_view kCaptured =
    R"(     ksoftirqd/1-22      [001] ..s.. 58424.576131: softirq_exit: vec=9 [action=RCU]
     ksoftirqd/1-22      [001] ..s.. 58424.576132: softirq_entry: vec=9 [action=RCU]
     ksoftirqd/1-22      [001] ..s.. 58424.576137: softirq_exit: vec=9 [action=RCU]
     ksoftirqd/1-22      [001] d..2. 58424.576140: sched_switch: prev_comm=ksoftirqd/1 prev_pid=22 prev_prio=120 prev_state=S ==> next_comm=kworker/1:2 next_pid=28719 next_prio=120
     kworker/1:2-28719   [001] d..2. 58424.576154: sched_switch: prev_comm=kworker/1:2 prev_pid=28719 prev_prio=120 prev_state=I ==> next_comm=python3 next_pid=9525 next_prio=120
         python3-9525    [001] d.h.. 58424.576375: hrtimer_expire_entry: hrtimer=00000000f960b669 function=hrtimer_wakeup now=58424576373914
         python3-9525    [001] d.h2. 58424.576375: sched_waking: comm=task0 pid=9506 prio=120 target_cpu=001
         python3-9525    [001] dNh.. 58424.576378: hrtimer_expire_exit: hrtimer=00000000f960b669
         python3-9525    [001] d..2. 58424.576385: sched_switch: prev_comm=python3 prev_pid=9525 prev_prio=120 prev_state=R ==> next_comm=task0 next_pid=9506 next_prio=120
           task0-9506    [001] d..2. 58424.576413: sched_switch: prev_comm=task0 prev_pid=9506 prev_prio=120 prev_state=S ==> next_comm=python3 next_pid=9525 next_prio=120
         python3-9525    [001] d..2. 58424.577195: sched_switch: prev_comm=python3 prev_pid=9525 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h1. 58424.577374: hrtimer_expire_entry: hrtimer=000000006a715a77 function=hrtimer_wakeup now=58424577373093
          <idle>-0       [001] d.h3. 58424.577374: sched_waking: comm=task0 pid=9506 prio=120 target_cpu=001
          <idle>-0       [001] dNh1. 58424.577377: hrtimer_expire_exit: hrtimer=000000006a715a77
           task0-9506    [001] d..2. 58424.577410: sched_switch: prev_comm=task0 prev_pid=9506 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h1. 58424.578370: hrtimer_expire_entry: hrtimer=00000000168a1dfb function=hrtimer_wakeup now=58424578369418
          <idle>-0       [001] d.h3. 58424.578371: sched_waking: comm=task0 pid=9506 prio=120 target_cpu=001
          <idle>-0       [001] dNh1. 58424.578373: hrtimer_expire_exit: hrtimer=00000000168a1dfb
           task0-9506    [001] d..2. 58424.578407: sched_switch: prev_comm=task0 prev_pid=9506 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h1. 58424.578685: irq_handler_entry: irq=36 name=virtio1-req.0
          <idle>-0       [001] d.h1. 58424.578691: irq_handler_exit: irq=36 ret=handled
          <idle>-0       [001] ..s1. 58424.578692: softirq_entry: vec=4 [action=BLOCK]
          <idle>-0       [001] d.s4. 58424.578702: sched_waking: comm=python3 pid=9525 prio=120 target_cpu=001
          <idle>-0       [001] .Ns1. 58424.578711: softirq_exit: vec=4 [action=BLOCK]
         python3-9525    [001] d.h.. 58424.578943: irq_handler_entry: irq=36 name=virtio1-req.0
         python3-9525    [001] d.h.. 58424.578944: irq_handler_exit: irq=36 ret=handled
         python3-9525    [001] ..s.. 58424.578944: softirq_entry: vec=4 [action=BLOCK]
         python3-9525    [001] ..s.. 58424.578946: softirq_exit: vec=4 [action=BLOCK]
         python3-9525    [001] d.h1. 58424.579362: hrtimer_expire_entry: hrtimer=000000003d8a62c4 function=hrtimer_wakeup now=58424579361637
         python3-9525    [001] d.h3. 58424.579363: sched_waking: comm=task0 pid=9506 prio=120 target_cpu=001
         python3-9525    [001] d.h1. 58424.579366: hrtimer_expire_exit: hrtimer=000000003d8a62c4
         python3-9525    [001] d.h1. 58424.580015: hrtimer_expire_entry: hrtimer=0000000044d550d9 function=tick_nohz_handler now=58424580014140
         python3-9525    [001] d.h1. 58424.580020: hrtimer_expire_exit: hrtimer=0000000044d550d9
         python3-9525    [001] ..s1. 58424.580026: softirq_entry: vec=7 [action=SCHED]
         python3-9525    [001] ..s1. 58424.580028: softirq_exit: vec=7 [action=SCHED]
         python3-9525    [001] ..s1. 58424.580028: softirq_entry: vec=9 [action=RCU]
         python3-9525    [001] ..s1. 58424.580036: softirq_exit: vec=9 [action=RCU]
         python3-9525    [001] d..2. 58424.580218: sched_switch: prev_comm=python3 prev_pid=9525 prev_prio=120 prev_state=R ==> next_comm=grpc_global_tim next_pid=9567 next_prio=120
 grpc_global_tim-9567    [001] d..2. 58424.580389: sched_switch: prev_comm=grpc_global_tim prev_pid=9567 prev_prio=120 prev_state=S ==> next_comm=task0 next_pid=9506 next_prio=120
           task0-9506    [001] d..2. 58424.580423: sched_switch: prev_comm=task0 prev_pid=9506 prev_prio=120 prev_state=S ==> next_comm=python3 next_pid=9525 next_prio=120
         python3-9525    [001] d.h1. 58424.581366: hrtimer_expire_entry: hrtimer=0000000095b2a308 function=hrtimer_wakeup now=58424581365144
         python3-9525    [001] d.h3. 58424.581367: sched_waking: comm=task0 pid=9506 prio=120 target_cpu=001
         python3-9525    [001] dNh1. 58424.581370: hrtimer_expire_exit: hrtimer=0000000095b2a308
         python3-9525    [001] d..2. 58424.581379: sched_switch: prev_comm=python3 prev_pid=9525 prev_prio=120 prev_state=R ==> next_comm=task0 next_pid=9506 next_prio=120
           task0-9506    [001] d..2. 58424.581401: sched_switch: prev_comm=task0 prev_pid=9506 prev_prio=120 prev_state=S ==> next_comm=python3 next_pid=9525 next_prio=120
         python3-9525    [001] d.h.. 58424.582367: hrtimer_expire_entry: hrtimer=000000003e933c2c function=hrtimer_wakeup now=58424582366136)";

constexpr std::int64_t Us(std::int64_t sec, std::int64_t usec) {
  return sec * 1'000'000'000LL + usec * 1'000LL;
}

const ThreadRun* FindThread(const Attribution& a, int tid) {
  for (const ThreadRun& r : a.threads) {
    if (r.tid == tid) return &r;
  }
  return nullptr;
}

const Cause* FindCause(const Attribution& a, std::string_view name) {
  for (const Cause& c : a.interrupts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(TraceParseTest, ParsesEveryCapturedLine) {
  std::size_t lines = 0;
  std::size_t pos = 0;
  while (pos < kCaptured.size()) {
    std::size_t nl = kCaptured.find('\n', pos);
    if (nl == std::string_view::npos) nl = kCaptured.size();
    TraceEvent e;
    EXPECT_TRUE(ParseTraceLine(kCaptured.substr(pos, nl - pos), &e))
        << kCaptured.substr(pos, nl - pos);
    EXPECT_EQ(e.cpu, 1);
    EXPECT_NE(e.type, EventType::kOther) << e.line;
    ++lines;
    pos = nl + 1;
  }
  EXPECT_EQ(lines, 46u);
  EXPECT_EQ(ParseTrace(kCaptured).size(), 46u);
}

TEST(TraceParseTest, SchedSwitchGivesBothSidesAndTheLineItsTaskAndTime) {
  TraceEvent e;
  ASSERT_TRUE(ParseTraceLine(
      "     ksoftirqd/1-22      [001] d..2. 58424.576140: sched_switch: prev_comm=ksoftirqd/1 "
      "prev_pid=22 prev_prio=120 prev_state=S ==> next_comm=kworker/1:2 next_pid=28719 "
      "next_prio=120",
      &e));
  EXPECT_EQ(e.type, EventType::kSchedSwitch);
  EXPECT_EQ(e.comm, "ksoftirqd/1");
  EXPECT_EQ(e.pid, 22);
  EXPECT_EQ(e.ts_ns, Us(58424, 576140));
  EXPECT_EQ(e.name, "sched_switch");
  EXPECT_EQ(e.prev_comm, "ksoftirqd/1");
  EXPECT_EQ(e.prev_pid, 22);
  EXPECT_EQ(e.prev_prio, 120);
  EXPECT_EQ(e.next_comm, "kworker/1:2");
  EXPECT_EQ(e.next_pid, 28719);
  EXPECT_EQ(e.next_prio, 120);
}

TEST(TraceParseTest, CommsWithSpacesDashesAndBracketsParse) {
  // Captured: a comm set to "a b-c [001] 1.5:" (the kernel keeps 15 characters).
  TraceEvent e;
  ASSERT_TRUE(ParseTraceLine(
      "         python3-9525    [001] d..2. 58424.490684: sched_switch: prev_comm=a b-c [001] "
      "1.5 prev_pid=9525 prev_prio=120 prev_state=S ==> next_comm=a b-c [001] 1.5 "
      "next_pid=9526 next_prio=120",
      &e));
  EXPECT_EQ(e.prev_comm, "a b-c [001] 1.5");
  EXPECT_EQ(e.prev_pid, 9525);
  EXPECT_EQ(e.next_comm, "a b-c [001] 1.5");
  EXPECT_EQ(e.next_pid, 9526);
  // The same comm in the TASK column.
  ASSERT_TRUE(ParseTraceLine(
      " a b-c [001] 1.5-9526    [001] dN.5. 58424.511983: sched_waking: comm=a b-c [001] 1.5 "
      "pid=9525 prio=120 target_cpu=001",
      &e));
  EXPECT_EQ(e.comm, "a b-c [001] 1.5");
  EXPECT_EQ(e.pid, 9526);
  EXPECT_EQ(e.cpu, 1);
  EXPECT_EQ(e.type, EventType::kSchedWaking);
  EXPECT_EQ(e.next_comm, "a b-c [001] 1.5");
  EXPECT_EQ(e.next_pid, 9525);
  EXPECT_EQ(e.next_prio, 120);
  // A comm crafted to look like a whole line prefix: the kernel pads TASK to 16 columns, so
  // the real [cpu] field comes after it.
  ASSERT_TRUE(ParseTraceLine(
      "x-1 [0] 2.0: e:-42     [003] d..2. 7.000001: irq_handler_entry: irq=5 name=eth-0 rx", &e));
  EXPECT_EQ(e.pid, 42);
  EXPECT_EQ(e.comm, "x-1 [0] 2.0: e:");
  EXPECT_EQ(e.cpu, 3);
  EXPECT_EQ(e.type, EventType::kIrqEntry);
  EXPECT_EQ(e.irq, 5);
  EXPECT_EQ(e.irq_name, "eth-0");
  // Unpadded (hand-written or another tool's) lines still parse.
  ASSERT_TRUE(
      ParseTraceLine("my-task-12 [000] 1.000002: softirq_entry: vec=3 [action=NET_RX]", &e));
  EXPECT_EQ(e.comm, "my-task");
  EXPECT_EQ(e.pid, 12);
  EXPECT_EQ(e.irq_name, "NET_RX");
  EXPECT_EQ(e.irq, 3);
}

TEST(TraceParseTest, TgidColumnAndMissingIrqInfoColumnParse) {
  // Captured with options/record-tgid=1 and options/irq-info=0.
  TraceEvent e;
  ASSERT_TRUE(ParseTraceLine(
      "            bash-9516    (-------) [001]  58424.487084: sched_switch: prev_comm=bash "
      "prev_pid=9516 prev_prio=120 prev_state=S ==> next_comm=bash next_pid=9525 next_prio=120",
      &e));
  EXPECT_EQ(e.comm, "bash");
  EXPECT_EQ(e.pid, 9516);
  EXPECT_EQ(e.ts_ns, Us(58424, 487084));
  EXPECT_EQ(e.next_pid, 9525);
  ASSERT_TRUE(ParseTraceLine(
      "           <...>-77      (   70) [000] d.h1. 3.5: irq_handler_exit: irq=1 ret=handled", &e));
  EXPECT_EQ(e.comm, "<...>");
  EXPECT_EQ(e.pid, 77);
  EXPECT_EQ(e.ts_ns, 3'500'000'000LL);
  EXPECT_EQ(e.type, EventType::kIrqExit);
}

TEST(TraceParseTest, HrtimerFieldsInEitherOrder) {
  TraceEvent e;
  ASSERT_TRUE(
      ParseTraceLine("   python3-9525    [001] d.h.. 58424.487372: hrtimer_expire_entry: "
                     "hrtimer=000000002514b33f function=hrtimer_wakeup now=58424487370685",
                     &e));
  EXPECT_EQ(e.function, "hrtimer_wakeup");
  EXPECT_EQ(e.now_ns, 58424487370685);
  EXPECT_EQ(e.hrtimer, "000000002514b33f");
  ASSERT_TRUE(ParseTraceLine(  // before 6.x: now before function
      "   <idle>-0   [002] d.h1. 10.000010: hrtimer_expire_entry: hrtimer=00000000deadbeef "
      "now=10000009000 function=tick_sched_timer/0x0",
      &e));
  EXPECT_EQ(e.now_ns, 10000009000);
  EXPECT_EQ(e.function, "tick_sched_timer/0x0");
}

TEST(TraceParseTest, LostMarkerTakesThePreviousLinesTime) {
  const std::vector<TraceEvent> events = ParseTrace(
      "  a-1 [001] d..2. 5.000001: softirq_entry: vec=1 [action=TIMER]\n"
      "CPU:1 [LOST 123 EVENTS]\n"
      "  a-1 [001] d..2. 5.000900: softirq_exit: vec=1 [action=TIMER]\n");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].type, EventType::kLost);
  EXPECT_EQ(events[1].lost, 123u);
  EXPECT_EQ(events[1].cpu, 1);
  EXPECT_EQ(events[1].ts_ns, Us(5, 1));
}

TEST(TraceParseTest, OddLinesAreRefusedWithoutCrashing) {
  const char* odd[] = {
      "",
      "#",
      "# tracer: nop",
      "[",
      "]",
      "-1 [",
      " [001]",
      "a-1 [001] d..2. : x:",
      "a-1 [001] d..2. 1.5:",
      "a-1 [001] d..2. 1.5: ",
      "a-1 [001] d..2. 1.5: no colon here",
      "a-1 [x01] d..2. 1.5: sched_switch: prev_comm=a",
      "a-b [001] d..2. 1.5: sched_switch: prev_comm=a",
      "a-1 [001] d..2. 1.1234567890: e: f",
      "a-1 [001] d..2. .5: e: f",
      "a-1 [001] d..2. 99999999999999999999.5: e: f",
      "CPU:x [LOST 1 EVENTS]",
      "CPU:1 [LOST many EVENTS]",
      "CPU:1 [LOST 5",
      "##### CPU 1 buffer started ####",
  };
  for (const char* line : odd) {
    TraceEvent e;
    EXPECT_FALSE(ParseTraceLine(line, &e)) << "'" << line << "'";
  }
  // Fields that are missing or malformed leave their defaults.
  TraceEvent e;
  ASSERT_TRUE(ParseTraceLine("a-1 [001] 1.5: sched_switch: prev_comm= ==> next_comm=", &e));
  EXPECT_EQ(e.next_pid, -1);
  ASSERT_TRUE(ParseTraceLine("a-1 [001] 1.5: sched_waking: comm=x pid=abc prio=", &e));
  EXPECT_EQ(e.next_pid, -1);
  ASSERT_TRUE(ParseTraceLine("a-1 [001] 1.5: irq_handler_entry: irq=-", &e));
  EXPECT_EQ(e.irq, -1);
}

TEST(TraceParseTest, EveryTruncationAndRandomCorruptionOfRealLinesIsSafe) {
  std::mt19937 rng(20);
  const std::string alphabet = " -[]:.=>0123456789abcdef\t#()/";
  std::size_t pos = 0;
  std::size_t parsed = 0;
  while (pos < kCaptured.size()) {
    std::size_t nl = kCaptured.find('\n', pos);
    if (nl == std::string_view::npos) nl = kCaptured.size();
    const std::string line(kCaptured.substr(pos, nl - pos));
    for (std::size_t n = 0; n <= line.size(); ++n) {
      // Each prefix lives in its own buffer, so a read past it is caught by ASan.
      const std::string prefix = line.substr(0, n);
      TraceEvent e;
      if (ParseTraceLine(prefix, &e)) {
        ++parsed;
        EXPECT_GE(e.ts_ns, 0);
      }
    }
    for (int i = 0; i < 200; ++i) {
      std::string mutated = line;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits; ++k) {
        mutated[rng() % mutated.size()] = alphabet[rng() % alphabet.size()];
      }
      TraceEvent e;
      (void)ParseTraceLine(mutated, &e);
    }
    pos = nl + 1;
  }
  EXPECT_GT(parsed, 46u) << "the whole lines parse, and prefixes cut inside the fields too";
  const std::vector<TraceEvent> events = ParseTrace(std::string(kCaptured) + "\n\n#\n\n");
  EXPECT_EQ(events.size(), 46u);
}

TEST(TraceAttributeTest, CapturedWindowSplitsIntoThreadsAndSoftirqsThatNeverExceedIt) {
  // task0 (9506) was woken at 58424.579363 by its hrtimer but python3 (same policy) kept the
  // CPU until 580218, then grpc_global_tim until 580389, then task0 ran.
  const std::vector<TraceEvent> events = ParseTrace(kCaptured);
  Target t;
  t.tid = 9506;
  t.begin_ns = Us(58424, 579361);
  t.end_ns = Us(58424, 580430);
  const Attribution a = Attribute(events, t);
  EXPECT_EQ(a.expiry_ns, 58424579361637) << "the hrtimer's now, finer than the line's us";
  EXPECT_EQ(a.timer_delay_ns, 0) << "python3 ran, the CPU was not idle";
  const ThreadRun* py = FindThread(a, 9525);
  ASSERT_NE(py, nullptr);
  EXPECT_EQ(py->comm, "python3");
  EXPECT_EQ(py->prio, 120);
  EXPECT_EQ(py->ns, 854'000) << "665 + 182 us before the switch, 7 us after task0 ran";
  EXPECT_EQ(py->count, 2u);
  const ThreadRun* grpc = FindThread(a, 9567);
  ASSERT_NE(grpc, nullptr);
  EXPECT_EQ(grpc->comm, "grpc_global_tim");
  EXPECT_EQ(grpc->ns, 171'000);
  EXPECT_EQ(grpc->count, 1u);
  EXPECT_EQ(FindThread(a, 9506), nullptr) << "the task's own run is not a cause";
  const Cause* sched = FindCause(a, "SCHED");
  const Cause* rcu = FindCause(a, "RCU");
  ASSERT_NE(sched, nullptr);
  ASSERT_NE(rcu, nullptr);
  EXPECT_EQ(sched->kind, CauseKind::kSoftirq);
  EXPECT_EQ(sched->ns, 2'000);
  EXPECT_EQ(rcu->ns, 8'000);
  EXPECT_EQ(rcu->count, 1u);
  EXPECT_EQ(a.oldest_ns, Us(58424, 576131));
  EXPECT_EQ(a.newest_ns, Us(58424, 582367));
  EXPECT_EQ(a.lost_in_window, 0u);
  ASSERT_FALSE(a.raw.empty());
  EXPECT_LE(a.raw.size(), kMaxRawLines);
}

TEST(TraceAttributeTest, IdleBeforeTheTasksExpiryIsTheTimerDelay) {
  const std::vector<TraceEvent> events = ParseTrace(
      "   task0-50      [001] d..2. 100.000000: sched_switch: prev_comm=task0 prev_pid=50 "
      "prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n"
      "  <idle>-0       [001] d.h1. 100.000300: hrtimer_expire_entry: hrtimer=0000000000000001 "
      "function=hrtimer_wakeup now=100000300000\n"
      "  <idle>-0       [001] d.h3. 100.000301: sched_waking: comm=task0 pid=50 prio=19 "
      "target_cpu=001\n"
      "  <idle>-0       [001] dNh1. 100.000303: hrtimer_expire_exit: hrtimer=0000000000000001\n"
      "   task0-50      [001] d..2. 100.000400: sched_switch: prev_comm=task0 prev_pid=50 "
      "prev_prio=19 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n");
  Target t;
  t.tid = 50;
  t.begin_ns = Us(100, 100);
  t.end_ns = Us(100, 320);
  Attribution a = Attribute(events, t);
  EXPECT_EQ(a.expiry_ns, Us(100, 300));
  EXPECT_EQ(a.timer_delay_ns, 200'000);
  EXPECT_TRUE(a.threads.empty());
  t.timer_delay = false;  // an execution-time window has no timer delay
  a = Attribute(events, t);
  EXPECT_EQ(a.timer_delay_ns, 0);
  // Another thread's wake-up is not the task's expiry.
  t.timer_delay = true;
  t.tid = 51;
  a = Attribute(events, t);
  EXPECT_EQ(a.expiry_ns, -1);
  EXPECT_EQ(a.timer_delay_ns, 0);
}

TEST(TraceAttributeTest, IrqAndSoftirqTimeIsTakenOutOfTheThreadItInterrupted) {
  const std::vector<TraceEvent> events = ParseTrace(
      "  <idle>-0  [001] d..2. 200.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 "
      "prev_prio=120 prev_state=R ==> next_comm=spin next_pid=999999 next_prio=4\n"
      "  spin-999999 [001] d.h.. 200.000100: irq_handler_entry: irq=11 name=virtio0\n"
      "  spin-999999 [001] d.h.. 200.000150: irq_handler_exit: irq=11 ret=handled\n"
      "  spin-999999 [001] ..s.. 200.000150: softirq_entry: vec=3 [action=NET_RX]\n"
      "  spin-999999 [001] d.H.. 200.000160: irq_handler_entry: irq=11 name=virtio0\n"
      "  spin-999999 [001] d.H.. 200.000170: irq_handler_exit: irq=11 ret=handled\n"
      "  spin-999999 [001] ..s.. 200.000200: softirq_exit: vec=3 [action=NET_RX]\n"
      "  spin-999999 [001] d..2. 200.001000: sched_switch: prev_comm=spin prev_pid=999999 "
      "prev_prio=4 prev_state=S ==> next_comm=task0 next_pid=50 next_prio=19\n");
  Target t;
  t.tid = 50;
  t.begin_ns = Us(200, 0);
  t.end_ns = Us(200, 1000);
  const Attribution a = Attribute(events, t);
  const ThreadRun* spin = FindThread(a, 999999);
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->ns, 900'000);
  EXPECT_EQ(spin->count, 1u);
  EXPECT_EQ(spin->prio, 4);
  EXPECT_EQ(ThreadDetail(spin->tid, spin->comm, spin->prio), "RT 95") << "gone: prio only";
  const Cause* irq = FindCause(a, "virtio0");
  ASSERT_NE(irq, nullptr);
  EXPECT_EQ(irq->kind, CauseKind::kIrq);
  EXPECT_EQ(irq->id, 11);
  EXPECT_EQ(irq->ns, 60'000);
  EXPECT_EQ(irq->count, 2u);
  const Cause* net = FindCause(a, "NET_RX");
  ASSERT_NE(net, nullptr);
  EXPECT_EQ(net->ns, 40'000);
  EXPECT_EQ(spin->ns + irq->ns + net->ns, t.end_ns - t.begin_ns) << "exclusive segments";
}

TEST(TraceAttributeTest, ThreadNameComesFromTheEventsNotTheStaleTaskColumn) {
  // The TASK column is looked up in saved_cmdlines when the file is read: a thread renamed after
  // it started (pthread_setname_np) showed its process's name there, and this kernel does not
  // trace its switch out of idle. Its own switch out carries the name it had.
  const std::vector<TraceEvent> events = ParseTrace(
      "  <idle>-0        [001] 400.000000: sched_waking: comm=rtl-spinner pid=77 prio=9 "
      "target_cpu=001\n"
      "  rtloop_explain_-77 [001] 400.000300: sched_waking: comm=task0 pid=50 prio=19 "
      "target_cpu=001\n"
      "  rtloop_explain_-77 [001] 400.004000: sched_switch: prev_comm=rtl-spinner prev_pid=77 "
      "prev_prio=9 prev_state=S ==> next_comm=task0 next_pid=50 next_prio=19\n");
  Target t;
  t.tid = 50;
  t.begin_ns = Us(400, 300);
  t.end_ns = Us(400, 4000);
  const Attribution a = Attribute(events, t);
  const ThreadRun* spin = FindThread(a, 77);
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->comm, "rtl-spinner");
  EXPECT_EQ(spin->prio, 9);
  EXPECT_EQ(spin->ns, 3'700'000);
}

// Found by explain_parsers_fuzzer (regressions/explain_parsers_fuzzer/pages-time-going-backwards):
// an event older than the one before it (a damaged page, an absolute stamp) made the next
// segment start earlier again, so the same time was counted twice and the causes summed past the
// window. Time never runs backwards in the replay: such an event is taken at the time before it.
TEST(TraceAttributeTest, AnEventOlderThanTheOneBeforeItNeverCountsTimeTwice) {
  const std::vector<TraceEvent> events = ParseTrace(
      "  hog-70 [001] d..2. 500.000000: sched_waking: comm=task0 pid=50 prio=19 target_cpu=001\n"
      "  hog-70 [001] d..2. 500.001000: sched_waking: comm=task0 pid=50 prio=19 target_cpu=001\n"
      "  hog-70 [001] d..2. 500.000100: sched_waking: comm=task0 pid=50 prio=19 target_cpu=001\n"
      "  hog-70 [001] d..2. 500.001000: sched_switch: prev_comm=hog prev_pid=70 prev_prio=120 "
      "prev_state=R ==> next_comm=task0 next_pid=50 next_prio=19\n");
  Target t;
  t.tid = 50;
  t.begin_ns = Us(500, 0);
  t.end_ns = Us(500, 1000);
  const Attribution a = Attribute(events, t);
  const ThreadRun* hog = FindThread(a, 70);
  ASSERT_NE(hog, nullptr);
  EXPECT_EQ(hog->ns, 1'000'000) << "the window once, not 1.9 ms";
}

TEST(TraceAttributeTest, LostEventsInTheWindowAreCountedAndTheGapIsNotAttributed) {
  const std::vector<TraceEvent> events = ParseTrace(
      "  hog-70 [001] d..2. 300.000000: softirq_entry: vec=1 [action=TIMER]\n"
      "CPU:1 [LOST 40 EVENTS]\n"
      "  hog-70 [001] d..2. 300.000500: sched_switch: prev_comm=hog prev_pid=70 prev_prio=120 "
      "prev_state=R ==> next_comm=task0 next_pid=50 next_prio=19\n");
  Target t;
  t.tid = 50;
  t.begin_ns = Us(300, 0);
  t.end_ns = Us(300, 500);
  const Attribution a = Attribute(events, t);
  EXPECT_EQ(a.lost_in_window, 40u);
  EXPECT_TRUE(a.threads.empty());
  EXPECT_TRUE(a.interrupts.empty());
}

TEST(TraceAttributeTest, NearestLinesKeepTheWindowAndItsClosestNeighbours) {
  std::string text;
  for (int i = 1; i <= 10; ++i) {
    text += "a-1 [000] 1.00000" + std::to_string(i - 1) + ": e: x\n";
  }
  const std::vector<TraceEvent> events = ParseTrace(text);
  ASSERT_EQ(events.size(), 10u);
  // Events at 0..9 us; window [4, 5] us.
  EXPECT_EQ(NearestLines(events, Us(1, 4), Us(1, 5), 4), (std::vector<std::size_t>{3, 4, 5, 6}));
  EXPECT_EQ(NearestLines(events, Us(1, 4), Us(1, 5), 3), (std::vector<std::size_t>{3, 4, 5}));
  // More lines inside than allowed: the window's first and last.
  EXPECT_EQ(NearestLines(events, Us(1, 1), Us(1, 8), 4), (std::vector<std::size_t>{1, 2, 7, 8}));
  EXPECT_EQ(NearestLines(events, Us(1, 0), Us(1, 9), 100).size(), 10u);
  EXPECT_TRUE(NearestLines({}, 0, 1, 4).empty());
}

TEST(TraceAttributeTest, SwitchInDistanceFindsTheNearestSwitchToTheThread) {
  const std::vector<TraceEvent> events = ParseTrace(kCaptured);
  EXPECT_EQ(SwitchInDistance(events, 9506, Us(58424, 580400)), 11'000);
  EXPECT_EQ(SwitchInDistance(events, 4242, Us(58424, 580400)), -1);
}

TEST(TraceTracefsTest, CpuMaskTextIsHexInGroupsOf32) {
  EXPECT_EQ(CpuMaskText({0, 1}), "3");
  EXPECT_EQ(CpuMaskText({1}), "2");
  EXPECT_EQ(CpuMaskText({4, 35}), "8,00000010");
  EXPECT_EQ(CpuMaskText({64}), "1,00000000,00000000");
}

}  // namespace
}  // namespace rtloop::explain::trace
