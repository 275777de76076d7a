// perfcached — the disk probe (see probe.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/probe.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "db/fileio.h"

namespace db {
namespace {

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string FsName(long type) {
  switch (static_cast<unsigned long>(type)) {
    case EXT4_SUPER_MAGIC: return "ext2/3/4";
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case TMPFS_MAGIC: return "tmpfs (memory: an fsync is free and survives nothing)";
    case NFS_SUPER_MAGIC: return "nfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
    default: {
      char b[32];
      std::snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(type));
      return b;
    }
  }
}

}  // namespace

bool ProbeDisk(const std::string& dir, int fsyncs, ProbeResult* r, std::string* err) {
  struct statfs sf {};
  if (statfs(dir.c_str(), &sf) != 0) {
    *err = dir + ": " + std::strerror(errno);
    return false;
  }
  r->fs_type = FsName(static_cast<long>(sf.f_type));
  std::string path = dir + "/.perfcached-probe-" + std::to_string(getpid());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  struct Cleanup {
    int fd;
    std::string path;
    ~Cleanup() {
      close(fd);
      unlink(path.c_str());
    }
  } cleanup{fd, path};
  std::vector<char> block(4096, 'w');
  std::vector<double> lat;
  double t_end = NowS() + 3.0;
  for (int i = 0; i < fsyncs && NowS() < t_end; ++i) {
    double t0 = NowS();
    if (!fileio::WriteAll(fd, block.data(), block.size()) || fdatasync(fd) != 0) {
      *err = path + ": write / fdatasync: " + std::strerror(errno ? errno : ENOSPC);
      return false;
    }
    lat.push_back((NowS() - t0) * 1000.0);
  }
  std::sort(lat.begin(), lat.end());
  r->fsyncs = lat.size();
  if (!lat.empty()) {
    r->p50_ms = lat[lat.size() / 2];
    r->p99_ms = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
    r->max_ms = lat.back();
  }
  std::vector<char> chunk(size_t{1} << 20, 'W');
  double t0 = NowS();
  uint64_t total = 0;
  while (NowS() - t0 < 2.0 && total < (uint64_t{512} << 20)) {
    if (!fileio::WriteAll(fd, chunk.data(), chunk.size())) {
      *err = path + ": write: " + std::strerror(errno ? errno : ENOSPC) + " after " +
             std::to_string(total >> 20) + " MiB";
      return false;
    }
    total += chunk.size();
  }
  if (fdatasync(fd) != 0) {
    *err = path + ": fdatasync: " + std::strerror(errno);
    return false;
  }
  r->bytes_written = total;
  r->write_s = NowS() - t0;
  r->write_mb_s = r->write_s > 0 ? static_cast<double>(total) / 1048576.0 / r->write_s : 0;
  return true;
}

ProbeAdvice Recommend(const ProbeResult& r) {
  ProbeAdvice a;
  char b[256];
  if (r.p99_ms <= 2.0) {
    a.fsync = "always";
    std::snprintf(b, sizeof b,
                  "fsync = always: a write's reply waits for one fdatasync (p99 %.2f ms here), shared by every "
                  "write that arrives meanwhile (group commit); nothing acknowledged is lost", r.p99_ms);
  } else if (r.p99_ms <= 20.0) {
    a.fsync = "everysec";
    std::snprintf(b, sizeof b,
                  "fsync = everysec: an fdatasync takes up to %.1f ms (p99) here, which `always` adds to a "
                  "write's reply; choose always if that latency is acceptable", r.p99_ms);
  } else {
    a.fsync = "everysec";
    std::snprintf(b, sizeof b,
                  "fsync = everysec: this disk is slow to sync (p99 %.0f ms): `always` would hold every reply that "
                  "long; a crash loses up to about a second of writes", r.p99_ms);
  }
  a.why = b;
  // The ring absorbs what arrives while an fdatasync runs: at most the drain
  // rate times the p99, twice for margin; never below the default.
  double need_mb = 2.0 * r.write_mb_s * r.p99_ms / 1000.0;
  int ring = 16;
  while (ring < need_mb && ring < 1024) ring *= 2;
  a.ring_mb = ring;
  std::snprintf(b, sizeof b,
                "\n  ring_mb = %d: what arrives during a p99 fdatasync at this disk's %.0f MB/s, twice over "
                "(%.1f MB), at least the default 16",
                ring, r.write_mb_s, need_mb);
  a.why += b;
  return a;
}

}  // namespace db
