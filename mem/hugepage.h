// perfcached — mapping the arena on the best hugepage tier that works here.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstddef>
#include <string>

#include "mem/arena.h"

namespace mem {

struct MapResult {
  char* base = nullptr;
  size_t bytes = 0;
  Tier tier = Tier::kNone;
  std::string note;  // what was tried, why it failed, the sysctl that would help
};

// Reserve `bytes` (a multiple of kGroupSize) of shared anonymous memory at a
// 2 MiB-aligned address and find the best tier at or below `best` by trying
// each one on the first group (which stays populated). Never infers a tier
// from the kernel version.
MapResult MapShared(size_t bytes, Tier best);

// Fault [p, p+n) in (MADV_POPULATE_WRITE; touching as a fallback when the
// kernel lacks it, except on hugetlb where a touch could SIGBUS). On the
// collapse tier, also MADV_COLLAPSE the range. Returns false if the kernel
// could not give the memory.
bool PopulateRange(char* p, size_t n, Tier tier);

// Give [p, p+n) back to the kernel (shmem: MADV_REMOVE). Not on hugetlb.
void ReleaseRange(char* p, size_t n, Tier tier);

// Read a field (kB) of /proc/meminfo, -1 if absent.
long MeminfoKb(const char* field);

}  // namespace mem
