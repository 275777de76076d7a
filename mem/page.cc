// perfcached — slab pages: taken from and given back to slab groups.
// Copyright (c) 2026 the perfcached authors.
#include "mem/page.h"

#include <cstring>

#include "mem/atomic_copy.h"
#include "mem/crash_point.h"
#include "mem/slab.h"

namespace mem {
namespace {

uint32_t PagesPerGroup(int order) { return static_cast<uint32_t>(kGroupSize / PageBytes(order)); }
uint32_t FullMask(int order) {
  uint32_t n = PagesPerGroup(order);
  return n >= 32 ? ~0u : (1u << n) - 1;
}

PageHeader* Hdr(const Arena& a, size_t page) { return reinterpret_cast<PageHeader*>(a.base() + page); }

// Set up a page for `cls` (group_lock held): bitmap clear but for the tail,
// the magic last (cells are not touched: a cell's class is the header's).
void InitPage(Arena& a, size_t page, int cls) {
  char* p = a.base() + page;
  const PageGeometry& geo = ClassGeometry(cls);
  PageHeader* h = Hdr(a, page);
  __atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
  h->cls = static_cast<uint8_t>(cls);
  h->order = static_cast<uint8_t>(PageOrder(cls));
  h->first = static_cast<uint16_t>(geo.first);
  h->ncells = geo.ncells;
  h->nwords = geo.nwords;
  h->live.store(0, std::memory_order_relaxed);
  h->cursor = 0;
  h->draining.store(0, std::memory_order_relaxed);
  uint64_t* bm = PageBitmap(p);
  for (uint32_t w = 0; w < geo.nwords; ++w) {
    uint32_t lo = w * 64;
    uint64_t tail = 0;
    if (lo + 64 > geo.ncells) tail = ~uint64_t{0} << (geo.ncells - lo);
    __atomic_store_n(bm + w, tail, __ATOMIC_RELAXED);
  }
  PC_CRASH_POINT();
  SetPageClassLocked(a, page, h->order, static_cast<uint8_t>(cls + 1));
  PC_CRASH_POINT();
  __atomic_store_n(&h->magic, kPageMagic, __ATOMIC_RELEASE);
}

bool HeaderValid(const Arena& a, size_t page, int order) {
  const PageHeader* h = Hdr(a, page);
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kPageMagic) return false;
  int cls = h->cls;
  return cls < kNumClasses && h->order == order && PageOrder(cls) == order &&
         h->ncells == ClassGeometry(cls).ncells;
}

}  // namespace

bool PageInUse(const Arena& a, size_t page, int cls) {
  if (cls < 0 || cls >= kNumClasses) return false;
  int order = PageOrder(cls);
  if (page % PageBytes(order) != 0) return false;
  uint32_t g = static_cast<uint32_t>(page / kGroupSize);
  const ArenaHeader* h = a.hdr();
  if (g < h->meta_groups || g >= __atomic_load_n(&h->hwm_groups, __ATOMIC_ACQUIRE)) return false;
  uint32_t e = a.GroupEntry(g);
  if (Arena::EntryKind(e) != GroupKind::kSlab || Arena::EntryRun(e) != static_cast<uint32_t>(order)) return false;
  uint32_t bit = static_cast<uint32_t>((page % kGroupSize) / PageBytes(order));
  if (!(a.PageMaskOf(g).load(std::memory_order_acquire) & (1u << bit))) return false;
  return HeaderValid(a, page, order) && Hdr(a, page)->cls == cls;
}

size_t NewPage(Arena& a, int cls) {
  ArenaHeader* h = a.hdr();
  int order = PageOrder(cls);
  uint32_t per = PagesPerGroup(order), full = FullMask(order);
  a.LockGroups();
  int64_t group = -1;
  uint32_t bit = 0;
  if (h->free_pages[order] > 0) {
    uint32_t lo = h->meta_groups, hi = h->hwm_groups, from = h->page_scan[order];
    if (from < lo || from >= hi) from = lo;
    for (uint32_t i = 0; i < hi - lo && group < 0; ++i) {
      uint32_t g = from + i >= hi ? from + i - (hi - lo) : from + i;
      uint32_t e = a.GroupEntry(g);
      if (Arena::EntryKind(e) != GroupKind::kSlab || Arena::EntryRun(e) != static_cast<uint32_t>(order)) continue;
      uint32_t m = a.PageMaskOf(g).load(std::memory_order_relaxed);
      if (m == full) continue;
      group = g;
      bit = static_cast<uint32_t>(__builtin_ctz(~m));
    }
    if (group < 0) {
      h->free_pages[order] = 0;  // the hint was stale
    } else {
      h->page_scan[order] = static_cast<uint32_t>(group);
    }
  }
  bool fresh = false;
  if (group < 0) {
    group = a.AllocGroupsLocked(1, GroupKind::kSlab);
    if (group < 0) {
      a.UnlockGroups();
      return 0;
    }
    // A new slab group: no page in use yet (a holder killed before the mask
    // store leaves an empty slab group, which the repair gives back).
    a.PageMaskOf(static_cast<uint32_t>(group)).store(0, std::memory_order_relaxed);
    PC_CRASH_POINT();
    a.SetGroupEntryLocked(static_cast<uint32_t>(group), GroupKind::kSlab, static_cast<uint32_t>(order));
    fresh = true;
  }
  size_t page = size_t(group) * kGroupSize + size_t{bit} * PageBytes(order);
  InitPage(a, page, cls);
  std::atomic<uint32_t>& mask = a.PageMaskOf(static_cast<uint32_t>(group));
  PC_CRASH_POINT();
  mask.store(mask.load(std::memory_order_relaxed) | (1u << bit), std::memory_order_release);
  if (fresh) {
    h->free_pages[order] += per - 1;
  } else if (h->free_pages[order] > 0) {
    --h->free_pages[order];
  }
  h->slab_pages.fetch_add(1, std::memory_order_relaxed);
  a.UnlockGroups();
  return page;
}

void ReleasePage(Arena& a, size_t page) {
  ArenaHeader* h = a.hdr();
  PageHeader* ph = Hdr(a, page);
  int order = ph->order;
  uint32_t g = static_cast<uint32_t>(page / kGroupSize);
  uint32_t bit = static_cast<uint32_t>((page % kGroupSize) / PageBytes(order));
  a.LockGroups();
  // The magic goes first: from here on no walker takes the page for its class.
  __atomic_store_n(&ph->magic, 0, __ATOMIC_RELEASE);
  PC_CRASH_POINT();
  SetPageClassLocked(a, page, order, 0);
  std::atomic<uint32_t>& mask = a.PageMaskOf(g);
  uint32_t m = mask.load(std::memory_order_relaxed) & ~(1u << bit);
  PC_CRASH_POINT();
  mask.store(m, std::memory_order_release);
  h->slab_pages.fetch_sub(1, std::memory_order_relaxed);
  if (m == 0) {
    uint32_t per = PagesPerGroup(order);
    h->free_pages[order] = h->free_pages[order] >= per - 1 ? h->free_pages[order] - (per - 1) : 0;
    PC_CRASH_POINT();
    a.FreeGroupLocked(g);
    h->groups_returned.fetch_add(1, std::memory_order_relaxed);
  } else {
    ++h->free_pages[order];
  }
  a.UnlockGroups();
}

uint32_t RepairPagesLocked(Arena& a) {
  ArenaHeader* h = a.hdr();
  uint32_t fixed = 0;
  uint32_t free_pages[kPageOrders] = {};
  for (uint32_t g = h->meta_groups; g < h->hwm_groups; ++g) {
    uint32_t e = a.GroupEntry(g);
    if (Arena::EntryKind(e) != GroupKind::kSlab) continue;
    int order = static_cast<int>(Arena::EntryRun(e));
    if (order >= kPageOrders) {  // not a page order: an allocation killed mid-way
      a.PageMaskOf(g).store(0, std::memory_order_relaxed);
      a.FreeGroupLocked(g);
      ++fixed;
      continue;
    }
    std::atomic<uint32_t>& mask = a.PageMaskOf(g);
    uint32_t m = mask.load(std::memory_order_relaxed);
    uint32_t per = PagesPerGroup(order);
    for (uint32_t p = 0; p < per; ++p) {
      size_t page = size_t{g} * kGroupSize + size_t{p} * PageBytes(order);
      if (!(m & (1u << p))) {  // free: no class (a set-up killed before the mask)
        SetPageClassLocked(a, page, order, 0);
        continue;
      }
      if (!HeaderValid(a, page, order)) {  // given back half-way
        m &= ~(1u << p);
        h->slab_pages.fetch_sub(1, std::memory_order_relaxed);
        SetPageClassLocked(a, page, order, 0);
        ++fixed;
      } else {  // set up or given back half-way: the map says what the header says
        SetPageClassLocked(a, page, order, static_cast<uint8_t>(Hdr(a, page)->cls + 1));
      }
    }
    mask.store(m, std::memory_order_release);
    if (m == 0) {
      a.FreeGroupLocked(g);
      ++fixed;
    } else {
      free_pages[order] += per - static_cast<uint32_t>(__builtin_popcount(m));
    }
  }
  for (int o = 0; o < kPageOrders; ++o) h->free_pages[o] = free_pages[o];
  return fixed;
}

}  // namespace mem
