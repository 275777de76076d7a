// perfcached — maxmemory and eviction (cache/evict.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/evict.h"

#include <cctype>
#include <string>
#include <vector>

#include "cache/dict.h"
#include "cache/internal.h"
#include "cache/scan.h"
#include "mem/slab.h"

namespace cache {
namespace {

constexpr const char* kNames[kPolicyCount] = {
    "noeviction",   "allkeys-lru",  "allkeys-lfu",     "allkeys-random",
    "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
};

// Keys a call may evict before it gives up (Redis bounds its eviction loop
// by time; a count is the same bound on a cache without a clock per key).
constexpr int kMaxEvictionsPerCall = 256;
// maxmemory-samples above this counts as this (a bounded scan per eviction).
constexpr uint32_t kMaxSamples = 64;
// Sampling rounds for one eviction before "no candidate".
constexpr int kSampleRounds = 16;

bool Volatile(EvictPolicy p) {
  return p == EvictPolicy::kVolatileLru || p == EvictPolicy::kVolatileLfu ||
         p == EvictPolicy::kVolatileRandom || p == EvictPolicy::kVolatileTtl;
}

struct Candidate {
  TableRef t;
  std::string coll, key;
  int64_t expire_ms = 0;
};

// A collection, picked with probability proportional to its keys.
bool PickCollection(Ctx& c, std::string* name, uint32_t* level) {
  std::vector<CollectionInfo> infos = ListCollections(c);
  uint64_t total = 0;
  for (const auto& ci : infos) total += ci.entries;
  if (total == 0) return false;
  uint64_t r = DictRandom() % total;
  for (const auto& ci : infos) {
    if (r < ci.entries) {
      *name = ci.name;
      *level = ci.level;
      return true;
    }
    r -= ci.entries;
  }
  return false;
}

}  // namespace

const char* PolicyName(EvictPolicy p) {
  auto i = static_cast<size_t>(p);
  return i < kPolicyCount ? kNames[i] : "noeviction";
}

bool ParsePolicy(std::string_view name, EvictPolicy* out) {
  for (int i = 0; i < kPolicyCount; ++i) {
    std::string_view n = kNames[i];
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t k = 0; k < n.size() && eq; ++k) {
      eq = std::tolower(static_cast<unsigned char>(name[k])) == n[k];
    }
    if (eq) {
      *out = static_cast<EvictPolicy>(i);
      return true;
    }
  }
  return false;
}

bool PolicyBuilt(EvictPolicy p) {
  return p == EvictPolicy::kNoEviction || p == EvictPolicy::kAllKeysRandom ||
         p == EvictPolicy::kVolatileRandom || p == EvictPolicy::kVolatileTtl;
}

void InitMemoryLimits(Catalog* cat) {
  cat->maxmemory.store(0, std::memory_order_relaxed);
  cat->maxmemory_policy.store(0, std::memory_order_relaxed);
  cat->maxmemory_samples.store(5, std::memory_order_relaxed);
}

MemoryLimits GetMemoryLimits(const Ctx& c) {
  MemoryLimits l;
  l.maxmemory = c.catalog->maxmemory.load(std::memory_order_relaxed);
  uint32_t p = c.catalog->maxmemory_policy.load(std::memory_order_relaxed);
  l.policy = p < kPolicyCount ? static_cast<EvictPolicy>(p) : EvictPolicy::kNoEviction;
  l.samples = c.catalog->maxmemory_samples.load(std::memory_order_relaxed);
  if (l.samples == 0) l.samples = 5;
  return l;
}

void SetMemoryLimits(Ctx& c, const MemoryLimits& l) {
  c.catalog->maxmemory_samples.store(l.samples, std::memory_order_relaxed);
  c.catalog->maxmemory_policy.store(static_cast<uint32_t>(l.policy), std::memory_order_relaxed);
  c.catalog->maxmemory.store(l.maxmemory, std::memory_order_relaxed);
}

bool EvictOne(Ctx& c, const MemoryLimits& l, const EvictedFn& on_evict) {
  if (l.policy == EvictPolicy::kNoEviction || !PolicyBuilt(l.policy)) return false;
  bool vol = Volatile(l.policy);
  uint32_t samples = l.samples < kMaxSamples ? l.samples : kMaxSamples;
  for (int round = 0; round < kSampleRounds; ++round) {
    std::string name;
    uint32_t level = 0;
    if (!PickCollection(c, &name, &level)) return false;
    TableRef t;
    if (OpenCollection(c, name, &t) != Status::kOk) continue;
    // About `samples` keys from a random point of the table (a bucket holds
    // about four at the default load).
    std::vector<Candidate> cands;
    int64_t now = NowMs(c);
    // A SCAN cursor names a hash residue at a table level (cache/scan.cc):
    // a random residue at the current level.
    if (level > kMaxLevel) level = kMaxLevel;
    uint64_t cursor = (DictRandom() & ((uint64_t{1} << level) - 1)) << 6 | level, next = 0;
    ScanFilter all;
    for (int step = 0; step < 4 && cands.size() < samples; ++step) {
      Status s = ScanStep(c, t, cursor, (samples + 3) / 4, all,
                          [&](const ScanItem& it) {
                            if (vol && it.info.expire_ms == 0) return;
                            if (it.info.expire_ms != 0 && it.info.expire_ms <= now) return;
                            cands.push_back(Candidate{t, name, std::string(it.key), it.info.expire_ms});
                          },
                          &next);
      if (s != Status::kOk || next == 0) break;
      cursor = next;
    }
    if (cands.empty()) continue;
    size_t pick = 0;
    if (l.policy == EvictPolicy::kVolatileTtl) {
      for (size_t i = 1; i < cands.size(); ++i) {
        if (cands[i].expire_ms < cands[pick].expire_ms) pick = i;
      }
    } else {
      pick = DictRandom() % cands.size();
    }
    const Candidate& v = cands[pick];
    if (Del(c, v.t, v.key) != Status::kOk) continue;  // gone meanwhile: sample again
    detail::Count(c, *v.t.h, kStatEvicted);
    if (on_evict) on_evict(v.coll, v.key);
    return true;
  }
  return false;
}

Status EnsureMemory(Ctx& c, uint64_t* evicted, const EvictedFn& on_evict) {
  *evicted = 0;
  MemoryLimits l = GetMemoryLimits(c);
  if (l.maxmemory == 0) return Status::kOk;
  for (int i = 0; i < kMaxEvictionsPerCall; ++i) {
    if (mem::UsedMemory(c.arena) <= l.maxmemory) return Status::kOk;
    if (!EvictOne(c, l, on_evict)) return Status::kNoMem;
    ++*evicted;
  }
  return mem::UsedMemory(c.arena) <= l.maxmemory ? Status::kOk : Status::kNoMem;
}

}  // namespace cache
