// perfcached — the collection catalog: create, open, drop, rename, resize.
// Copyright (c) 2026 the perfcached authors.
#include "cache/internal.h"
#include "cache/table.h"

#include <sched.h>
#include <time.h>

#include <cstring>

#include "cache/dict.h"
#include "cache/evict.h"
#include "cache/hash.h"

namespace cache {
namespace {

struct UserRoot {
  uint32_t magic;
  uint32_t pad;
  Off catalog;
};

Catalog* CatalogOf(const mem::Arena& a) {
  auto* r = static_cast<UserRoot*>(a.UserRoot());
  if (r->magic != kCatalogMagic) return nullptr;
  return reinterpret_cast<Catalog*>(a.At(r->catalog));
}
static_assert(std::is_standard_layout_v<UserRoot> && sizeof(UserRoot) == 16);
static_assert(offsetof(UserRoot, catalog) == 8);

std::atomic<Catalog*> g_catalog_for_names{nullptr};  // the catalog NameOf may heal

void HealCatalogIfDead(Catalog& cat);

// Names are read under the entry's name seqlock. A name seqlock that stays
// odd means a rename was killed mid-copy: after a while, ask whether the
// catalog lock's holder is dead and finish its rename (never spin forever).
// `go_on` is asked before each try and after the copy; false ends the read.
template <typename GoOn>
bool ReadName(const TableHeader& h, GoOn go_on, std::string* out) {
  for (uint32_t spins = 0;; ++spins) {
    if (!go_on()) return false;
    uint32_t s1 = h.name_seq.load(std::memory_order_acquire);
    if (s1 & 1) {
      if ((spins & 1023) == 1023) {
        if (Catalog* cat = g_catalog_for_names.load(std::memory_order_acquire)) HealCatalogIfDead(*cat);
      }
      if (spins > 4096) sched_yield();
      continue;
    }
    char buf[64];
    mem::AtomicCopyOut(buf, h.name, sizeof buf);
    mem::SeqReadFence();
    if (h.name_seq.load(std::memory_order_relaxed) != s1) continue;
    if (!go_on()) return false;
    buf[63] = 0;
    out->assign(buf);
    return true;
  }
}

std::string NameOf(const TableHeader& h) {
  std::string name;
  (void)ReadName(h, [] { return true; }, &name);
  return name;
}

bool NameIs(const TableHeader& h, std::string_view name) { return NameOf(h) == name; }

void WriteName(TableHeader& h, std::string_view name) {
  char buf[64] = {};
  std::memcpy(buf, name.data(), name.size() < 63 ? name.size() : 63);
  if (!(h.name_seq.load(std::memory_order_relaxed) & 1)) {
    PC_CRASH_POINT();
    h.name_seq.fetch_add(1, std::memory_order_acq_rel);
  }
  mem::AtomicCopyIn(h.name, buf, sizeof buf);
  PC_CRASH_POINT();
  h.name_seq.fetch_add(1, std::memory_order_acq_rel);
}

// The catalog lock was taken over from a dead holder: finish a rename it
// left half done (pending_name), and make every name seqlock even.
void RepairCatalogLocked(Catalog& cat) {
  uint32_t pi = cat.pending_index;
  if (pi != 0 && pi <= kMaxCollections) {
    char buf[64];
    mem::AtomicCopyOut(buf, cat.pending_name, sizeof buf);
    buf[63] = 0;
    WriteName(cat.tables[pi - 1], buf);  // roll forward
  }
  cat.pending_index = 0;
  for (TableHeader& h : cat.tables) {
    if (h.name_seq.load(std::memory_order_relaxed) & 1) {
      PC_CRASH_POINT();
      h.name_seq.fetch_add(1, std::memory_order_acq_rel);
    }
  }
}

void LockCatalog(Catalog& cat) {
  if (mem::Lock(cat.lock) == mem::LockResult::kTookFromDead) RepairCatalogLocked(cat);
}

void HealCatalogIfDead(Catalog& cat) {
  uint32_t holder = mem::LockHolder(cat.lock);
  if (holder != 0 && mem::TidIsDead(holder) && mem::TakeFromDead(cat.lock, holder)) {
    RepairCatalogLocked(cat);
    mem::Unlock(cat.lock);
  }
}

int FindLive(const Catalog& cat, std::string_view name) {
  for (uint32_t i = 0; i < kMaxCollections; ++i) {
    const TableHeader& h = cat.tables[i];
    if (h.state.load(std::memory_order_acquire) == kTableLive && NameIs(h, name)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) return false;
  for (char ch : name) {
    if (static_cast<unsigned char>(ch) < 0x21 || ch == 0x7f) return false;
  }
  return true;
}

uint32_t Log2Ceil(uint32_t v) {
  uint32_t l = 0;
  while ((uint64_t{1} << l) < v) ++l;
  return l;
}

}  // namespace

// As NameOf, for a table that may be dropped meanwhile (an evictor holds a
// TableRef from its sample): false once the table is not live at t's
// generation, so a slot re-created by a process killed inside WriteName
// (an odd name seqlock no catalog repair will even) cannot hold us.
bool detail::LiveTableName(const TableHeader& h, const TableRef& t, std::string* out) {
  return ReadName(h, [&] { return Live(h, t); }, out);  // the same generation throughout: its name
}

namespace detail {

void RepairCatalogIfDead(Catalog& cat) { HealCatalogIfDead(cat); }

// The directory pair (buckets, hints) of segment `seg`, or null when the
// chunk holding it does not exist (catalog.h: the directory diagram).
Off* DirPair(const mem::Arena& a, const TableHeader& h, uint64_t seg) {
  Off d;
  if (seg < kDirChunkSegs) {
    d = h.dir;
  } else {
    if (seg >= kMaxSegs) return nullptr;
    Off ext = mem::LoadOff(&h.dir_ext);
    if (ext == 0 || a.ReadableFrom(ext) < kDirChunks * sizeof(Off)) return nullptr;
    d = mem::LoadOff(reinterpret_cast<const Off*>(a.At(ext)) + (seg >> kDirChunkShift));
    if (d != 0 && a.ReadableFrom(d) < 2 * kDirChunkSegs * sizeof(Off)) return nullptr;
  }
  if (d == 0) return nullptr;
  return reinterpret_cast<Off*>(a.At(d)) + 2 * (seg & (kDirChunkSegs - 1));
}

namespace {

// Entry `idx` of the segment array that `pair[which]` points to (0:
// buckets, 1: hints), or null.
template <typename T, int kWhich>
inline T* SegEntry(const mem::Arena& a, const Off* pair, uint64_t idx) {
  Off so = mem::LoadOff(&pair[kWhich]);
  if (so == 0 || a.ReadableFrom(so) < kSegBuckets * sizeof(T)) return nullptr;
  return reinterpret_cast<T*>(a.At(so)) + (idx & (kSegBuckets - 1));
}

// Past chunk 0 (tables above 2^25 buckets): out of line, so the lookups
// of every smaller table keep the code they had (a tail jump here).
template <typename T, int kWhich>
[[gnu::noinline]] T* ExtEntry(const mem::Arena& a, const TableHeader& h, uint64_t idx) {
  const Off* pair = DirPair(a, h, idx >> kSegShift);
  return pair ? SegEntry<T, kWhich>(a, pair, idx) : nullptr;
}

template <typename T, int kWhich>
inline T* EntryAt(const mem::Arena& a, const TableHeader& h, uint64_t idx) {
  uint64_t seg = idx >> kSegShift;
  if (seg >= kDirChunkSegs) [[unlikely]] return ExtEntry<T, kWhich>(a, h, idx);
  if (h.dir == 0) return nullptr;
  return SegEntry<T, kWhich>(a, reinterpret_cast<const Off*>(a.At(h.dir)) + 2 * seg, idx);
}

}  // namespace

Bucket* BucketAt(const mem::Arena& a, const TableHeader& h, uint64_t idx) {
  return EntryAt<Bucket, 0>(a, h, idx);
}

uint32_t* HintAt(const mem::Arena& a, const TableHeader& h, uint64_t idx) {
  return EntryAt<uint32_t, 1>(a, h, idx);
}

StatLine& Line(const Ctx& c, const TableHeader& h) {
  return reinterpret_cast<StatLine*>(c.arena.At(h.stats))[c.slot];
}

uint64_t HashOf(const Ctx& c, std::string_view key) { return HashKey(key, c.catalog->seed); }

}  // namespace detail

Ctx::Ctx(mem::Arena& a, uint32_t s)
    : arena(a), alloc(a, s), catalog(CatalogOf(a)), tid(mem::SelfLockId()), slot(s) {
  g_catalog_for_names.store(catalog, std::memory_order_release);
  scratch.reserve(4096);
  dead.reserve(16);
}

int64_t NowMs(const Ctx& c) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);  // exact ms (PX/PTTL as Redis); vDSO, no syscall
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000 + c.clock_skew_ms;
}

Status InitCatalog(mem::Arena& a, uint64_t seed) {
  auto* r = static_cast<UserRoot*>(a.UserRoot());
  if (r->magic == kCatalogMagic) return Status::kExists;
  Off off = a.RegionAlloc(sizeof(Catalog));
  if (off == 0) return Status::kNoMem;
  auto* cat = reinterpret_cast<Catalog*>(a.At(off));
  cat->seed = seed;
  InitDictLimits(cat);
  InitMemoryLimits(cat);
  cat->magic = kCatalogMagic;
  r->catalog = off;
  r->magic = kCatalogMagic;
  return Status::kOk;
}

namespace {

// A freed segment is linked through bucket 0's positions (bytes 24..39),
// never its seq or lock words: a stale operation may still lock a bucket
// of a dropped table, and must find it unlocked.
constexpr size_t kFreeNext = 24, kFreeHints = 32;
static_assert(kFreeNext >= offsetof(Bucket, lo) && kFreeHints + 8 <= offsetof(Bucket, hi));

// A segment pair (buckets + hints): from the free list, else fresh.
bool AllocSegment(Ctx& c, Off* seg, Off* hints) {
  Catalog* cat = c.catalog;
  LockCatalog(*cat);
  Off f = cat->free_segs;
  if (f != 0) {
    const char* p = c.arena.At(f);
    cat->free_segs = mem::LoadOff(p + kFreeNext);
    *hints = mem::LoadOff(p + kFreeHints);
    if (cat->free_segs != 0 && c.arena.ReadableFrom(cat->free_segs) < kSegBuckets * sizeof(Bucket)) {
      cat->free_segs = 0;  // a broken link: the rest of the list leaks
    }
    if (*hints == 0 || c.arena.ReadableFrom(*hints) < kSegBuckets * sizeof(uint32_t)) {
      *hints = 0;  // a broken link: fresh hints below
    }
    mem::Unlock(cat->lock);
    mem::AtomicZero(c.arena.At(f), kSegBuckets * sizeof(Bucket));
    *seg = f;
    if (*hints == 0) {
      *hints = c.arena.RegionAlloc(kSegBuckets * sizeof(uint32_t));
      return *hints != 0;
    }
    mem::AtomicZero(c.arena.At(*hints), kSegBuckets * sizeof(uint32_t));
    return true;
  }
  mem::Unlock(cat->lock);
  *seg = c.arena.RegionAlloc(kSegBuckets * sizeof(Bucket));
  *hints = c.arena.RegionAlloc(kSegBuckets * sizeof(uint32_t));
  return *seg != 0 && *hints != 0;
}

void FreeSegment(Ctx& c, Off seg, Off hints) {
  Catalog* cat = c.catalog;
  LockCatalog(*cat);
  char* p = c.arena.At(seg);
  mem::StoreOff(p + kFreeNext, cat->free_segs);
  mem::StoreOff(p + kFreeHints, hints);
  cat->free_segs = seg;
  mem::Unlock(cat->lock);
}

}  // namespace

namespace {

// The directory pair of segment `seg`, its chunk allocated if need be
// (admin lock held). A kill between an allocation and its publication
// leaks that region (1 KiB or 128 KiB), as a killed segment allocation
// leaks its segment; the table stays whole.
Off* DirPairGrow(Ctx& c, TableHeader& h, uint32_t seg) {
  if (seg >= kMaxSegs || h.dir == 0) return nullptr;
  if (seg >= kDirChunkSegs) {
    if (h.dir_ext == 0) {
      Off ext = c.arena.RegionAlloc(kDirChunks * sizeof(Off));
      if (ext == 0) return nullptr;
      PC_CRASH_POINT();
      __atomic_store_n(&h.dir_ext, ext, __ATOMIC_RELEASE);
    }
    Off* slot = reinterpret_cast<Off*>(c.arena.At(h.dir_ext)) + (seg >> kDirChunkShift);
    if (mem::LoadOff(slot) == 0) {
      Off chunk = c.arena.RegionAlloc(2 * kDirChunkSegs * sizeof(Off));
      if (chunk == 0) return nullptr;
      PC_CRASH_POINT();
      __atomic_store_n(slot, chunk, __ATOMIC_RELEASE);
    }
  }
  return detail::DirPair(c.arena, h, seg);
}

}  // namespace

// Make sure segment `seg` of the table exists (admin lock held).
bool detail::EnsureSegment(Ctx& c, TableHeader& h, uint32_t seg) {
  Off* pair = DirPairGrow(c, h, seg);
  if (!pair) return false;
  if (mem::LoadOff(&pair[0]) != 0) {
    // (A holder killed between the publication below and nsegs leaves
    // the segment published: count it now, or whole-table walks and the
    // drop would never see it.)
    if (seg + 1 > h.nsegs) h.nsegs = seg + 1;
    return true;
  }
  Off so, ho;
  if (!AllocSegment(c, &so, &ho)) return false;
  mem::StoreOff(&pair[1], ho);
  // Release: a reader that sees the segment sees it zeroed.
  __atomic_store_n(&pair[0], so, __ATOMIC_RELEASE);
  if (seg + 1 > h.nsegs) h.nsegs = seg + 1;
  return true;
}

Status CreateCollection(Ctx& c, std::string_view name, const CollectionOptions& o,
                        TableRef* out) {
  if (!ValidName(name)) return Status::kInvalid;
  Catalog* cat = c.catalog;
  uint32_t level = Log2Ceil(o.buckets < 16 ? 16 : o.buckets);
  if (level > kMaxCreateLevel) return Status::kInvalid;
  LockCatalog(*cat);
  if (FindLive(*cat, name) >= 0) {
    mem::Unlock(cat->lock);
    return Status::kExists;
  }
  int idx = -1;
  for (uint32_t i = 0; i < kMaxCollections; ++i) {
    if (cat->tables[i].state.load() == kTableFree) {
      idx = static_cast<int>(i);
      break;
    }
  }
  if (idx < 0) {
    mem::Unlock(cat->lock);
    return Status::kFull;
  }
  TableHeader& h = cat->tables[idx];
  PC_CRASH_POINT();
  h.state.store(kTableDropping);  // reserved: not yet visible as live
  mem::Unlock(cat->lock);

  if (h.dir == 0) h.dir = c.arena.RegionAlloc(sizeof(Off) * 2 * kDirChunkSegs);
  if (h.stats == 0) h.stats = c.arena.RegionAlloc(sizeof(StatLine) * c.arena.hdr()->max_procs);
  if (h.ovf.heads == 0) h.ovf.heads = c.arena.RegionAlloc(sizeof(Off) * kOvfHeads);
  bool ok = h.dir != 0 && h.stats != 0 && h.ovf.heads != 0;
  uint32_t nseg = static_cast<uint32_t>(((uint64_t{1} << level) + kSegBuckets - 1) >> kSegShift);
  (void)mem::Lock(h.admin);
  for (uint32_t s = 0; ok && s < nseg; ++s) ok = detail::EnsureSegment(c, h, s);
  mem::Unlock(h.admin);
  if (!ok) {
    PC_CRASH_POINT();
    h.state.store(kTableFree);
    return Status::kNoMem;
  }
  WriteName(h, name);
  h.flags = o.expired_events ? kTableExpiredEvents : 0;
  h.min_buckets = 1u << level;
  h.load_x100 = o.load_x100 ? o.load_x100 : 400;
  PC_CRASH_POINT();
  h.route.store(uint64_t{level} << 32, std::memory_order_release);
  h.created_ms.store(NowMs(c));
  StatLine* lines = reinterpret_cast<StatLine*>(c.arena.At(h.stats));
  for (uint32_t p = 0; p < c.arena.hdr()->max_procs; ++p) {
    for (auto& v : lines[p].c) v.store(0, std::memory_order_relaxed);
  }
  for (auto& v : h.stat_base) v.store(0);
  detail::RaiseFloor(h, o.version_floor);  // before it is live (CollectionOptions)
  PC_CRASH_POINT();
  uint32_t gen = h.gen.fetch_add(1) + 1;
  LockCatalog(*cat);
  bool dup = FindLive(*cat, name) >= 0;  // a racing create of the same name
  if (!dup) {
    PC_CRASH_POINT();
    h.state.store(kTableLive, std::memory_order_release);
    ++cat->count;
  }
  mem::Unlock(cat->lock);
  if (dup) {
    PC_CRASH_POINT();
    h.state.store(kTableFree);
    return Status::kExists;
  }
  if (out) *out = TableRef{&h, gen, static_cast<uint32_t>(idx)};
  return Status::kOk;
}

Status OpenCollection(Ctx& c, std::string_view name, TableRef* out) {
  int idx = FindLive(*c.catalog, name);
  if (idx < 0) return Status::kNotFound;
  TableHeader& h = c.catalog->tables[idx];
  *out = TableRef{&h, h.gen.load(std::memory_order_acquire), static_cast<uint32_t>(idx)};
  if (h.state.load(std::memory_order_acquire) != kTableLive) return Status::kNotFound;
  return Status::kOk;
}

namespace {

// Ctx::on_cleared for each record in c.dead (unlinked, not yet freed: only
// this process frees them, so their keys are still there to read).
void TellCleared(Ctx& c, const TableHeader& h) {
  if (!c.on_cleared) return;
  std::string_view coll(h.name, strnlen(h.name, sizeof h.name));
  for (Off d : c.dead) {
    RecView v{c.arena.At(d)};
    c.on_cleared(coll, std::string_view(v.key(), v.klen()), v.version());
  }
}

// Clear every bucket and the overflow table. The admin lock is held, so no
// split or merge moves keys across the walk (a clear racing a split used to
// leave the moved keys behind).
uint64_t ClearLocked(Ctx& c, TableHeader& h) {
  uint64_t n = 0;
  uint64_t nb = detail::RouteBuckets(h.route.load(std::memory_order_acquire));
  // Also clear merged-away buckets above the current size: cheap, and a
  // stale writer may have left nothing there anyway (gen checks).
  uint64_t span = uint64_t{h.nsegs} << kSegShift;
  if (span < nb) span = nb;
  for (uint64_t i = 0; i < span; ++i) {
    Bucket* b = detail::BucketAt(c.arena, h, i);
    if (!b) continue;
    if (Used(TagsHi(*b)) == 0) continue;
    detail::LockBucket(c, h, i, *b);
    uint32_t used = UsedOf(*b);
    uint64_t top = 0;
    for (uint32_t s = 0; s < used; ++s) {
      Off rec = SlotAt(*b, static_cast<int>(s));
      c.dead.push_back(rec);
      uint64_t v = RecView{c.arena.At(rec)}.version();
      if (v > top) top = v;
    }
    detail::RaiseFloor(h, top);  // before the keys go (record.h)
    WriteBegin(*b);
    mem::StoreRelaxed64(&b->tags_lo, 0);
    SetCtl(*b, 0);  // no position is live from here
    for (int sl = 0; sl < kSlots; ++sl) SetSlot(*b, sl, 0);
    if (uint32_t* hint = detail::HintAt(c.arena, h, i)) mem::StoreRelaxed32(hint, 0);
    WriteEnd(*b);
    mem::Unlock(b->lock);
    TellCleared(c, h);
    for (Off d : c.dead) FreeValue(c, d);
    n += c.dead.size();
    c.dead.clear();
  }
  if (h.ovf.count.load() != 0) {
    std::vector<Off> nodes;
    detail::LockOverflow(c, h);
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    Off* heads = reinterpret_cast<Off*>(c.arena.At(h.ovf.heads));
    for (uint32_t i = 0; i < kOvfHeads; ++i) {
      Off node = mem::LoadOff(&heads[i]);
      uint32_t guard = 1u << 20;
      while (node != 0 && guard-- > 0) {
        Off next = mem::LoadOff(c.arena.At(node) + detail::kNodeNext);
        Off rec = mem::LoadOff(c.arena.At(node) + detail::kNodeRec);
        detail::RaiseFloor(h, RecView{c.arena.At(rec)}.version());
        c.dead.push_back(rec);
        nodes.push_back(node);
        node = next;
      }
      mem::StoreOff(&heads[i], 0);
    }
    n += c.dead.size();
    PC_CRASH_POINT();
    h.ovf.count.store(0);
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    mem::Unlock(h.ovf.lock);
    TellCleared(c, h);
    for (Off d : c.dead) FreeValue(c, d);
    for (Off d : nodes) c.alloc.Free(d);
    c.dead.clear();
  }
  detail::Count(c, h, kStatDestroyed, n);
  detail::Count(c, h, kStatRemoves, n);
  return n;
}

}  // namespace

Status ClearCollection(Ctx& c, const TableRef& t, uint64_t* removed) {
  TableHeader& h = *t.h;
  (void)mem::Lock(h.admin, c.tid);
  if (h.gen.load(std::memory_order_acquire) != t.gen ||
      h.state.load(std::memory_order_acquire) != kTableLive) {
    mem::Unlock(h.admin);
    return Status::kStale;
  }
  uint64_t n = ClearLocked(c, h);
  mem::Unlock(h.admin);
  if (removed) *removed = n;
  return Status::kOk;
}

Status DropCollection(Ctx& c, std::string_view name) {
  Catalog* cat = c.catalog;
  LockCatalog(*cat);
  int idx = FindLive(*cat, name);
  if (idx < 0) {
    mem::Unlock(cat->lock);
    return Status::kNotFound;
  }
  TableHeader& h = cat->tables[idx];
  PC_CRASH_POINT();
  h.state.store(kTableDropping, std::memory_order_release);
  PC_CRASH_POINT();
  h.gen.fetch_add(1);  // from here, every op on the old gen is stale
  --cat->count;
  mem::Unlock(cat->lock);

  (void)mem::Lock(h.admin);
  (void)ClearLocked(c, h);
  // The directory chunks stay with the entry (as `dir` does) for the next
  // collection created in it; their pairs are cleared.
  for (uint32_t s = 0; s < h.nsegs; ++s) {
    Off* pair = detail::DirPair(c.arena, h, s);
    if (!pair) continue;
    Off so = pair[0], ho = pair[1];
    if (so == 0) continue;
    mem::StoreOff(&pair[0], 0);
    mem::StoreOff(&pair[1], 0);
    FreeSegment(c, so, ho);
  }
  h.nsegs = 0;
  PC_CRASH_POINT();
  h.route.store(0);
  mem::Unlock(h.admin);
  PC_CRASH_POINT();
  h.state.store(kTableFree, std::memory_order_release);
  return Status::kOk;
}

Status RenameCollection(Ctx& c, std::string_view from, std::string_view to) {
  if (!ValidName(to)) return Status::kInvalid;
  Catalog* cat = c.catalog;
  LockCatalog(*cat);
  int idx = FindLive(*cat, from);
  Status st = Status::kOk;
  if (idx < 0) {
    st = Status::kNotFound;
  } else if (from != to && FindLive(*cat, to) >= 0) {
    st = Status::kExists;
  } else {
    // The new name goes to pending_name first: a rename killed during the
    // copy is finished by whoever takes the lock over (RepairCatalogLocked).
    char buf[64] = {};
    std::memcpy(buf, to.data(), to.size());
    mem::AtomicCopyIn(cat->pending_name, buf, sizeof buf);
    __atomic_store_n(&cat->pending_index, static_cast<uint32_t>(idx) + 1, __ATOMIC_RELEASE);
    WriteName(cat->tables[idx], to);
    __atomic_store_n(&cat->pending_index, 0u, __ATOMIC_RELEASE);
  }
  mem::Unlock(cat->lock);
  return st;
}

Status ResizeCollection(Ctx& c, std::string_view name, uint32_t buckets) {
  TableRef t;
  if (Status s = OpenCollection(c, name, &t); s != Status::kOk) return s;
  uint32_t level = Log2Ceil(buckets < 16 ? 16 : buckets);
  if (level > kMaxCreateLevel) return Status::kInvalid;
  __atomic_store_n(&t.h->min_buckets, 1u << level, __ATOMIC_RELAXED);
  return Status::kOk;
}

uint64_t SumStat(const Ctx& c, const TableRef& t, Stat s) {
  const StatLine* lines = reinterpret_cast<const StatLine*>(c.arena.At(t.h->stats));
  uint64_t sum = 0;
  for (uint32_t p = 0; p < c.arena.hdr()->max_procs; ++p) {
    sum += lines[p].c[s].load(std::memory_order_relaxed);
  }
  return sum;
}

uint64_t CollectionEntries(const Ctx& c, const TableRef& t) {
  uint64_t cr = SumStat(c, t, kStatCreated), de = SumStat(c, t, kStatDestroyed);
  return cr > de ? cr - de : 0;
}

bool CollectionNameOf(const TableRef& t, std::string* out) {
  return t.h != nullptr && detail::LiveTableName(*t.h, t, out);
}

bool CollectionInfoOf(Ctx& c, const TableRef& t, CollectionInfo* out) {
  const TableHeader& h = *t.h;
  if (h.state.load() != kTableLive || h.gen.load() != t.gen) return false;
  uint64_t route = h.route.load(std::memory_order_acquire);
  out->name = NameOf(h);
  out->index = t.index;
  out->level = detail::RouteLevel(route);
  out->split = static_cast<uint32_t>(detail::RouteSplit(route));
  out->buckets = detail::RouteBuckets(route);
  out->entries = CollectionEntries(c, t);
  out->overflow = h.ovf.count.load(std::memory_order_relaxed);
  out->load_factor = out->buckets ? static_cast<double>(out->entries) / out->buckets : 0;
  for (int s = 0; s < kStatCount; ++s) {
    uint64_t v = SumStat(c, t, static_cast<Stat>(s));
    uint64_t b = (s == kStatCreated || s == kStatDestroyed) ? 0 : h.stat_base[s].load();
    out->stats[s] = v > b ? v - b : 0;
    if (s == kStatStores || s == kStatRemoves || s == kStatExpired || s == kStatEvicted) out->changes += v;
  }
  return true;
}

void ResetCollectionStat(Ctx& c, const TableRef& t, Stat s) {
  if (s == kStatCreated || s == kStatDestroyed) return;  // they make the entries gauge
  t.h->stat_base[s].store(SumStat(c, t, s));
}

uint64_t VersionFloor(const TableRef& t) { return t.h->ver_floor.load(std::memory_order_acquire); }

void RaiseVersionFloor(const TableRef& t, uint64_t v) { detail::RaiseFloor(*t.h, v); }

void ResetCollectionStats(Ctx& c, const TableRef& t) {
  for (int s = 0; s < kStatCount; ++s) {
    t.h->stat_base[s].store(SumStat(c, t, static_cast<Stat>(s)));
  }
}

std::vector<CollectionInfo> ListCollections(Ctx& c) {
  std::vector<CollectionInfo> v;
  for (uint32_t i = 0; i < kMaxCollections; ++i) {
    TableHeader& h = c.catalog->tables[i];
    if (h.state.load(std::memory_order_acquire) != kTableLive) continue;
    CollectionInfo ci;
    if (CollectionInfoOf(c, TableRef{&h, h.gen.load(), i}, &ci)) v.push_back(std::move(ci));
  }
  return v;
}

}  // namespace cache
