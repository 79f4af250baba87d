#include <cstdio>
#include <string>

#include "cyclic_options.h"
#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {

int PrintUsageError(const Status& status) {
  std::fprintf(stderr, "rtloop-cyclic: %s\nTry 'rtloop-cyclic --help' for the list of options.\n",
               telemetry::EscapeControlCharacters(status.message()).c_str());
  return kExitUsage;
}

std::string UsageText() {
  return R"(rtloop-cyclic: cyclictest 2.4's command line and output, measured by rtloop's executor
Usage:
rtloop-cyclic <options>

-a [CPUSET] --affinity     pin thread #N to the (N mod n)-th CPU of CPUSET (e.g. 2, 3-5,0,
                           !0, +1, all), or without CPUSET of the allowed CPUs. The main
                           thread is restricted to CPUSET too. Without -a/-S threads float.
-A USEC  --aligned=USEC    align thread wakeups: thread N starts N*USEC after thread 0
-b USEC  --breaktrace=USEC end the run when a latency exceeds USEC (ns with -N)
-c CLOCK --clock=CLOCK     select clock: 0 = CLOCK_MONOTONIC (default), 1 = CLOCK_REALTIME
         --default-system  don't write /dev/cpu_dma_latency
-d DIST  --distance=DIST   distance of thread intervals in us, default=500
-D       --duration=TIME   length of the run; append s, m, h or d (either case)
-F       --fifo=<path>     create a named pipe at path and write stats to it
-h       --histogram=US    dump a latency histogram (1..1000000 buckets) after the run;
                           all threads use the same interval
-H       --histofall=US    same as -h with an additional summary column
         --histfile=<path> dump the latency histogram to <path> instead of stdout
-i INTV  --interval=INTV   base interval of thread in us, default=1000
         --json=FILENAME   write final results into FILENAME, JSON formatted ('-': stdout)
         --laptop          don't write /dev/cpu_dma_latency (save battery power)
         --latency=PM_QOS  value written to /dev/cpu_dma_latency, default 0
-l LOOPS --loops=LOOPS     number of loops per thread; the run ends when the first thread
                           has done them; default=0 (endless)
         --mainaffinity=CPUSET  run the main thread on CPUSET
-m       --mlockall        lock current and future memory allocations
-M       --refresh_on_max  update the screen only on a new max latency
-N       --nsecs           print results in ns instead of us
-o RED   --oscope=RED      oscilloscope mode, reduce verbose output by RED (needs -v)
-p PRIO  --priority=PRIO   priority 0..99 of the measurement threads (SCHED_FIFO)
         --policy=NAME     other, normal, batch, idle, fifo or rr
         --priospread      thread N gets PRIO-N
-q       --quiet           print a summary only on exit
-r       --relative        use relative timer instead of absolute
-R       --resolution      check the clock resolution
         --secaligned [USEC]  align thread wakeups to the next full second plus USEC
-s       --system          use nanosleep
-S       --smp             one thread per CPU, pinned, same priority
         --spike=TRIGGER   record all spikes > TRIGGER
         --spike-nodes=N   maximum number of spikes recorded (default 1024)
         --smi             count SMIs (Intel CPUs with the msr driver)
-t       --threads         one thread per available CPU
-t [NUM] --threads=NUM     number of threads (default 1)
         --tracemark       write a trace mark when the -b limit is exceeded
-u       --unbuffered      force unbuffered output for live processing
-v       --verbose         print every sample: thread:cycle:latency
         --dbg_cyclictest  print debug information
-x       --posix_timers    use POSIX timers instead of clock_nanosleep
-n                         accepted and ignored (old cyclictest option)
-?       --help            print this help

rtloop extensions:
         --timerlat               wait on the kernel's timerlat_fd instead of sleeping
                                  (Linux >= 6.5), so that a running `rtla timerlat -U -c CPU
                                  -p INTERVAL` measures and explains these threads; needs -a
                                  (one CPU per thread) and one interval for all
         --telemetry[=ADDR]       serve the gRPC telemetry API while measuring (127.0.0.1)
         --token-file=FILE        clients must send this bearer token (gRPC, /metrics, /api)
         --tls-cert=FILE          serve TLS with this PEM certificate chain (with --tls-key)
         --tls-key=FILE           the certificate's PEM private key (with --tls-cert)
         --metrics[=ADDR]         serve Prometheus /metrics and the live page at / over HTTP
                                  while measuring (127.0.0.1:9101)
         --record=FILE            write every sample to FILE (binary sample log; FILE.partial
                                  until the run ended)
         --percentiles            print p50..p99.999 and max per thread after the run
                                  (on stderr with -q)
         --fail-above=US          exit 3 when any thread's max latency exceeds US
         --fail-percentile=P:US   exit 3 when any thread's P-th percentile exceeds US
         --fail-missed=N          exit 3 when any thread missed more than N releases
         --warmup=N               leave each thread's first N cycles out of the statistics
         --histogram-style=STYLE  2.4 (every row, default) or sparse (2.7+ layout)
         --max-over-time=FILE     write each thread's max latency per time window to FILE
         --max-window=MS          the --max-over-time window, default 1000 ms
         --keep-distance          keep -d's interval distance under -h (cyclictest drops it)
         --hdr-layout=P:R         the percentiles' histograms: P precision bits 4..10 (within
                                  2^-P: 10 = 0.1 %, 7 = 0.8 %), values below 2^R ns bucketed,
                                  R 20..37 (37 = 137 s, 30 = 1.07 s); default 10:37 (224 KiB a
                                  histogram, 2 per thread, 4 with --metrics); 7:30 takes 24 KiB
         --explain=FILE           explain the late cycles: for each, the causes ranked by
                                  their time (kernel trace events as root, /proc counters
                                  otherwise) as JSON in FILE ('-': stdout), a summary after
                                  the run
         --explain-above=US       a cycle is explained when its latency exceeds US (100)
         --explain-execution-above=US  ... or its execution time exceeds US (default: not)
         --check-options          check the command line as for a run, then exit 0 (or 2)
                                  without measuring or creating anything

Output files (--json, --histfile, --record, --max-over-time, --explain) are checked before
measuring and written as FILE.partial, renamed to FILE when complete; '-' is standard output
(not for --record and --max-over-time).

Environment: RTLOOP_GRPC_VERBOSE=1 shows gRPC's own log lines on stderr (off by default).

Exit status:
  0  done (also when -b ended the run)
  1  runtime error: privilege, system call, not enough memory (nothing or not all measured)
  2  bad command line: nothing measured, no file created
  3  a --fail-* bound was breached (stderr names the thread and the bound)
  4  a result could not be written completely (--json, --histfile, --record, --max-over-time,
     standard output or standard error; stderr says which); the JSON's return_code carries
     the status as well
)";
}

}  // namespace rtloop::cyclic
