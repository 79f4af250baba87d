// Helpers shared by the fuzzers in tests/fuzz: a check that stops the fuzzer with a message, and
// an in-memory file for code that reads paths.
//
// Threading: single-threaded, as libFuzzer calls LLVMFuzzerTestOneInput. Not RT-safe.
#pragma once

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

// An invariant the code under test must keep for every input: a violation is a finding (abort,
// which libFuzzer reports with the input that caused it).
#define RTLOOP_FUZZ_CHECK(cond)                                                          \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace rtloop::fuzz {

// A regular file in memory (memfd) holding the bytes of each input: Path() names it for code that
// opens paths (/proc/self/fd/N, a regular file: input_file.h's checks accept it).
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("rtloop-fuzz", MFD_CLOEXEC)) { RTLOOP_FUZZ_CHECK(fd_ >= 0); }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the content with `data` and returns the path.
  std::string Write(const std::uint8_t* data, std::size_t size) {
    RTLOOP_FUZZ_CHECK(ftruncate(fd_, 0) == 0);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      RTLOOP_FUZZ_CHECK(n > 0);
      done += static_cast<std::size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

// Splits `text` at '\n' (the corpus files hold one argument per line); a trailing newline does not
// add an empty word.
inline std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    out.emplace_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// A directory of the fuzzer's own for files the code under test writes, made on first use and
// removed, with what is in it, at exit. (The fuzzers never chdir: libFuzzer writes its crash
// artifacts to the working directory.)
inline const std::string& ScratchDirectory() {
  static char dir[] = "/tmp/rtloop-fuzz-XXXXXX";
  static const std::string path = [] {
    RTLOOP_FUZZ_CHECK(mkdtemp(dir) != nullptr);
    std::atexit([] {
      if (DIR* d = opendir(dir)) {
        while (const dirent* e = readdir(d)) {
          if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
      }
      rmdir(dir);
    });
    return std::string(dir);
  }();
  return path;
}

}  // namespace rtloop::fuzz
