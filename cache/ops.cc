// perfcached — key operations: lock-free reads (Get, Probe) and locked writes (Set, Del).
// Copyright (c) 2026 the perfcached authors.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

#include "cache/access.h"
#include "cache/dict.h"
#include "cache/evict.h"
#include "cache/hash.h"
#include "mem/canary.h"
#include "cache/internal.h"
#include "cache/number.h"
#include "cache/table.h"

namespace cache {

using namespace detail;

// Keys a write may evict to find a cell in a full arena (cache/evict.h MakeRoomFor).
constexpr int kMaxRoomEvictions = 256;

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}


// Copy a record's metadata (and value when buf is given) out. Every length
// is clamped against the cell bound by subtraction (no wrap on torn values).
// The caller validates the copy with the seqlock before trusting it.
// Value bytes of a record that fit its cell (0 when the header is not sane).
size_t ClampedVlen(const mem::Arena& a, Off rec, uint8_t type, size_t klen) {
  size_t bound = mem::CellBound(a, rec);
  size_t voff = ValueOffset(type, klen);
  if (voff > bound) return 0;
  size_t vlen = RecView{a.At(rec)}.vlen();
  return vlen > bound - voff ? bound - voff : vlen;
}

// Values above kBigRead (cache/internal.h) are not copied inside the
// seqlock bracket (a retry would copy them again): CopyRecord names the
// record in *big and the caller copies it once, outside, then checks it is
// still the key's record.

// `bound`: mem::CellBound(a, rec), which the key compare computed already.
Status CopyRecord(const mem::Arena& a, Off rec, size_t bound, size_t klen, std::span<char> buf, bool want,
                  ReadInfo* ri, Off* big = nullptr) {
  RecView v{a.At(rec)};
  uint8_t type = v.type();
  size_t voff = ValueOffset(type, klen);
  size_t vlen = v.vlen();
  if (voff > bound) {
    vlen = 0;
  } else if (vlen > bound - voff) {
    vlen = bound - voff;
  }
  ri->type = type;
  ri->vlen = static_cast<uint32_t>(vlen);
  ri->expire_ms = v.expire();
  ri->version = v.version();
  ri->access = v.access();
  if (!want) return Status::kOk;
  if (vlen > buf.size()) return Status::kBufferTooSmall;
  if (big && vlen > kBigRead) {
    *big = rec;
    return Status::kOk;
  }
  mem::AtomicCopyOut(buf.data(), v.value(type, klen), vlen);
  return Status::kOk;
}

bool KeyEquals(const mem::Arena& a, Off rec, std::string_view key, size_t* bound_out = nullptr) {
  size_t bound = mem::CellBound(a, rec);
  if (bound_out) *bound_out = bound;
  if (bound < kRecHdr || key.size() > bound - kRecHdr) return false;
  RecView v{a.At(rec)};
  if (v.klen() != key.size()) return false;
  return mem::AtomicEqual(v.key(), key);
}

}  // namespace

// Overflow chain search: node and the link that points at it.
Off detail::OvfFind(const mem::Arena& a, const TableHeader& h, uint64_t hash,
                    std::string_view key, Off** link_out) {
  Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
  Off* link = &heads[hash & (kOvfHeads - 1)];
  uint32_t guard = 1u << 16;
  for (Off node = mem::LoadOff(link); node != 0 && guard-- > 0;) {
    if (mem::CellBound(a, node) < kNodeBytes) return 0;
    char* p = a.At(node);
    if (mem::LoadRelaxed32(p + kNodeHash) == static_cast<uint32_t>(hash >> 32) &&
        KeyEquals(a, mem::LoadOff(p + kNodeRec), key)) {
      if (link_out) *link_out = link;
      return node;
    }
    link = reinterpret_cast<Off*>(p + kNodeNext);
    node = mem::LoadOff(link);
  }
  return 0;
}

namespace {

Status OvfRead(Ctx& c, TableHeader& h, uint64_t hash, std::string_view key, std::span<char> buf,
               bool want, ReadInfo* ri, Off* rec_out, Off* big) {
  const mem::Arena& a = c.arena;
  for (int tries = 0; tries < kReadRetries; ++tries) {
    uint32_t s1 = h.ovf.seq.load(std::memory_order_acquire);
    if (s1 & 1) {
      CpuRelax();
      continue;
    }
    Off node = OvfFind(a, h, hash, key, nullptr);
    Status st = Status::kNotFound;
    Off rec = 0;
    if (node != 0) {
      rec = mem::LoadOff(a.At(node) + kNodeRec);
      st = CopyRecord(a, rec, mem::CellBound(a, rec), key.size(), buf, want, ri, big);
    }
    mem::SeqReadFence();
    if (h.ovf.seq.load(std::memory_order_relaxed) == s1) {
      *rec_out = rec;
      return st;
    }
    if (big) *big = 0;
  }
  LockOverflow(c, h);
  Off node = OvfFind(a, h, hash, key, nullptr);
  Status st = Status::kNotFound;
  *rec_out = 0;
  if (node != 0) {
    *rec_out = mem::LoadOff(a.At(node) + kNodeRec);
    st = CopyRecord(a, *rec_out, mem::CellBound(a, *rec_out), key.size(), buf, want, ri);  // small under the lock
  }
  mem::Unlock(h.ovf.lock);
  return st;
}

}  // namespace

namespace detail {

// Lock the bucket that `hash` routes to, re-routing if a split/merge moved
// it meanwhile. Returns nullptr if the table has no such bucket (stale).
Bucket* LockRouted(Ctx& c, TableHeader& h, uint64_t hash, uint64_t* idx_out) {
  for (;;) {
    uint64_t route = h.route.load(std::memory_order_acquire);
    uint64_t idx = RouteIdx(route, hash);
    Bucket* b = BucketAt(c.arena, h, idx);
    if (!b) return nullptr;
    LockBucket(c, h, idx, *b);
    if (h.route.load(std::memory_order_acquire) == route) {
      *idx_out = idx;
      return b;
    }
    mem::Unlock(b->lock);
  }
}

bool LockKey(Ctx& c, TableHeader& h, uint64_t hash, std::string_view key, KeyLock* k) {
  k->b = LockRouted(c, h, hash, &k->idx);
  if (!k->b) return false;
  k->slot = FindInBucket(c.arena, *k->b, TagOf(hash), key, &k->rec);
  if (k->slot < 0 && h.ovf.count.load(std::memory_order_acquire) != 0) {
    LockOverflow(c, h);
    k->ovf_locked = true;
    k->node = OvfFind(c.arena, h, hash, key, &k->link);
    if (k->node) k->rec = mem::LoadOff(c.arena.At(k->node) + kNodeRec);
  }
  return true;
}

// The seqlock that brackets changes of the locked key's record.
std::atomic<uint32_t>& KeySeq(TableHeader& h, const KeyLock& k) {
  return k.node ? h.ovf.seq : k.b->seq;
}

// Unlink the locked key's record (raising the version floor first). The
// caller frees k.rec (and k.node) after unlocking.
void UnlinkKeyLocked(const mem::Arena& a, TableHeader& h, const KeyLock& k) {
  RaiseFloor(h, RecView{a.At(k.rec)}.version());
  if (k.slot >= 0) {
    Bucket& b = *k.b;
    WriteBegin(b);
    RemoveSlot(b, k.slot);
    WriteEnd(b);
  } else if (k.node) {
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    mem::StoreOff(k.link, mem::LoadOff(a.At(k.node) + kNodeNext));
    PC_CRASH_POINT();
    h.ovf.count.fetch_sub(1, std::memory_order_release);
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
  }
}

void UnlockKey(TableHeader& h, const KeyLock& k) {
  if (k.ovf_locked) mem::Unlock(h.ovf.lock);
  mem::Unlock(k.b->lock);
}

// A read changed the coarse access of `rec`: store it if the bucket's lock
// is free at once and `rec` is still linked there (cache/access.h). A
// linked record is never freed, so the store cannot reach a reused cell;
// a busy lock (or a key in overflow whose lock is busy) skips the update.
bool TouchRecord(Ctx& c, TableHeader& h, uint64_t hash, Off rec, uint16_t acc) {
  const mem::Arena& a = c.arena;
  uint64_t route = h.route.load(std::memory_order_acquire);
  uint64_t idx = RouteIdx(route, hash);
  Bucket* b = BucketAt(a, h, idx);
  if (PC_CANARY(8)) return false;
  if (!b || !mem::TryLock(b->lock, c.tid)) return false;
  bool stored = false;
  if (h.route.load(std::memory_order_acquire) == route) {
    uint32_t used = UsedOf(*b);
    bool linked = false;
    for (uint32_t i = 0; i < used && !linked; ++i) linked = SlotAt(*b, static_cast<int>(i)) == rec;
    if (linked || PC_CANARY(9)) {
      RecView{a.At(rec)}.set_access(acc);
      stored = true;
    } else if (h.ovf.count.load(std::memory_order_acquire) != 0 && mem::TryLock(h.ovf.lock, c.tid)) {
      Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(&heads[hash & (kOvfHeads - 1)]); node != 0 && guard-- > 0;
           node = mem::LoadOff(a.At(node) + kNodeNext)) {
        if (mem::CellBound(a, node) < kNodeBytes) break;
        if (mem::LoadOff(a.At(node) + kNodeRec) == rec) {
          RecView{a.At(rec)}.set_access(acc);
          stored = true;
          break;
        }
      }
      mem::Unlock(h.ovf.lock);
    }
  }
  PC_CRASH_POINT();
  mem::Unlock(b->lock);
  return stored;
}

}  // namespace detail

namespace {

// The read path shared by Get and Probe.
Status CopyBig(Ctx& c, const TableRef& t, std::string_view key, Off rec, std::span<char> buf,
               ReadInfo* ri);

// `touch`: the read counts as an access (cache/access.h) — GET and the
// commands that read a value, TOUCH; not EXISTS, TYPE, TTL, OBJECT.
Status Read(Ctx& c, const TableRef& t, std::string_view key, std::span<char> buf, bool want,
            ReadInfo* info, Off* rec_out = nullptr, bool count = true, bool touch = false) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  uint64_t hash = HashOf(c, key);
  uint8_t tag = TagOf(hash);
  if (count) Count(c, h, kStatReads);
  ReadInfo ri;
  for (int tries = 0;; ++tries) {
    Off big = 0;
    uint64_t route = h.route.load(std::memory_order_acquire);
    uint64_t idx = RouteIdx(route, hash);
    Bucket* b = BucketAt(a, h, idx);
    if (!b) return Live(h, t) ? Status::kNotFound : Status::kStale;
    Status st = Status::kNotFound;
    Off rec = 0;
    if (tries < kReadRetries) {
      uint32_t s1 = b->seq.load(std::memory_order_acquire);
      if (s1 & 1) {
        CpuRelax();
        continue;
      }
      size_t bound = 0;
      int i = FindInBucket(a, *b, tag, key, &rec, &bound);
      if (i >= 0) st = CopyRecord(a, rec, bound, key.size(), buf, want, &ri, &big);
      mem::SeqReadFence();
      if (!PC_CANARY(1) && b->seq.load(std::memory_order_relaxed) != s1) {
        Count(c, h, kStatSeqRetries);
        continue;
      }
      if (i < 0 && h.route.load(std::memory_order_acquire) != route) continue;
    } else {
      // Fallback after kReadRetries torn attempts: read under the lock.
      Count(c, h, kStatLockFallbacks);
      uint64_t lidx;
      Bucket* lb = LockRouted(c, h, hash, &lidx);
      if (!lb) return Status::kStale;
      size_t bound = 0;
      int i = FindInBucket(a, *lb, tag, key, &rec, &bound);
      if (i >= 0) st = CopyRecord(a, rec, bound, key.size(), buf, want, &ri, &big);
      mem::Unlock(lb->lock);
    }
    if (rec == 0 && h.ovf.count.load(std::memory_order_acquire) != 0) {
      st = OvfRead(c, h, hash, key, buf, want, &ri, &rec, &big);
      if (st != Status::kNotFound) {
      } else if (h.route.load(std::memory_order_acquire) != route) {
        // A split moved overflow entries into buckets meanwhile (it
        // publishes the route before it unlinks them): look again.
        continue;
      }
    }
    if (!Live(h, t)) return Status::kStale;
    // The clock is read only for records that can expire.
    if (rec == 0 || (ri.expire_ms != 0 && Expired(ri.expire_ms, NowMs(c)))) {
      if (count) Count(c, h, kStatMisses);
      return Status::kNotFound;
    }
    if (st == Status::kOk && big != 0) {
      st = CopyBig(c, t, key, big, buf, &ri);
      if (st == Status::kNotFound) {
        if (count) Count(c, h, kStatMisses);
        return st;
      }
    }
    if (touch && c.touch && AccessReadMayStore(*c.catalog, ri.access)) {
      uint16_t acc;
      if (AccessOnRead(LoadAccessParams(*c.catalog), ri.access, &acc)) (void)TouchRecord(c, h, hash, rec, acc);
    }
    if (rec_out) *rec_out = rec;
    if (info) *info = ri;
    if (st == Status::kOk && count) Count(c, h, kStatHits);
    return st;
  }
}

// One copy of a big value with no lock held, then a check that the key
// still names the same record with the same version: versions never repeat
// for a key (record.h), so the record was never freed during the copy
// (writers of other keys of the bucket do not make us copy again). After a
// few rounds lost to writes of this very key: a large object is pinned
// under the bucket lock and copied after it (slab.h PinLarge); a slab cell
// (<= 256 KiB) is copied under the lock.
Status CopyBig(Ctx& c, const TableRef& t, std::string_view key, Off rec, std::span<char> buf,
               ReadInfo* ri) {
  const mem::Arena& a = c.arena;
  BigReadCounters& counters = ThreadBigReads();
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (ri->vlen > buf.size()) return Status::kBufferTooSmall;
    if (ClampedVlen(a, rec, ri->type, key.size()) == ri->vlen) {
      ++counters.copies;
      mem::AtomicCopyOut(buf.data(), RecView{a.At(rec)}.value(ri->type, key.size()), ri->vlen);
      mem::SeqReadFence();
    }
    Off now_rec = 0;
    ReadInfo now;
    Status s = Read(c, t, key, {}, false, &now, &now_rec, false);
    if (s != Status::kOk) return s;
    if (now_rec == rec && now.version == ri->version && now.vlen == ri->vlen) return Status::kOk;
    rec = now_rec;
    *ri = now;
  }
  TableHeader& h = *t.h;
  KeyLock k;
  if (!LockKey(c, h, HashOf(c, key), key, &k)) return Status::kStale;
  if (k.rec == 0) {
    UnlockKey(h, k);
    return Status::kNotFound;
  }
  (void)CopyRecord(a, k.rec, mem::CellBound(a, k.rec), key.size(), {}, false, ri);
  if (ri->vlen > buf.size()) {
    UnlockKey(h, k);
    return Status::kBufferTooSmall;
  }
  const char* src = RecView{a.At(k.rec)}.value(ri->type, key.size());
  ++counters.copies;
  if (mem::PinLarge(c.arena, k.rec)) {
    UnlockKey(h, k);
    mem::AtomicCopyOut(buf.data(), src, ri->vlen);
    mem::UnpinLarge(c.arena, k.rec);
  } else {
    ++counters.locked_copies;
    mem::AtomicCopyOut(buf.data(), src, ri->vlen);
    UnlockKey(h, k);
  }
  return Status::kOk;
}

// Build a record in a fresh cell (before any lock is taken).
// Alloc; a full arena under an evicting policy makes room first (cache/evict.h
// MakeRoomFor), at most kMaxRoomEvictions keys.
Status AllocRoom(Ctx& c, size_t bytes, Off* out) {
  Status s = c.alloc.Alloc(bytes, out);
  for (int i = 0; s == Status::kNoMem && i < kMaxRoomEvictions && MakeRoomFor(c, bytes, i); ++i) {
    s = c.alloc.Alloc(bytes, out);
  }
  return s;
}

Status BuildRecord(Ctx& c, uint8_t type, std::string_view key, std::string_view value,
                   int64_t expire_ms, Off* out) {
  if (key.size() > kMaxKey) return Status::kTooBig;
  if (value.size() > c.arena.hdr()->max_value) return Status::kTooBig;
  Off rec;
  if (Status s = AllocRoom(c, RecordBytes(type, key.size(), value.size()), &rec); s != Status::kOk) return s;
  char* p = c.arena.At(rec);
  mem::StoreRelaxed8(p + kOffType, type);
  RecView{p}.set_access(AccessFresh(LoadAccessParams(*c.catalog)));
  mem::StoreRelaxed16(p + kOffKlen, static_cast<uint16_t>(key.size()));
  mem::StoreRelaxed32(p + kOffVlen, static_cast<uint32_t>(value.size()));
  RecView{p}.set_meta(expire_ms, 0);  // the version is set under the lock
  mem::AtomicCopyIn(p + kRecHdr, key.data(), key.size());
  mem::AtomicCopyIn(p + ValueOffset(type, key.size()), value.data(), value.size());
  *out = rec;
  return Status::kOk;
}

bool SameValue(const mem::Arena& a, Off old, Off fresh, size_t klen) {
  RecView o{a.At(old)}, n{a.At(fresh)};
  if (o.type() != n.type() || o.vlen() != n.vlen()) return false;
  uint32_t vlen = n.vlen();
  if (vlen > 4096 || ClampedVlen(a, old, o.type(), klen) != vlen) return false;
  const char* nv = n.value(n.type(), klen);
  return mem::AtomicEqual(o.value(o.type(), klen), std::string_view(nv, vlen));
}

// A record's value as a client reads it. The caller owns the record (it is
// unlinked by this process, or still private): nobody frees it meanwhile.
void FormatValue(const mem::Arena& a, Off rec, size_t klen, std::string* out) {
  RecView v{a.At(rec)};
  uint8_t type = v.type();
  size_t vlen = ClampedVlen(a, rec, type, klen);
  if (type == kTypeInt && vlen == 8) {
    int64_t n = static_cast<int64_t>(mem::LoadRelaxed64(v.value(kTypeInt, klen)));
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, n);
    out->assign(buf, r.ptr);
    return;
  }
  out->resize(vlen);
  mem::AtomicCopyOut(out->data(), v.value(type, klen), vlen);
}

}  // namespace

namespace detail {

BigReadCounters& ThreadBigReads() {
  thread_local BigReadCounters counters;
  return counters;
}

int FindInBucket(const mem::Arena& a, const Bucket& b, uint8_t tag, std::string_view key,
                 Off* rec, size_t* bound) {
  uint32_t m = TagMatch(TagsLo(b), TagsHi(b), tag);
  while (m) {
    int i = __builtin_ctz(m);
    Off off = SlotAt(b, i);
    if (off != 0 && KeyEquals(a, off, key, bound)) {
      *rec = off;
      return i;
    }
    m &= m - 1;
  }
  return -1;
}

void LowerHint(const mem::Arena& a, const TableHeader& h, uint64_t idx, int64_t expire_ms) {
  uint32_t e = ExpireHint(expire_ms);
  if (e == 0) return;
  uint32_t* hint = HintAt(a, h, idx);
  if (!hint) return;
  uint32_t cur = mem::LoadRelaxed32(hint);
  if (cur == 0 || e < cur) mem::StoreRelaxed32(hint, e);
}

void LockBucket(Ctx& c, const TableHeader& h, uint64_t idx, Bucket& b) {
  if (PC_CANARY(2)) return;
  if (mem::Lock(b.lock, c.tid) == mem::LockResult::kTookFromDead) RepairBucketLocked(c, h, idx, b);
}

void LockOverflow(Ctx& c, TableHeader& h) {
  if (mem::Lock(h.ovf.lock, c.tid) == mem::LockResult::kTookFromDead) RepairOverflowLocked(c, h);
}

}  // namespace detail

Status Get(Ctx& c, const TableRef& t, std::string_view key, std::span<char> buf, ReadInfo* info) {
  // c.stats (NoStats) is read here, not in Read: Read's body is the GET
  // path, and a load there moved its code (1M GETs ~3% slower on hugetlb
  // pages in 16 alternated pairs, session 22).
  return Read(c, t, key, buf, true, info, nullptr, c.stats, /*touch=*/true);
}

Status Probe(Ctx& c, const TableRef& t, std::string_view key, ReadInfo* info) {
  return Read(c, t, key, {}, false, info, nullptr, c.stats);
}

Status TouchKey(Ctx& c, const TableRef& t, std::string_view key) {
  ReadInfo ri;
  return Read(c, t, key, {}, false, &ri, nullptr, c.stats, /*touch=*/true);
}

Status GetString(Ctx& c, const TableRef& t, std::string_view key, std::string* out,
                 ReadInfo* info) {
  ReadInfo ri;
  if (out->size() < 256) out->resize(256);
  for (int i = 0; i < 16; ++i) {
    Status s = Get(c, t, key, std::span<char>(out->data(), out->size()), &ri);
    if (s == Status::kBufferTooSmall) {
      out->resize(ri.vlen);
      continue;
    }
    if (s != Status::kOk) {
      out->clear();
      return s;
    }
    if (ri.type == kTypeInt && ri.vlen == 8) {
      int64_t n;
      std::memcpy(&n, out->data(), 8);
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, n);
      out->assign(buf, r.ptr);
    } else {
      out->resize(ri.vlen);
    }
    if (info) *info = ri;
    return Status::kOk;
  }
  out->clear();
  return Status::kBusy;
}

Status Set(Ctx& c, const TableRef& t, std::string_view key, std::string_view value,
           const StoreOpts& o) {
  TableHeader& h = *t.h;
  if (!Live(h, t)) return Status::kStale;
  const mem::Arena& a = c.arena;
  Off nrec;
  if (Status s = BuildRecord(c, o.type, key, value, o.expire_ms, &nrec); s != Status::kOk) {
    if (s == Status::kNoMem) Count(c, h, kStatNoMem);
    return s;
  }
  uint64_t hash = HashOf(c, key);
  uint8_t tag = TagOf(hash);
  int64_t now = 0;  // read lazily: only a record with an expiry needs it
  Off node = 0;  // overflow node, allocated outside the locks when needed
  for (;;) {
    uint64_t idx;
    Bucket* b = LockRouted(c, h, hash, &idx);
    if (!b || !Live(h, t)) {
      if (b) mem::Unlock(b->lock);
      c.alloc.Free(nrec);
      c.alloc.Free(node);
      return Status::kStale;
    }
    Off old = 0, onode = 0;
    Off* olink = nullptr;
    int i = FindInBucket(a, *b, tag, key, &old);
    bool ovf_locked = false;
    if (i < 0 && h.ovf.count.load(std::memory_order_acquire) != 0) {
      LockOverflow(c, h);
      ovf_locked = true;
      onode = OvfFind(a, h, hash, key, &olink);
      if (onode) old = mem::LoadOff(a.At(onode) + kNodeRec);
    }
    RecView ov{old ? a.At(old) : nullptr};
    int64_t old_exp = old ? ov.expire() : 0;
    if (old_exp != 0 && now == 0) now = NowMs(c);
    bool live_old = old != 0 && !Expired(old_exp, now);
    Status st = Status::kOk;
    if (o.cond == Cond::kNx && live_old) st = Status::kExists;
    if (o.cond == Cond::kXx && !live_old) st = Status::kNotExists;
    if (o.check_version && (live_old ? ov.version() : 0) != o.expect_version) st = Status::kVersion;
    if (o.if_newer && live_old && !VersionNewer(o.version, ov.version())) st = Status::kVersion;
    bool full = i < 0 && onode == 0 && UsedOf(*b) >= kLive;
    // A full bucket has no scratch position for a record in another 32 GiB
    // (bucket.h ReplaceSlot): the new record goes to overflow instead.
    bool spill = i >= 0 && !CanReplaceSlot(*b, i, nrec) &&
                 !(live_old && !o.if_newer && SameValue(a, old, nrec, key.size()));
    if (st == Status::kOk && (full || spill) && node == 0) {
      // Bucket full: drop the locks, allocate an overflow node, retry.
      if (ovf_locked) mem::Unlock(h.ovf.lock);
      mem::Unlock(b->lock);
      if (Status s = AllocRoom(c, kNodeBytes, &node); s != Status::kOk) {
        c.alloc.Free(nrec);
        Count(c, h, kStatNoMem);
        return s;
      }
      continue;
    }
    if (st != Status::kOk) {
      if (ovf_locked) mem::Unlock(h.ovf.lock);
      mem::Unlock(b->lock);
      c.alloc.Free(nrec);
      c.alloc.Free(node);
      return st;
    }
    RecView nv{a.At(nrec)};
    if (o.had_old) *o.had_old = live_old;
    // Every change gets a version above every earlier one of the key: the
    // live record's + 1, or for a new key the table's floor + 1 (record.h)
    // — also a key made again over its expired record that no sweep has
    // removed yet (above that record's version too): a snapshot whose walk
    // began meanwhile skipped the key, and replay drops a state at or below
    // its floor that the snapshot does not hold (db/wal_apply.cc
    // SnapshotDropped).
    uint64_t ver = o.if_newer ? o.version
                   : live_old ? NextVersion(ov.version())
                              : NextVersion(std::max(old ? ov.version() : 0,
                                                     h.ver_floor.load(std::memory_order_acquire)));
    if (o.stored_version) *o.stored_version = ver;
    if (live_old && !o.if_newer && SameValue(a, old, nrec, key.size())) {
      // Same bytes: keep the record, change its expiry and version inside
      // the bracket (no new cell, no slot change).
      std::atomic<uint32_t>& seq = onode ? h.ovf.seq : b->seq;
      int64_t exp = o.keep_ttl ? old_exp : o.expire_ms;
      // The hint before the record (both under the bucket lock): a walk
      // that skips hint-0 buckets (cache/scan.cc TtlSkip) never misses a
      // published expiry, even when this process is killed in between.
      LowerHint(a, h, idx, exp);
      PC_CRASH_POINT();
      seq.fetch_add(1, std::memory_order_acq_rel);
      ov.set_meta(exp, ver);
      ov.set_access(AccessOnWrite(LoadAccessParams(*c.catalog), ov.access()));
      PC_CRASH_POINT();
      seq.fetch_add(1, std::memory_order_acq_rel);
      if (ovf_locked) mem::Unlock(h.ovf.lock);
      mem::Unlock(b->lock);
      // The old value is the new one: format it from our private record,
      // never from `old`, which another process may free from now on.
      if (o.old_value) FormatValue(a, nrec, key.size(), o.old_value);
      c.alloc.Free(nrec);
      c.alloc.Free(node);
      Count(c, h, kStatStores);
      return Status::kOk;
    }
    nv.set_meta(o.keep_ttl && live_old ? old_exp : nv.expire(), ver);
    if (live_old) nv.set_access(AccessOnWrite(LoadAccessParams(*c.catalog), ov.access()));
    auto link_node = [&] {
      if (!ovf_locked) {
        LockOverflow(c, h);
        ovf_locked = true;
      }
      Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
      Off* head = &heads[hash & (kOvfHeads - 1)];
      char* np = a.At(node);
      mem::StoreOff(np + kNodeRec, nrec);
      mem::StoreRelaxed32(np + kNodeHash, static_cast<uint32_t>(hash >> 32));
      mem::StoreOff(np + kNodeNext, mem::LoadOff(head));
      PC_CRASH_POINT();
      h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
      // The count first: it is never below the nodes linked, so a bucket's
      // repair that finds it 0 may skip overflow (a spill killed after the
      // link left the key in both; the repair must see the overflow copy).
      h.ovf.count.fetch_add(1, std::memory_order_release);
      PC_CRASH_POINT();
      mem::StoreOff(head, node);  // linked by one store: crash-consistent
      PC_CRASH_POINT();
      h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
      node = 0;
      Count(c, h, kStatOvfInserts);
    };
    LowerHint(a, h, idx, nv.expire());  // before the record is published (above)
    if (i >= 0 && !spill) {
      WriteBegin(*b);
      ReplaceSlot(*b, i, nrec);
      WriteEnd(*b);
    } else if (i >= 0) {
      // Inside the bucket's bracket: link the new record in overflow, then
      // take the old one out of the bucket. A kill in between leaves the key
      // in both; the bucket's repair keeps the bucket's (old) record.
      WriteBegin(*b);
      link_node();
      PC_CRASH_POINT();
      RemoveSlot(*b, i);
      WriteEnd(*b);
    } else if (onode != 0) {
      PC_CRASH_POINT();
      h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
      mem::StoreOff(a.At(onode) + kNodeRec, nrec);
      PC_CRASH_POINT();
      h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    } else if (!full) {
      uint32_t used = UsedOf(*b);
      WriteBegin(*b);
      SetSlot(*b, static_cast<int>(used), nrec);  // slot, tag, then used:
      SetTag(*b, static_cast<int>(used), tag);    // a crash before `used`
      SetUsed(*b, used + 1);                      // leaves no half slot
      WriteEnd(*b);
    } else {
      link_node();
    }
    if (ovf_locked) mem::Unlock(h.ovf.lock);
    mem::Unlock(b->lock);
    // After the locks: copy the old value out if asked, then free it.
    if (old != 0) {
      if (o.old_value && live_old) FormatValue(a, old, key.size(), o.old_value);
      if (!live_old) Count(c, h, kStatExpired);
      if (o.shallow_old && live_old) {
        c.alloc.Free(old);
      } else {
        FreeValue(c, old);
      }
    } else {
      Count(c, h, kStatCreated);
    }
    c.alloc.Free(node);
    Count(c, h, kStatStores);
    return Status::kOk;
  }
}

namespace {
constexpr uint64_t kAnyVersion = ~uint64_t{0};
Status DelImpl(Ctx& c, const TableRef& t, std::string_view key, uint64_t want_version,
               Stat counted = kStatRemoves);
}  // namespace

Status Del(Ctx& c, const TableRef& t, std::string_view key) {
  return DelImpl(c, t, key, kAnyVersion);
}

Status DelIfVersion(Ctx& c, const TableRef& t, std::string_view key, uint64_t version) {
  return DelImpl(c, t, key, version);
}

Status EvictKey(Ctx& c, const TableRef& t, std::string_view key, uint64_t version) {
  return DelImpl(c, t, key, version, kStatEvicted);
}

namespace {
Status DelImpl(Ctx& c, const TableRef& t, std::string_view key, uint64_t want_version,
               Stat counted) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  KeyLock k;
  if (!LockKey(c, h, HashOf(c, key), key, &k)) return Status::kStale;
  if (!Live(h, t)) {
    UnlockKey(h, k);
    return Status::kStale;
  }
  if (k.rec != 0 && want_version != kAnyVersion && RecView{a.At(k.rec)}.version() != want_version) {
    UnlockKey(h, k);
    return Status::kVersion;
  }
  if (k.rec == 0) {
    UnlockKey(h, k);
    return Status::kNotFound;
  }
  UnlinkKeyLocked(a, h, k);
  int64_t exp = RecView{a.At(k.rec)}.expire();
  bool expired = exp != 0 && Expired(exp, NowMs(c));
  // Counted before the unlock, as the sweep does: DBSIZE (key_ops.cc
  // DbSize) sees the removal in the bucket or in the count, never neither.
  Count(c, h, kStatDestroyed);
  Count(c, h, expired ? kStatExpired : counted);
  UnlockKey(h, k);
  FreeValue(c, k.rec);
  c.alloc.Free(k.node);
  return expired ? Status::kNotFound : Status::kOk;
}
}  // namespace

}  // namespace cache
