#include "cyclic_side_channels.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "rtloop/framework/status.h"

namespace rtloop::cyclic {

StatusFile::~StatusFile() {
  if (!path_.empty()) unlink(path_.c_str());
}

void StatusFile::Create() {
  struct stat st {};
  if (stat("/dev/shm", &st) != 0) return;
  path_ = "/dev/shm/cyclictest" + std::to_string(getpid());
  if (!Write("")) path_.clear();  // not ours: never removed at exit
}

bool StatusFile::Write(const std::string& block) {
  if (path_.empty()) return false;
  Result<telemetry::OutputFile> f =
      telemetry::OutputFile::Open(path_, {.what = "SIGUSR2 status file"});
  Status s = f.ok() ? f->Write(block) : f.status();
  if (s.ok()) s = f->Commit(/*sync=*/false);
  if (!s.ok() && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "WARN: %s\n", telemetry::EscapeControlCharacters(s.message()).c_str());
  }
  return s.ok();
}

FifoWriter::~FifoWriter() { Stop(); }

void FifoWriter::Start(telemetry::OutputFifo fifo, std::function<std::string()> lines) {
  fifo_ = std::move(fifo);
  lines_ = std::move(lines);
  thread_ = std::thread([this] {
    while (!stop_.load(std::memory_order_acquire)) {
      (void)fifo_.TryWrite(lines_());
      for (int i = 0; i < 10 && !stop_.load(std::memory_order_acquire); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  });
}

void FifoWriter::Stop() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_release);
    thread_.join();
  }
  fifo_.Remove();
}

}  // namespace rtloop::cyclic
