// perfcached — crash points: every store to shared memory in a write path is
// a place a test build can kill the process (issue 7, "tests that can fail").
// Copyright (c) 2026 the perfcached authors.
#pragma once

// In a build with -DPERFCACHED_CRASH_POINTS (build-crash/, `make crash-points`)
// PC_CRASH_POINT() names a *site* (the file:line that calls it, directly or
// through the store helpers of mem/atomic_copy.h and cache/bucket.h) and
// counts its *occurrences* in the running process. When the process was
// armed for (site, occurrence) it kills itself with SIGKILL right there,
// before the store, exactly as an operator's kill -9 could. A recording
// process only counts. test/crash/crash_points.cc drives it: for every site
// and every occurrence of a bounded workload, a child dies at that point,
// then the survivor repairs through the daemon's own code and audits.
// In every other build PC_CRASH_POINT() is empty and the helpers take no
// location argument: zero cost.

#include <cstdint>
#include <string>
#include <vector>

#ifdef PERFCACHED_CRASH_POINTS
#include <source_location>
#endif

namespace mem::crash {

struct Site {
  std::string where;     // "file:line"
  uint64_t occurrences;  // hits while recording
};

#ifdef PERFCACHED_CRASH_POINTS
void Point(const std::source_location& loc = std::source_location::current());
#endif
// Kill at the `occurrence`-th hit (1-based) of `where`; "" disarms.
void Arm(const std::string& where, uint64_t occurrence);
// Count hits per site from now on (and forget earlier counts).
void StartRecording();
std::vector<Site> Recorded();
// True in a crash-point build.
bool Enabled();

}  // namespace mem::crash

#ifdef PERFCACHED_CRASH_POINTS
#define PC_CRASH_POINT() ::mem::crash::Point()
#define PC_LOC_PARAM , const std::source_location& pc_loc = std::source_location::current()
#define PC_LOC_POINT() ::mem::crash::Point(pc_loc)
#else
#define PC_CRASH_POINT() ((void)0)
#define PC_LOC_PARAM
#define PC_LOC_POINT() ((void)0)
#endif
