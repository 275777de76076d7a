// perfcached — SCAN over a growing/shrinking linear-hash table.
// Copyright (c) 2026 the perfcached authors.
//
// HOW IT WORKS. The cursor names a *hash residue*, not a bucket: it encodes
// (r, L0) where L0 is the table level when the scan started and r runs over
// 0 .. 2^L0-1. Visiting r returns every key whose hash is r mod 2^L0:
//   - table level L >= L0: those keys live exactly in the buckets
//     x = r, r + 2^L0, r + 2*2^L0, ... below nbuckets (a bucket's keys all
//     share its index's low L bits);
//   - L < L0 (the table shrank): they all share their low L+1 bits and so
//     route to one bucket, Route(r); other keys there are filtered out.
// Overflow entries are found through the overflow heads that residue maps
// to (heads are indexed by the low 10 hash bits). A visit reads its buckets
// lock-free and is repeated if the routing word changed meanwhile, so no
// split or merge can move a key across the visit unseen.
// GUARANTEE (Redis SCAN): a key present for the whole scan is returned at
// least once; a key may be returned twice only if a visit was retried
// (never within one successful visit). The cursor stays valid across any
// number of splits and merges. A residue whose visits keep overlapping
// route changes is visited under the table's admin lock (kReadRetries).
// LIMITS: a residue may cover many buckets when the table grew a lot since
// the scan started (2^(L-L0) buckets per residue).
#include <algorithm>

#include "cache/glob.h"
#include "cache/internal.h"
#include "cache/table.h"

namespace cache {

using namespace detail;

namespace {

struct Item {
  std::string key;
  std::string value;
  ReadInfo info;
};

// Copy out key, meta and (optionally) value of one record. Lengths clamped.
bool CopyItem(const mem::Arena& a, Off rec, bool values, uint32_t cap, Item* it) {
  size_t bound = mem::CellBound(a, rec);
  if (bound < kRecHdr) return false;
  RecView v{a.At(rec)};
  size_t klen = v.klen();
  if (klen > bound - kRecHdr) return false;
  uint8_t type = v.type();
  size_t voff = ValueOffset(type, klen);
  size_t vlen = v.vlen();
  vlen = voff > bound ? 0 : std::min(vlen, bound - voff);
  it->key.resize(klen);
  mem::AtomicCopyOut(it->key.data(), v.key(), klen);
  it->info = ReadInfo{type, static_cast<uint32_t>(vlen), v.expire(), v.version(), v.access()};
  if (values && vlen <= cap) {
    it->value.resize(vlen);
    mem::AtomicCopyOut(it->value.data(), v.value(type, klen), vlen);
  }
  return true;
}

void SnapshotBucket(Ctx& c, const TableHeader& h, uint64_t idx, bool values, uint32_t cap,
                    std::vector<Item>* out) {
  const mem::Arena& a = c.arena;
  Bucket* b = BucketAt(a, h, idx);
  if (!b) return;
  size_t base = out->size();
  for (int tries = 0; tries < kReadRetries; ++tries) {
    out->resize(base);
    uint32_t s1 = b->seq.load(std::memory_order_acquire);
    if (s1 & 1) continue;
    uint32_t used = UsedOf(*b);
    for (uint32_t i = 0; i < used; ++i) {
      Item it;
      if (CopyItem(a, SlotAt(*b, static_cast<int>(i)), values, cap, &it)) out->push_back(std::move(it));
    }
    mem::SeqReadFence();
    if (b->seq.load(std::memory_order_relaxed) == s1) return;
  }
  out->resize(base);
  LockBucket(c, h, idx, *b);
  uint32_t used = UsedOf(*b);
  for (uint32_t i = 0; i < used; ++i) {
    Item it;
    if (CopyItem(a, SlotAt(*b, static_cast<int>(i)), values, cap, &it)) out->push_back(std::move(it));
  }
  mem::Unlock(b->lock);
}

void SnapshotOverflow(Ctx& c, TableHeader& h, uint64_t r, uint32_t l0, bool values, uint32_t cap,
                      std::vector<Item>* out) {
  const mem::Arena& a = c.arena;
  uint32_t bits = std::min<uint32_t>(l0, kOvfBits);
  uint64_t step = uint64_t{1} << bits;
  Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
  size_t base = out->size();
  for (int tries = 0;; ++tries) {
    bool locked = tries >= kReadRetries;
    if (locked) LockOverflow(c, h);
    out->resize(base);
    uint32_t s1 = h.ovf.seq.load(std::memory_order_acquire);
    if ((s1 & 1) && !locked) continue;
    for (uint64_t j = r & (step - 1); j < kOvfHeads; j += step) {
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(&heads[j]); node != 0 && guard-- > 0;) {
        if (mem::CellBound(a, node) < kNodeBytes) break;
        Item it;
        if (CopyItem(a, mem::LoadOff(a.At(node) + kNodeRec), values, cap, &it)) {
          out->push_back(std::move(it));
        }
        node = mem::LoadOff(a.At(node) + kNodeNext);
      }
    }
    if (locked) {
      mem::Unlock(h.ovf.lock);
      return;
    }
    mem::SeqReadFence();
    if (h.ovf.seq.load(std::memory_order_relaxed) == s1) return;
  }
}

// A sampled record joins `out` unless it expired (or has no TTL and
// only those are wanted).
bool KeepSampled(Item& it, bool ttl_only, int64_t now, std::vector<SampledRecord>* out) {
  if (ttl_only && it.info.expire_ms == 0) return false;
  if (it.info.expire_ms != 0 && it.info.expire_ms <= now) return false;
  out->push_back(SampledRecord{std::move(it.key), it.info});
  return true;
}

// The draw positions of one overflow chain (none without overflow): 4 +
// twice the mean chain rounded up, or the longest chain this process has
// seen in the table lately if that is longer (a chain longer than its
// positions has its keys drawn cap / length as often: they would be
// evicted less and the chain would stay long). The longest is forgotten
// every 4,096 samples of the table, so one long chain since merged away
// does not slow the draws for ever.
struct ChainHint {
  const TableHeader* h = nullptr;
  uint64_t gen = 0;
  uint64_t longest = 0;
  uint32_t age = 0;
};
thread_local ChainHint t_hints[8];  // the tables sampled lately, taken over in turn
thread_local uint32_t t_next_hint = 0;

ChainHint& HintFor(const TableRef& t) {
  for (ChainHint& x : t_hints) {
    if (x.h == t.h && x.gen == t.gen) return x;
  }
  ChainHint& x = t_hints[t_next_hint++ % 8];
  x = ChainHint{t.h, t.gen, 0, 0};
  return x;
}

uint64_t ChainCap(uint64_t ovf, const ChainHint& hint) {
  return ovf ? std::max<uint64_t>(4 + 2 * ((ovf + kOvfHeads - 1) / kOvfHeads), hint.longest) : 0;
}

// One record of a uniform draw (SampleUniform): position `slot` of bucket
// `idx`, read inside the bucket's seqlock bracket. False when the
// position is empty (a rejected draw) or the bucket kept changing (the
// sample is only a hint: the evictor checks its victim again).
bool CopyPosition(const mem::Arena& a, const TableHeader& h, uint64_t idx, uint32_t slot, Item* it) {
  Bucket* b = BucketAt(a, h, idx);
  if (!b) return false;
  for (int tries = 0; tries < kReadRetries; ++tries) {
    uint32_t s1 = b->seq.load(std::memory_order_acquire);
    if (s1 & 1) continue;
    if (slot >= UsedOf(*b)) {
      mem::SeqReadFence();
      if (b->seq.load(std::memory_order_relaxed) == s1) return false;
      continue;
    }
    bool ok = CopyItem(a, SlotAt(*b, static_cast<int>(slot)), false, 0, it);
    mem::SeqReadFence();
    if (b->seq.load(std::memory_order_relaxed) == s1) return ok;
  }
  return false;
}

// Position `pos` of overflow chain `chain` (a draw of SampleUniform),
// read inside the overflow seqlock bracket. A chain longer than `cap`
// takes a new random position (rnd) modulo its length instead (its keys drawn cap /
// length as often as the rest, but none out of reach) and its length
// goes into *longest, which raises cap for the next samples.
bool CopyChainPosition(const mem::Arena& a, TableHeader& h, uint64_t chain, uint64_t pos, uint64_t cap,
                       uint64_t (*rnd)(), Item* it, uint64_t* longest) {
  const Off* heads = reinterpret_cast<const Off*>(a.At(h.ovf.heads));
  if (mem::LoadOff(&heads[chain]) == 0) return false;  // most draws of a sparse overflow
  for (int tries = 0; tries < kReadRetries; ++tries) {
    uint32_t s1 = h.ovf.seq.load(std::memory_order_acquire);
    if (s1 & 1) continue;
    uint64_t n = 0;
    Off pick = 0;
    uint32_t guard = 1u << 16;
    for (Off node = mem::LoadOff(&heads[chain]); node != 0 && guard-- > 0; ++n) {
      if (mem::CellBound(a, node) < kNodeBytes) break;
      if (n == pos) pick = node;
      node = mem::LoadOff(a.At(node) + kNodeNext);
    }
    if (n > cap) {
      *longest = std::max(*longest, n);
      uint64_t want = rnd() % n, k = 0;
      pick = 0;
      for (Off node = mem::LoadOff(&heads[chain]); node != 0 && k <= want; ++k) {
        if (mem::CellBound(a, node) < kNodeBytes) break;
        if (k == want) pick = node;
        node = mem::LoadOff(a.At(node) + kNodeNext);
      }
    }
    bool ok = pick != 0 && CopyItem(a, mem::LoadOff(a.At(pick) + kNodeRec), false, 0, it);
    mem::SeqReadFence();
    if (h.ovf.seq.load(std::memory_order_relaxed) == s1) return ok;
  }
  return false;
}

}  // namespace

Status SampleUniform(Ctx& c, const TableRef& t, uint32_t want, uint32_t max_draws, bool ttl_only,
                     uint64_t (*rnd)(), std::vector<SampledRecord>* out, uint32_t* draws) {
  TableHeader& h = *t.h;
  *draws = 0;
  if (h.gen.load(std::memory_order_acquire) != t.gen || h.state.load() != kTableLive) {
    return Status::kStale;
  }
  const mem::Arena& a = c.arena;
  int64_t now = NowMs(c);
  ChainHint& hint = HintFor(t);
  if (++hint.age % 4096 == 0) hint.longest = 0;
  for (uint32_t found = 0; found < want && *draws < max_draws;) {
    ++*draws;
    uint64_t nb = RouteBuckets(h.route.load(std::memory_order_acquire));
    if (nb == 0) break;
    uint64_t cap = ChainCap(h.ovf.count.load(std::memory_order_acquire), hint);
    uint64_t in_buckets = nb * kLive;
    uint64_t x = rnd() % (in_buckets + kOvfHeads * cap);
    Item it;
    bool got = x < in_buckets ? CopyPosition(a, h, x / kLive, static_cast<uint32_t>(x % kLive), &it)
                              : CopyChainPosition(a, h, (x - in_buckets) / cap, (x - in_buckets) % cap, cap,
                                                  rnd, &it, &hint.longest);
    if (got && KeepSampled(it, ttl_only, now, out)) ++found;
  }
  if (h.gen.load(std::memory_order_acquire) != t.gen) return Status::kStale;
  return Status::kOk;
}

uint32_t SampleDraws(const TableRef& t, uint32_t want, bool ttl_only) {
  uint64_t nb = RouteBuckets(t.h->route.load(std::memory_order_acquire));
  uint64_t cap = ChainCap(t.h->ovf.count.load(std::memory_order_acquire), HintFor(t));
  uint64_t in_buckets = nb * kLive, all = in_buckets + kOvfHeads * cap;
  uint64_t per_key = in_buckets ? 16 * ((all + in_buckets - 1) / in_buckets) : 16;
  uint64_t limit = ttl_only ? 256 : std::max<uint64_t>(1024, 16 * uint64_t{want});
  return static_cast<uint32_t>(std::min(limit, per_key * want));
}

Status ScanStep(Ctx& c, const TableRef& t, uint64_t cursor, uint32_t count, const ScanFilter& f,
                const std::function<void(const ScanItem&)>& emit, uint64_t* next) {
  TableHeader& h = *t.h;
  if (h.gen.load(std::memory_order_acquire) != t.gen || h.state.load() != kTableLive) {
    return Status::kStale;
  }
  uint32_t l0;
  uint64_t r;
  if (cursor == 0) {
    l0 = RouteLevel(h.route.load(std::memory_order_acquire));
    r = 0;
  } else {
    l0 = static_cast<uint32_t>(cursor & 63);
    r = cursor >> 6;
  }
  if (l0 > kMaxLevel || r >= (uint64_t{1} << l0)) return Status::kInvalid;
  uint64_t nres = uint64_t{1} << l0;
  uint64_t mask = nres - 1;
  int64_t now = NowMs(c);
  std::vector<Item> items;
  if (count == 0) count = 1;
  for (uint32_t k = 0; k < count && r < nres; ++k, ++r) {
    for (int tries = 0;; ++tries) {
      // After kReadRetries visits that a split or merge overlapped, visit
      // under the admin lock: no route change can happen while it is held
      // (never accept an inconsistent snapshot).
      bool locked = tries >= kReadRetries;
      if (locked) (void)mem::Lock(h.admin, c.tid);
      items.clear();
      uint64_t r1 = h.route.load(std::memory_order_acquire);
      uint32_t level = RouteLevel(r1);
      uint64_t nb = RouteBuckets(r1);
      if (l0 <= level) {
        for (uint64_t x = r; x < nb; x += nres) SnapshotBucket(c, h, x, f.values, f.value_cap, &items);
      } else {
        SnapshotBucket(c, h, RouteIdx(r1, r), f.values, f.value_cap, &items);
      }
      if (h.ovf.count.load(std::memory_order_acquire) != 0) {
        SnapshotOverflow(c, h, r, l0, f.values, f.value_cap, &items);
      }
      if (locked) {
        mem::Unlock(h.admin);
        break;
      }
      if (h.route.load(std::memory_order_acquire) == r1) break;
    }
    for (Item& it : items) {
      if (it.info.expire_ms != 0 && it.info.expire_ms <= now) continue;
      if ((HashOf(c, it.key) & mask) != r) continue;
      if (f.type >= 0) {
        int ty = it.info.type == kTypeInt ? static_cast<int>(kTypeString) : static_cast<int>(it.info.type);
        if (ty != f.type) continue;
      }
      if (!f.glob.empty() && !GlobMatch(f.glob, it.key, f.nocase)) continue;
      emit(ScanItem{it.key, it.value, it.info});
    }
  }
  if (h.gen.load(std::memory_order_acquire) != t.gen) return Status::kStale;
  *next = r >= nres ? 0 : (r << 6) | l0;
  return Status::kOk;
}

namespace {

// How many hint-0 buckets one walk may pass over (4 MiB of hints): a
// table of up to 2^20 buckets (about 4,000,000 keys) is read whole.
constexpr uint64_t kMaxSkipped = uint64_t{1} << 20;

// True when bucket `idx` can hold no key with a TTL for a volatile walk:
// its expire hint is 0 (no position holds one: every write of an expiry
// lowers the hint under the bucket lock before it publishes the record,
// and splits, merges, sweeps and repairs recompute it from the positions)
// and no overflow chain it reads is set. At level < 12 a bucket reads
// several chains: never skipped when there is overflow.
class TtlSkip {
 public:
  TtlSkip(const mem::Arena& a, const TableHeader& h, uint64_t route)
      : a_(a), h_(h), level_(RouteLevel(route)), ovf_(h.ovf.count.load(std::memory_order_acquire) != 0) {}
  bool Skip(uint64_t idx) {
    uint64_t seg = idx >> kSegShift;
    if (seg != seg_ || hints_ == nullptr) {
      seg_ = seg;
      hints_ = HintAt(a_, h_, seg << kSegShift);
    }
    if (hints_ == nullptr || mem::LoadRelaxed32(&hints_[idx & (kSegBuckets - 1)]) != 0) return false;
    if (!ovf_) return true;
    if (level_ < kOvfBits) return false;
    const Off* heads = reinterpret_cast<const Off*>(a_.At(h_.ovf.heads));
    return mem::LoadOff(&heads[idx & (kOvfHeads - 1)]) == 0;
  }

 private:
  const mem::Arena& a_;
  const TableHeader& h_;
  uint32_t level_;
  bool ovf_;
  uint64_t seg_ = ~uint64_t{0};
  uint32_t* hints_ = nullptr;
};

}  // namespace

Status SampleStep(Ctx& c, const TableRef& t, uint64_t start, uint32_t want, uint32_t max_buckets,
                  bool ttl_only, std::vector<SampledRecord>* out, uint64_t* visited) {
  TableHeader& h = *t.h;
  *visited = 0;
  if (h.gen.load(std::memory_order_acquire) != t.gen || h.state.load() != kTableLive) {
    return Status::kStale;
  }
  int64_t now = NowMs(c);
  uint64_t route = h.route.load(std::memory_order_acquire);
  uint64_t nb = RouteBuckets(route);
  if (nb == 0) return Status::kOk;
  std::vector<Item> items;
  uint32_t found = 0;
  // One lap at most: a small table is not read over and over (nor its
  // keys taken twice). Buckets a volatile walk skips by their hint are
  // not charged to max_buckets (few keys with a TTL among many were out
  // of reach: one eviction in seven found none at 300,000 keys).
  uint64_t limit = std::min<uint64_t>(max_buckets, nb), read = 0, skipped = 0;
  TtlSkip skip(c.arena, h, route);
  for (uint64_t idx = start % nb; *visited < nb && read < limit && found < want; idx = (idx + 1) % nb) {
    ++*visited;
    if (ttl_only && !PC_CANARY(24) && skip.Skip(idx)) {
      if (++skipped >= kMaxSkipped) break;  // 4 MiB of hints read: enough for one walk
      continue;
    }
    ++read;
    items.clear();
    SnapshotBucket(c, h, idx, false, 0, &items);
    size_t in_bucket = items.size();
    // Overflow keys are sampled too (else they would never be evicted):
    // from the chains that can hold keys of this bucket, the keys that
    // route here (a chain at level >= 12 serves 2^(level-12) buckets: its
    // keys taken at every one of them would be sampled that much more).
    if (h.ovf.count.load(std::memory_order_acquire) != 0) {
      SnapshotOverflow(c, h, idx, RouteLevel(route), false, 0, &items);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      Item& it = items[i];
      if (i >= in_bucket && RouteIdx(route, HashOf(c, it.key)) != idx) continue;
      if (KeepSampled(it, ttl_only, now, out)) ++found;
    }
  }
  if (h.gen.load(std::memory_order_acquire) != t.gen) return Status::kStale;
  return Status::kOk;
}

}  // namespace cache
