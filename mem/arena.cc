// perfcached — arena creation, the group allocator and index regions.
// Copyright (c) 2026 the perfcached authors.
#include "mem/arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "mem/crash_point.h"
#include "mem/hugepage.h"
#include "mem/large.h"
#include "mem/page.h"
#include "mem/slab.h"

namespace mem {
namespace {

constexpr size_t AlignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }
constexpr uint32_t Entry(GroupKind k, uint32_t run) {
  return (static_cast<uint32_t>(k) << 24) | (run & 0xFFFFFF);
}

}  // namespace

Arena* Arena::Create(const ArenaOptions& o, std::string* err) {
  size_t commit = AlignUp(o.arena_mb << 20, kGroupSize);
  size_t cap = AlignUp((o.arena_cap_mb ? o.arena_cap_mb : o.arena_mb) << 20, kGroupSize);
  if (cap < commit) cap = commit;
  if (o.max_procs == 0 || o.max_procs > kMaxProcs) {
    *err = "max_procs must be 1.." + std::to_string(kMaxProcs);
    return nullptr;
  }
  if (cap > kMaxArenaBytes) {
    *err = "arena_cap_mb above the " + std::to_string(kMaxArenaBytes >> 20) + " MiB (1 TiB) limit";
    return nullptr;
  }
  uint32_t ngroups = static_cast<uint32_t>(cap / kGroupSize);
  // Metadata layout: header | group map | unit masks | page masks | page
  // class map | pools | slots | user root.
  size_t group_map_off = 4096;
  size_t units_off = AlignUp(group_map_off + ngroups * sizeof(uint32_t), 64);
  size_t masks_off = AlignUp(units_off + ngroups * sizeof(UnitMasks), 64);
  size_t cls_off = AlignUp(masks_off + ngroups * sizeof(uint32_t), 64);
  size_t pools_off = AlignUp(cls_off + size_t{ngroups} * (kGroupSize >> 16), 64);
  size_t slots_off = pools_off;  // SlabMetaBytes covers pools + slots
  size_t user_off = AlignUp(slots_off + SlabMetaBytes(o.max_procs), 4096);
  size_t meta_bytes = AlignUp(user_off + 4096, kGroupSize);
  if (meta_bytes + 2 * kGroupSize > cap) {
    *err = "arena too small: needs at least " + std::to_string((meta_bytes >> 20) + 4) + " MiB";
    return nullptr;
  }

  MapResult m = MapShared(cap, o.best_tier);
  if (!m.base) {
    *err = m.note;
    return nullptr;
  }
  auto* a = new Arena();
  a->base_ = m.base;
  a->map_bytes_ = m.bytes;
  a->meta_end_ = meta_bytes;
  size_t want = o.prefault ? commit : meta_bytes;
  if (want < meta_bytes) want = meta_bytes;
  // The first group is faulted (MapShared tried the tier on it); the rest
  // in steps, so that a large arena's progress can be told.
  size_t step = AlignUp(o.progress_step ? o.progress_step : want, kGroupSize);
  if (o.progress) o.progress(kGroupSize, want);
  for (size_t done = kGroupSize; done < want;) {
    size_t n = std::min(step, want - done);
    if (!PopulateRange(m.base + done, n, m.tier)) {
      *err = "cannot fault the first " + std::to_string(want >> 20) + " MiB of the arena (" +
             TierName(m.tier) + ", stopped at " + std::to_string(done >> 20) + " MiB): " + m.note;
      munmap(m.base, m.bytes);
      delete a;
      return nullptr;
    }
    done += n;
    if (o.progress) o.progress(done, want);
  }
  auto* h = new (m.base) ArenaHeader();
  h->magic = kArenaMagic;
  h->layout_version = kArenaLayoutVersion;
  h->header_bytes = sizeof(ArenaHeader);
  h->base_addr = reinterpret_cast<uint64_t>(m.base);
  h->cap_bytes = cap;
  h->commit_bytes = commit;
  h->populated_bytes.store(want);
  h->ngroups = ngroups;
  h->meta_groups = static_cast<uint32_t>(meta_bytes / kGroupSize);
  h->max_procs = o.max_procs;
  h->tier = static_cast<uint8_t>(m.tier);
  h->max_value = o.max_value;
  h->group_map_off = group_map_off;
  h->units_off = units_off;
  h->page_masks_off = masks_off;
  h->page_cls_off = cls_off;
  h->pools_off = pools_off;
  h->slots_off = pools_off + sizeof(SlabPool) * kNumClasses;
  h->user_off = user_off;
  PC_CRASH_POINT();
  h->hwm_groups = h->meta_groups;
  a->group_map_ = reinterpret_cast<uint32_t*>(m.base + group_map_off);
  a->cls_map_ = reinterpret_cast<uint8_t*>(m.base + cls_off);
  for (uint32_t g = 0; g < h->meta_groups; ++g) a->group_map_[g] = Entry(GroupKind::kMeta, 1);

  std::string note = m.note;
  if (m.tier != Tier::kHugetlb) {
    note += "; for 2 MiB pages: sysctl vm.nr_overcommit_hugepages=" +
            std::to_string(cap / kGroupSize);
  }
  if (o.lock_memory) {
    if (mlock(m.base, want) == 0) {
      h->locked = 1;
    } else {
      note += "; mlock refused (raise LimitMEMLOCK / ulimit -l): memory may swap";
    }
  }
  std::snprintf(h->tier_note, sizeof h->tier_note, "%s", note.c_str());
  return a;
}

void Arena::Destroy(Arena* a) {
  if (!a) return;
  ForgetTokenArena(a);
  munmap(a->base_, a->map_bytes_);
  delete a;
}

bool Arena::PopulateLocked(size_t upto) {
  ArenaHeader* h = hdr();
  size_t pop = h->populated_bytes.load(std::memory_order_relaxed);
  if (upto <= pop) return true;
  if (upto > h->cap_bytes) return false;
  if (!PopulateRange(base_ + pop, upto - pop, tier())) return false;
  if (h->locked) (void)mlock(base_ + pop, upto - pop);
  // Publish only after the pages exist: readers bound-check against this.
  PC_CRASH_POINT();
  h->populated_bytes.store(upto, std::memory_order_release);
  return true;
}

uint32_t Arena::RepairGroupsLocked() {
  uint32_t fixed = RepairLargeLocked(*this) + RepairPagesLocked(*this);
  // released_bytes moves beside a group map entry, under this lock: a
  // holder killed between the two left it off by a group. Count it again.
  ArenaHeader* h = hdr();
  uint64_t released = 0;
  for (uint32_t g = h->meta_groups; g < h->hwm_groups; ++g) {
    released += EntryKind(group_map_[g]) == GroupKind::kReleased ? kGroupSize : 0;
  }
  h->released_bytes.store(released, std::memory_order_relaxed);
  return fixed;
}

void Arena::LockGroups() {
  if (Lock(hdr()->group_lock) == LockResult::kTookFromDead) (void)RepairGroupsLocked();
}

void Arena::FreeGroupLocked(uint32_t g) {
  ArenaHeader* h = hdr();
  bool release = tier() != Tier::kHugetlb;
  // No slab page is left in the group: its page class bytes go first.
  SetPageClassLocked(*this, size_t{g} * kGroupSize, kPageOrders - 1, 0);
  if (release) {
    ReleaseRange(base_ + size_t{g} * kGroupSize, kGroupSize, tier());
    h->released_bytes.fetch_add(kGroupSize, std::memory_order_relaxed);
  }
  PC_CRASH_POINT();
  __atomic_store_n(group_map_ + g, Entry(release ? GroupKind::kReleased : GroupKind::kFree, 0),
                   __ATOMIC_RELEASE);
}

int64_t Arena::AllocGroups(uint32_t n, GroupKind kind) {
  LockGroups();  // a dead holder's half-done run is repaired first
  int64_t g = AllocGroupsLocked(n, kind);
  Unlock(hdr()->group_lock);
  return g;
}

int64_t Arena::SkipGroupsForTest(uint32_t n) {
  LockGroups();
  ArenaHeader* h = hdr();
  int64_t first = -1;
  if (n > 0 && uint64_t{h->hwm_groups} + n <= h->ngroups) {
    first = h->hwm_groups;
    size_t end = (size_t{h->hwm_groups} + n) * kGroupSize;
    for (uint32_t i = 1; i < n; ++i) __atomic_store_n(group_map_ + first + i, Entry(GroupKind::kRegion, i), __ATOMIC_RELEASE);
    __atomic_store_n(group_map_ + first, Entry(GroupKind::kRegion, n), __ATOMIC_RELEASE);
    h->hwm_groups += n;
    // Readable as far as the lock-free bound checks go; shmem faults a page
    // in only when it is touched, and nothing touches these.
    if (h->populated_bytes.load(std::memory_order_relaxed) < end) h->populated_bytes.store(end, std::memory_order_release);
  }
  Unlock(h->group_lock);
  return first;
}

int64_t Arena::AllocGroupsLocked(uint32_t n, GroupKind kind) {
  ArenaHeader* h = hdr();
  if (n == 0 || n > h->ngroups) return -1;
  int64_t first = -1;
  // Reuse freed groups first (first fit), then extend the high-water mark.
  uint32_t run = 0;
  for (uint32_t g = h->meta_groups; g < h->hwm_groups; ++g) {
    GroupKind k = EntryKind(group_map_[g]);
    run = (k == GroupKind::kFree || k == GroupKind::kReleased) ? run + 1 : 0;
    if (run == n) {
      first = g + 1 - n;
      break;
    }
  }
  if (first < 0) {
    uint64_t start = h->hwm_groups;
    if (start + n > h->ngroups || !PopulateLocked((start + n) * kGroupSize)) {
      h->nomem_events.fetch_add(1, std::memory_order_relaxed);
      return -1;
    }
    first = static_cast<int64_t>(start);
    PC_CRASH_POINT();
    h->hwm_groups = static_cast<uint32_t>(start + n);
  } else {
    for (uint32_t g = static_cast<uint32_t>(first); g < first + n; ++g) {
      if (EntryKind(group_map_[g]) == GroupKind::kReleased) {
        if (!PopulateRange(base_ + size_t{g} * kGroupSize, kGroupSize, tier())) {
          h->nomem_events.fetch_add(1, std::memory_order_relaxed);
          return -1;
        }
        h->released_bytes.fetch_sub(kGroupSize, std::memory_order_relaxed);
        PC_CRASH_POINT();
        __atomic_store_n(group_map_ + g, Entry(GroupKind::kFree, 0), __ATOMIC_RELEASE);
      }
    }
  }
  for (uint32_t i = 1; i < n; ++i) {
    PC_CRASH_POINT();
    __atomic_store_n(group_map_ + first + i, Entry(kind, i), __ATOMIC_RELEASE);
  }
  PC_CRASH_POINT();
  __atomic_store_n(group_map_ + first, Entry(kind, n), __ATOMIC_RELEASE);
  return first;
}

bool Arena::ReadyGroupLocked(uint32_t g) {
  ArenaHeader* h = hdr();
  if (g >= h->ngroups) return false;
  if (g >= h->hwm_groups) {
    if (g != h->hwm_groups || !PopulateLocked((size_t{g} + 1) * kGroupSize)) {
      h->nomem_events.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    PC_CRASH_POINT();
    h->hwm_groups = g + 1;
    return true;
  }
  GroupKind k = EntryKind(group_map_[g]);
  if (k == GroupKind::kFree) return true;
  if (k != GroupKind::kReleased) return false;
  if (!PopulateRange(base_ + size_t{g} * kGroupSize, kGroupSize, tier())) {
    h->nomem_events.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  h->released_bytes.fetch_sub(kGroupSize, std::memory_order_relaxed);
  PC_CRASH_POINT();
  __atomic_store_n(group_map_ + g, Entry(GroupKind::kFree, 0), __ATOMIC_RELEASE);
  return true;
}

Off Arena::RegionAlloc(size_t bytes) {
  ArenaHeader* h = hdr();
  bytes = AlignUp(bytes, 64);
  if (bytes > kGroupSize) {
    int64_t g = AllocGroups(static_cast<uint32_t>(AlignUp(bytes, kGroupSize) / kGroupSize),
                            GroupKind::kRegion);
    if (g < 0) return 0;
    std::memset(base_ + size_t(g) * kGroupSize, 0, bytes);
    h->region_bytes.fetch_add(AlignUp(bytes, kGroupSize), std::memory_order_relaxed);
    h->region_used.fetch_add(bytes, std::memory_order_relaxed);
    return OffOf(base_ + size_t(g) * kGroupSize);
  }
  LockGroups();
  if (h->region_group == 0 || h->region_pos + bytes > kGroupSize) {
    int64_t g = AllocGroupsLocked(1, GroupKind::kRegion);
    if (g < 0) {
      Unlock(h->group_lock);
      return 0;
    }
    PC_CRASH_POINT();
    h->region_group = static_cast<uint32_t>(g);
    PC_CRASH_POINT();
    h->region_pos = 0;
    h->region_bytes.fetch_add(kGroupSize, std::memory_order_relaxed);
  }
  h->region_used.fetch_add(bytes, std::memory_order_relaxed);
  char* p = base_ + size_t{h->region_group} * kGroupSize + h->region_pos;
  PC_CRASH_POINT();
  h->region_pos += static_cast<uint32_t>(bytes);
  Unlock(h->group_lock);
  PC_CRASH_POINT();
  std::memset(p, 0, bytes);
  return OffOf(p);
}

size_t Arena::used_bytes() const {
  ArenaHeader* h = hdr();
  size_t n = 0;
  for (uint32_t g = 0; g < h->hwm_groups; ++g) {
    GroupKind k = EntryKind(GroupEntry(g));
    if (k != GroupKind::kFree && k != GroupKind::kReleased) ++n;
  }
  return n * kGroupSize;
}

}  // namespace mem
