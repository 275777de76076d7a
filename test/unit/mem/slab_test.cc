// perfcached — unit tests for mem/slab: classes, the allocator, pools, fork and dead slots.
// Copyright (c) 2026 the perfcached authors.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "cache/record.h"
#include "mem/arena.h"
#include "mem/atomic_copy.h"
#include "mem/slab.h"
#include "test/unit/mem/mem_fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Allocator;
using mem::Arena;
using mem::ClassFor;
using mem::GroupKind;
using mem::kClassSize;
using mem::kGroupSize;
using mem::kNumClasses;
using mem::Off;
using mem::Status;

namespace {

constexpr size_t kCell64 = 64;  // a class whose chunk (64 KiB) holds 1024 cells

// A free cell's link (slab.h: bytes 4..7 of the cell).
Off LinkOf(const Arena& a, Off cell) { return mem::LoadRelaxed32(a.At(cell) + 4); }
uint8_t ClassByte(const Arena& a, Off cell) { return mem::LoadRelaxed8(a.At(cell)); }

// Walk a global pool's list. False if it is longer than `limit` (a cycle)
// or reaches a cell that is not of the pool's class.
bool WalkPool(const Arena& a, int cls, size_t limit, std::vector<Off>* out) {
  out->clear();
  for (Off c = mem::PoolAt(a, cls)->head; c != 0; c = LinkOf(a, c)) {
    if (out->size() >= limit || mem::CellBound(a, c) == 0 || ClassByte(a, c) != cls) return false;
    out->push_back(c);
  }
  return true;
}

bool AllDistinct(std::vector<Off> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) == v.end();
}

// Cells left in a class cache's bump range.
uint32_t BumpLeft(const mem::ClassCache& c, int cls) {
  return (mem::BumpEnd(c.bump) - mem::BumpNext(c.bump)) / (kClassSize[cls] / mem::kUnit);
}

GroupKind KindAt(const Arena& a, Off cell) {
  return Arena::EntryKind(a.GroupEntry(static_cast<uint32_t>(size_t{cell} * mem::kUnit / kGroupSize)));
}

}  // namespace

// ---------------------------------------------------------------------------
TEST_GROUP(SlabClasses){};

TEST(SlabClasses, ClassForSmall) {
  for (size_t b = 0; b <= 16; ++b) CHECK_EQUAL(0, ClassFor(b));
  CHECK_EQUAL(16u, kClassSize[0]);
  CHECK_EQUAL(1, ClassFor(17));
  CHECK_EQUAL(24u, kClassSize[1]);
  CHECK_EQUAL(136u, kClassSize[ClassFor(136)]);  // 16-byte key + 100-byte value + header
  CHECK_EQUAL(144u, kClassSize[ClassFor(137)]);
  CHECK_EQUAL(256u, kClassSize[ClassFor(256)]);
  CHECK_EQUAL(288u, kClassSize[ClassFor(257)]);
  CHECK_EQUAL(576u, kClassSize[ClassFor(513)]);
}

TEST(SlabClasses, ClassForLimits) {
  CHECK_EQUAL(kNumClasses - 1, ClassFor(mem::kMaxCell));
  CHECK_EQUAL(-1, ClassFor(mem::kMaxCell + 1));
  CHECK_EQUAL(-1, ClassFor(SIZE_MAX));
  CHECK_EQUAL(mem::kMaxCell, kClassSize[kNumClasses - 1]);
  CHECK(kNumClasses < static_cast<int>(mem::kLargeClass));
}

// Every size maps to the smallest class that holds it.
TEST(SlabClasses, ClassForIsSmallestFit) {
  size_t bad = 0;
  for (size_t b = 1; b <= mem::kMaxCell; ++b) {
    int c = ClassFor(b);
    if (c < 0 || c >= kNumClasses || kClassSize[c] < b || (c > 0 && kClassSize[c - 1] >= b)) ++bad;
  }
  CHECK_EQUAL(0u, bad);
  for (int c = 0; c < kNumClasses; ++c) CHECK_EQUAL(c, ClassFor(kClassSize[c]));
}

TEST(SlabClasses, LadderSteps) {
  CHECK_EQUAL(mem::kMinCell, kClassSize[0]);
  for (int c = 0; c < kNumClasses; ++c) {
    CHECK_EQUAL(0u, kClassSize[c] % mem::kUnit);  // bump steps are whole Off units
    if (c == 0) continue;
    uint32_t prev = kClassSize[c - 1], cur = kClassSize[c];
    CHECK(cur > prev);
    // <= 12.5% per step, or one 8-byte step at the small end.
    CHECK(cur - prev <= std::max<uint32_t>(8, prev / 8));
    // Worst waste in the class (a request of prev+1 bytes) below 1/9 above 256 B.
    if (prev >= 256) CHECK(double(cur - prev - 1) / cur < 1.0 / 9);
  }
}

TEST(SlabClasses, ChunkBytes) {
  for (int c = 0; c < kNumClasses; ++c) {
    size_t ch = mem::ChunkBytes(c);
    CHECK_EQUAL(0u, ch & (ch - 1));
    CHECK(ch >= (64u << 10));
    CHECK(ch <= kGroupSize);
    CHECK(ch / kClassSize[c] >= 8);
    // 32 cells unless the chunk is a whole group; and no bigger than needed.
    CHECK(ch / kClassSize[c] >= 32 || ch == kGroupSize);
    CHECK(ch == (64u << 10) || ch / 2 < size_t{kClassSize[c]} * 32);
  }
  CHECK_EQUAL(64u << 10, mem::ChunkBytes(ClassFor(kCell64)));
  CHECK_EQUAL(kGroupSize, mem::ChunkBytes(kNumClasses - 1));
}

// ---------------------------------------------------------------------------
TEST_GROUP(SlabAllocator) {
  Arena* a = nullptr;
  void setup() override { a = memtest::MakeArena(16, 0, 8, 4u << 20); }
  void teardown() override { Arena::Destroy(a); }
};

TEST(SlabAllocator, AllocStampsClassByte) {
  Allocator al(*a, 0);
  CHECK_EQUAL(0u, al.slot());
  CHECK(&al.arena() == a);
  const size_t sizes[] = {0, 1, 16, 17, 100, 136, 257, 1000, 4096, 65536, mem::kMaxCell};
  std::vector<Off> cells;
  for (size_t s : sizes) {
    Off o = 0;
    CHECK(al.Alloc(s, &o) == Status::kOk);
    CHECK(o != 0);
    int cls = ClassFor(s);
    CHECK_EQUAL(cls, ClassByte(*a, o));
    CHECK_EQUAL(kClassSize[cls], mem::CellBound(*a, o));
    CHECK(KindAt(*a, o) == GroupKind::kSlab);
    CHECK_EQUAL(1u, mem::PoolAt(*a, cls)->chunks.load());
    CHECK_EQUAL(mem::ChunkBytes(cls) / kClassSize[cls], mem::PoolAt(*a, cls)->cells_total.load());
    cells.push_back(o);
  }
  CHECK(AllDistinct(cells));
  CHECK_EQUAL(sizeof(sizes) / sizeof(sizes[0]), mem::SlotAt(*a, 0)->allocs.load());
  // The next cell of a class comes from the bump range: adjacent.
  Off x, y;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  CHECK(al.Alloc(100, &y) == Status::kOk);
  CHECK_EQUAL(x + kClassSize[ClassFor(100)] / mem::kUnit, y);
  CHECK(mem::SlotAt(*a, 0)->owner_tid.load() == mem::SelfTid());
}

TEST(SlabAllocator, FreeThenAllocIsLifo) {
  Allocator al(*a, 0);
  Off x, y, z;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  CHECK(al.Alloc(100, &y) == Status::kOk);
  al.Free(x);
  al.Free(y);
  int cls = ClassFor(100);
  CHECK_EQUAL(2u, mem::SlotAt(*a, 0)->cls[cls].free_count);
  CHECK_EQUAL(2u, mem::SlotAt(*a, 0)->frees.load());
  CHECK_EQUAL(cls, ClassByte(*a, x));  // Free keeps the class byte
  CHECK(al.Alloc(100, &z) == Status::kOk);
  CHECK_EQUAL(y, z);
  CHECK(al.Alloc(100, &z) == Status::kOk);
  CHECK_EQUAL(x, z);
  CHECK(al.Alloc(100, &z) == Status::kOk);  // stack empty: back to the bump range
  CHECK(z != x && z != y);
  CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[cls].free_count);
  al.Free(0);  // null is a no-op
  CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[cls].free_count);
}

TEST(SlabAllocator, DonateToPoolAndRefillOnOtherSlot) {
  Allocator al(*a, 0);
  int cls = ClassFor(kCell64);
  std::vector<Off> cells(300);
  for (Off& o : cells) CHECK(al.Alloc(kCell64, &o) == Status::kOk);
  mem::SlabPool* p = mem::PoolAt(*a, cls);
  for (uint32_t i = 0; i < mem::kDonateAbove; ++i) al.Free(cells[i]);
  CHECK_EQUAL(0u, p->count);
  CHECK_EQUAL(mem::kDonateAbove, mem::SlotAt(*a, 0)->cls[cls].free_count);
  al.Free(cells[mem::kDonateAbove]);  // one above the threshold
  CHECK_EQUAL(mem::kDonate, p->count);
  CHECK_EQUAL(mem::kDonateAbove + 1 - mem::kDonate, mem::SlotAt(*a, 0)->cls[cls].free_count);
  CHECK_EQUAL(0u, mem::LockHolder(p->lock));
  std::vector<Off> pool;
  CHECK(WalkPool(*a, cls, 1000, &pool));
  CHECK_EQUAL(mem::kDonate, pool.size());
  CHECK(AllDistinct(pool));
  std::set<Off> freed(cells.begin(), cells.begin() + mem::kDonateAbove + 1);
  for (Off o : pool) CHECK(freed.count(o) == 1);
  std::set<Off> pooled(pool.begin(), pool.end());

  // The owner keeps using its private rest, not the pool.
  Off o;
  CHECK(al.Alloc(kCell64, &o) == Status::kOk);
  CHECK(freed.count(o) == 1 && pooled.count(o) == 0);

  // Another slot refills kRefill cells from the pool instead of carving.
  uint64_t chunks = p->chunks.load();
  Allocator other(*a, 1);
  Off q;
  CHECK(other.Alloc(kCell64, &q) == Status::kOk);
  CHECK(pooled.count(q) == 1);
  CHECK_EQUAL(chunks, p->chunks.load());
  CHECK_EQUAL(mem::kDonate - mem::kRefill, p->count);
  CHECK_EQUAL(mem::kRefill - 1, mem::SlotAt(*a, 1)->cls[cls].free_count);
  std::set<Off> got{q};
  for (uint32_t i = 1; i < mem::kDonate; ++i) {
    CHECK(other.Alloc(kCell64, &q) == Status::kOk);
    CHECK(pooled.count(q) == 1);
    got.insert(q);
  }
  CHECK_EQUAL(mem::kDonate, got.size());  // the whole pool, each cell once
  CHECK_EQUAL(0u, p->count);
  CHECK_EQUAL(chunks, p->chunks.load());
  CHECK(other.Alloc(kCell64, &q) == Status::kOk);  // pool empty: carves now
  CHECK_EQUAL(chunks + 1, p->chunks.load());
  CHECK(freed.count(q) == 0);
}

TEST(SlabAllocator, FreeGlobalGoesToPool) {
  Allocator al(*a, 0);
  Off x;
  CHECK(al.Alloc(500, &x) == Status::kOk);
  int cls = ClassFor(500);
  mem::FreeGlobal(*a, x);
  CHECK_EQUAL(1u, mem::PoolAt(*a, cls)->count);
  CHECK_EQUAL(x, mem::PoolAt(*a, cls)->head);
  CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[cls].free_count);
  mem::FreeGlobal(*a, 0);  // no-op
  CHECK_EQUAL(1u, mem::PoolAt(*a, cls)->count);
}

TEST(SlabAllocator, LargeObjects) {
  Allocator al(*a, 0);
  mem::ArenaHeader* h = a->hdr();
  Off x, y;
  CHECK(al.Alloc(mem::kMaxCell + 1, &x) == Status::kOk);
  CHECK_EQUAL(mem::kLargeClass, ClassByte(*a, x));
  CHECK_EQUAL(0u, size_t{x} * mem::kUnit % kGroupSize);
  CHECK_EQUAL(kGroupSize, mem::CellBound(*a, x));
  CHECK(KindAt(*a, x) == GroupKind::kLargeHead);
  CHECK(al.Alloc(3u << 20, &y) == Status::kOk);
  CHECK_EQUAL(mem::kLargeClass, ClassByte(*a, y));
  CHECK_EQUAL(0u, size_t{y} * mem::kUnit % kGroupSize);
  CHECK_EQUAL(2 * kGroupSize, mem::CellBound(*a, y));
  CHECK(mem::CellBound(*a, y) >= (3u << 20));
  uint32_t gy = static_cast<uint32_t>(size_t{y} * mem::kUnit / kGroupSize);
  CHECK_EQUAL(2u, Arena::EntryRun(a->GroupEntry(gy)));
  CHECK(Arena::EntryKind(a->GroupEntry(gy + 1)) == GroupKind::kLargeCont);
  CHECK_EQUAL(2u, h->large_objects.load());
  CHECK_EQUAL(3 * kGroupSize, h->large_bytes.load());
  std::memset(a->At(y) + 1, 0x33, (3u << 20) - 1);  // the whole object is writable

  al.Free(x);
  CHECK_EQUAL(1u, h->large_objects.load());
  mem::FreeGlobal(*a, y);  // the global path frees large objects the same way
  CHECK_EQUAL(0u, h->large_objects.load());
  CHECK_EQUAL(0u, h->large_bytes.load());
  // Tier small: the groups are given back, not just marked free.
  CHECK(a->tier() != mem::Tier::kHugetlb);
  CHECK(KindAt(*a, x) == GroupKind::kReleased);
  CHECK(Arena::EntryKind(a->GroupEntry(gy)) == GroupKind::kReleased);
  CHECK(Arena::EntryKind(a->GroupEntry(gy + 1)) == GroupKind::kReleased);
  CHECK_EQUAL(3 * kGroupSize, h->released_bytes.load());
  // Nothing went to a slab pool or the private stacks.
  for (int c = 0; c < kNumClasses; ++c) {
    CHECK_EQUAL(0u, mem::PoolAt(*a, c)->count);
    CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[c].free_count);
  }
  // The space is reused.
  Off z;
  CHECK(al.Alloc(4u << 20, &z) == Status::kOk);
  CHECK_EQUAL(x, z);  // first fit: the two released groups starting at x
  CHECK_EQUAL(1u, h->large_objects.load());
}

TEST(SlabAllocator, TooBig) {
  Allocator al(*a, 0);
  size_t max = a->hdr()->max_value;  // 4 MiB
  Off o = 12345;
  // The limit is max_value plus an allowance for the record header and key
  // (below 256 KiB); far above it is refused before any group is taken.
  CHECK(al.Alloc(max + (256u << 10), &o) == Status::kTooBig);
  CHECK(al.Alloc(SIZE_MAX, &o) == Status::kTooBig);
  CHECK(al.Alloc(max * 16, &o) == Status::kTooBig);  // would fit in no arena this size either
  CHECK_EQUAL(12345u, o);
  CHECK_EQUAL(0u, a->hdr()->nomem_events.load());
  CHECK_EQUAL(0u, a->hdr()->large_objects.load());
  CHECK_EQUAL(size_t{a->hdr()->meta_groups} * kGroupSize, a->used_bytes());
  CHECK(al.Alloc(max, &o) == Status::kOk);
  CHECK_EQUAL(2 * kGroupSize, mem::CellBound(*a, o));
  CHECK(al.Alloc(max + 1, &o) == Status::kOk);  // within the allowance
  CHECK_EQUAL(3 * kGroupSize, mem::CellBound(*a, o));
}

// cache/ops.cc admits a key of kMaxKey bytes with a value of max_value bytes;
// the record for it (20-byte header + key + value) must not be refused by the
// allocator as too big.
TEST(SlabAllocator, LargestRecordTheCacheAdmitsIsNotTooBig) {
  Allocator al(*a, 0);
  size_t max = a->hdr()->max_value;
  size_t rec = cache::RecordBytes(cache::kTypeString, cache::kMaxKey, max);
  Off o = 0;
  Status s = al.Alloc(rec, &o);
  CHECK_TEXT(s == Status::kOk, "Alloc(RecordBytes(kMaxKey, max_value)) refused (slab.cc AllocLarge slack)");
  CHECK(mem::CellBound(*a, o) >= rec);
}

TEST(SlabAllocator, ArenaFullKeepsContents) {
  Arena::Destroy(a);
  a = memtest::MakeArena(8, 8, 4, 4u << 20);  // 3 data groups
  Allocator al(*a, 0);
  const size_t kSize = 4096;  // an exact class: 32 cells per 128 KiB chunk
  int cls = ClassFor(kSize);
  CHECK_EQUAL(kSize, kClassSize[cls]);
  std::vector<Off> cells;
  Off o;
  Status s;
  while ((s = al.Alloc(kSize, &o)) == Status::kOk) {
    unsigned char* p = reinterpret_cast<unsigned char*>(a->At(o));
    for (size_t i = 1; i < kSize; ++i) p[i] = static_cast<unsigned char>(cells.size() * 7 + i);
    cells.push_back(o);
    if (cells.size() > 100000) break;
  }
  CHECK(s == Status::kNoMem);
  CHECK_EQUAL(3 * (kGroupSize / mem::ChunkBytes(cls)) * 32, cells.size());
  CHECK(AllDistinct(cells));
  uint64_t ev = a->hdr()->nomem_events.load();
  CHECK(ev >= 1);
  size_t used = a->used_bytes();
  // Nothing else fits either, and a refusal changes nothing.
  o = 777;
  CHECK(al.Alloc(kSize, &o) == Status::kNoMem);
  CHECK(al.Alloc(kCell64, &o) == Status::kNoMem);
  CHECK(al.Alloc(1u << 20, &o) == Status::kNoMem);
  CHECK_EQUAL(777u, o);
  CHECK(a->hdr()->nomem_events.load() > ev);
  CHECK_EQUAL(used, a->used_bytes());
  CHECK_EQUAL(0u, a->hdr()->large_objects.load());
  // Every cell still holds what was written, class byte included.
  size_t bad = 0;
  for (size_t k = 0; k < cells.size(); ++k) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(a->At(cells[k]));
    if (p[0] != cls) ++bad;
    for (size_t i = 1; i < kSize; ++i) bad += p[i] != static_cast<unsigned char>(k * 7 + i);
  }
  CHECK_EQUAL(0u, bad);
  // A freed cell is allocatable again, here and (through the pool) elsewhere.
  al.Free(cells[5]);
  CHECK(al.Alloc(kSize, &o) == Status::kOk);
  CHECK_EQUAL(cells[5], o);
  mem::FreeGlobal(*a, cells[6]);
  Allocator other(*a, 1);
  CHECK(other.Alloc(kSize, &o) == Status::kOk);
  CHECK_EQUAL(cells[6], o);
  CHECK(other.Alloc(kSize, &o) == Status::kNoMem);
}

TEST(SlabAllocator, CellBoundOfGarbage) {
  Allocator al(*a, 0);
  Off cell;
  CHECK(al.Alloc(100, &cell) == Status::kOk);
  CHECK_EQUAL(kClassSize[ClassFor(100)], mem::CellBound(*a, cell));  // control
  size_t pop = a->populated_bytes();
  CHECK_EQUAL(0u, mem::CellBound(*a, 0));
  CHECK_EQUAL(0u, mem::CellBound(*a, 1));
  CHECK_EQUAL(0u, mem::CellBound(*a, static_cast<Off>(a->hdr()->pools_off / mem::kUnit)));
  CHECK_EQUAL(0u, mem::CellBound(*a, static_cast<Off>(pop / mem::kUnit)));
  CHECK_EQUAL(0u, mem::CellBound(*a, 0xFFFFFFFFu));
  // Impossible class bytes in a region.
  Off r = a->RegionAlloc(4096);
  char* p = a->At(r);
  p[0] = static_cast<char>(0xFE);
  CHECK_EQUAL(0u, mem::CellBound(*a, r));
  p[0] = static_cast<char>(kNumClasses);
  CHECK_EQUAL(0u, mem::CellBound(*a, r));
  p[64] = static_cast<char>(mem::kLargeClass);  // large, but not on a group boundary
  CHECK_EQUAL(0u, mem::CellBound(*a, r + 8));
  // Large class byte at a group start that is not a large run head.
  Off rg = a->RegionAlloc(3u << 20);
  CHECK_EQUAL(0u, size_t{rg} * mem::kUnit % kGroupSize);
  a->At(rg)[0] = static_cast<char>(mem::kLargeClass);
  CHECK_EQUAL(0u, mem::CellBound(*a, rg));
  // A class whose cell would run past the populated end.
  Off tail = static_cast<Off>((pop - 64) / mem::kUnit);
  a->At(tail)[0] = static_cast<char>(kNumClasses - 1);
  CHECK_EQUAL(0u, mem::CellBound(*a, tail));
  a->At(tail)[0] = 0;  // 16 bytes fit
  CHECK_EQUAL(16u, mem::CellBound(*a, tail));
}

TEST(SlabAllocator, FreeOfBadClassIsLeakedNotPooled) {
  Allocator al(*a, 0);
  Off x;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  int cls = ClassFor(100);
  a->At(x)[0] = static_cast<char>(0xFE);
  // In a child (the refusal is logged on stderr).
  pid_t p = memtest::ForkChild(
      [&] {
        Allocator c(*a, 1);
        c.Free(x);
        mem::FreeGlobal(*a, x);
        uint32_t fc = 0;
        for (int k = 0; k < kNumClasses; ++k) fc += mem::SlotAt(*a, 1)->cls[k].free_count;
        return fc == 0 && mem::PoolAt(*a, cls)->count == 0 ? 0 : 1;
      },
      /*quiet=*/true);
  CHECK_EQUAL(0, memtest::WaitExit(p));
  for (int k = 0; k < kNumClasses; ++k) CHECK_EQUAL(0u, mem::PoolAt(*a, k)->count);
}

TEST(SlabAllocator, FlushToGlobalEmptiesPrivateStacks) {
  Allocator al(*a, 0);
  int c64 = ClassFor(kCell64), c1k = ClassFor(1000);
  std::vector<Off> live;
  std::vector<Off> tmp(100);
  for (Off& o : tmp) CHECK(al.Alloc(kCell64, &o) == Status::kOk);
  for (int i = 0; i < 50; ++i) al.Free(tmp[i]);
  live.insert(live.end(), tmp.begin() + 50, tmp.end());
  for (int i = 0; i < 10; ++i) {
    Off o;
    CHECK(al.Alloc(1000, &o) == Status::kOk);
    if (i % 2) al.Free(o); else live.push_back(o);
  }
  mem::ProcSlot* ps = mem::SlotAt(*a, 0);
  uint32_t want64 = ps->cls[c64].free_count + BumpLeft(ps->cls[c64], c64);
  uint32_t want1k = ps->cls[c1k].free_count + BumpLeft(ps->cls[c1k], c1k);
  CHECK_EQUAL(50u + 1024u - 100u, want64);
  CHECK_EQUAL(mem::PoolAt(*a, c1k)->cells_total.load() - 5, want1k);
  al.FlushToGlobal();
  for (int k = 0; k < kNumClasses; ++k) {
    CHECK_EQUAL(0u, ps->cls[k].free_head);
    CHECK_EQUAL(0u, ps->cls[k].free_count);
    CHECK_EQUAL(mem::BumpNext(ps->cls[k].bump), mem::BumpEnd(ps->cls[k].bump));
  }
  CHECK_EQUAL(want64, mem::PoolAt(*a, c64)->count);
  CHECK_EQUAL(want1k, mem::PoolAt(*a, c1k)->count);
  // Conservation: live + pooled == carved, each cell exactly once.
  std::vector<Off> all = live, pool;
  CHECK(WalkPool(*a, c64, 100000, &pool));
  CHECK_EQUAL(want64, pool.size());
  all.insert(all.end(), pool.begin(), pool.end());
  CHECK(WalkPool(*a, c1k, 100000, &pool));
  CHECK_EQUAL(want1k, pool.size());
  all.insert(all.end(), pool.begin(), pool.end());
  CHECK(AllDistinct(all));
  CHECK_EQUAL(mem::PoolAt(*a, c64)->cells_total.load() + mem::PoolAt(*a, c1k)->cells_total.load(),
              all.size());
  // A second flush has nothing to give.
  al.FlushToGlobal();
  CHECK_EQUAL(want64, mem::PoolAt(*a, c64)->count);
  // The flushed cells are reused (from the pool) before any new chunk.
  uint64_t chunks = mem::PoolAt(*a, c64)->chunks.load();
  for (uint32_t i = 0; i < want64; ++i) {
    Off o;
    CHECK(al.Alloc(kCell64, &o) == Status::kOk);
  }
  CHECK_EQUAL(chunks, mem::PoolAt(*a, c64)->chunks.load());
  CHECK_EQUAL(0u, mem::PoolAt(*a, c64)->count);
}

// Claiming a slot again in the same process resets it: its cells go to the pools.
TEST(SlabAllocator, ReclaimOwnSlotDrains) {
  int cls = ClassFor(kCell64);
  std::vector<Off> live;
  {
    Allocator first(*a, 2);
    for (int i = 0; i < 10; ++i) {
      Off o;
      CHECK(first.Alloc(kCell64, &o) == Status::kOk);
      if (i < 5) first.Free(o); else live.push_back(o);
    }
  }
  CHECK_EQUAL(0u, mem::PoolAt(*a, cls)->count);
  Allocator again(*a, 2);
  CHECK_EQUAL(5u + 1024u - 10u, mem::PoolAt(*a, cls)->count);
  mem::ProcSlot* ps = mem::SlotAt(*a, 2);
  CHECK_EQUAL(0u, ps->cls[cls].free_count);
  CHECK_EQUAL(0u, mem::BumpEnd(ps->cls[cls].bump));
  std::vector<Off> pool;
  CHECK(WalkPool(*a, cls, 100000, &pool));
  for (Off o : live) CHECK(std::find(pool.begin(), pool.end(), o) == pool.end());
  CHECK(ps->owner_tid.load() == mem::SelfTid());
}

TEST(SlabAllocator, AdoptRefusesLiveAndFreeSlots) {
  Allocator al(*a, 0);
  CHECK_FALSE(mem::AdoptDeadSlot(*a, 0));  // ourselves: alive
  CHECK_FALSE(mem::AdoptDeadSlot(*a, 3));  // never claimed
  CHECK(mem::SlotAt(*a, 0)->owner_tid.load() == mem::SelfTid());
}

TEST(SlabAllocator, SlotOutOfRangeAborts) {
  pid_t p = memtest::ForkChild([&] {
    Allocator bad(*a, a->hdr()->max_procs);
    return 0;
  }, /*quiet=*/true);
  int st = memtest::WaitStatus(p);
  CHECK(WIFSIGNALED(st));
  CHECK_EQUAL(SIGABRT, WTERMSIG(st));
}

// ---------------------------------------------------------------------------
TEST_GROUP(SlabMultiProc) {
  Arena* a = nullptr;
  void setup() override { a = memtest::MakeArena(32, 0, 8, 4u << 20); }
  void teardown() override { Arena::Destroy(a); }
};

// (a) Two processes on different slots carve the same class at once: no
// cell is handed out twice.
TEST(SlabMultiProc, ConcurrentAllocsOnDistinctSlotsNeverShareACell) {
  constexpr int kN = 2000;
  struct Shared {
    std::atomic<uint32_t> go;
    Off cells[2][kN];
  };
  auto* sh = reinterpret_cast<Shared*>(a->At(a->RegionAlloc(sizeof(Shared))));
  auto run = [&](Allocator& al, int who) {
    while (sh->go.load(std::memory_order_acquire) == 0) {
    }
    for (int i = 0; i < kN; ++i) {
      Off o = 0;
      if (al.Alloc(kCell64, &o) != Status::kOk) return 2;
      sh->cells[who][i] = o;
      mem::StoreRelaxed64(a->At(o) + 8, (uint64_t(who) << 32) | i);  // mark it ours
    }
    return 0;
  };
  Allocator mine(*a, 0);
  pid_t p = memtest::ForkChild([&] {
    Allocator al(*a, 1);
    return run(al, 1);
  });
  sh->go.store(1, std::memory_order_release);
  int rc = run(mine, 0);
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK_EQUAL(0, rc);
  std::vector<Off> all(&sh->cells[0][0], &sh->cells[0][0] + 2 * kN);
  std::sort(all.begin(), all.end());
  CHECK(all[0] != 0);
  size_t overlaps = 0, marks = 0;
  for (size_t i = 1; i < all.size(); ++i) overlaps += all[i] - all[i - 1] < kCell64 / mem::kUnit;
  CHECK_EQUAL(0u, overlaps);
  int cls = ClassFor(kCell64);
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < kN; ++i) {
      Off o = sh->cells[w][i];
      marks += ClassByte(*a, o) != cls || mem::LoadRelaxed64(a->At(o) + 8) != ((uint64_t(w) << 32) | i);
    }
  }
  CHECK_EQUAL(0u, marks);
  // Each process carved its own chunks: 2 x ceil(2000 / 1024).
  CHECK_EQUAL(4u, mem::PoolAt(*a, cls)->chunks.load());
  CHECK(mem::SlotAt(*a, 0)->owner_tid.load() == mem::SelfTid());
}

// Both processes churn one class through the shared pool (donations and
// refills); each marks the cells it holds and checks the marks before
// freeing. At the end every carved cell is in the pool exactly once.
TEST(SlabMultiProc, ConcurrentChurnThroughPoolConservesCells) {
  constexpr int kRounds = 40, kHold = 600;
  struct Shared {
    std::atomic<uint32_t> go;
    std::atomic<uint32_t> errors;
  };
  auto* sh = reinterpret_cast<Shared*>(a->At(a->RegionAlloc(sizeof(Shared))));
  auto churn = [&](Allocator& al, uint32_t who) {
    while (sh->go.load(std::memory_order_acquire) == 0) {
    }
    std::vector<Off> held(kHold);
    for (int r = 0; r < kRounds; ++r) {
      for (int i = 0; i < kHold; ++i) {
        if (al.Alloc(kCell64, &held[i]) != Status::kOk) return 2;
        mem::StoreRelaxed64(a->At(held[i]) + 8, (uint64_t{who} << 48) | (uint64_t(r) << 24) | i);
      }
      for (int i = 0; i < kHold; ++i) {
        if (mem::LoadRelaxed64(a->At(held[i]) + 8) != ((uint64_t{who} << 48) | (uint64_t(r) << 24) | i))
          sh->errors.fetch_add(1);
      }
      // Free in an interleaved order so the stacks and pool mix cells.
      for (int i = 0; i < kHold; i += 2) al.Free(held[i]);
      for (int i = 1; i < kHold; i += 2) al.Free(held[i]);
    }
    al.FlushToGlobal();
    return 0;
  };
  Allocator mine(*a, 0);
  pid_t p = memtest::ForkChild([&] {
    Allocator al(*a, 1);
    return churn(al, 2);
  });
  sh->go.store(1, std::memory_order_release);
  int rc = churn(mine, 1);
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK_EQUAL(0, rc);
  CHECK_EQUAL(0u, sh->errors.load());
  int cls = ClassFor(kCell64);
  mem::SlabPool* pool = mem::PoolAt(*a, cls);
  uint64_t total = pool->cells_total.load();
  CHECK(total >= kHold);  // (2 x kHold only if the two overlapped)
  CHECK_EQUAL(total, pool->count);
  std::vector<Off> cells;
  CHECK(WalkPool(*a, cls, total + 1, &cells));
  CHECK_EQUAL(total, cells.size());
  CHECK(AllDistinct(cells));
  CHECK_EQUAL(0u, mem::LockHolder(pool->lock));
}

// (b) The fork double-donation guard: a child may not bind an Allocator to
// the slot its live parent owns.
TEST(SlabMultiProc, ChildOnParentsLiveSlotAborts) {
  Allocator mine(*a, 0);
  Off x;
  CHECK(mine.Alloc(100, &x) == Status::kOk);
  mine.Free(x);
  uint32_t parent = mem::SelfTid();
  pid_t p = memtest::ForkChild([&] {
    Allocator stolen(*a, 0);  // must abort before touching the slot
    return 0;
  }, /*quiet=*/true);
  int st = memtest::WaitStatus(p);
  CHECK(WIFSIGNALED(st));
  CHECK_EQUAL(SIGABRT, WTERMSIG(st));
  // The slot is untouched: still ours, our private stack intact.
  CHECK_EQUAL(parent, mem::SlotAt(*a, 0)->owner_tid.load());
  CHECK_EQUAL(1u, mem::SlotAt(*a, 0)->cls[ClassFor(100)].free_count);
  CHECK_EQUAL(0u, mem::PoolAt(*a, ClassFor(100))->count);
  // Control: a child on its own slot is fine, and sees its own tid.
  pid_t q = memtest::ForkChild([&] {
    Allocator own(*a, 1);
    Off o;
    if (own.Alloc(100, &o) != Status::kOk) return 2;
    return mem::SlotAt(*a, 1)->owner_tid.load() == static_cast<uint32_t>(getpid()) ? 0 : 3;
  });
  CHECK_EQUAL(0, memtest::WaitExit(q));
}

// (c) A child dies without flushing; the parent adopts its slot.
TEST(SlabMultiProc, AdoptDeadSlotAfterChildExit) {
  constexpr uint32_t kChildSlot = 3;
  constexpr int kAlloc = 1000, kFree = 300;
  int cls = ClassFor(kCell64);
  struct Shared {
    Off live[kAlloc];
  };
  auto* sh = reinterpret_cast<Shared*>(a->At(a->RegionAlloc(sizeof(Shared))));
  pid_t p = memtest::ForkChild([&] {
    Allocator al(*a, kChildSlot);
    std::vector<Off> cells(kAlloc);
    for (Off& o : cells) {
      if (al.Alloc(kCell64, &o) != Status::kOk) return 2;
    }
    for (int i = 0; i < kFree; ++i) al.Free(cells[i]);  // > kDonateAbove: one donation
    for (int i = kFree; i < kAlloc; ++i) sh->live[i - kFree] = cells[i];
    _exit(0);  // no FlushToGlobal
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  mem::ProcSlot* ps = mem::SlotAt(*a, kChildSlot);
  mem::SlabPool* pool = mem::PoolAt(*a, cls);
  CHECK_EQUAL(static_cast<uint32_t>(p), ps->owner_tid.load());
  CHECK_EQUAL(mem::kDonate, pool->count);
  uint32_t priv = ps->cls[cls].free_count, bump = BumpLeft(ps->cls[cls], cls);
  CHECK_EQUAL(static_cast<uint32_t>(kFree) - mem::kDonate, priv);
  CHECK_EQUAL(1024u - kAlloc, bump);
  CHECK(mem::TidIsDead(static_cast<uint32_t>(p)));

  CHECK(mem::AdoptDeadSlot(*a, kChildSlot));
  CHECK_EQUAL(mem::kDonate + priv + bump, pool->count);
  CHECK_EQUAL(0u, ps->owner_tid.load());
  for (int k = 0; k < kNumClasses; ++k) {
    CHECK_EQUAL(0u, ps->cls[k].free_head);
    CHECK_EQUAL(0u, ps->cls[k].free_count);
    CHECK_EQUAL(0u, ps->cls[k].bump);
  }
  CHECK_FALSE(mem::AdoptDeadSlot(*a, kChildSlot));
  CHECK_EQUAL(mem::kDonate + priv + bump, pool->count);
  // The pool holds exactly the chunk minus the child's live cells.
  std::vector<Off> cells;
  CHECK(WalkPool(*a, cls, 100000, &cells));
  CHECK_EQUAL(pool->count, cells.size());
  std::vector<Off> all(sh->live, sh->live + (kAlloc - kFree));
  all.insert(all.end(), cells.begin(), cells.end());
  CHECK(AllDistinct(all));
  CHECK_EQUAL(pool->cells_total.load(), all.size());
  // The slot is free again: a new owner claims it without draining anything.
  Allocator reuse(*a, kChildSlot);
  Off o;
  CHECK(reuse.Alloc(kCell64, &o) == Status::kOk);
  CHECK(std::find(all.begin() + (kAlloc - kFree), all.end(), o) != all.end());
  CHECK_EQUAL(1u, pool->chunks.load());
}

// A zombie (exited, not yet reaped) is dead enough to adopt.
TEST(SlabMultiProc, AdoptDeadSlotOfZombie) {
  pid_t p = memtest::ForkChild([&] {
    Allocator al(*a, 1);
    Off o;
    if (al.Alloc(200, &o) != Status::kOk) return 2;
    al.Free(o);
    return 0;
  });
  siginfo_t si{};
  CHECK_EQUAL(0, waitid(P_PID, static_cast<id_t>(p), &si, WEXITED | WNOWAIT));
  CHECK(mem::AdoptDeadSlot(*a, 1));
  CHECK_EQUAL(0, memtest::WaitExit(p));
  int cls = ClassFor(200);
  CHECK_EQUAL(mem::PoolAt(*a, cls)->cells_total.load(), mem::PoolAt(*a, cls)->count);
}

// A child killed at a random point of alloc/free churn: adoption leaves the
// pools well formed (it may leak cells, never hand one out twice).
TEST(SlabMultiProc, AdoptAfterKillMidChurn) {
  int cls = ClassFor(kCell64);
  struct Shared {
    std::atomic<uint32_t> rounds;
  };
  auto* sh = reinterpret_cast<Shared*>(a->At(a->RegionAlloc(sizeof(Shared))));
  Allocator mine(*a, 0);
  const int delays_us[] = {3000, 7000, 11000};
  for (int d : delays_us) {
    sh->rounds.store(0);
    pid_t p = memtest::ForkChild([&] {
      Allocator al(*a, 1);
      std::vector<Off> held(700);
      for (;;) {
        for (Off& o : held) {
          if (al.Alloc(kCell64, &o) != Status::kOk) return 2;
        }
        for (Off o : held) al.Free(o);
        sh->rounds.fetch_add(1);
      }
    });
    for (int i = 0; i < 20000 && sh->rounds.load() == 0; ++i) usleep(100);
    usleep(static_cast<useconds_t>(d));
    kill(p, SIGKILL);
    int st = memtest::WaitStatus(p);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);  // (not a child that gave up)
    CHECK(sh->rounds.load() > 0);
    CHECK(mem::AdoptDeadSlot(*a, 1));
    // Also churn from our side so that the next round starts from a mixed pool.
    std::vector<Off> mine_held(300);
    for (Off& o : mine_held) CHECK(mine.Alloc(kCell64, &o) == Status::kOk);
    for (Off o : mine_held) mine.Free(o);
  }
  mine.FlushToGlobal();
  mem::SlabPool* pool = mem::PoolAt(*a, cls);
  std::vector<Off> cells;
  CHECK(WalkPool(*a, cls, pool->cells_total.load() + 1, &cells));
  CHECK(AllDistinct(cells));
  CHECK(cells.size() <= pool->cells_total.load());
  // Everything pooled can be handed out, each cell once.
  Allocator drain(*a, 2);
  std::vector<Off> got;
  uint64_t chunks = pool->chunks.load();
  for (size_t i = 0; i < cells.size(); ++i) {
    Off o;
    CHECK(drain.Alloc(kCell64, &o) == Status::kOk);
    got.push_back(o);
  }
  CHECK(AllDistinct(got));
  CHECK(pool->chunks.load() >= chunks);
}
