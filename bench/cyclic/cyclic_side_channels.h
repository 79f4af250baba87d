// cyclictest's live side channels (bench/cyclic/CYCLICTEST-2.4.md §5 j), which carry the T: lines
// while a run goes on: SIGUSR2's status file /dev/shm/cyclictest<pid>, where rt-tests'
// get_cyclictest_snapshot looks, and -F's named pipe, written every 500 ms while a reader has it
// open.
//
//   StatusFile status;
//   status.Create();                                        // exists from set-up to exit
//   status.Write(FormatStatusBlock(reports, format));       // on SIGUSR2
//   FifoWriter fifo;
//   fifo.Start(std::move(output_fifo), [&] { return FormatThreadLines(...); });
//   ... fifo.Stop();                                        // joins, removes the pipe
//
// Threading: StatusFile on one thread (the main loop). FifoWriter runs its own thread, which calls
// `lines` every 500 ms: `lines` must be safe to call from it (rtloop-cyclic's live reports read
// atomics only). Start()/Stop() on the controlling thread. Not RT-safe: file I/O, a thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "rtloop/telemetry/output_file.h"

namespace rtloop::cyclic {

// SIGUSR2's status file, through OutputFile like every output, so a snapshot is replaced whole (a
// reader never sees half of one) and a FIFO or device planted there is refused instead of
// blocking. Best effort: a failure is one warning on stderr, the run goes on.
class StatusFile {
 public:
  StatusFile() = default;
  StatusFile(const StatusFile&) = delete;
  StatusFile& operator=(const StatusFile&) = delete;
  ~StatusFile();  // removes the file if this run created it

  // Creates /dev/shm/cyclictest<pid> (empty); without /dev/shm, SIGUSR2 writes nothing, as with
  // cyclictest.
  void Create();
  // Replaces the file's contents by `block`. False when there is no file or writing failed.
  bool Write(const std::string& block);

 private:
  std::string path_;  // empty: no status file (none made, or not ours)
  bool warned_ = false;
};

// -F: a thread that hands `lines()` to the pipe's reader every 500 ms. Never blocks: without a
// reader (or with a full pipe) a round's lines are dropped.
class FifoWriter {
 public:
  FifoWriter() = default;
  FifoWriter(const FifoWriter&) = delete;
  FifoWriter& operator=(const FifoWriter&) = delete;
  ~FifoWriter();  // Stop()

  void Start(telemetry::OutputFifo fifo, std::function<std::string()> lines);
  // Joins the thread and removes the pipe (only the one this run created). Idempotent.
  void Stop();

 private:
  telemetry::OutputFifo fifo_;
  std::function<std::string()> lines_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

}  // namespace rtloop::cyclic
