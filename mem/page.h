// perfcached — slab pages: one size class's cells with an in-use bitmap.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A slab group (2 MiB) is split into pages of one size, its *order*:
// 64 KiB << order, order 0..5, kept in the group map entry's run field.
// While in use a page belongs to one size class:
//
//   page (64 KiB .. 2 MiB, aligned to its size)
//   +-----------------+------------------+------+------+-- .. --+------+-------+
//   | PageHeader      | bitmap: nwords   | cell | cell |        | cell | slack |
//   | 128 B (2 lines) | u64, 1 = in use  |  0   |  1   |        | n-1  |       |
//   +-----------------+------------------+------+------+-- .. --+------+-------+
//   a cell's class is the header's (mem/slab.h CellClass, CellBound: the
//   group map gives the order, the order the page); bits past n-1 are set
//   for good.
//
// A bit is set while its cell is live *or* claimed by a process (the batch a
// process allocates from without atomics, mem/slab.h ClassCache). Claims
// happen under the class's pool lock; frees clear a bit with one atomic AND
// from any process, with no lock. So with the pool lock held, a page whose
// bitmap is all clear stays clear: that is when it may be given back.
//
// Who changes what:
//   group map entry, page mask     group_lock (Arena::LockGroups)
//   header line 0 (magic .. nwords) group_lock, while the page is set up or
//                                   given back (magic written last / cleared
//                                   first, so a valid magic means a whole header)
//   live, cursor                    live: atomics (>= the true count but for
//                                   frees in flight); cursor: pool lock
//   draining                        pool lock (automove, mem/slab.h MarkDrain);
//                                   a draining page gets no new claims
//   bitmap words                    claims: CAS under the pool lock; frees: AND
//
// Lock order: pool lock -> group_lock. A page is taken from its group and
// given back only by the holder of its class's pool lock; a group whose
// pages all came free goes back to the group allocator (and from there to
// any class, a large object or the index), so freed memory never calcifies
// in one class.
//
// Crash safety: a process killed mid-claim leaks the claimed batch (bits set,
// no owner: the audit counts them as leaked), never hands a cell out twice;
// killed while giving a page back, it leaves a used page with no valid magic,
// which RepairPagesLocked frees when the group lock is taken over.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mem/arena.h"

namespace mem {

inline constexpr size_t kMinPage = 64u << 10;
inline constexpr int kPageOrders = 6;  // 64 KiB .. 2 MiB
inline constexpr uint32_t kPageMagic = 0x50474543;  // "CEGP"
inline constexpr size_t kPageHdr = 128;

struct alignas(64) PageHeader {
  // line 0: set up once (group_lock)
  uint32_t magic;   // kPageMagic while the page is in use and whole
  uint8_t cls;
  uint8_t order;
  uint16_t first;   // byte offset of cell 0 from the page start
  uint32_t ncells;
  uint32_t nwords;  // bitmap words
  uint64_t pad0[6];
  // line 1: counters
  std::atomic<int32_t> live;  // bits set (hint, see above)
  uint32_t cursor;            // bitmap word where the next claim looks (pool lock)
  std::atomic<uint32_t> draining;  // 1: automove empties it, no claims (pool lock)
  uint32_t pad1a;
  uint64_t pad1[6];
};
static_assert(sizeof(PageHeader) == kPageHdr);
static_assert(offsetof(PageHeader, live) == 64);
static_assert(offsetof(PageHeader, draining) == 72);
static_assert(std::is_standard_layout_v<PageHeader>);

inline size_t PageBytes(int order) { return kMinPage << order; }
inline uint64_t* PageBitmap(char* page) { return reinterpret_cast<uint64_t*>(page + kPageHdr); }

// Where a page's cells start and how many fit, for cell size `cell` in a
// page of `page` bytes.
struct PageGeometry {
  uint32_t first, ncells, nwords;
};
constexpr PageGeometry Geometry(size_t page, size_t cell) {
  size_t n = (page - kPageHdr) / cell;
  for (;;) {
    size_t words = (n + 63) / 64;
    size_t first = (kPageHdr + words * 8 + 63) / 64 * 64;
    if (first + n * cell <= page) {
      return {static_cast<uint32_t>(first), static_cast<uint32_t>(n), static_cast<uint32_t>(words)};
    }
    --n;
  }
}

// The page class map (Arena::PageClassMap): byte i describes the 64 KiB at
// i << 16: class + 1 of the slab page that covers it, 0 = none. Set before
// a page's magic, cleared after it (and for a whole group when the group
// goes back); RepairPagesLocked rebuilds it. Lock-free readers take a
// cell's class from it (mem/slab.h CellClass): one byte of a small array,
// not the page header line.
inline constexpr size_t kClassMapShift = 16;
inline void SetPageClassLocked(Arena& a, size_t page, int order, uint8_t v) {
  uint8_t* m = a.PageClassMap() + (page >> kClassMapShift);
  for (size_t u = 0; u < (size_t{1} << order); ++u) __atomic_store_n(m + u, v, __ATOMIC_RELEASE);
}

// Page of a cell (byte offset from the arena base), for a page of `order`.
inline size_t PageOfByte(size_t byte, int order) { return byte & ~(PageBytes(order) - 1); }

// Per size class (defined in slab.cc, where the classes are).
int PageOrder(int cls);
const PageGeometry& ClassGeometry(int cls);

// Is `page` (byte offset) a page in use by class `cls`? (Checks the group
// entry, the page mask and the header.)
bool PageInUse(const Arena& a, size_t page, int cls);

// Pool lock of `cls` held: take a free page of the class's order (from a slab
// group with room, else a new group), set it up for `cls`. 0 when the arena
// is full. Returns the page's byte offset.
size_t NewPage(Arena& a, int cls);
// Pool lock of `cls` held, bitmap verified clear: give the page back; its
// group goes back to the arena when it was the group's last page.
void ReleasePage(Arena& a, size_t page);
// group_lock held after a dead holder: pages marked used with no valid
// header are freed, slab groups with no page in use go back, the free-page
// hints are recounted. Returns what it fixed.
uint32_t RepairPagesLocked(Arena& a);
// Every page of order `order` in use (mask bit set), in address order from
// group `from_group`, wrapping once; f(byte offset) returns true to stop.
// Returns the group where it stopped (for a resume cursor).
template <typename F>
uint32_t ForEachPage(const Arena& a, int order, uint32_t from_group, F&& f);

// -- implementation of the template --

template <typename F>
uint32_t ForEachPage(const Arena& a, int order, uint32_t from_group, F&& f) {
  const ArenaHeader* h = a.hdr();
  uint32_t lo = h->meta_groups, hi = __atomic_load_n(&h->hwm_groups, __ATOMIC_ACQUIRE);
  if (hi <= lo) return lo;
  if (from_group < lo || from_group >= hi) from_group = lo;
  uint32_t per = static_cast<uint32_t>(kGroupSize / PageBytes(order));
  for (uint32_t i = 0; i < hi - lo; ++i) {
    uint32_t g = from_group + i;
    if (g >= hi) g -= hi - lo;
    uint32_t e = a.GroupEntry(g);
    if (Arena::EntryKind(e) != GroupKind::kSlab || Arena::EntryRun(e) != static_cast<uint32_t>(order)) continue;
    uint32_t mask = a.PageMaskOf(g).load(std::memory_order_acquire);
    for (uint32_t p = 0; p < per; ++p) {
      if (!(mask & (1u << p))) continue;
      if (f(size_t{g} * kGroupSize + size_t{p} * PageBytes(order))) return g;
    }
  }
  return from_group;
}

}  // namespace mem
