// perfcached — table maintenance: linear-hash split/merge, expiry sweep, repair.
// Copyright (c) 2026 the perfcached authors.
#include <algorithm>
#include <cstring>

#include "cache/dict.h"
#include "cache/internal.h"
#include "cache/table.h"
#include "mem/canary.h"

namespace cache {

using namespace detail;

namespace {

// The key of a record as a string_view into `tmp` (copied with atomics).
// Returns false if the record does not look valid.
bool RecordKey(const mem::Arena& a, Off rec, std::string* tmp, std::string_view* key) {
  size_t bound = mem::CellBound(a, rec);
  if (bound < kRecHdr) return false;
  RecView v{a.At(rec)};
  size_t klen = v.klen();
  if (klen > bound - kRecHdr || v.type() > kTypeMax) return false;
  tmp->resize(klen);
  mem::AtomicCopyOut(tmp->data(), v.key(), klen);
  *key = *tmp;
  return true;
}

uint32_t MinHint(const mem::Arena& a, const Bucket& b) {
  uint32_t used = UsedOf(b), m = 0;
  for (uint32_t i = 0; i < used; ++i) {
    uint32_t e = ExpireHint(RecView{a.At(SlotAt(b, static_cast<int>(i)))}.expire());
    if (e != 0 && (m == 0 || e < m)) m = e;
  }
  return m;
}

void SetHint(const mem::Arena& a, const TableHeader& h, uint64_t idx, uint32_t v) {
  if (uint32_t* p = HintAt(a, h, idx)) mem::StoreRelaxed32(p, v);
}

void ClearBucketLocked(Bucket& b) {
  mem::StoreRelaxed64(&b.tags_lo, 0);
  SetCtl(b, 0);  // no position is live from here
  for (int i = 0; i < kSlots; ++i) SetSlot(b, i, 0);
}

// Unlink overflow node `node` from chain `head` (overflow lock held,
// inside the overflow seq bracket). One store: crash-consistent. Only the
// node's own chain is walked: a walk of every chain per node made a split
// O(overflow) under three locks, and a pipelined fill that had spilled
// 100,000s of keys into overflow held the timer (and every writer waiting
// for the overflow lock) for seconds per GrowStep.
bool UnlinkNodeLocked(const mem::Arena& a, TableHeader& h, uint32_t head, Off node) {
  Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
  Off* link = &heads[head];
  uint32_t guard = 1u << 16;
  for (Off n = mem::LoadOff(link); n != 0 && guard-- > 0; n = mem::LoadOff(link)) {
    if (n == node) {
      mem::StoreOff(link, mem::LoadOff(a.At(n) + kNodeNext));
      PC_CRASH_POINT();
      h.ovf.count.fetch_sub(1, std::memory_order_release);
      return true;
    }
    link = reinterpret_cast<Off*>(a.At(n) + kNodeNext);
  }
  return false;
}

// Split bucket `split` into its partner. Admin lock held.
bool Split(Ctx& c, TableHeader& h) {
  const mem::Arena& a = c.arena;
  uint64_t route = h.route.load(std::memory_order_acquire);
  uint32_t level = RouteLevel(route);
  uint64_t split = RouteSplit(route);
  if (level >= kMaxLevel) return false;
  uint64_t s = split, p = split + (uint64_t{1} << level);
  if (!EnsureSegment(c, h, static_cast<uint32_t>(p >> kSegShift))) return false;
  Bucket* bs = BucketAt(a, h, s);
  Bucket* bp = BucketAt(a, h, p);
  if (!bs || !bp) return false;
  LockBucket(c, h, s, *bs);
  LockBucket(c, h, p, *bp);  // ascending order: s < p
  WriteBegin(*bs);
  WriteBegin(*bp);
  // P is unreachable until the route is published; it may hold leftovers
  // of an earlier merge, so start it empty.
  ClearBucketLocked(*bp);
  uint32_t used = UsedOf(*bs);
  uint32_t pu = 0;
  uint32_t moved = 0;  // bit i: slot i of S goes to P
  std::string tmp;
  for (uint32_t i = 0; i < used; ++i) {
    Off rec = SlotAt(*bs, static_cast<int>(i));
    std::string_view key;
    if (!RecordKey(a, rec, &tmp, &key)) continue;
    uint64_t hash = HashOf(c, key);
    if ((hash >> level) & 1) {
      SetSlot(*bp, static_cast<int>(pu), rec);
      SetTag(*bp, static_cast<int>(pu), TagOf(hash));
      ++pu;
      moved |= 1u << i;
    }
  }
  uint64_t nsplit = split + 1;
  uint64_t nroute = nsplit == (uint64_t{1} << level) ? NextRoute(route, level + 1, 0)
                                                      : NextRoute(route, level, nsplit);
  // Overflow entries that now route to S or P come home while there is room
  // (a grown table would otherwise keep its early spill forever). They are
  // copied into the bucket first and unlinked from overflow only after the
  // route is published: a crash in between leaves a duplicate that the
  // bucket's repair removes from overflow, never a lost key.
  struct Home {
    Off node;
    Off rec;
    uint32_t head;  // its overflow chain
    uint8_t tag;
    bool to_p;
  };
  Home homes[2 * kLive];
  uint32_t nhomes = 0, s_room = kLive - (used - static_cast<uint32_t>(__builtin_popcount(moved)));
  bool ovf_locked = false;
  if (h.ovf.count.load(std::memory_order_acquire) != 0) {
    LockOverflow(c, h);
    ovf_locked = true;
    Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
    // An entry of S or P has hash & (2^(level+1) - 1) == s or p, and its
    // chain is hash & (kOvfHeads - 1): only the chains that agree with s or
    // p on their low min(level + 1, kOvfBits) bits, visited directly (a
    // scan of every head cost each split kOvfHeads steps: 4x the preload's
    // instructions at 1M keys with 4096 heads).
    uint32_t bits = std::min<uint32_t>(level + 1, kOvfBits);
    uint64_t m = (uint64_t{1} << bits) - 1;
    uint64_t per = kOvfHeads >> bits;  // chains per residue
    uint64_t residues[2] = {s & m, p & m};
    uint32_t nres = residues[0] == residues[1] ? 1 : 2;
    for (uint64_t n = 0; n < nres * per; ++n) {
      uint64_t j = residues[n / per] | ((n % per) << bits);
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(&heads[j]); node != 0 && guard-- > 0;
           node = mem::LoadOff(a.At(node) + kNodeNext)) {
        Off rec = mem::LoadOff(a.At(node) + kNodeRec);
        std::string_view key;
        if (!RecordKey(a, rec, &tmp, &key)) continue;
        uint64_t hash = HashOf(c, key);
        uint64_t ni = RouteIdx(nroute, hash);
        if (ni == p && pu < kLive) {
          SetSlot(*bp, static_cast<int>(pu), rec);
          SetTag(*bp, static_cast<int>(pu), TagOf(hash));
          ++pu;
          homes[nhomes++] = Home{node, rec, static_cast<uint32_t>(j), TagOf(hash), true};
        } else if (ni == s && s_room > 0) {
          --s_room;
          homes[nhomes++] = Home{node, rec, static_cast<uint32_t>(j), TagOf(hash), false};
        }
        if (nhomes == 2 * kLive) break;
      }
    }
  }
  SetUsed(*bp, pu);
  SetHint(a, h, p, MinHint(a, *bp));
  // Publish the new route while S is still odd: a reader that sees S stable
  // and misses is guaranteed to see the new route on its re-check. Only
  // then drop the moved entries from S (a crash before this point leaves S
  // intact and P unreachable; after it, repair drops S's misrouted copies).
  PC_CRASH_POINT();
  h.route.store(nroute, std::memory_order_release);
  // Compact S in place: each copy is safe against a kill (CopySlot), the
  // positions it leaves behind are duplicates or moved entries until `used`
  // drops below them; only then are they written (zeroed, or a home).
  uint32_t keep = 0;
  for (uint32_t i = 0; i < used; ++i) {
    if (moved & (1u << i)) continue;
    if (keep != i) {
      CopySlot(*bs, static_cast<int>(keep), static_cast<int>(i));
      SetTag(*bs, static_cast<int>(keep), GetTag(*bs, static_cast<int>(i)));
    }
    ++keep;
  }
  SetUsed(*bs, keep);
  for (uint32_t i = keep; i < used; ++i) SetSlot(*bs, static_cast<int>(i), 0);
  uint32_t live = keep;
  for (uint32_t i = 0; i < nhomes; ++i) {
    if (homes[i].to_p) continue;
    SetSlot(*bs, static_cast<int>(keep), homes[i].rec);
    SetTag(*bs, static_cast<int>(keep), homes[i].tag);
    ++keep;
  }
  if (keep != live) SetUsed(*bs, keep);
  SetHint(a, h, s, MinHint(a, *bs));
  if (ovf_locked) {
    if (nhomes > 0) {
      PC_CRASH_POINT();
      h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
      for (uint32_t i = 0; i < nhomes; ++i) UnlinkNodeLocked(a, h, homes[i].head, homes[i].node);
      PC_CRASH_POINT();
      h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    }
    mem::Unlock(h.ovf.lock);
  }
  Count(c, h, kStatSplits);  // before the unlocks: DbSize (key_ops.cc) sees it or the old places
  WriteEnd(*bp);
  WriteEnd(*bs);
  mem::Unlock(bp->lock);
  mem::Unlock(bs->lock);
  for (uint32_t i = 0; i < nhomes; ++i) c.alloc.Free(homes[i].node);
  return true;
}

// Undo the last split: move the partner's entries back. Admin lock held.
// Refuses when they would not fit (overflow is never touched by a merge).
bool Merge(Ctx& c, TableHeader& h) {
  const mem::Arena& a = c.arena;
  uint64_t route = h.route.load(std::memory_order_acquire);
  uint32_t level = RouteLevel(route);
  uint64_t split = RouteSplit(route);
  uint64_t t, p, nroute;
  if (split > 0) {
    t = split - 1;
    p = t + (uint64_t{1} << level);
    nroute = NextRoute(route, level, t);
  } else {
    if (level == 0) return false;
    t = (uint64_t{1} << (level - 1)) - 1;
    p = t + (uint64_t{1} << (level - 1));
    nroute = NextRoute(route, level - 1, t);
  }
  Bucket* bt = BucketAt(a, h, t);
  Bucket* bp = BucketAt(a, h, p);
  if (!bt || !bp) return false;
  LockBucket(c, h, t, *bt);
  LockBucket(c, h, p, *bp);
  uint32_t ut = UsedOf(*bt), up = UsedOf(*bp);
  if (ut + up > static_cast<uint32_t>(kLive)) {
    mem::Unlock(bp->lock);
    mem::Unlock(bt->lock);
    return false;
  }
  WriteBegin(*bt);
  WriteBegin(*bp);
  for (uint32_t i = 0; i < up; ++i) {
    SetSlot(*bt, static_cast<int>(ut + i), SlotAt(*bp, static_cast<int>(i)));
    SetTag(*bt, static_cast<int>(ut + i), GetTag(*bp, static_cast<int>(i)));
  }
  SetUsed(*bt, ut + up);
  PC_CRASH_POINT();
  h.route.store(nroute, std::memory_order_release);
  ClearBucketLocked(*bp);
  SetHint(a, h, t, MinHint(a, *bt));
  SetHint(a, h, p, 0);
  Count(c, h, kStatMerges);  // before the unlocks, as a split's
  WriteEnd(*bp);
  WriteEnd(*bt);
  mem::Unlock(bp->lock);
  mem::Unlock(bt->lock);
  return true;
}

}  // namespace

uint32_t GrowStep(Ctx& c, const TableRef& t, uint32_t budget) {
  TableHeader& h = *t.h;
  if (h.state.load() != kTableLive || h.gen.load() != t.gen) return 0;
  (void)mem::Lock(h.admin, c.tid);  // a dead splitter left only bucket damage: repaired there
  uint32_t done = 0;
  uint64_t entries = CollectionEntries(c, t);
  uint64_t lf = h.load_x100 ? h.load_x100 : 400;
  uint64_t minb = __atomic_load_n(&h.min_buckets, __ATOMIC_RELAXED);
  while (done < budget && h.gen.load() == t.gen) {
    uint64_t nb = RouteBuckets(h.route.load(std::memory_order_acquire));
    if (nb < minb || entries * 100 > lf * nb) {
      if (!Split(c, h)) break;
    } else if (nb > minb && entries * 100 * 2 < lf * nb) {  // hysteresis: lf/2
      if (!Merge(c, h)) break;
    } else {
      break;
    }
    ++done;
  }
  mem::Unlock(h.admin);
  return done;
}

uint32_t SweepExpired(Ctx& c, const TableRef& t, uint32_t budget,
                      const std::function<void(std::string_view key)>& on_expired) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  if (h.state.load() != kTableLive || h.gen.load() != t.gen) return 0;
  int64_t now = NowMs(c);
  uint32_t now_s = static_cast<uint32_t>(now / 1000);
  uint32_t removed = 0, visited = 0;
  std::vector<std::string> keys;
  std::string tmp;
  uint64_t nb = RouteBuckets(h.route.load(std::memory_order_acquire));
  for (uint64_t idx = 0; idx < nb && visited < budget; ++idx) {
    uint32_t* hint = HintAt(a, h, idx);
    if (!hint) continue;
    uint32_t hv = mem::LoadRelaxed32(hint);
    if (hv == 0 || hv > now_s) continue;  // not due: no lock, no bucket touch
    Bucket* b = BucketAt(a, h, idx);
    if (!b) continue;
    ++visited;
    LockBucket(c, h, idx, *b);
    uint32_t used = UsedOf(*b), keep = 0;
    bool any = false;
    for (uint32_t i = 0; i < used && !any; ++i) {
      int64_t e = RecView{a.At(SlotAt(*b, static_cast<int>(i)))}.expire();
      any = e != 0 && e <= now;
    }
    if (any) {
      // Compact inside one version bracket.
      WriteBegin(*b);
      for (uint32_t i = 0; i < used; ++i) {
        Off rec = SlotAt(*b, static_cast<int>(i));
        int64_t e = RecView{a.At(rec)}.expire();
        if (e != 0 && e <= now) {
          RaiseFloor(h, RecView{a.At(rec)}.version());
          c.dead.push_back(rec);
          continue;
        }
        if (keep != i) {
          CopySlot(*b, static_cast<int>(keep), static_cast<int>(i));
          SetTag(*b, static_cast<int>(keep), GetTag(*b, static_cast<int>(i)));
        }
        ++keep;
      }
      SetUsed(*b, keep);
      for (uint32_t i = keep; i < used; ++i) SetSlot(*b, static_cast<int>(i), 0);
      WriteEnd(*b);
    }
    SetHint(a, h, idx, MinHint(a, *b));
    // Counted before the unlock: DBSIZE (cache/key_ops.cc DbSize) sees a
    // removal either in the bucket or in the destroyed count, never in
    // neither.
    if (!c.dead.empty()) {
      Count(c, h, kStatExpired, c.dead.size());
      Count(c, h, kStatDestroyed, c.dead.size());
    }
    mem::Unlock(b->lock);
    // After unlock: report, then free (the cells are still ours to read).
    for (Off rec : c.dead) {
      std::string_view key;
      if (on_expired && RecordKey(a, rec, &tmp, &key)) on_expired(key);
      FreeValue(c, rec);
    }
    removed += static_cast<uint32_t>(c.dead.size());
    c.dead.clear();
  }
  // The overflow table is small: scan it whole, under its lock.
  if (h.ovf.count.load(std::memory_order_acquire) != 0) {
    std::vector<Off> nodes;
    LockOverflow(c, h);
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
    for (uint32_t i = 0; i < kOvfHeads; ++i) {
      Off* link = &heads[i];
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(link); node != 0 && guard-- > 0;
           node = mem::LoadOff(link)) {
        Off rec = mem::LoadOff(a.At(node) + kNodeRec);
        int64_t e = RecView{a.At(rec)}.expire();
        if (e != 0 && e <= now) {
          RaiseFloor(h, RecView{a.At(rec)}.version());
          mem::StoreOff(link, mem::LoadOff(a.At(node) + kNodeNext));
          PC_CRASH_POINT();
          h.ovf.count.fetch_sub(1, std::memory_order_relaxed);
          c.dead.push_back(rec);
          nodes.push_back(node);
        } else {
          link = reinterpret_cast<Off*>(a.At(node) + kNodeNext);
        }
      }
    }
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    if (!c.dead.empty()) {
      Count(c, h, kStatExpired, c.dead.size());
      Count(c, h, kStatDestroyed, c.dead.size());
    }
    mem::Unlock(h.ovf.lock);
    for (Off rec : c.dead) {
      std::string_view key;
      if (on_expired && RecordKey(a, rec, &tmp, &key)) on_expired(key);
      FreeValue(c, rec);
    }
    for (Off n : nodes) c.alloc.Free(n);
    removed += static_cast<uint32_t>(c.dead.size());
    c.dead.clear();
  }
  return removed;
}

uint64_t CountExpired(Ctx& c, const TableRef& t) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  if (h.state.load() != kTableLive || h.gen.load() != t.gen) return 0;
  int64_t now = NowMs(c);
  uint32_t now_s = static_cast<uint32_t>(now / 1000);
  uint64_t n = 0;
  uint64_t nb = RouteBuckets(h.route.load(std::memory_order_acquire));
  const Off* dir = h.dir ? reinterpret_cast<const Off*>(a.At(h.dir)) : nullptr;
  for (uint64_t seg = 0; dir && seg < kMaxSegs && (seg << kSegShift) < nb; ++seg) {
    // One segment's hints are contiguous: a linear pass of 32-bit loads.
    uint32_t* hints = HintAt(a, h, seg << kSegShift);
    if (!hints) continue;
    uint64_t end = std::min<uint64_t>(kSegBuckets, nb - (seg << kSegShift));
    for (uint64_t j = 0; j < end; ++j) {
      uint32_t hv = mem::LoadRelaxed32(&hints[j]);
      if (hv == 0 || hv > now_s) continue;  // nothing due: no lock, no bucket touch
      uint64_t idx = (seg << kSegShift) | j;
      Bucket* b = BucketAt(a, h, idx);
      if (!b) continue;
      LockBucket(c, h, idx, *b);
      uint32_t used = UsedOf(*b);
      for (uint32_t i = 0; i < used; ++i) {
        int64_t e = RecView{a.At(SlotAt(*b, static_cast<int>(i)))}.expire();
        n += e != 0 && e <= now;
      }
      mem::Unlock(b->lock);
    }
  }
  if (h.ovf.count.load(std::memory_order_acquire) != 0) {
    LockOverflow(c, h);
    const Off* heads = reinterpret_cast<const Off*>(a.At(h.ovf.heads));
    for (uint32_t i = 0; i < kOvfHeads; ++i) {
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(&heads[i]); node != 0 && guard-- > 0;
           node = mem::LoadOff(a.At(node) + kNodeNext)) {
        int64_t e = RecView{a.At(mem::LoadOff(a.At(node) + kNodeRec))}.expire();
        n += e != 0 && e <= now;
      }
    }
    mem::Unlock(h.ovf.lock);
  }
  return n;
}

namespace detail {

// The holder died inside this bucket's lock. Keep exactly the slots below
// `used` that point at a valid record which routes here (dropping a
// half-linked slot, the misrouted copies of an interrupted split or merge,
// and duplicates of an interrupted removal), rebuild tags, used and the
// hint, and leave the version even. Nothing is freed: a cell dropped here
// may still be referenced elsewhere; leaking it is the safe side.
void RepairBucketLocked(Ctx& c, const TableHeader& h, uint64_t idx, Bucket& b) {
  const mem::Arena& a = c.arena;
  uint64_t route = h.route.load(std::memory_order_acquire);
  uint32_t seq = b.seq.load(std::memory_order_relaxed);
  if (!(seq & 1)) WriteBegin(b);
  FinishJournal(b);  // a copy the holder had in flight (bucket.h)
  uint32_t used = UsedOf(b);
  Off keep[kLive];
  uint32_t from[kLive];
  uint8_t tags[kLive];
  uint32_t n = 0;
  std::string tmp;
  for (uint32_t i = 0; i < used; ++i) {
    Off rec = SlotAt(b, static_cast<int>(i));
    std::string_view key;
    if (rec == 0 || !RecordKey(a, rec, &tmp, &key)) continue;
    uint64_t hash = HashOf(c, key);
    if (RouteIdx(route, hash) != idx && !PC_CANARY(3)) continue;
    if (std::find(keep, keep + n, rec) != keep + n) continue;
    keep[n] = rec;
    from[n] = i;
    tags[n] = TagOf(hash);
    ++n;
  }
  // Compact in place (from[i] >= i, ascending: no source is overwritten
  // before it is copied). A repairer killed here leaves duplicates and the
  // old `used`: the next repair does the same again.
  for (uint32_t i = 0; i < n; ++i) {
    if (from[i] != i) CopySlot(b, static_cast<int>(i), static_cast<int>(from[i]));
    SetTag(b, static_cast<int>(i), tags[i]);
  }
  SetUsed(b, n);
  for (int i = static_cast<int>(n); i < kSlots; ++i) SetSlot(b, i, 0);
  SetHint(a, h, idx, MinHint(a, b));
  // A split that died between bringing overflow entries home and unlinking
  // them leaves the same record in the bucket and in overflow: unlink the
  // overflow copy ("a key is in its bucket or in overflow, never both").
  // The node is leaked, not freed (see above).
  auto& th = const_cast<TableHeader&>(h);
  // The count is raised before a link (ops.cc), but a holder killed inside
  // the overflow lock is reason enough to look.
  if (n > 0 && (th.ovf.count.load(std::memory_order_acquire) != 0 || mem::LockHolder(th.ovf.lock) != 0)) {
    LockOverflow(c, th);
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      if (!RecordKey(a, keep[i], &tmp, &key)) continue;
      Off* link = nullptr;
      Off node = OvfFind(a, th, HashOf(c, key), key, &link);
      if (node != 0) {
        PC_CRASH_POINT();
        th.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
        mem::StoreOff(link, mem::LoadOff(a.At(node) + kNodeNext));
        PC_CRASH_POINT();
        th.ovf.count.fetch_sub(1, std::memory_order_release);
        PC_CRASH_POINT();
        th.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
      }
    }
    mem::Unlock(th.ovf.lock);
  }
  WriteEnd(b);  // odd -> even
  Count(c, h, kStatRepairs);
}

// Overflow chains are linked with single stores, so a dead holder cannot
// leave a broken chain; recount, truncate anything invalid, make seq even.
void RepairOverflowLocked(Ctx& c, TableHeader& h) {
  const mem::Arena& a = c.arena;
  Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
  uint32_t count = 0;
  for (uint32_t i = 0; i < kOvfHeads; ++i) {
    Off* link = &heads[i];
    uint32_t guard = 1u << 16;
    for (Off node = mem::LoadOff(link); node != 0; node = mem::LoadOff(link)) {
      if (guard-- == 0 || mem::CellBound(a, node) < kNodeBytes) {
        mem::StoreOff(link, 0);
        break;
      }
      ++count;
      link = reinterpret_cast<Off*>(a.At(node) + kNodeNext);
    }
  }
  PC_CRASH_POINT();
  h.ovf.count.store(count);
  if (h.ovf.seq.load() & 1) h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
  Count(c, h, kStatRepairs);
}

}  // namespace detail

namespace {

bool HeldByDead(const mem::ShmLock& l, uint32_t* holder) {
  *holder = mem::LockHolder(l);
  return *holder != 0 && mem::TidIsDead(*holder);
}

}  // namespace

namespace {

// Locks outside the tables (group map, slab pools, catalog) and process
// slots whose holder is dead.
uint32_t RepairGlobals(Ctx& c) {
  mem::Arena& a = c.arena;
  uint32_t fixed = 0, holder;
  auto release = [&](mem::ShmLock& l) {
    if (HeldByDead(l, &holder) && mem::TakeFromDead(l, holder, c.tid)) {
      mem::Unlock(l);
      ++fixed;
    }
  };
  if (HeldByDead(a.hdr()->group_lock, &holder) && mem::TakeFromDead(a.hdr()->group_lock, holder, c.tid)) {
    a.RepairGroupsLocked();
    mem::Unlock(a.hdr()->group_lock);
    ++fixed;
  }
  for (int cls = 0; cls < mem::kNumClasses; ++cls) release(mem::PoolAt(a, cls)->lock);
  if (mem::LockHolder(c.catalog->lock) != 0) {
    uint32_t before = mem::LockHolder(c.catalog->lock);
    RepairCatalogIfDead(*c.catalog);
    if (mem::LockHolder(c.catalog->lock) != before) ++fixed;
  }
  for (uint32_t s = 0; s < a.hdr()->max_procs; ++s) {
    if (mem::AdoptDeadSlot(a, s)) ++fixed;
  }
  return fixed;
}

// Buckets [from, to) of a table, plus (when `ends`) its admin and overflow locks.
uint32_t RepairTableRange(Ctx& c, TableHeader& h, uint64_t from, uint64_t to, bool ends) {
  uint32_t fixed = 0, holder;
  if (ends && HeldByDead(h.admin, &holder) && mem::TakeFromDead(h.admin, holder, c.tid)) {
    mem::Unlock(h.admin);
    ++fixed;
  }
  for (uint64_t idx = from; idx < to; ++idx) {
    Bucket* b = BucketAt(c.arena, h, idx);
    if (!b) continue;
    if (HeldByDead(b->lock, &holder) && mem::TakeFromDead(b->lock, holder, c.tid)) {
      RepairBucketLocked(c, h, idx, *b);
      mem::Unlock(b->lock);
      ++fixed;
    }
  }
  if (ends && HeldByDead(h.ovf.lock, &holder) && mem::TakeFromDead(h.ovf.lock, holder, c.tid)) {
    RepairOverflowLocked(c, h);
    mem::Unlock(h.ovf.lock);
    ++fixed;
  }
  return fixed;
}

}  // namespace

uint32_t RepairDead(Ctx& c) {
  uint32_t fixed = RepairGlobals(c);
  for (uint32_t ti = 0; ti < kMaxCollections; ++ti) {
    TableHeader& h = c.catalog->tables[ti];
    if (h.state.load() == kTableFree) continue;
    fixed += RepairTableRange(c, h, 0, uint64_t{h.nsegs} << kSegShift, true);
  }
  return fixed;
}

uint32_t RepairDeadStep(Ctx& c, uint64_t* cursor, uint32_t budget) {
  uint32_t fixed = RepairGlobals(c);
  uint32_t ti = static_cast<uint32_t>(*cursor >> 40);
  uint64_t idx = *cursor & ((uint64_t{1} << 40) - 1);
  for (uint32_t visited = 0; visited < kMaxCollections && budget > 0; ++visited) {
    if (ti >= kMaxCollections) {
      ti = 0;
      idx = 0;
    }
    TableHeader& h = c.catalog->tables[ti];
    uint64_t span = h.state.load() == kTableFree ? 0 : uint64_t{h.nsegs} << kSegShift;
    uint64_t to = std::min<uint64_t>(span, idx + budget);
    if (idx < to) fixed += RepairTableRange(c, h, idx, to, idx == 0);
    budget -= static_cast<uint32_t>(to > idx ? to - idx : 0);
    if (to >= span) {
      ++ti;
      idx = 0;
    } else {
      idx = to;
    }
  }
  *cursor = (uint64_t{ti} << 40) | idx;
  return fixed;
}

}  // namespace cache
