// perfcached — maxmemory and eviction: making room before a write.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Redis's model: when used memory (mem::UsedMemory, INFO used_memory) is
// above `maxmemory`, a command that may grow memory (the RESP door's
// denyoom commands) first evicts keys chosen by the policy; if it cannot
// (noeviction, or nothing the policy may take) the command is refused
// with -OOM and nothing changes. Candidates come from sampling: a random
// collection (weighted by its keys), a random point of its table, about
// `samples` keys from there (cache/scan.h), as Redis samples.
//
// Policies: noeviction, allkeys-* (any key) and volatile-* (keys with a
// TTL only) by -random, -lru (the longest idle), -lfu (the least
// frequently used: cache/access.h), and volatile-ttl (the soonest to
// expire). LRU / LFU keep Redis's eviction pool: the best victims of this
// process's recent samples, each checked again before it goes (a key read
// since it was sampled, or rewritten, stays).

#include <cstdint>
#include <functional>
#include <string_view>

#include "cache/catalog.h"

namespace cache {

enum class EvictPolicy : uint8_t {
  kNoEviction = 0, kAllKeysLru, kAllKeysLfu, kAllKeysRandom,
  kVolatileLru, kVolatileLfu, kVolatileRandom, kVolatileTtl,
};
inline constexpr int kPolicyCount = 8;
const char* PolicyName(EvictPolicy p);
bool ParsePolicy(std::string_view name, EvictPolicy* out);  // Redis's names, any case

struct MemoryLimits {
  uint64_t maxmemory = 0;  // bytes; 0 = no limit (the arena's size still is one)
  EvictPolicy policy = EvictPolicy::kNoEviction;
  uint32_t samples = 5;    // maxmemory-samples (Redis's default)
};
MemoryLimits GetMemoryLimits(const Ctx& c);
void SetMemoryLimits(Ctx& c, const MemoryLimits& l);
void InitMemoryLimits(Catalog* cat);

// Called by `EnsureMemory` for each key it evicts: collection, key, and
// the version the evicted record had (a WAL tombstone carries it).
using EvictedFn = std::function<void(std::string_view, std::string_view, uint64_t)>;

// Before a write that may grow memory: evict until used memory is at most
// maxmemory. kOk when it is, when no limit is set, or when a bound was
// reached with the policy still evicting (as Redis lets a command run when
// its eviction time limit hits; the workers' ticks go on evicting); kNoMem
// when the policy cannot evict (the caller refuses the write: -OOM).
// *evicted counts the keys it removed (also added to each collection's
// evicted stat).
inline constexpr uint64_t kNoTimeLimit = UINT64_MAX;
struct EvictBounds {
  int max_keys = 0;              // 0 = no count bound (a worker's tick evicts one at a time)
  uint64_t time_limit_us = 500;  // checked every 16 keys as Redis does (EvictionTimeLimitUs)
  // Asked before each eviction (empty = always yes): false stops the loop
  // as a bound does. The WAL door says no while its ring has no room for a
  // tombstone or one failed: a key evicted without its tombstone would
  // come back at a restart.
  std::function<bool()> may_evict;
};
[[nodiscard]] Status EnsureMemory(Ctx& c, uint64_t* evicted, const EvictedFn& on_evict = {},
                                  const EvictBounds& bounds = {});
// maxmemory-eviction-tenacity (0..100, Redis's default 10) as a time
// bound for one command's evictions, Redis's curve: 50 us a step up to
// 10 (500 us), then 15% more a step, 100 = none (kNoTimeLimit).
uint64_t EvictionTimeLimitUs(int tenacity);

// One eviction by the policy, whatever the memory; false when there is no
// candidate.
bool EvictOne(Ctx& c, const MemoryLimits& l, const EvictedFn& on_evict = {});
// The arena has no cell of `bytes` to give (kNoMem) and the policy evicts
// (any but noeviction, with or without maxmemory): evict one key. The
// first kRoomByPolicy attempts of a write evict by the policy alone (the
// keys it says go first go, whatever their size); after that, a key whose
// record has a cell of the same class is preferred (its cell serves the
// write at once: memcached's per-class eviction), since another class frees
// memory for this one only when a whole page comes free. `attempt`: how many
// this write made before. False when the policy cannot evict. Callers retry
// the allocation after each.
inline constexpr int kRoomByPolicy = 32;
bool MakeRoomFor(Ctx& c, size_t bytes, int attempt);

// Empty this thread's LRU / LFU candidate pool (and free its memory). The
// pool holds table header pointers of the arena it sampled: a thread that
// evicts in one arena and then another (tests with several fixtures) must
// call this between them.
void ForgetEvictionPool();

}  // namespace cache
