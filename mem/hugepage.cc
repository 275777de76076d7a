// perfcached — hugepage tier ladder for the shared arena (Linux).
// Copyright (c) 2026 the perfcached authors.
#include "mem/hugepage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace mem {
namespace {

// ShmemPmdMapped / FilePmdMapped / AnonHugePages (kB) of the smaps entry
// that contains `p`.
long SmapsHugeKb(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (!f) return -1;
  char line[512];
  bool in = false;
  long best = 0;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  while (std::fgets(line, sizeof line, f)) {
    // A mapping header is "lo-hi perms offset dev inode [path]"; field
    // lines are "Name:   value kB". (The dev field "00:01" has a colon, so
    // the header cannot be told apart by the absence of one.)
    uintptr_t lo, hi;
    char perms[8];
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms) == 3) {
      in = (a >= lo && a < hi);
      continue;
    }
    if (!in) continue;
    long kb;
    if (std::sscanf(line, "ShmemPmdMapped: %ld kB", &kb) == 1 ||
        std::sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1 ||
        std::sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
      if (kb > best) best = kb;
    }
  }
  std::fclose(f);
  return best;
}

char* ReserveAligned(size_t bytes) {
  // Reserve PROT_NONE with 2 MiB of slack, then MAP_FIXED the shared mapping
  // at a 2 MiB boundary: shmem THP needs the VA and the shmem file offset to
  // be congruent mod 2 MiB, which an unaligned mapping silently is not.
  size_t span = bytes + kGroupSize;
  void* r = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  uintptr_t lo = reinterpret_cast<uintptr_t>(r);
  uintptr_t al = (lo + kGroupSize - 1) & ~(uintptr_t{kGroupSize} - 1);
  void* p = mmap(reinterpret_cast<void*>(al), bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    munmap(r, span);
    return nullptr;
  }
  if (al > lo) munmap(r, al - lo);
  uintptr_t end = al + bytes, rend = lo + span;
  if (rend > end) munmap(reinterpret_cast<void*>(end), rend - end);
  return static_cast<char*>(p);
}

}  // namespace

long MeminfoKb(const char* field) {
  FILE* f = std::fopen("/proc/meminfo", "re");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t fl = std::strlen(field);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, field, fl) == 0 && line[fl] == ':') {
      v = std::strtol(line + fl + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return v;
}

bool PopulateRange(char* p, size_t n, Tier tier) {
  if (n == 0) return true;
  if (madvise(p, n, MADV_POPULATE_WRITE) != 0) {
    if (errno != EINVAL || tier == Tier::kHugetlb) return false;
    // Kernel without MADV_POPULATE_WRITE (< 5.14): touch every page.
    long pg = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i += static_cast<size_t>(pg)) {
      __atomic_fetch_add(reinterpret_cast<unsigned char*>(p + i), 0, __ATOMIC_RELAXED);
    }
  }
  if (tier == Tier::kCollapse) (void)madvise(p, n, MADV_COLLAPSE);
  return true;
}

void ReleaseRange(char* p, size_t n, Tier tier) {
  if (tier == Tier::kHugetlb) return;  // a stale read could fault a new page in
  (void)madvise(p, n, MADV_REMOVE);
}

MapResult MapShared(size_t bytes, Tier best) {
  MapResult r;
  std::string why;
  if (best <= Tier::kHugetlb) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      if (madvise(p, kGroupSize, MADV_POPULATE_WRITE) == 0) {
        r.base = static_cast<char*>(p);
        r.bytes = bytes;
        r.tier = Tier::kHugetlb;
        r.note = "hugetlb: 2 MiB pages from the hugetlb pool";
        return r;
      }
      why += "hugetlb: no free huge page (";
      why += std::strerror(errno);
      why += "); ";
      munmap(p, bytes);
    } else {
      why += "hugetlb: mmap refused (";
      why += std::strerror(errno);
      why += "); ";
    }
  }
  char* p = ReserveAligned(bytes);
  if (!p) {
    r.note = std::string("mmap of ") + std::to_string(bytes >> 20) + " MiB failed: " +
             std::strerror(errno);
    return r;
  }
  r.base = p;
  r.bytes = bytes;
  if (best <= Tier::kThp) (void)madvise(p, bytes, MADV_HUGEPAGE);
  if (!PopulateRange(p, kGroupSize, Tier::kSmall)) {
    munmap(p, bytes);
    r.base = nullptr;
    r.note = "cannot fault the first 2 MiB of the arena";
    return r;
  }
  if (best <= Tier::kThp) {
    long kb = SmapsHugeKb(p);
    if (kb >= 2048) {
      r.tier = Tier::kThp;
      r.note = why + "thp: shmem transparent huge pages";
      return r;
    }
    why += "thp: shmem_enabled does not allow it; ";
  }
  if (best <= Tier::kCollapse) {
    long before = MeminfoKb("ShmemHugePages");
    int rc = madvise(p, kGroupSize, MADV_COLLAPSE);
    int e = errno;
    long after = MeminfoKb("ShmemHugePages");
    if (rc == 0 && after - before >= 2048) {
      r.tier = Tier::kCollapse;
      r.note = why + "collapse: MADV_COLLAPSE after faulting";
      return r;
    }
    why += std::string("collapse: ") + (rc == 0 ? "no huge page formed" : std::strerror(e)) + "; ";
  }
  r.tier = Tier::kSmall;
  r.note = why + "small: 4 KiB pages";
  return r;
}

const char* TierName(Tier t) {
  switch (t) {
    case Tier::kHugetlb: return "hugetlb";
    case Tier::kThp: return "thp";
    case Tier::kCollapse: return "collapse";
    case Tier::kSmall: return "small";
    case Tier::kNone: break;
  }
  return "none";
}

}  // namespace mem
