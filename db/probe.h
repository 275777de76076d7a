// perfcached — `perfcached -P DIR`: measure the disk the WAL would use and recommend a policy.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The probe writes a temporary file in DIR (removed after):
//   1. fsync latency: 4 KiB appended and fdatasync'ed, repeated (at most
//      `fsyncs` times or 3 s): p50, p99, max — what a reply waits for
//      under [wal] fsync = always;
//   2. sustained write rate: 1 MiB writes for up to 2 s (at most 512 MiB),
//      then one fdatasync, all timed — how fast the WAL process can drain.
// Recommend turns the figures into [wal] fsync and ring_mb (the ring must
// absorb what arrives while an fdatasync runs: twice the drain rate times
// the p99, at least the default 16 MiB).

#include <cstdint>
#include <string>

namespace db {

struct ProbeResult {
  std::string fs_type;           // from statfs, e.g. "ext4", "xfs", "tmpfs"
  uint64_t fsyncs = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  uint64_t bytes_written = 0;    // the sustained-rate pass
  double write_s = 0;
  double write_mb_s = 0;
};

bool ProbeDisk(const std::string& dir, int fsyncs, ProbeResult* r, std::string* err);

struct ProbeAdvice {
  const char* fsync;    // "always" | "everysec"
  int ring_mb;
  std::string why;      // one line per recommendation
};
ProbeAdvice Recommend(const ProbeResult& r);

}  // namespace db
