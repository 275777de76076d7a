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
#include "mem/page.h"
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

constexpr size_t kCell64 = 64;  // a class whose page (64 KiB) holds ~1000 cells

uint8_t ClassByte(const Arena& a, Off cell) { return mem::CellClass(a, cell); }

bool AllDistinct(std::vector<Off> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) == v.end();
}

// Cells of a slot's claim for a class (handed out to nobody yet).
uint32_t Claimed(const mem::ProcSlot* ps, int cls) {
  return static_cast<uint32_t>(__builtin_popcountll(ps->cls[cls].mask));
}
// Cells a slot holds for a class: its claim and its private stack.
uint32_t Held(const mem::ProcSlot* ps, int cls) { return Claimed(ps, cls) + ps->cls[cls].stack_n; }

// Every cell of class `cls` whose bit is clear (free for anyone), over all
// its pages.
std::vector<Off> FreeCells(const Arena& a, int cls) {
  std::vector<Off> out;
  const mem::PageGeometry& geo = mem::ClassGeometry(cls);
  mem::ForEachPage(a, mem::PageOrder(cls), a.hdr()->meta_groups, [&](size_t page) {
    const auto* h = reinterpret_cast<const mem::PageHeader*>(a.base() + page);
    if (h->magic != mem::kPageMagic || h->cls != cls) return false;
    const uint64_t* bm = mem::PageBitmap(a.base() + page);
    for (uint32_t i = 0; i < geo.ncells; ++i) {
      if (!(bm[i / 64] & (uint64_t{1} << (i % 64)))) {
        out.push_back(static_cast<Off>((page + geo.first + size_t{i} * kClassSize[cls]) / mem::kUnit));
      }
    }
    return false;
  });
  return out;
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

TEST(SlabAllocator, AllocatedCellsKnowTheirClassFromThePage) {
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
    CHECK_EQUAL(1u, mem::PoolAt(*a, cls)->pages.load());
    CHECK_EQUAL(mem::ClassGeometry(cls).ncells, mem::PoolAt(*a, cls)->cells_total.load());
    CHECK(mem::ClassGeometry(cls).ncells >= 7);
    cells.push_back(o);
  }
  CHECK(AllDistinct(cells));
  CHECK_EQUAL(sizeof(sizes) / sizeof(sizes[0]), mem::SlotAt(*a, 0)->allocs.load());
  // The next cell of a class comes from the same claim: adjacent.
  Off x, y;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  CHECK(al.Alloc(100, &y) == Status::kOk);
  CHECK_EQUAL(x + kClassSize[ClassFor(100)] / mem::kUnit, y);
  CHECK(mem::SlotAt(*a, 0)->owner_tid.load() == mem::SelfTid());
}

// A replace frees a cell and allocates one of the same class: the freed
// cell comes back first, from the private stack, with no atomics.
TEST(SlabAllocator, AFreedCellIsReusedByItsProcessFirst) {
  Allocator al(*a, 0);
  int cls = ClassFor(100);
  Off x, y, z;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  CHECK(al.Alloc(100, &y) == Status::kOk);
  uint32_t claim = Claimed(mem::SlotAt(*a, 0), cls);
  CHECK_EQUAL(mem::ClaimCells(kClassSize[cls]) - 2, claim);
  uint64_t used = mem::UsageOf(*a, cls).used;
  CHECK_EQUAL(2u + claim, used);
  al.Free(x);
  al.Free(y);
  CHECK_EQUAL(2u, mem::SlotAt(*a, 0)->cls[cls].stack_n);
  CHECK_EQUAL(used, mem::UsageOf(*a, cls).used);  // bits kept while stacked
  CHECK_EQUAL(2u, mem::SlotAt(*a, 0)->frees.load());
  CHECK_EQUAL(2u * kClassSize[cls], mem::SlotAt(*a, 0)->free_bytes.load());
  CHECK_EQUAL(0u, mem::CellBytesInUse(*a));
  CHECK_EQUAL(cls, ClassByte(*a, x));  // a stacked cell is still in its page
  CHECK(al.Alloc(100, &z) == Status::kOk);
  CHECK_EQUAL(y, z);  // LIFO
  CHECK(al.Alloc(100, &z) == Status::kOk);
  CHECK_EQUAL(x, z);
  CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[cls].stack_n);
  CHECK_EQUAL(claim, Claimed(mem::SlotAt(*a, 0), cls));  // the claim was not touched
  al.Free(0);  // null is a no-op
  CHECK_EQUAL(2u, mem::SlotAt(*a, 0)->frees.load());
}

// Past the stack's few cells a free clears the bit at once: the cell is
// free for every process (and its page can go back).
TEST(SlabAllocator, PastTheStackAFreeIsFreeForEveryone) {
  Allocator al(*a, 0);
  int cls = ClassFor(100);
  uint32_t cap = mem::StackCells(kClassSize[cls]);
  CHECK_EQUAL(32u, cap);
  std::vector<Off> cells(cap + 10);
  for (Off& o : cells) CHECK(al.Alloc(100, &o) == Status::kOk);
  uint64_t used = mem::UsageOf(*a, cls).used;
  for (Off o : cells) al.Free(o);
  CHECK_EQUAL(cap, mem::SlotAt(*a, 0)->cls[cls].stack_n);
  CHECK_EQUAL(used - 10, mem::UsageOf(*a, cls).used);
  al.FlushToGlobal();  // stack and claim go back
  CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[cls].stack_n);
  CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[cls].stack);
  CHECK_EQUAL(0u, mem::UsageOf(*a, cls).used);
  // Another slot takes the lowest free cells: the ones just freed.
  Allocator other(*a, 1);
  std::set<Off> freed(cells.begin(), cells.end()), got;
  for (size_t i = 0; i < cells.size(); ++i) {
    Off o;
    CHECK(other.Alloc(100, &o) == Status::kOk);
    got.insert(o);
  }
  CHECK(got == freed);
}

TEST(SlabAllocator, CellsFreedByOneSlotServeAnother) {
  Allocator al(*a, 0);
  int cls = ClassFor(kCell64);
  uint32_t ncells = mem::ClassGeometry(cls).ncells;
  std::vector<Off> cells(ncells - 100);
  for (Off& o : cells) CHECK(al.Alloc(kCell64, &o) == Status::kOk);
  mem::SlabPool* p = mem::PoolAt(*a, cls);
  CHECK_EQUAL(1u, p->pages.load());
  std::set<Off> freed(cells.begin(), cells.begin() + 300);
  for (Off o : freed) al.Free(o);
  al.FlushToGlobal();  // the private stack and the claim too
  CHECK_EQUAL(0u, mem::LockHolder(p->lock));
  // Another slot's claims come from the same page: the freed cells and the
  // rest, each once, before any new page.
  Allocator other(*a, 1);
  std::set<Off> got;
  uint32_t room = ncells - static_cast<uint32_t>(cells.size()) + 300;
  for (uint32_t i = 0; i < room; ++i) {
    Off q;
    CHECK(other.Alloc(kCell64, &q) == Status::kOk);
    got.insert(q);
  }
  CHECK_EQUAL(room, got.size());
  for (Off o : freed) CHECK(got.count(o) == 1);
  CHECK_EQUAL(1u, p->pages.load());
  Off q;
  CHECK(other.Alloc(kCell64, &q) == Status::kOk);  // page full: a new one now
  CHECK_EQUAL(2u, p->pages.load());
  CHECK(got.count(q) == 0);
}

TEST(SlabAllocator, FreeGlobalClearsTheBit) {
  Allocator al(*a, 0);
  Off x;
  CHECK(al.Alloc(500, &x) == Status::kOk);
  int cls = ClassFor(500);
  uint64_t used = mem::UsageOf(*a, cls).used;
  mem::FreeGlobal(*a, x);
  CHECK_EQUAL(used - 1, mem::UsageOf(*a, cls).used);
  CHECK_EQUAL(kClassSize[cls], a->hdr()->freed_bytes.load());
  CHECK_EQUAL(0u, mem::CellBytesInUse(*a));
  std::vector<Off> free_cells = FreeCells(*a, cls);
  CHECK(std::find(free_cells.begin(), free_cells.end(), x) != free_cells.end());
  mem::FreeGlobal(*a, 0);  // no-op
  CHECK_EQUAL(used - 1, mem::UsageOf(*a, cls).used);
}

// A double free that reaches the bitmap is refused (logged), never turns a
// live cell free. (A free onto the private stack is not checked: the fast
// path, as before pages.)
TEST(SlabAllocator, DoubleFreeIsRefused) {
  Allocator al(*a, 0);
  int cls = ClassFor(100);
  Off x, y;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  mem::FreeGlobal(*a, x);  // the bit is clear now
  uint64_t used = mem::UsageOf(*a, cls).used;
  pid_t p = memtest::ForkChild([&] {
    Allocator c(*a, 1);
    mem::FreeGlobal(*a, x);
    return mem::SlotAt(*a, 1)->frees.load() == 0 && mem::SlotAt(*a, 1)->cls[cls].stack_n == 0 &&
                   a->hdr()->freed_bytes.load() == kClassSize[cls]
               ? 0
               : 1;
  }, /*quiet=*/true);
  CHECK_EQUAL(0, memtest::WaitExit(p));
  // x was handed out again meanwhile? Not by the refused frees: the bits
  // are as they were.
  CHECK_EQUAL(used, mem::UsageOf(*a, cls).used);
  CHECK(al.Alloc(100, &y) == Status::kOk);
  CHECK(y != x);  // x is behind the claim's cells
}

// Where a large object's run starts (its header), in units from the base.
uint64_t UnitOf(Off cell) { return (size_t{cell} * mem::kUnit - mem::kLargeHdr) / mem::kLargeUnit; }

TEST(SlabAllocator, LargeObjects) {
  Allocator al(*a, 0);
  mem::ArenaHeader* h = a->hdr();
  Off x, y, z;
  // Just above the top class: 9 units (288 KiB), the header before the record.
  CHECK(al.Alloc(mem::kMaxCell + 1, &x) == Status::kOk);
  CHECK_EQUAL(mem::kLargeClass, ClassByte(*a, x));
  CHECK_EQUAL(mem::kLargeHdr, size_t{x} * mem::kUnit % mem::kLargeUnit);
  CHECK_EQUAL(9 * mem::kLargeUnit - mem::kLargeHdr, mem::CellBound(*a, x));
  CHECK(KindAt(*a, x) == GroupKind::kLarge);
  // 3 MiB: 97 units, right after x, into the next group (contiguous).
  CHECK(al.Alloc(3u << 20, &y) == Status::kOk);
  CHECK_EQUAL(UnitOf(x) + 9, UnitOf(y));
  CHECK_EQUAL(97 * mem::kLargeUnit - mem::kLargeHdr, mem::CellBound(*a, y));
  CHECK(mem::CellBound(*a, y) >= (3u << 20));
  uint32_t gy = static_cast<uint32_t>(UnitOf(y) / mem::kUnitsPerGroup);
  CHECK(Arena::EntryKind(a->GroupEntry(gy + 1)) == GroupKind::kLarge);
  CHECK_EQUAL(2u, h->large_objects.load());
  CHECK_EQUAL((9 + 97) * mem::kLargeUnit, h->large_bytes.load());
  std::memset(a->At(y) + 1, 0x33, (3u << 20) - 1);  // the whole object is writable
  CHECK_EQUAL(9 * mem::kLargeUnit - mem::kLargeHdr, mem::CellBound(*a, x));  // x's header intact
  // A small large object fills the hole the 3 MiB one left in its last group.
  CHECK(al.Alloc(400u << 10, &z) == Status::kOk);
  CHECK_EQUAL(UnitOf(y) + 97, UnitOf(z));
  // Inside a run is no cell, nor is the header.
  CHECK_EQUAL(mem::kNoClass, mem::CellClass(*a, static_cast<Off>(x + mem::kLargeUnit / mem::kUnit)));
  CHECK_EQUAL(mem::kNoClass, mem::CellClass(*a, static_cast<Off>(x - mem::kLargeHdr / mem::kUnit)));

  al.Free(x);
  CHECK_EQUAL(2u, h->large_objects.load());
  CHECK(Arena::EntryKind(a->GroupEntry(gy)) == GroupKind::kLarge);  // y still uses it
  mem::FreeGlobal(*a, y);  // the global path frees large objects the same way
  al.Free(z);
  CHECK_EQUAL(0u, h->large_objects.load());
  CHECK_EQUAL(0u, h->large_bytes.load());
  // Tier small: the groups are given back, not just marked free.
  CHECK(a->tier() != mem::Tier::kHugetlb);
  CHECK(Arena::EntryKind(a->GroupEntry(gy)) == GroupKind::kReleased);
  CHECK(Arena::EntryKind(a->GroupEntry(gy + 1)) == GroupKind::kReleased);
  CHECK_EQUAL(2 * kGroupSize, h->released_bytes.load());
  CHECK_EQUAL(0u, mem::LargeUsageOf(*a).groups);
  // Nothing went to a slab class.
  for (int c = 0; c < kNumClasses; ++c) {
    CHECK_EQUAL(0u, mem::PoolAt(*a, c)->pages.load());
    CHECK_EQUAL(0u, mem::SlotAt(*a, 0)->cls[c].mask);
  }
  // The space is reused.
  Off w;
  CHECK(al.Alloc(4u << 20, &w) == Status::kOk);
  CHECK_EQUAL(x, w);  // first fit: the released groups from x on (129 units: 3 groups)
  CHECK_EQUAL(1u, h->large_objects.load());
}

// First fit over the unit masks: holes are filled in address order by the
// first that is big enough; a run goes on from one group's free tail into
// the next group.
TEST(SlabAllocator, LargeObjectsFirstFitFillsHoles) {
  Allocator al(*a, 0);
  auto bytes = [](uint64_t units) { return units * mem::kLargeUnit - mem::kLargeHdr; };
  // (9 units is the smallest large object: 8 and below fit the top class)
  const uint64_t units[] = {9, 9, 10, 9, 19};  // 56 units of the first data group
  Off o[5];
  for (int i = 0; i < 5; ++i) CHECK(al.Alloc(bytes(units[i]), &o[i]) == Status::kOk);
  uint64_t g0 = UnitOf(o[0]);
  CHECK_EQUAL(0u, g0 % mem::kUnitsPerGroup);
  CHECK_EQUAL(g0 + 37, UnitOf(o[4]));
  al.Free(o[1]);  // a 9-unit hole at +9
  al.Free(o[4]);  // 27 free units from +37 to the group's end
  Off p;
  CHECK(al.Alloc(bytes(10), &p) == Status::kOk);
  CHECK_EQUAL(g0 + 37, UnitOf(p));  // the 9-unit hole is too small
  CHECK(al.Alloc(bytes(9), &p) == Status::kOk);
  CHECK_EQUAL(g0 + 9, UnitOf(p));
  CHECK(al.Alloc(bytes(9), &p) == Status::kOk);
  CHECK_EQUAL(g0 + 47, UnitOf(p));
  CHECK(al.Alloc(bytes(12), &p) == Status::kOk);
  CHECK_EQUAL(g0 + 56, UnitOf(p));  // the group's 8 last units, on into the next group
  CHECK(al.Alloc(bytes(70), &p) == Status::kOk);
  CHECK_EQUAL(g0 + 68, UnitOf(p));  // the rest of the second group, on into the third
  CHECK(al.Alloc(bytes(9), &p) == Status::kOk);
  CHECK_EQUAL(g0 + 138, UnitOf(p));  // right after it, in the third group
  std::memset(a->At(p), 1, bytes(9));
}

// Issue 10 part 3: a large object wastes at most 1/8 of its record, and
// objects of one size pack a group with no more slack than that.
TEST(SlabAllocator, LargeObjectsWasteAtMostAnEighth) {
  Allocator al(*a, 0);
  uint64_t seed = 7;
  for (int i = 0; i < 2000; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t bytes = mem::kMaxCell + 1 + (seed >> 33) % (8u << 20);
    if (i < 64) bytes = mem::kMaxCell + 1 + static_cast<size_t>(i) * 511;  // the worst end
    uint64_t cell = mem::CellBytesFor(bytes);
    CHECK(cell >= bytes + mem::kLargeHdr);
    CHECK_TEXT((cell - bytes) * 8 <= bytes, ("waste above 1/8 at " + std::to_string(bytes)).c_str());
  }
  // 300 KiB records: 10 units each, 6 in 3 groups... as many as the units allow.
  mem::ArenaHeader* h = a->hdr();
  std::vector<Off> objs;
  Off o;
  while (al.Alloc(300u << 10, &o) == Status::kOk) {
    objs.push_back(o);
    if (objs.size() > 1000) break;
  }
  size_t data_groups = h->ngroups - h->meta_groups;
  CHECK_EQUAL(data_groups * mem::kUnitsPerGroup / 10, objs.size());  // whole groups held 1 each before
  CHECK(AllDistinct(objs));
  for (size_t i = 0; i < objs.size(); ++i) std::memset(a->At(objs[i]), static_cast<int>(i), 300u << 10);
  for (size_t i = 0; i < objs.size(); ++i) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(a->At(objs[i]));
    CHECK(p[0] == static_cast<unsigned char>(i) && p[(300u << 10) - 1] == static_cast<unsigned char>(i));
  }
  for (Off x : objs) al.Free(x);
  CHECK_EQUAL(0u, h->large_bytes.load());
}

// Random sizes, random frees: runs never overlap, every byte keeps what was
// written, the masks stay exactly the union of the runs, and it all goes back.
TEST(SlabAllocator, LargeObjectsChurn) {
  Allocator al(*a, 0);
  struct Obj {
    Off off;
    size_t bytes;
    unsigned char fill;
  };
  std::vector<Obj> live;
  uint64_t seed = 11;
  auto rnd = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  size_t refused = 0;
  for (int step = 0; step < 600; ++step) {
    if (!live.empty() && (rnd() % 3 == 0 || live.size() > 20)) {
      size_t k = rnd() % live.size();
      const Obj& ob = live[k];
      const unsigned char* p = reinterpret_cast<const unsigned char*>(a->At(ob.off));
      size_t bad = 0;
      for (size_t i = 0; i < ob.bytes; i += 4093) bad += p[i] != ob.fill;
      bad += p[ob.bytes - 1] != ob.fill;
      CHECK_EQUAL(0u, bad);
      al.Free(ob.off);
      live.erase(live.begin() + static_cast<long>(k));
      continue;
    }
    size_t bytes = mem::kMaxCell + 1 + rnd() % (rnd() % 4 == 0 ? (5u << 20) : (1u << 20));
    Off o;
    if (al.Alloc(bytes, &o) != Status::kOk) {
      ++refused;
      continue;
    }
    CHECK(mem::CellBound(*a, o) >= bytes);
    unsigned char fill = static_cast<unsigned char>(step);
    std::memset(a->At(o), fill, bytes);
    live.push_back({o, bytes, fill});
    // The masks are the union of the runs.
    std::vector<uint64_t> want(a->hdr()->ngroups), heads(a->hdr()->ngroups);
    for (const Obj& ob : live) {
      uint64_t s = UnitOf(ob.off), n = mem::LargeUnitsFor(ob.bytes);
      heads[s / 64] |= uint64_t{1} << (s % 64);
      for (uint64_t v = s; v < s + n; ++v) want[v / 64] |= uint64_t{1} << (v % 64);
    }
    size_t wrong = 0;
    for (uint32_t g = a->hdr()->meta_groups; g < a->hdr()->hwm_groups; ++g) {
      bool large = Arena::EntryKind(a->GroupEntry(g)) == GroupKind::kLarge;
      wrong += (large ? a->UnitsOf(g).used.load() : 0) != want[g];
      wrong += (large ? a->UnitsOf(g).heads.load() : 0) != heads[g];
    }
    CHECK_EQUAL(0u, wrong);
  }
  CHECK(refused < 300);
  for (const Obj& ob : live) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(a->At(ob.off));
    CHECK(p[0] == ob.fill && p[ob.bytes - 1] == ob.fill);
    al.Free(ob.off);
  }
  CHECK_EQUAL(0u, a->hdr()->large_objects.load());
  CHECK_EQUAL(0u, mem::LargeUsageOf(*a).groups);
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
  CHECK_EQUAL(129 * mem::kLargeUnit - mem::kLargeHdr, mem::CellBound(*a, o));  // 4 MiB + the header
  CHECK(al.Alloc(max + 1, &o) == Status::kOk);  // within the allowance
  CHECK_EQUAL(129 * mem::kLargeUnit - mem::kLargeHdr, mem::CellBound(*a, o));
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
  const size_t kSize = 4096;  // an exact class: 31 cells per 128 KiB page
  int cls = ClassFor(kSize);
  CHECK_EQUAL(kSize, kClassSize[cls]);
  std::vector<Off> cells;
  Off o;
  Status s;
  while ((s = al.Alloc(kSize, &o)) == Status::kOk) {
    unsigned char* p = reinterpret_cast<unsigned char*>(a->At(o));
    for (size_t i = 0; i < kSize; ++i) p[i] = static_cast<unsigned char>(cells.size() * 7 + i);
    cells.push_back(o);
    if (cells.size() > 100000) break;
  }
  CHECK(s == Status::kNoMem);
  CHECK_EQUAL(3 * (kGroupSize / mem::ChunkBytes(cls)) * mem::ClassGeometry(cls).ncells, cells.size());
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
  // Every cell still holds what was written, all of it (byte 0 is the
  // cell's own: its class comes from its page), and knows its class.
  size_t bad = 0;
  for (size_t k = 0; k < cells.size(); ++k) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(a->At(cells[k]));
    if (mem::CellClass(*a, cells[k]) != cls) ++bad;
    for (size_t i = 0; i < kSize; ++i) bad += p[i] != static_cast<unsigned char>(k * 7 + i);
  }
  CHECK_EQUAL(0u, bad);
  // A freed cell is allocatable again, here and elsewhere.
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
  int cls = ClassFor(100);
  CHECK_EQUAL(kClassSize[cls], mem::CellBound(*a, cell));  // control
  // A cell's own bytes do not matter (byte 0 is a record's access byte).
  memset(a->At(cell), 0xFE, 8);
  CHECK_EQUAL(kClassSize[cls], mem::CellBound(*a, cell));
  CHECK_EQUAL(cls, mem::CellClass(*a, cell));
  size_t pop = a->populated_bytes();
  CHECK_EQUAL(0u, mem::CellBound(*a, 0));
  CHECK_EQUAL(0u, mem::CellBound(*a, 1));
  CHECK_EQUAL(0u, mem::CellBound(*a, static_cast<Off>(a->hdr()->pools_off / mem::kUnit)));
  CHECK_EQUAL(0u, mem::CellBound(*a, static_cast<Off>(pop / mem::kUnit)));
  CHECK_EQUAL(0u, mem::CellBound(*a, 0xFFFFFFFFu));
  CHECK_EQUAL(mem::kNoClass, mem::CellClass(*a, 0xFFFFFFFFu));
  // Index memory is no cell, whatever it holds; nor is a group start in it.
  Off r = a->RegionAlloc(4096);
  memset(a->At(r), 0, 128);
  CHECK_EQUAL(0u, mem::CellBound(*a, r));
  CHECK_EQUAL(mem::kNoClass, mem::CellClass(*a, r));
  Off rg = a->RegionAlloc(3u << 20);
  CHECK_EQUAL(0u, size_t{rg} * mem::kUnit % kGroupSize);
  a->At(rg)[0] = static_cast<char>(mem::kLargeClass);
  CHECK_EQUAL(0u, mem::CellBound(*a, rg));
  // The page header and bitmap are no cell.
  size_t page = mem::PageOfByte(size_t{cell} * mem::kUnit, mem::PageOrder(cls));
  CHECK_EQUAL(0u, mem::CellBound(*a, static_cast<Off>(page / mem::kUnit)));
  CHECK_EQUAL(0u, mem::CellBound(*a, static_cast<Off>((page + mem::kPageHdr) / mem::kUnit)));
  // The last bytes of a page: the bound stops at the page end.
  size_t end = page + mem::ChunkBytes(cls);
  CHECK_EQUAL(24u, mem::CellBound(*a, static_cast<Off>((end - 24) / mem::kUnit)));
  // A page whose class byte is gone (given back): nothing.
  uint8_t& v = a->PageClassMap()[page >> mem::kClassMapShift];
  CHECK_EQUAL(cls + 1, v);
  v = 0;
  CHECK_EQUAL(0u, mem::CellBound(*a, cell));
  CHECK_EQUAL(mem::kNoClass, mem::CellClass(*a, cell));
  v = static_cast<uint8_t>(cls + 1);
  // A large object: its head only, its run clipped to the populated end.
  Off big;
  CHECK(al.Alloc(mem::kMaxCell + 1, &big) == Status::kOk);
  CHECK_EQUAL(mem::kLargeClass, mem::CellClass(*a, big));
  CHECK(mem::CellBound(*a, big) >= mem::kMaxCell + 1);
  CHECK_EQUAL(0u, mem::CellBound(*a, big + 8));
}

TEST(SlabAllocator, FreeOfBadCellIsLeakedNotPooled) {
  Allocator al(*a, 0);
  Off x;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  int cls = ClassFor(100);
  uint64_t used = mem::UsageOf(*a, cls).used;
  Off r = a->RegionAlloc(4096);
  // In a child (the refusals are logged on stderr).
  pid_t p = memtest::ForkChild(
      [&] {
        Allocator c(*a, 1);
        c.Free(r);                 // index memory
        mem::FreeGlobal(*a, r);
        mem::FreeGlobal(*a, x + 1);  // inside a cell of the page, not its start
        mem::FreeGlobal(*a, static_cast<Off>(mem::PageOfByte(size_t{x} * mem::kUnit, mem::PageOrder(cls)) /
                                             mem::kUnit));  // the page header
        return mem::SlotAt(*a, 1)->frees.load() == 0 && a->hdr()->freed_bytes.load() == 0 ? 0 : 1;
      },
      /*quiet=*/true);
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK_EQUAL(used, mem::UsageOf(*a, cls).used);  // no bit cleared
}

TEST(SlabAllocator, FlushToGlobalReturnsTheClaims) {
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
  CHECK(Claimed(ps, c64) > 0 && Claimed(ps, c1k) > 0);
  CHECK_EQUAL(50u + Held(ps, c64), mem::UsageOf(*a, c64).used);
  al.FlushToGlobal();
  for (int k = 0; k < kNumClasses; ++k) CHECK_EQUAL(0u, Held(ps, k));
  CHECK_EQUAL(50u, mem::UsageOf(*a, c64).used);
  CHECK_EQUAL(5u, mem::UsageOf(*a, c1k).used);
  // Conservation: live + free == the pages' cells, each cell exactly once.
  std::vector<Off> all = live, f64 = FreeCells(*a, c64), f1k = FreeCells(*a, c1k);
  all.insert(all.end(), f64.begin(), f64.end());
  all.insert(all.end(), f1k.begin(), f1k.end());
  CHECK(AllDistinct(all));
  CHECK_EQUAL(mem::PoolAt(*a, c64)->cells_total.load() + mem::PoolAt(*a, c1k)->cells_total.load(),
              all.size());
  CHECK_EQUAL(55u * 0 + (50u * kClassSize[c64] + 5u * kClassSize[c1k]), mem::CellBytesInUse(*a));
  // A second flush has nothing to give.
  al.FlushToGlobal();
  CHECK_EQUAL(50u, mem::UsageOf(*a, c64).used);
}

// Claiming a slot again in the same process resets it: its claims go back.
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
  CHECK(Claimed(mem::SlotAt(*a, 2), cls) > 0);
  Allocator again(*a, 2);
  mem::ProcSlot* ps = mem::SlotAt(*a, 2);
  CHECK_EQUAL(0u, ps->cls[cls].mask);
  CHECK_EQUAL(5u, mem::UsageOf(*a, cls).used);
  std::vector<Off> free_cells = FreeCells(*a, cls);
  for (Off o : live) CHECK(std::find(free_cells.begin(), free_cells.end(), o) == free_cells.end());
  CHECK(ps->owner_tid.load() == mem::SelfTid());
}

// The calcification fix: cells freed in one class come back as pages, the
// pages as groups, and another class uses them.
TEST(SlabAllocator, FreedPagesServeAnotherClass) {
  Arena::Destroy(a);
  auto fill = [&](Allocator& al, size_t bytes, std::vector<Off>* out) {
    Off o;
    while (al.Alloc(bytes, &o) == Status::kOk && out->size() < 1000000) out->push_back(o);
  };
  size_t fresh = 0;
  a = memtest::MakeArena(16, 16, 4, 4u << 20);
  {
    Allocator al(*a, 0);
    std::vector<Off> small;
    fill(al, 100, &small);
    fresh = small.size();
  }
  Arena::Destroy(a);
  a = memtest::MakeArena(16, 16, 4, 4u << 20);
  Allocator al(*a, 0);
  std::vector<Off> big, small;
  fill(al, 1000, &big);
  CHECK(big.size() > 10000);
  for (Off o : big) al.Free(o);
  al.FlushToGlobal();
  // At most the current page is left to the 1000-byte class.
  CHECK(mem::PoolAt(*a, ClassFor(1000))->cells_total.load() <= mem::ClassGeometry(ClassFor(1000)).ncells);
  CHECK(a->hdr()->groups_returned.load() > 0);
  fill(al, 100, &small);
  CHECK(AllDistinct(small));
  CHECK_TEXT(small.size() * 100 >= fresh * 90, ("fresh " + std::to_string(fresh) + ", after " +
                                                std::to_string(small.size())).c_str());
  CHECK_EQUAL(small.size() * kClassSize[ClassFor(100)], mem::CellBytesInUse(*a));
}

// A live hint left high (a process killed between clearing a bit and
// counting it) keeps an empty page; the timer's tidy-up gives it back.
TEST(SlabAllocator, TidyPagesGivesBackWhatAHighHintKept) {
  Allocator al(*a, 0);
  int cls = ClassFor(2000);
  std::vector<Off> cells;
  Off o;
  while (mem::PoolAt(*a, cls)->pages.load() < 3) {
    CHECK(al.Alloc(2000, &o) == Status::kOk);
    cells.push_back(o);
  }
  size_t first_page = mem::PageOfByte(size_t{cells[0]} * mem::kUnit, mem::PageOrder(cls));
  auto* h = reinterpret_cast<mem::PageHeader*>(a->base() + first_page);
  h->live.fetch_add(5);  // the drift
  for (Off c : cells) {
    if (mem::PageOfByte(size_t{c} * mem::kUnit, mem::PageOrder(cls)) == first_page) al.Free(c);
  }
  al.FlushToGlobal();
  CHECK_EQUAL(3u, mem::PoolAt(*a, cls)->pages.load());  // kept: the hint says 5
  CHECK_EQUAL(1u, mem::TidyPages(*a));
  CHECK_EQUAL(2u, mem::PoolAt(*a, cls)->pages.load());
  CHECK_EQUAL(0u, mem::TidyPages(*a));
}

// A page given back half-way (its magic cleared, its mask bit still set)
// and a slab group with no page are repaired when the group lock is taken
// over from the dead.
TEST(SlabAllocator, RepairFreesHalfReleasedPages) {
  Allocator al(*a, 0);
  Off x;
  CHECK(al.Alloc(100, &x) == Status::kOk);
  int cls = ClassFor(100);
  size_t page = mem::PageOfByte(size_t{x} * mem::kUnit, mem::PageOrder(cls));
  uint32_t g = static_cast<uint32_t>(page / kGroupSize);
  pid_t p = memtest::ForkChild([&] {
    (void)mem::Lock(a->hdr()->group_lock);
    reinterpret_cast<mem::PageHeader*>(a->base() + page)->magic = 0;  // ReleasePage's first step
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK(a->PageMaskOf(g).load() != 0);
  CHECK(a->AllocGroups(1, GroupKind::kRegion) >= 0);  // takes the lock over: repairs
  CHECK_EQUAL(0u, a->PageMaskOf(g).load());
  CHECK(Arena::EntryKind(a->GroupEntry(g)) != GroupKind::kSlab);
}

// Automove's request (AskGiveBack): the free cells another process holds
// in draining pages (on its private stack, in its claim) go back when it
// answers; the rest stay with it, in order, and no cell is both held and
// free. A page held only by such cells comes free.
TEST(SlabAllocator, AskedOwnersGiveBackTheirCellsInDrainingPages) {
  int cls = ClassFor(kCell64);
  uint32_t per_page = mem::ClassGeometry(cls).ncells;
  auto page_of = [&](Off o) { return mem::PageOfByte(size_t{o} * mem::kUnit, mem::PageOrder(cls)); };
  Allocator owner(*a, 1);
  std::vector<Off> cells(per_page * 2 + 10);
  for (Off& o : cells) CHECK(owner.Alloc(kCell64, &o) == Status::kOk);
  size_t pa = page_of(cells.front()), pb = page_of(cells[per_page + per_page / 2]);
  size_t pc = page_of(cells.back());
  CHECK(pa != pb && pb != pc && pa != pc);
  mem::ProcSlot* ps = mem::SlotAt(*a, 1);
  uint32_t claimed = Claimed(ps, cls);
  CHECK(claimed > 0);
  {
    // Another process fills the page the owner's claim is in: the pool
    // moves on, and the claim is left in a page that is not current.
    Allocator other(*a, 2);
    for (uint32_t i = 0; i < per_page; ++i) {
      Off o;
      CHECK(other.Alloc(kCell64, &o) == Status::kOk);
    }
    CHECK(size_t{mem::PoolAt(*a, cls)->current} * mem::kUnit != pc);
  }
  // The owner's stack: 5 cells of page B, then the first of page A's (the
  // rest of page A is freed for everyone).
  std::vector<Off> kept;
  for (Off o : cells) {
    if (page_of(o) == pb && kept.size() < 5) kept.push_back(o);
  }
  for (Off o : kept) owner.Free(o);
  uint32_t in_a = 0;
  for (Off o : cells) {
    if (page_of(o) == pa) {
      owner.Free(o);
      ++in_a;
    }
  }
  CHECK_EQUAL(mem::StackCells(kCell64), ps->cls[cls].stack_n);
  CHECK(mem::PageInUse(*a, pa, cls));  // the stack's cells keep page A
  CHECK_EQUAL(2u, mem::MarkDrain(*a, cls, {pa, pc}));

  std::vector<uint8_t> draining(kNumClasses, 0);
  draining[cls] = 1;
  std::vector<mem::GiveBackAsk> asked;
  mem::AskGiveBack(*a, /*self_slot=*/2, draining, &asked);
  CHECK_EQUAL(1u, asked.size());
  CHECK_EQUAL(1u, asked[0].slot);
  CHECK_FALSE(mem::GiveBackAnswered(*a, asked));
  size_t given = owner.AnswerGiveBack();
  CHECK_EQUAL(mem::StackCells(kCell64) - 5 + claimed, given);
  CHECK(mem::GiveBackAnswered(*a, asked));
  CHECK_EQUAL(0u, owner.AnswerGiveBack());  // answered: nothing more to do
  CHECK_EQUAL(0u, ps->cls[cls].mask);
  CHECK_EQUAL(5u, ps->cls[cls].stack_n);
  CHECK_FALSE(mem::PageInUse(*a, pa, cls));  // nothing held it any more
  // The cells left on the stack are page B's, handed out last-freed first,
  // and none of them is free for anyone else.
  std::vector<Off> free_now = FreeCells(*a, cls);
  for (int i = 4; i >= 0; --i) {
    Off o;
    CHECK(owner.Alloc(kCell64, &o) == Status::kOk);
    CHECK_EQUAL(kept[static_cast<size_t>(i)], o);
    CHECK(std::find(free_now.begin(), free_now.end(), o) == free_now.end());
  }
  // Holding nothing of the class now, it is not asked; holding a stack
  // cell of the class (in an unmarked page: another process's stack is
  // not walked, the owner checks), it is. A slot whose owner left counts
  // as answered.
  mem::AskGiveBack(*a, 2, draining, &asked);
  CHECK_EQUAL(0u, asked.size());
  Off o;
  CHECK(owner.Alloc(kCell64, &o) == Status::kOk);
  owner.Free(o);
  mem::AskGiveBack(*a, 2, draining, &asked);
  CHECK_EQUAL(1u, asked.size());
  owner.Release();
  CHECK(mem::GiveBackAnswered(*a, asked));
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
  // They shared pages: no more than the cells need, plus each one's claim.
  uint64_t need = (2 * kN + mem::ClassGeometry(cls).ncells - 1) / mem::ClassGeometry(cls).ncells;
  CHECK(mem::PoolAt(*a, cls)->pages.load() >= need);
  CHECK(mem::PoolAt(*a, cls)->pages.load() <= need + 1);
  CHECK(mem::SlotAt(*a, 0)->owner_tid.load() == mem::SelfTid());
}

// Both processes churn one class through shared pages (claims and frees
// of each other's cells); each marks the cells it holds and checks the
// marks before freeing. At the end every cell is free exactly once.
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
  CHECK(total >= 1);
  CHECK_EQUAL(0u, mem::UsageOf(*a, cls).used);
  std::vector<Off> cells = FreeCells(*a, cls);
  CHECK_EQUAL(total, cells.size());
  CHECK(AllDistinct(cells));
  CHECK_EQUAL(0u, mem::LockHolder(pool->lock));
  CHECK_EQUAL(0u, mem::CellBytesInUse(*a));
}

// (b) The fork double-donation guard: a child may not bind an Allocator to
// the slot its live parent owns.
TEST(SlabMultiProc, ChildOnParentsLiveSlotAborts) {
  Allocator mine(*a, 0);
  Off x;
  CHECK(mine.Alloc(100, &x) == Status::kOk);
  mine.Free(x);
  uint64_t mask = mem::SlotAt(*a, 0)->cls[ClassFor(100)].mask;
  CHECK(mask != 0);
  uint32_t parent = mem::SelfTid();
  pid_t p = memtest::ForkChild([&] {
    Allocator stolen(*a, 0);  // must abort before touching the slot
    return 0;
  }, /*quiet=*/true);
  int st = memtest::WaitStatus(p);
  CHECK(WIFSIGNALED(st));
  CHECK_EQUAL(SIGABRT, WTERMSIG(st));
  // The slot is untouched: still ours, our claim intact.
  CHECK_EQUAL(parent, mem::SlotAt(*a, 0)->owner_tid.load());
  CHECK(mask == mem::SlotAt(*a, 0)->cls[ClassFor(100)].mask);
  CHECK_EQUAL(x, mem::SlotAt(*a, 0)->cls[ClassFor(100)].stack);
  CHECK_EQUAL(__builtin_popcountll(mask) + 1, mem::UsageOf(*a, ClassFor(100)).used);
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
    for (int i = 0; i < kFree; ++i) al.Free(cells[i]);
    for (int i = kFree; i < kAlloc; ++i) sh->live[i - kFree] = cells[i];
    _exit(0);  // no FlushToGlobal
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  mem::ProcSlot* ps = mem::SlotAt(*a, kChildSlot);
  mem::SlabPool* pool = mem::PoolAt(*a, cls);
  CHECK_EQUAL(static_cast<uint32_t>(p), ps->owner_tid.load());
  uint32_t claim = Held(ps, cls);
  CHECK(claim > 0 && ps->cls[cls].stack_n > 0);
  CHECK_EQUAL(kAlloc - kFree + claim, mem::UsageOf(*a, cls).used);
  CHECK(mem::TidIsDead(static_cast<uint32_t>(p)));

  CHECK(mem::AdoptDeadSlot(*a, kChildSlot));
  CHECK_EQUAL(static_cast<uint64_t>(kAlloc - kFree), mem::UsageOf(*a, cls).used);
  CHECK_EQUAL(0u, ps->owner_tid.load());
  for (int k = 0; k < kNumClasses; ++k) CHECK_EQUAL(0u, Held(ps, k));
  CHECK_FALSE(mem::AdoptDeadSlot(*a, kChildSlot));
  CHECK_EQUAL(static_cast<uint64_t>(kAlloc - kFree), mem::UsageOf(*a, cls).used);
  // The free cells are exactly the pages minus the child's live cells.
  std::vector<Off> cells = FreeCells(*a, cls);
  std::vector<Off> all(sh->live, sh->live + (kAlloc - kFree));
  all.insert(all.end(), cells.begin(), cells.end());
  CHECK(AllDistinct(all));
  CHECK_EQUAL(pool->cells_total.load(), all.size());
  // The slot is free again: a new owner claims it without draining anything.
  uint64_t pages = pool->pages.load();
  Allocator reuse(*a, kChildSlot);
  Off o;
  CHECK(reuse.Alloc(kCell64, &o) == Status::kOk);
  CHECK(std::find(all.begin() + (kAlloc - kFree), all.end(), o) != all.end());
  CHECK_EQUAL(pages, pool->pages.load());
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
  CHECK_EQUAL(0u, mem::UsageOf(*a, cls).used);
  CHECK_EQUAL(0u, mem::SlotAt(*a, 1)->cls[cls].mask);
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
  // Nothing is live now: bits still set are what each killed child held
  // (up to its 700 cells and one claim).
  uint64_t leaked = mem::UsageOf(*a, cls).used;
  CHECK(leaked <= 3 * (700 + mem::ClaimCells(kClassSize[cls])));
  std::vector<Off> cells = FreeCells(*a, cls);
  CHECK(AllDistinct(cells));
  // Everything free can be handed out, each cell once.
  Allocator drain(*a, 2);
  std::vector<Off> got;
  for (size_t i = 0; i < cells.size(); ++i) {
    Off o;
    CHECK(drain.Alloc(kCell64, &o) == Status::kOk);
    got.push_back(o);
  }
  CHECK(AllDistinct(got));
}
