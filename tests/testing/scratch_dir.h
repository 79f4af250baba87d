// ScratchDir: a fresh folder under the system's temp directory for one test, removed with
// everything in it when the test ends (an ASSERT included).
//
//   const ScratchDir dir("token");
//   WriteFile(dir / "token.txt", "secret");
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace rtloop::telemetry::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("rtloop_it_" + name + "_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::filesystem::path operator/(const char* name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace rtloop::telemetry::testing
