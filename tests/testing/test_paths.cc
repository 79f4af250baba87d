// test_paths.h: the `<executable>.paths` file CMake writes next to each test program, read once.
#include "test_paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

namespace rtloop::testing {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "rtloop test paths: %s\n", what.c_str());
  std::exit(2);
}

std::string ExecutablePath() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size());
  if (n <= 0 || static_cast<size_t>(n) >= path.size()) {
    Fail(std::string("cannot read /proc/self/exe: ") + std::strerror(errno) +
         " (the test program finds its paths file next to itself)");
  }
  path.resize(static_cast<size_t>(n));
  return path;
}

struct Paths {
  std::string file;
  std::map<std::string, std::string, std::less<>> entries;
};

const Paths& Load() {
  static const Paths kPaths = [] {
    Paths p;
    p.file = ExecutablePath() + ".paths";
    std::ifstream in(p.file);
    if (!in) {
      Fail(p.file + " does not exist: configure and build the tests with CMake, which writes it " +
           "(rtloop_test_paths() in tests/CMakeLists.txt)");
    }
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos || eq == 0) {
        if (!line.empty()) Fail(p.file + ": a line is not key=value: \"" + line + "\"");
        continue;
      }
      p.entries.emplace(line.substr(0, eq), line.substr(eq + 1));
    }
    return p;
  }();
  return kPaths;
}

const std::string* Find(std::string_view key) {
  const Paths& paths = Load();
  const auto it = paths.entries.find(key);
  return it == paths.entries.end() ? nullptr : &it->second;
}

const std::string& Get(std::string_view key, const char* fix) {
  const std::string* value = Find(key);
  if (value == nullptr) Fail(Load().file + " has no \"" + std::string(key) + "\": " + fix);
  return *value;
}

}  // namespace

std::string TargetFile(std::string_view target) {
  return Get(target,
             "name the target in this test's rtloop_test_paths() (tests/CMakeLists.txt), or test "
             "HasTargetFile() first if the build may leave it out");
}

bool HasTargetFile(std::string_view target) { return Find(target) != nullptr; }

std::string SourcePath(std::string_view relative) {
  return Get("source_dir", "regenerate it with CMake") + "/" + std::string(relative);
}

std::string BuildPath(std::string_view relative) {
  return Get("binary_dir", "regenerate it with CMake") + "/" + std::string(relative);
}

}  // namespace rtloop::testing
