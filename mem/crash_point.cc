// perfcached — crash points (see crash_point.h).
// Copyright (c) 2026 the perfcached authors.
#include "mem/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace mem::crash {
namespace {

// Per process (a forked child inherits the armed site and starts counting
// from what its parent had: the driver arms in the child, after fork).
struct State {
  bool recording = false;
  std::string armed;
  uint64_t armed_at = 0;
  std::unordered_map<std::string, uint64_t> counts;
};
State& S() {
  static State s;  // allocates nothing until a process records or is armed
  return s;
}

}  // namespace

#ifdef PERFCACHED_CRASH_POINTS
void Point(const std::source_location& loc) {
  State& s = S();
  if (!s.recording && s.armed.empty()) return;
  const char* f = loc.file_name();
  const char* base = std::strrchr(f, '/');
  // Keep "dir/file.cc" so that sites read the same from any build directory.
  if (base) {
    const char* p = base;
    while (p > f && p[-1] != '/') --p;
    f = p;
  }
  std::string where = std::string(f) + ":" + std::to_string(loc.line());
  uint64_t n = ++s.counts[where];
  if (!s.armed.empty() && n == s.armed_at && where == s.armed) kill(getpid(), SIGKILL);
}
#endif

void Arm(const std::string& where, uint64_t occurrence) {
  State& s = S();
  s.armed = where;
  s.armed_at = occurrence;
  s.counts.clear();
}

void StartRecording() {
  State& s = S();
  s.recording = true;
  s.counts.clear();
}

std::vector<Site> Recorded() {
  std::vector<Site> v;
  for (auto& [w, n] : S().counts) v.push_back(Site{w, n});
  return v;
}

bool Enabled() {
#ifdef PERFCACHED_CRASH_POINTS
  return true;
#else
  return false;
#endif
}

}  // namespace mem::crash

#ifdef PERFCACHED_CANARY
namespace mem {
int CanaryFault() {
  static int fault = [] {
    const char* e = std::getenv("PERFCACHED_CANARY");
    return e ? std::atoi(e) : 0;
  }();
  return fault;
}
}  // namespace mem
#endif
