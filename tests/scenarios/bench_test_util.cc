#include "bench_test_util.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "test_paths.h"

using rtloop::testing::SourcePath;

namespace rtloop::bench::testing {

namespace {
int Counter() {
  static int n = 0;
  return n++;
}
}  // namespace

std::string ReadFile(const std::string& path) { return ::rtloop::testing::ReadWholeFile(path); }

RunResult Run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
              const std::vector<std::string>& env) {
  ::rtloop::testing::ChildConfig config;
  config.argv = argv;
  config.env = env;
  const ::rtloop::testing::ChildResult c = ::rtloop::testing::RunChild(config, timeout);
  RunResult r;
  r.status = c.status.value_or(-1);
  r.out = c.out;
  r.err = c.error.empty() ? c.err : c.error;
  return r;
}

pid_t LoadGroupOf(const std::string& err) {
  std::smatch m;
  static const std::regex kGroup("process group ([0-9]+)");
  return std::regex_search(err, m, kGroup) ? static_cast<pid_t>(std::stol(m[1].str())) : -1;
}

std::string LoadCgroupOf(const std::string& err) {
  std::smatch m;
  static const std::regex kCgroup("cgroup (/sys/fs/cgroup/[^ ,]+)");
  return std::regex_search(err, m, kCgroup) ? m[1].str() : "";
}

namespace {
template <typename Fn>
void ForEachProcess(Fn&& fn) {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t open_paren = stat.find('(');
    const std::size_t close_paren = stat.rfind(')');
    if (open_paren == std::string::npos || close_paren == std::string::npos) continue;
    std::istringstream f(stat.substr(close_paren + 2));
    char state = 0;
    long ppid = 0, pgrp = 0;
    f >> state >> ppid >> pgrp;
    if (state == 'Z' || state == 'X') continue;
    fn(static_cast<pid_t>(pid), static_cast<pid_t>(pgrp),
       stat.substr(open_paren + 1, close_paren - open_paren - 1));
  }
  closedir(dir);
}
}  // namespace

std::vector<std::string> GroupMembers(pid_t pgid) {
  std::vector<std::string> out;
  if (pgid <= 0) return out;
  ForEachProcess([&](pid_t pid, pid_t pgrp, const std::string& comm) {
    if (pgrp == pgid) out.push_back(comm + "(" + std::to_string(pid) + ")");
  });
  return out;
}

LoadReaper::~LoadReaper() {
  struct stat st {};
  const bool have_cgroup = !cgroup_.empty() && stat(cgroup_.c_str(), &st) == 0;
  if (GroupMembers(pgid_).empty() && !have_cgroup) return;
  ADD_FAILURE() << "the run's load was left running: killed by the test";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pgid_ > 1) kill(-pgid_, SIGKILL);
    if (!cgroup_.empty()) std::ofstream(cgroup_ + "/cgroup.kill") << "1";
    if (!cgroup_.empty()) rmdir(cgroup_.c_str());
    if (GroupMembers(pgid_).empty() && (cgroup_.empty() || stat(cgroup_.c_str(), &st) != 0)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string RunTagOf(const std::string& err) {
  std::smatch m;
  static const std::regex kTag("tag RTLOOP_BENCH_RUN=([0-9-]+)");
  return std::regex_search(err, m, kTag) ? m[1].str() : "";
}

int TaggedProcesses(const std::string& tag) {
  int n = 0;
  const std::string want = std::string("RTLOOP_BENCH_RUN=") + tag + '\0';
  ForEachProcess([&](pid_t pid, pid_t, const std::string&) {
    const std::string env = ReadFile("/proc/" + std::to_string(pid) + "/environ");
    if (env.find(want) != std::string::npos) ++n;
  });
  return n;
}

std::string ValidateSchema(const nlohmann::json& v, const nlohmann::json& s,
                           const std::string& path) {
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string()) {
      types.push_back(s["type"].get<std::string>());
    } else {
      for (const auto& t : s["type"]) types.push_back(t.get<std::string>());
    }
    bool ok = false;
    for (const std::string& t : types) {
      ok = ok || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
           (t == "string" && v.is_string()) || (t == "boolean" && v.is_boolean()) ||
           (t == "null" && v.is_null()) || (t == "number" && v.is_number()) ||
           (t == "integer" && v.is_number_integer());
    }
    if (!ok) return path + ": " + v.dump().substr(0, 80) + " is not " + s["type"].dump();
  }
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) return path + ": " + v.dump() + " not in " + s["enum"].dump();
  }
  if (v.is_object()) {
    if (s.contains("required")) {
      for (const auto& k : s["required"]) {
        if (!v.contains(k.get<std::string>())) return path + ": missing " + k.get<std::string>();
      }
    }
    if (s.contains("properties")) {
      for (const auto& [k, sub] : s["properties"].items()) {
        if (v.contains(k)) {
          std::string e = ValidateSchema(v[k], sub, path + "." + k);
          if (!e.empty()) return e;
        }
      }
    }
  }
  if (v.is_array() && s.contains("items")) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string e = ValidateSchema(v[i], s["items"], path + "[" + std::to_string(i) + "]");
      if (!e.empty()) return e;
    }
  }
  return "";
}

bool PngSize(const std::string& path, int* width, int* height) {
  const std::string d = ReadFile(path);
  static const char kSig[] = "\x89PNG\r\n\x1a\n";
  if (d.size() < 24 || d.compare(0, 8, std::string(kSig, 8)) != 0 || d.compare(12, 4, "IHDR") != 0)
    return false;
  auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned char>(d[at]) << 24) |
           (static_cast<unsigned char>(d[at + 1]) << 16) |
           (static_cast<unsigned char>(d[at + 2]) << 8) | static_cast<unsigned char>(d[at + 3]);
  };
  *width = be32(16);
  *height = be32(20);
  return true;
}

TempDir::TempDir(const std::string& name) {
  path_ = ::testing::TempDir() + "rtloop_bench_" + name + "_" + std::to_string(getpid()) + "_" +
          std::to_string(Counter());
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

bool TempDir::Write(const std::string& absolute, const std::string& text) const {
  const std::filesystem::path p = path_ + absolute;
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(p);
  out << text;
  return !ec && out.flush().good();
}

TempDir::~TempDir() {
  // Never throws: a file that disappears meanwhile (a process finishing its output) is retried,
  // and whatever cannot be removed stays rather than aborting the test binary.
  std::error_code ec;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::filesystem::remove_all(path_, ec);
    if (!ec) return;
  }
}

std::string Golden(const std::string& name) {
  const std::string text = ReadFile(SourcePath("tests/cyclic/golden") + "/" + name);
  return text.substr(text.find('\n') + 1);  // the first line is the command
}

std::string CheckGolden(const std::string& actual, const std::string& name) {
  const std::string path = SourcePath("tests/scenarios/golden") + "/" + name;
  if (std::getenv("RTLOOP_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    return "";
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return "missing golden file " + path + " (RTLOOP_UPDATE_GOLDEN=1 writes it)";
  std::ostringstream expected;
  expected << in.rdbuf();
  if (expected.str() == actual) return "";
  std::istringstream a(actual), e(expected.str());
  std::string la, le;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a && !more_e) break;
    if (la != le || more_a != more_e) {
      return path + " differs at line " + std::to_string(line) + ":\n  expected: " + le +
             "\n  actual:   " + la +
             "\n(RTLOOP_UPDATE_GOLDEN=1 rewrites it after an intended change)";
    }
  }
  return path + " differs (line ends or a final newline)";
}

}  // namespace rtloop::bench::testing
