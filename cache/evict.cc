// perfcached — maxmemory and eviction (cache/evict.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/evict.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <string>
#include <vector>

#include "cache/access.h"
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

// The eviction loop looks at the clock every this many keys (Redis's).
constexpr int kClockEvery = 16;
// maxmemory-samples above this counts as this (a bounded scan per eviction).
constexpr uint32_t kMaxSamples = 64;
// Sampling rounds for one eviction before "no candidate".
constexpr int kSampleRounds = 16;

bool Volatile(EvictPolicy p) {
  return p == EvictPolicy::kVolatileLru || p == EvictPolicy::kVolatileLfu ||
         p == EvictPolicy::kVolatileRandom || p == EvictPolicy::kVolatileTtl;
}

// A sampled key. Its collection is the table it was read from (t: the
// header and its generation); the name is read only for the key that is
// evicted (a sample used to copy it five times).
struct Candidate {
  TableRef t;
  std::string key;
  int64_t expire_ms = 0;
  uint64_t version = 0;
  uint16_t access = 0;
  uint32_t rank = 0;  // LRU / LFU: AccessEvictRank, larger = evict first
  int cls = -1;       // the slab class of its record (-1: a large object)
  uint64_t order = 0;  // in the pool: rank << 40 | insertion count (of equal ranks the newest goes first)
};

// A collection, picked with probability proportional to its keys. The
// weights (ListCollections sums every process's statistics line of every
// collection) are this process's copy, refreshed every 100 ms: evictions
// come by the thousand per second, and a dropped collection only makes
// one sample miss (OpenCollection fails).
struct PickWeights {
  std::vector<CollectionInfo> infos;
  uint64_t total = 0;
  int64_t at_ms = 0;
};
thread_local PickWeights t_weights;
thread_local std::vector<SampledRecord> t_recs;  // Sample's, reused (its capacity)

// Volatile policies: the collections where a whole sample found no key
// with a TTL are left out of the pick for kNoTtlMs. The weights are all
// keys, not keys with a TTL (no collection counts those), and Redis
// samples each database's `expires`: without this, a db of keys with no
// TTL beside a small db of keys with one made most samples come back
// empty and the write answer -OOM while the small db had keys to evict.
// When every collection with keys is marked, the marks are forgotten.
constexpr int64_t kNoTtlMs = 1000;
struct NoTtlMark {
  std::string name;
  int64_t until_ms;
};
thread_local std::vector<NoTtlMark> t_no_ttl;

bool MarkedNoTtl(const std::string& name, int64_t now) {
  for (const NoTtlMark& m : t_no_ttl) {
    if (m.name == name && now < m.until_ms && now >= m.until_ms - kNoTtlMs) return true;
  }
  return false;
}

void MarkNoTtl(const std::string& name, int64_t now) {
  for (NoTtlMark& m : t_no_ttl) {
    if (m.name == name) {
      m.until_ms = now + kNoTtlMs;
      return;
    }
  }
  t_no_ttl.push_back({name, now + kNoTtlMs});
}

bool PickCollection(Ctx& c, bool vol, std::string* name) {
  PickWeights& w = t_weights;
  int64_t now = NowMs(c);
  if (w.infos.empty() || now - w.at_ms >= 100 || now < w.at_ms || w.total == 0) {
    w.infos = ListCollections(c);
    w.total = 0;
    for (const auto& ci : w.infos) w.total += ci.entries;
    w.at_ms = now;
  }
  if (w.total == 0) return false;
  uint64_t total = w.total;
  bool skip = false;
  if (vol && !t_no_ttl.empty() && !PC_CANARY(23)) {
    uint64_t unmarked = 0;
    for (const auto& ci : w.infos) unmarked += MarkedNoTtl(ci.name, now) ? 0 : ci.entries;
    if (unmarked == 0) {
      t_no_ttl.clear();
    } else {
      total = unmarked;
      skip = true;
    }
  }
  uint64_t r = DictRandom() % total;
  for (const auto& ci : w.infos) {
    if (skip && MarkedNoTtl(ci.name, now)) continue;
    if (r < ci.entries) {
      *name = ci.name;
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

void InitMemoryLimits(Catalog* cat) {
  cat->maxmemory.store(0, std::memory_order_relaxed);
  cat->maxmemory_policy.store(0, std::memory_order_relaxed);
  cat->maxmemory_samples.store(5, std::memory_order_relaxed);
  cat->lfu_log_factor.store(10, std::memory_order_relaxed);  // Redis's defaults
  cat->lfu_decay_time.store(1, std::memory_order_relaxed);
  cat->access_clock.store(static_cast<uint32_t>(time(nullptr)), std::memory_order_relaxed);
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

namespace {

// Sample `want` live keys of one collection (picked by weight); volatile
// policies see keys with a TTL only. False when there is nothing to
// sample.
//
// Each key is drawn uniformly over the collection's live keys
// (SampleUniform: a random position of the table, drawn again while it is
// empty; only the drawn record is copied). At the usual load of 4 keys a
// bucket a draw finds an empty position 5 times in 9: 16 draws a key
// (SampleDraws; more for a small table with overflow, at most 1,024 in
// all, 256 for volatile-*) all miss with probability 1e-4 for one key.
// Until session 17 the sample was whole buckets from a random one on,
// until `want` keys
// (SampleStep): a key of a crowded bucket was picked with probability
// 1 / its crowd, so crowded buckets and overflow chains were evicted less
// and grew (a fifth of the keys in overflow after 3,000,000 requests of
// bench/eviction under allkeys-random, which lost 2 points of hit rate).
//
// The walk tops up a sample the draws left short: a sparse table (a
// pre-sized collection after FLUSHALL, or one that has not merged back
// yet) or few keys with a TTL among many (those samples keep some of the
// whole-bucket bias). It reads whole buckets from a random one on: 8
// (128 for volatile-*), and if they hold no key at all up to 8,192 more
// before it says there is nothing (else a table of 10,000 keys in 131,072
// buckets answered -OOM to every other eviction).
bool Sample(Ctx& c, const MemoryLimits& l, uint32_t want, std::vector<Candidate>* out) {
  bool vol = Volatile(l.policy);
  std::string name;
  if (!PickCollection(c, vol, &name)) return false;
  TableRef t;
  if (OpenCollection(c, name, &t) != Status::kOk) {
    t_weights.at_ms = 0;  // dropped or renamed: the next sample reads the names again
    return true;
  }
  std::vector<SampledRecord>& recs = t_recs;
  recs.clear();
  uint32_t draws = 0;
  Status s = SampleUniform(c, t, want, SampleDraws(t, want, vol), vol, DictRandom, &recs, &draws);
  if (s == Status::kOk && recs.size() < want) {  // short: the walk tops it up
    uint64_t nb = detail::RouteBuckets(t.h->route.load(std::memory_order_acquire));
    uint64_t start = nb ? DictRandom() % nb : 0;
    constexpr uint32_t kSparseBuckets = 8192;
    uint64_t visited = 0;
    uint32_t left = want - static_cast<uint32_t>(recs.size());
    s = SampleStep(c, t, start, left, vol ? 128 : 8, vol, &recs, &visited);
    // (A volatile walk that went round the whole table has nothing more to read.)
    if (s == Status::kOk && recs.empty() && visited < nb && !PC_CANARY(15)) {
      uint64_t more = 0, rest = nb > visited ? nb - visited : 0;
      uint32_t budget = static_cast<uint32_t>(std::min<uint64_t>(kSparseBuckets, rest));
      if (budget > 0) s = SampleStep(c, t, start + visited, left, budget, vol, &recs, &more);
    }
  }
  out->reserve(out->size() + recs.size());
  for (SampledRecord& r : recs) {
    int cls = mem::ClassFor(RecordBytes(r.info.type, r.key.size(), r.info.vlen));
    out->push_back(Candidate{t, std::move(r.key), r.info.expire_ms, r.info.version, r.info.access, 0, cls});
  }
  if (recs.empty()) {
    t_weights.at_ms = 0;  // nothing there: the weights may be stale
    if (vol) MarkNoTtl(name, NowMs(c));
  }
  return true;
}

uint32_t Samples(const MemoryLimits& l) { return l.samples < kMaxSamples ? l.samples : kMaxSamples; }

// The LRU / LFU pool (Redis's eviction pool): the best victims seen by this
// process's recent samples. An entry is checked again before it is taken:
// a key read since it was sampled is dropped, not evicted. Unordered: an
// insert replaces the worst entry and a take removes the best, each one
// scan of 16 ranks and one move (a sorted pool shifted up to 16 entries,
// key strings and all, a sample).
constexpr size_t kPoolSize = 16;
thread_local std::vector<Candidate> t_pool;
thread_local uint64_t t_pool_seq = 0;
// The policy the pool's entries were sampled under: a switch (allkeys-lru
// to volatile-lru) empties it, or keys without a TTL sampled before would
// still be taken (Redis re-checks each entry in db->expires).
thread_local EvictPolicy t_pool_policy = EvictPolicy::kNoEviction;
// Ranks are below 2^24 (access.h: idle seconds modulo 2^13, or 255 -
// frequency); the insertion count wraps after 2^40 samples, which only
// reorders equal ranks for a moment.
constexpr uint64_t kOrderSeqMask = (uint64_t{1} << 40) - 1;

void PoolInsert(Candidate&& cand) {
  cand.order = uint64_t{cand.rank} << 40 | (++t_pool_seq & kOrderSeqMask);
  size_t worst = 0;
  if (t_pool.size() >= kPoolSize) {
    for (size_t i = 1; i < t_pool.size(); ++i) {
      if (t_pool[i].order < t_pool[worst].order) worst = i;
    }
    // No better than the worst entry: not kept. (An entry of the same
    // key ranked higher before a read stays; it is checked again before
    // it is taken.)
    if (cand.rank <= t_pool[worst].rank) return;
  }
  for (auto& e : t_pool) {
    // The same record: same table, same version (cheap to compare, rarely
    // equal for two keys), same key.
    if (e.version == cand.version && e.t.h == cand.t.h && e.t.gen == cand.t.gen && e.key == cand.key) {
      e = std::move(cand);
      return;
    }
  }
  if (t_pool.size() < kPoolSize) {
    t_pool.push_back(std::move(cand));
  } else {
    t_pool[worst] = std::move(cand);
  }
}

// Take the best entry out of a non-empty pool.
Candidate PoolTake() {
  size_t best = 0;
  for (size_t i = 1; i < t_pool.size(); ++i) {
    if (t_pool[i].order > t_pool[best].order) best = i;
  }
  Candidate v = std::move(t_pool[best]);
  if (best + 1 != t_pool.size()) t_pool[best] = std::move(t_pool.back());
  t_pool.pop_back();
  return v;
}

// on_evict gets the collection's name after the eviction (a rename since
// the sample is followed: the tombstone goes under the name the key had),
// or the name read just before it if the collection was dropped meanwhile
// (the tombstone must be written even then: a put of the key in another
// worker's ring may reach the WAL after the drop record, which names no
// key, and drops logged before session 22 carry no version either).
bool EvictVictim(Ctx& c, const Candidate& v, const EvictedFn& on_evict) {
  std::string name;
  if (on_evict && !detail::LiveTableName(*v.t.h, v.t, &name)) return false;  // dropped since the sample
  if (EvictKey(c, v.t, v.key, v.version) != Status::kOk) return false;       // changed or gone
  if (on_evict) {
    std::string now;
    if (detail::LiveTableName(*v.t.h, v.t, &now)) name = std::move(now);
    on_evict(name, v.key, v.version);
  }
  return true;
}

bool EvictByAccess(Ctx& c, const MemoryLimits& l, const EvictedFn& on_evict) {
  if (t_pool_policy != l.policy && !PC_CANARY(22)) {
    t_pool.clear();
    t_pool_policy = l.policy;
  }
  bool vol = Volatile(l.policy);
  for (int round = 0; round < kSampleRounds; ++round) {
    std::vector<Candidate> cands;
    if (!Sample(c, l, Samples(l), &cands)) {
      t_pool.clear();
      return false;
    }
    AccessParams p = LoadAccessParams(*c.catalog);
    for (auto& cand : cands) {
      cand.rank = AccessEvictRank(p, cand.access);
      PoolInsert(std::move(cand));
    }
    while (!t_pool.empty()) {
      Candidate v = PoolTake();
      // Still the record we ranked, not read since? (Probe does not touch;
      // nor is it a client's look-up: no keyspace hit or miss.)
      ReadInfo ri;
      if (!detail::Live(*v.t.h, v.t)) continue;  // dropped since
      Status ps;
      {
        NoStats quiet(c);
        ps = Probe(c, v.t, v.key, &ri);
      }
      if (ps != Status::kOk || ri.version != v.version) continue;
      if (vol && ri.expire_ms == 0 && !PC_CANARY(22)) continue;  // a volatile policy takes keys with a TTL only
      if (AccessEvictRank(LoadAccessParams(*c.catalog), ri.access) + 1 < v.rank) continue;
      if (EvictVictim(c, v, on_evict)) return true;
    }
  }
  return false;
}

}  // namespace

bool MakeRoomFor(Ctx& c, size_t bytes, int attempt) {
  MemoryLimits l = GetMemoryLimits(c);
  if (l.policy == EvictPolicy::kNoEviction) return false;
  int cls = mem::ClassFor(bytes);
  if (cls >= 0 && attempt >= kRoomByPolicy) {
    bool by_access = l.policy == EvictPolicy::kAllKeysLru || l.policy == EvictPolicy::kAllKeysLfu ||
                     l.policy == EvictPolicy::kVolatileLru || l.policy == EvictPolicy::kVolatileLfu;
    for (int round = 0; round < kSampleRounds; ++round) {
      std::vector<Candidate> cands;
      if (!Sample(c, l, Samples(l), &cands)) return false;
      AccessParams p = LoadAccessParams(*c.catalog);
      int best = -1;
      for (size_t i = 0; i < cands.size(); ++i) {
        Candidate& k = cands[i];
        if (k.cls != cls) continue;
        k.rank = by_access ? AccessEvictRank(p, k.access) : 0;
        if (best < 0) {
          best = static_cast<int>(i);
        } else if (by_access ? k.rank > cands[best].rank
                             : l.policy == EvictPolicy::kVolatileTtl && k.expire_ms < cands[best].expire_ms) {
          best = static_cast<int>(i);
        }
      }
      if (best >= 0 && EvictVictim(c, cands[best], c.on_evict)) return true;
    }
  }
  return EvictOne(c, l, c.on_evict);  // no key of that class found: by the policy
}

void ForgetEvictionPool() {
  std::vector<Candidate>().swap(t_pool);
  std::vector<SampledRecord>().swap(t_recs);
  t_weights = PickWeights{};
  std::vector<NoTtlMark>().swap(t_no_ttl);
}

bool EvictOne(Ctx& c, const MemoryLimits& l, const EvictedFn& on_evict) {
  if (l.policy == EvictPolicy::kNoEviction) return false;
  if (l.policy == EvictPolicy::kAllKeysLru || l.policy == EvictPolicy::kAllKeysLfu ||
      l.policy == EvictPolicy::kVolatileLru || l.policy == EvictPolicy::kVolatileLfu) {
    return EvictByAccess(c, l, on_evict);
  }
  bool random = l.policy != EvictPolicy::kVolatileTtl;
  for (int round = 0; round < kSampleRounds; ++round) {
    std::vector<Candidate> cands;
    if (!Sample(c, l, random ? 1 : Samples(l), &cands)) return false;
    if (cands.empty()) continue;
    size_t pick = 0;
    if (l.policy == EvictPolicy::kVolatileTtl) {
      for (size_t i = 1; i < cands.size(); ++i) {
        if (cands[i].expire_ms < cands[pick].expire_ms) pick = i;
      }
    } else {
      pick = DictRandom() % cands.size();
    }
    if (EvictVictim(c, cands[pick], on_evict)) return true;  // else gone meanwhile: sample again
  }
  return false;
}

uint64_t EvictionTimeLimitUs(int tenacity) {
  if (tenacity <= 0) return 0;
  if (tenacity <= 10) return 50 * static_cast<uint64_t>(tenacity);
  if (tenacity >= 100) return kNoTimeLimit;
  double us = 500.0;
  for (int i = 10; i < tenacity; ++i) us *= 1.15;
  return static_cast<uint64_t>(us);
}

namespace {
uint64_t MonoUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}
}  // namespace

Status EnsureMemory(Ctx& c, uint64_t* evicted, const EvictedFn& on_evict, const EvictBounds& b) {
  *evicted = 0;
  MemoryLimits l = GetMemoryLimits(c);
  if (l.maxmemory == 0) return Status::kOk;
  uint64_t start = 0;
  for (uint64_t i = 0;; ++i) {
    if (mem::UsedMemory(c.arena) <= l.maxmemory) return Status::kOk;
    if (b.max_keys > 0 && i >= static_cast<uint64_t>(b.max_keys)) break;
    if (i % kClockEvery == 0 && b.time_limit_us != kNoTimeLimit) {
      if (i == 0) start = MonoUs();
      else if (MonoUs() - start >= b.time_limit_us) break;
    }
    if (b.may_evict && !b.may_evict()) break;
    if (!EvictOne(c, l, on_evict)) return Status::kNoMem;
    ++*evicted;
  }
  // Still above after a bound, but the policy is making progress: the
  // command runs (Redis's EVICT_RUNNING when its eviction time limit hits;
  // a jump of used memory, e.g. a table segment, needs more than one
  // command's evictions to absorb).
  return Status::kOk;
}

}  // namespace cache
