// perfcached — large objects in runs of 32 KiB units (mem/large.h).
// Copyright (c) 2026 the perfcached authors.
#include "mem/large.h"

#include <algorithm>

#include "mem/canary.h"
#include "mem/crash_point.h"
#include "mem/slab.h"

namespace mem {
namespace {

// Units of group g free for a new run (bit = 1): a kLarge group's unused
// units; with `any`, whole free, released and not yet used groups too.
uint64_t FreeUnits(const Arena& a, uint32_t g, bool any) {
  const ArenaHeader* h = a.hdr();
  if (g >= h->hwm_groups) return any ? ~uint64_t{0} : 0;
  GroupKind k = Arena::EntryKind(a.GroupEntry(g));
  if (k == GroupKind::kLarge) return ~a.UnitsOf(g).used.load(std::memory_order_relaxed);
  if (any && (k == GroupKind::kFree || k == GroupKind::kReleased)) return ~uint64_t{0};
  return 0;
}

// First fit: the first unit of a run of n free units, or -1. A partly
// used group costs one step per run of free units in it (at most 32), not
// one per unit: the walk of a 32 GiB arena stays in tens of microseconds.
int64_t FindRun(const Arena& a, uint64_t n, bool any) {
  const ArenaHeader* h = a.hdr();
  uint32_t end = any ? h->ngroups : h->hwm_groups;
  uint64_t run = 0, start = 0;  // a run that reached the end of the last group
  for (uint32_t g = h->meta_groups; g < end; ++g) {
    uint64_t fm = FreeUnits(a, g, any);
    uint64_t first = uint64_t{g} * kUnitsPerGroup;
    if (fm == ~uint64_t{0}) {
      if (run == 0) start = first;
      run += kUnitsPerGroup;
      if (run >= n) return static_cast<int64_t>(start);
      continue;
    }
    // The run carried in goes on through this group's first free units.
    if (run > 0 && run + static_cast<uint64_t>(__builtin_ctzll(~fm)) >= n) return static_cast<int64_t>(start);
    run = 0;
    for (uint64_t m = fm; m != 0;) {
      uint32_t u = static_cast<uint32_t>(__builtin_ctzll(m));
      uint64_t rest = m >> u;
      uint32_t len = ~rest == 0 ? kUnitsPerGroup - u : static_cast<uint32_t>(__builtin_ctzll(~rest));
      if (len >= n) return static_cast<int64_t>(first + u);
      if (u + len == kUnitsPerGroup) {  // reaches the group's end: may go on
        start = first + u;
        run = len;
        break;
      }
      m &= ~(((uint64_t{1} << len) - 1) << u);
    }
  }
  return -1;
}

// The bits of group g that units [s, s + n) cover.
uint64_t BitsIn(uint32_t g, uint64_t s, uint64_t n) {
  uint64_t lo = std::max<uint64_t>(s, uint64_t{g} * kUnitsPerGroup);
  uint64_t hi = std::min<uint64_t>(s + n, (uint64_t{g} + 1) * kUnitsPerGroup);
  if (lo >= hi) return 0;
  uint64_t w = hi - lo, at = lo % kUnitsPerGroup;
  uint64_t ones = w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  return ones << at;
}

LargeHeader* HeaderAtUnit(const Arena& a, uint64_t unit) {
  return reinterpret_cast<LargeHeader*>(a.base() + unit * kLargeUnit);
}

}  // namespace

Status AllocLargeRun(Arena& a, size_t bytes, Off* out) {
  ArenaHeader* h = a.hdr();
  uint64_t n = LargeUnitsFor(bytes);
  if (n > uint64_t{h->ngroups} * kUnitsPerGroup) {
    h->nomem_events.fetch_add(1, std::memory_order_relaxed);
    return Status::kNoMem;
  }
  a.LockGroups();
  int64_t found = FindRun(a, n, /*any=*/false);
  if (found < 0) found = FindRun(a, n, /*any=*/true);
  if (found < 0) {
    h->nomem_events.fetch_add(1, std::memory_order_relaxed);
    a.UnlockGroups();
    return Status::kNoMem;
  }
  uint64_t s = static_cast<uint64_t>(found);
  uint32_t g0 = static_cast<uint32_t>(s / kUnitsPerGroup);
  uint32_t g1 = static_cast<uint32_t>((s + n - 1) / kUnitsPerGroup);
  // 1. Every group the run needs, populated (nothing is marked until all are).
  for (uint32_t g = g0; g <= g1; ++g) {
    if (g < h->hwm_groups && Arena::EntryKind(a.GroupEntry(g)) == GroupKind::kLarge) continue;
    if (!a.ReadyGroupLocked(g)) {
      a.UnlockGroups();
      return Status::kNoMem;
    }
  }
  // 2. Marked kLarge, empty (a crash now leaves empty kLarge groups).
  for (uint32_t g = g0; g <= g1; ++g) {
    if (Arena::EntryKind(a.GroupEntry(g)) == GroupKind::kLarge) continue;
    UnitMasks& m = a.UnitsOf(g);
    m.heads.store(0, std::memory_order_relaxed);
    m.used.store(0, std::memory_order_relaxed);
    PC_CRASH_POINT();
    a.SetGroupEntryLocked(g, GroupKind::kLarge, 0);
  }
  // 3. The header, then the units (a crash now leaves units no head covers).
  LargeHeader* lh = HeaderAtUnit(a, s);
  lh->units = static_cast<uint32_t>(n);
  lh->pins.store(0, std::memory_order_relaxed);
  PC_CRASH_POINT();
  lh->magic.store(kLargeMagic, std::memory_order_release);
  for (uint32_t g = g0; g <= g1; ++g) {
    PC_CRASH_POINT();
    a.UnitsOf(g).used.fetch_or(BitsIn(g, s, n), std::memory_order_release);
  }
  // 4. The head bit: the object exists.
  PC_CRASH_POINT();
  a.UnitsOf(g0).heads.fetch_or(uint64_t{1} << (s % kUnitsPerGroup), std::memory_order_release);
  h->large_bytes.fetch_add(n * kLargeUnit, std::memory_order_relaxed);
  h->large_objects.fetch_add(1, std::memory_order_relaxed);
  a.UnlockGroups();
  *out = a.OffOf(a.base() + s * kLargeUnit + kLargeHdr);
  return Status::kOk;
}

bool FreeLargeRun(Arena& a, Off cell) {
  ArenaHeader* h = a.hdr();
  size_t byte = size_t{cell} * kUnit;
  a.LockGroups();
  auto* lh = const_cast<LargeHeader*>(LargeAt(a, byte));
  uint64_t s = (byte - kLargeHdr) / kLargeUnit;
  uint64_t n = lh ? lh->units : 0;
  if (!lh || lh->magic.load(std::memory_order_relaxed) != kLargeMagic || n == 0 ||
      s + n > uint64_t{h->hwm_groups} * kUnitsPerGroup) {
    a.UnlockGroups();
    return false;
  }
  uint32_t g0 = static_cast<uint32_t>(s / kUnitsPerGroup);
  uint32_t g1 = static_cast<uint32_t>((s + n - 1) / kUnitsPerGroup);
  // 1. The head bit: the object is gone (a crash now leaves its units).
  PC_CRASH_POINT();
  a.UnitsOf(g0).heads.fetch_and(~(uint64_t{1} << (s % kUnitsPerGroup)), std::memory_order_release);
  lh->magic.store(0, std::memory_order_relaxed);
  h->large_bytes.fetch_sub(n * kLargeUnit, std::memory_order_relaxed);
  h->large_objects.fetch_sub(1, std::memory_order_relaxed);
  // 2. The units; a group with none left goes back.
  for (uint32_t g = g0; g <= g1; ++g) {
    UnitMasks& m = a.UnitsOf(g);
    PC_CRASH_POINT();
    uint64_t left = m.used.fetch_and(~BitsIn(g, s, n), std::memory_order_acq_rel) & ~BitsIn(g, s, n);
    if (left == 0 || PC_CANARY(17)) a.FreeGroupLocked(g);
  }
  a.UnlockGroups();
  return true;
}

uint32_t RepairLargeLocked(Arena& a) {
  ArenaHeader* h = a.hdr();
  uint64_t limit = uint64_t{h->hwm_groups} * kUnitsPerGroup;
  uint64_t covered_to = 0;  // units below this belong to the last good head's run
  uint32_t freed = 0;
  for (uint32_t g = h->meta_groups; g < h->hwm_groups; ++g) {
    uint64_t first = uint64_t{g} * kUnitsPerGroup;
    if (Arena::EntryKind(a.GroupEntry(g)) != GroupKind::kLarge) {
      covered_to = std::min(covered_to, first);  // no run goes on through another kind
      continue;
    }
    if (PC_CANARY(16)) covered_to = std::min(covered_to, first);
    UnitMasks& m = a.UnitsOf(g);
    uint64_t used = m.used.load(std::memory_order_relaxed), heads = m.heads.load(std::memory_order_relaxed);
    uint64_t keep = 0, good_heads = 0;
    for (uint32_t u = 0; u < kUnitsPerGroup; ++u) {
      uint64_t bit = uint64_t{1} << u, unit = first + u;
      if ((heads & bit) && (used & bit)) {
        const LargeHeader* lh = HeaderAtUnit(a, unit);
        uint64_t n = lh->units;
        if (lh->magic.load(std::memory_order_relaxed) == kLargeMagic && n > 0 && unit + n <= limit &&
            unit >= covered_to) {
          covered_to = unit + n;
          good_heads |= bit;
        }
      }
      // A good head's run is all used (its bits are set before its head
      // bit); should one not be, its units are marked again: a leak at
      // worst, never a unit of a live object handed out twice.
      if (unit < covered_to) keep |= bit;
    }
    if (good_heads != heads) m.heads.store(good_heads, std::memory_order_release);
    if (keep != used) {
      PC_CRASH_POINT();
      m.used.store(keep, std::memory_order_release);
      freed += static_cast<uint32_t>(__builtin_popcountll(used & ~keep));
    }
    if (keep == 0) {
      a.FreeGroupLocked(g);
      ++freed;
    }
  }
  // The figures are changed under group_lock too: a crash between a mask
  // and its figure left them off; now they are counted again.
  LargeUsage u = LargeUsageOf(a);
  h->large_objects.store(u.objects, std::memory_order_relaxed);
  h->large_bytes.store(u.units * kLargeUnit, std::memory_order_relaxed);
  return freed;
}

uint8_t ClassifyLarge(const Arena& a, size_t byte, size_t readable, size_t* bound) {
  const LargeHeader* lh = LargeAt(a, byte);
  if (lh == nullptr || lh->magic.load(std::memory_order_acquire) != kLargeMagic) return kNoClass;
  size_t units = __atomic_load_n(&lh->units, __ATOMIC_RELAXED);
  if (units == 0) return kNoClass;
  size_t run = units * kLargeUnit - kLargeHdr;
  *bound = run <= readable ? run : readable;
  return kLargeClass;
}

LargeUsage LargeUsageOf(const Arena& a) {
  LargeUsage r;
  const ArenaHeader* h = a.hdr();
  uint32_t hi = __atomic_load_n(&h->hwm_groups, __ATOMIC_ACQUIRE);
  for (uint32_t g = h->meta_groups; g < hi; ++g) {
    if (Arena::EntryKind(a.GroupEntry(g)) != GroupKind::kLarge) continue;
    const UnitMasks& m = a.UnitsOf(g);
    ++r.groups;
    r.units += static_cast<uint64_t>(__builtin_popcountll(m.used.load(std::memory_order_relaxed)));
    r.objects += static_cast<uint64_t>(__builtin_popcountll(m.heads.load(std::memory_order_relaxed)));
  }
  return r;
}

}  // namespace mem
