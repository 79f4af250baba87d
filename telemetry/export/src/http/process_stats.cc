#include "process_stats.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace rtloop::telemetry::internal {
namespace {

// utime + stime (fields 14 and 15 of /proc/.../stat) in seconds; the comm field may hold spaces
// and parentheses, so fields are counted after its last ')'.
bool ReadCpuSeconds(const std::string& stat_path, double* seconds) {
  std::ifstream in(stat_path);
  std::string line;
  if (!std::getline(in, line)) return false;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  *seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
  return true;
}

std::uint64_t KilobytesField(const std::string& status, const char* key) {
  const std::size_t at = status.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(status.c_str() + at + std::strlen(key), nullptr, 10) * 1024;
}

}  // namespace

ProcessStats ReadProcessStats(const std::vector<int>& skip_tids) {
  ProcessStats p;
  {
    std::ifstream in("/proc/self/status");
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string status = buffer.str();
    p.ok = !status.empty();
    p.locked_bytes = KilobytesField(status, "\nVmLck:");
    p.resident_bytes = KilobytesField(status, "\nVmRSS:");
  }
  ReadCpuSeconds("/proc/self/stat", &p.cpu_seconds);
  std::map<std::string, ThreadCpu> by_name;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int tid = std::atoi(e->d_name);
      if (std::find(skip_tids.begin(), skip_tids.end(), tid) != skip_tids.end()) continue;
      const std::string base = std::string("/proc/self/task/") + e->d_name;
      std::ifstream comm_in(base + "/comm");
      std::string name;
      std::getline(comm_in, name);
      double seconds = 0.0;
      if (name.empty() || !ReadCpuSeconds(base + "/stat", &seconds)) continue;  // just exited
      ThreadCpu& t = by_name[name];
      t.name = name;
      t.cpu_seconds += seconds;
      ++t.threads;
    }
    closedir(dir);
  }
  for (auto& [name, t] : by_name) p.threads.push_back(std::move(t));
  return p;
}

}  // namespace rtloop::telemetry::internal
