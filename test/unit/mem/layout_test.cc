// perfcached — unit tests for the fixed shared-memory layouts (mem/ and cache/).
// Copyright (c) 2026 the perfcached authors.
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "cache/table.h"
#include "mem/arena.h"
#include "mem/lock.h"
#include "mem/page.h"
#include "mem/slab.h"
#include "test/unit/mem/mem_fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Arena;
using mem::ArenaHeader;
using mem::ClassCache;
using mem::ProcSlot;
using mem::SlabPool;

namespace {

// Print the layout once per run (with -v it sits next to the test names).
void PrintLayoutOnce() {
  static bool printed = false;
  if (printed) return;
  printed = true;
  std::printf(
      "\n  layout: ArenaHeader=%zu (magic@%zu populated@%zu group_lock@%zu tier_note@%zu)"
      " SlabPool=%zu ProcSlot=%zu (cls@%zu) ClassCache=%zu ShmLock=%zu"
      " cache::Bucket=%zu (seq@%zu lock@%zu tags_lo@%zu ctl@%zu lo@%zu hi@%zu)"
      " cache::TableHeader=%zu classes=%d\n",
      sizeof(ArenaHeader), offsetof(ArenaHeader, magic), offsetof(ArenaHeader, populated_bytes),
      offsetof(ArenaHeader, group_lock), offsetof(ArenaHeader, tier_note), sizeof(SlabPool),
      sizeof(ProcSlot), offsetof(ProcSlot, cls), sizeof(ClassCache), sizeof(mem::ShmLock),
      sizeof(cache::Bucket), offsetof(cache::Bucket, seq), offsetof(cache::Bucket, lock),
      offsetof(cache::Bucket, tags_lo), offsetof(cache::Bucket, ctl), offsetof(cache::Bucket, lo),
      offsetof(cache::Bucket, hi), sizeof(cache::TableHeader), mem::kNumClasses);
}

}  // namespace

TEST_GROUP(MemLayout) {
  void setup() override { PrintLayoutOnce(); }
};

TEST(MemLayout, ArenaHeader) {
  CHECK_EQUAL(0u, offsetof(ArenaHeader, magic));
  CHECK_EQUAL(8u, offsetof(ArenaHeader, layout_version));
  CHECK(sizeof(ArenaHeader) <= 640);
  CHECK_EQUAL(184u, offsetof(ArenaHeader, page_masks_off));
  CHECK_EQUAL(0u, offsetof(ArenaHeader, populated_bytes) % 8);
  CHECK_EQUAL(0u, offsetof(ArenaHeader, released_bytes) % 8);
  CHECK_EQUAL(0u, offsetof(ArenaHeader, group_lock) % 4);
  // The note is the last field: a layout change elsewhere shows up here.
  CHECK_EQUAL(sizeof(ArenaHeader), offsetof(ArenaHeader, tier_note) + sizeof(ArenaHeader{}.tier_note));
  // The header must fit below the group map (which starts at 4096).
  CHECK(sizeof(ArenaHeader) <= 4096);
}

TEST(MemLayout, SlabStructs) {
  CHECK_EQUAL(64u, sizeof(SlabPool));
  CHECK_EQUAL(64u, alignof(SlabPool));
  CHECK_EQUAL(0u, offsetof(SlabPool, lock));
  CHECK_EQUAL(32u, sizeof(ClassCache));
  CHECK_EQUAL(16u, offsetof(ClassCache, mask));
  CHECK_EQUAL(8u, offsetof(SlabPool, current));
  CHECK_EQUAL(24u, offsetof(SlabPool, pages));
  CHECK_EQUAL(32u, offsetof(ProcSlot, alloc_bytes));
  CHECK_EQUAL(48u, offsetof(ProcSlot, give_back_asked));
  CHECK_EQUAL(52u, offsetof(ProcSlot, give_back_done));
  CHECK_EQUAL(56u, offsetof(ProcSlot, given_back));
  CHECK_EQUAL(128u, sizeof(mem::PageHeader));
  CHECK_EQUAL(64u, offsetof(mem::PageHeader, live));
  CHECK_EQUAL(0u, offsetof(ProcSlot, owner_tid));
  CHECK_EQUAL(64u, offsetof(ProcSlot, cls));
  CHECK_EQUAL(64u, alignof(ProcSlot));
  CHECK_EQUAL(0u, sizeof(ProcSlot) % 64);
  CHECK(sizeof(ProcSlot) >= 64 + sizeof(ClassCache) * mem::kNumClasses);
  CHECK_EQUAL(4u, sizeof(mem::ShmLock));
  CHECK_EQUAL(8u, sizeof(mem::Off));  // layout 8: 64 bits stored, 40 in a bucket
  CHECK_EQUAL(size_t{1} << 40, mem::kMaxArenaBytes);
  CHECK_EQUAL(10u, mem::kArenaLayoutVersion);
}

TEST(MemLayout, CacheStructs) {
  CHECK_EQUAL(64u, sizeof(cache::Bucket));
  CHECK_EQUAL(0u, offsetof(cache::Bucket, seq));
  CHECK_EQUAL(4u, offsetof(cache::Bucket, lock));
  CHECK_EQUAL(8u, offsetof(cache::Bucket, tags_lo));
  CHECK_EQUAL(16u, offsetof(cache::Bucket, ctl));
  CHECK_EQUAL(20u, offsetof(cache::Bucket, lo));
  CHECK_EQUAL(56u, offsetof(cache::Bucket, lo) + sizeof(cache::Bucket{}.lo));
  CHECK_EQUAL(56u, offsetof(cache::Bucket, hi));
  CHECK_EQUAL(9, cache::kSlots);
  CHECK_EQUAL(9, cache::kLive);
  CHECK_EQUAL(448u, sizeof(cache::TableHeader));
  CHECK_EQUAL(384u, offsetof(cache::TableHeader, ver_floor));
  CHECK_EQUAL(80u, offsetof(cache::TableHeader, route));
  CHECK_EQUAL(112u, offsetof(cache::TableHeader, dir_ext));
}

TEST(MemLayout, FreshArenaHeader) {
  Arena* a = memtest::MakeArena(8, 16, 4, 1u << 20);
  ArenaHeader* h = a->hdr();
  CHECK(reinterpret_cast<char*>(h) == a->base());
  CHECK(mem::kArenaMagic == h->magic);
  CHECK_EQUAL(0, std::memcmp(a->base(), "PERFCACH", 8));  // little-endian magic
  CHECK_EQUAL(mem::kArenaLayoutVersion, h->layout_version);
  CHECK_EQUAL(sizeof(ArenaHeader), h->header_bytes);
  CHECK(reinterpret_cast<uint64_t>(a->base()) == h->base_addr);
  CHECK_EQUAL(0u, reinterpret_cast<uintptr_t>(a->base()) % mem::kGroupSize);
  CHECK_EQUAL(16u << 20, h->cap_bytes);
  CHECK_EQUAL(8u << 20, h->commit_bytes);
  CHECK_EQUAL(8u, h->ngroups);
  CHECK_EQUAL(1u, h->meta_groups);
  CHECK_EQUAL(4u, h->max_procs);
  CHECK_EQUAL(1u << 20, h->max_value);
  CHECK_EQUAL(h->meta_groups, h->hwm_groups);
  CHECK_EQUAL(0u, mem::LockHolder(h->group_lock));
  // Metadata blocks: in order, aligned, inside the meta groups.
  CHECK_EQUAL(4096u, h->group_map_off);
  CHECK(h->units_off >= h->group_map_off + h->ngroups * sizeof(uint32_t));
  CHECK_EQUAL(0u, h->units_off % 64);
  CHECK(h->page_masks_off >= h->units_off + h->ngroups * sizeof(mem::UnitMasks));
  CHECK(h->pools_off >= h->page_masks_off + h->ngroups * sizeof(uint32_t));
  CHECK_EQUAL(0u, h->pools_off % 64);
  CHECK_EQUAL(h->pools_off + sizeof(SlabPool) * mem::kNumClasses, h->slots_off);
  CHECK_EQUAL(0u, h->user_off % 4096);
  CHECK(h->user_off >= h->slots_off + sizeof(ProcSlot) * h->max_procs);
  CHECK(h->user_off + 4096 <= size_t{h->meta_groups} * mem::kGroupSize);
  CHECK(static_cast<char*>(a->UserRoot()) == a->base() + h->user_off);
  for (uint32_t g = 0; g < h->meta_groups; ++g) {
    CHECK(Arena::EntryKind(a->GroupEntry(g)) == mem::GroupKind::kMeta);
  }
  for (uint32_t g = h->meta_groups; g < h->ngroups; ++g) CHECK_EQUAL(0u, a->GroupEntry(g));
  // Fresh metadata is zero: pools empty, slots free, user root clear.
  for (int c = 0; c < mem::kNumClasses; ++c) {
    CHECK_EQUAL(0u, mem::PoolAt(*a, c)->pages.load());
    CHECK_EQUAL(0u, mem::PoolAt(*a, c)->current);
  }
  for (uint32_t s = 0; s < h->max_procs; ++s) CHECK_EQUAL(0u, mem::SlotAt(*a, s)->owner_tid.load());
  const char* root = static_cast<const char*>(a->UserRoot());
  size_t nonzero = 0;
  for (size_t i = 0; i < 4096; ++i) nonzero += root[i] != 0;
  CHECK_EQUAL(0u, nonzero);
  CHECK_EQUAL(0u, h->large_objects.load());
  CHECK_EQUAL(0u, h->nomem_events.load());
  CHECK_EQUAL(0u, h->released_bytes.load());
  CHECK(std::strlen(h->tier_note) > 0);
  CHECK(std::strlen(h->tier_note) < sizeof h->tier_note);
  mem::Arena::Destroy(a);
}
