// perfcached — unit tests for mem/arena: creation, tiers, groups, regions.
// Copyright (c) 2026 the perfcached authors.
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mem/arena.h"
#include "mem/large.h"
#include "mem/slab.h"
#include "test/unit/mem/mem_fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Arena;
using mem::ArenaOptions;
using mem::GroupKind;
using mem::kGroupSize;
using mem::Off;
using mem::Tier;

namespace {

GroupKind KindOf(const Arena& a, uint32_t g) { return Arena::EntryKind(a.GroupEntry(g)); }
uint32_t RunOf(const Arena& a, uint32_t g) { return Arena::EntryRun(a.GroupEntry(g)); }
Off GroupOff(uint32_t g) { return static_cast<Off>(size_t{g} * kGroupSize / mem::kUnit); }

// Creation on the hugepage ladder from `best` down: must work on any machine.
void CheckTier(Tier best) {
  ArenaOptions o;
  o.arena_mb = 8;
  o.arena_cap_mb = 16;
  o.best_tier = best;
  o.max_procs = 4;
  std::string err;
  Arena* a = Arena::Create(o, &err);
  CHECK_TEXT(a != nullptr, err.c_str());
  // Lower enum = better tier: the achieved one is the asked one or worse.
  CHECK(static_cast<int>(a->tier()) >= static_cast<int>(best));
  CHECK(a->tier() != Tier::kNone);
  CHECK(static_cast<int>(a->tier()) <= static_cast<int>(Tier::kSmall));
  const char* note = a->tier_note();
  CHECK(std::strlen(note) > 0);
  // The note names the tier it settled on.
  CHECK_TEXT(std::strstr(note, mem::TierName(a->tier())) != nullptr, note);
  if (a->tier() != Tier::kHugetlb) {
    // ...and says how to get 2 MiB pages: one huge page per group of the cap.
    CHECK_TEXT(std::strstr(note, "vm.nr_overcommit_hugepages=8") != nullptr, note);
  }
  CHECK(mem::kArenaMagic == a->hdr()->magic);
  CHECK_EQUAL(mem::kArenaLayoutVersion, a->hdr()->layout_version);
  CHECK(a->populated_bytes() >= (o.arena_mb << 20));
  CHECK_EQUAL(16u << 20, a->cap_bytes());
  // Usable on every tier: a group can be handed out and written.
  int64_t g = a->AllocGroups(1, GroupKind::kRegion);
  CHECK(g > 0);
  std::memset(a->At(GroupOff(static_cast<uint32_t>(g))), 0x5a, kGroupSize);
  Arena::Destroy(a);
}

std::string CreateError(const ArenaOptions& o) {
  std::string err;
  Arena* a = Arena::Create(o, &err);
  if (a) {
    Arena::Destroy(a);
    return "<created>";
  }
  return err.empty() ? "<empty error>" : err;
}

}  // namespace

TEST_GROUP(Arena) {
  Arena* a = nullptr;
  void teardown() override { Arena::Destroy(a); }
};

TEST(Arena, TierSmall) { CheckTier(Tier::kSmall); }
TEST(Arena, TierCollapse) { CheckTier(Tier::kCollapse); }
TEST(Arena, TierThp) { CheckTier(Tier::kThp); }
TEST(Arena, TierHugetlb) { CheckTier(Tier::kHugetlb); }

TEST(Arena, TierNames) {
  STRCMP_EQUAL("hugetlb", mem::TierName(Tier::kHugetlb));
  STRCMP_EQUAL("thp", mem::TierName(Tier::kThp));
  STRCMP_EQUAL("collapse", mem::TierName(Tier::kCollapse));
  STRCMP_EQUAL("small", mem::TierName(Tier::kSmall));
  STRCMP_EQUAL("none", mem::TierName(Tier::kNone));
}

TEST(Arena, PrefaultedCommit) {
  a = memtest::MakeArena(8, 16);
  CHECK_EQUAL(8u << 20, a->populated_bytes());
  CHECK_EQUAL(8u << 20, a->committed_bytes());
  CHECK_EQUAL(size_t{a->hdr()->meta_groups} * kGroupSize, a->used_bytes());
}

TEST(Arena, NoPrefaultGrowsByGroups) {
  a = memtest::MakeArena(8, 16, 4, 1u << 20, /*prefault=*/false);
  size_t meta = size_t{a->hdr()->meta_groups} * kGroupSize;
  CHECK_EQUAL(meta, a->populated_bytes());
  Off first = GroupOff(a->hdr()->meta_groups);
  CHECK_EQUAL(0u, a->ReadableFrom(first));  // not faulted yet
  int64_t g = a->AllocGroups(2, GroupKind::kRegion);
  CHECK_EQUAL(static_cast<int64_t>(a->hdr()->meta_groups), g);
  CHECK_EQUAL(meta + 2 * kGroupSize, a->populated_bytes());
  CHECK_EQUAL(2 * kGroupSize, a->ReadableFrom(first));
}

TEST(Arena, AllocGroupsUntilFull) {
  a = memtest::MakeArena(8, 16);  // 8 groups, 1 of them metadata
  uint32_t meta = a->hdr()->meta_groups;
  CHECK_EQUAL(1u, meta);
  std::vector<int64_t> got;
  for (int i = 0; i < 20; ++i) {
    int64_t g = a->AllocGroups(1, GroupKind::kRegion);
    if (g < 0) break;
    got.push_back(g);
  }
  CHECK_EQUAL(7u, got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK_EQUAL(static_cast<int64_t>(meta + i), got[i]);  // in order, never twice
    CHECK(KindOf(*a, static_cast<uint32_t>(got[i])) == GroupKind::kRegion);
  }
  CHECK_EQUAL(1u, a->hdr()->nomem_events.load());
  CHECK_EQUAL(-1, a->AllocGroups(1, GroupKind::kSlab));
  CHECK_EQUAL(2u, a->hdr()->nomem_events.load());
  CHECK_EQUAL(a->cap_bytes(), a->populated_bytes());  // grew to the cap, not past
  CHECK_EQUAL(a->cap_bytes(), a->used_bytes());
  CHECK_EQUAL(8u, a->hdr()->hwm_groups);
}

TEST(Arena, AllocGroupsBadCounts) {
  a = memtest::MakeArena(8, 16);
  CHECK_EQUAL(-1, a->AllocGroups(0, GroupKind::kRegion));
  CHECK_EQUAL(-1, a->AllocGroups(9, GroupKind::kRegion));   // above ngroups
  CHECK_EQUAL(-1, a->AllocGroups(8, GroupKind::kRegion));   // 8 > 7 free
  CHECK_EQUAL(a->hdr()->meta_groups, a->hdr()->hwm_groups);  // nothing taken
  CHECK_EQUAL(1, a->AllocGroups(7, GroupKind::kRegion));     // exactly all
}

TEST(Arena, GroupRunMapEntriesFreeAndReuse) {
  a = memtest::MakeArena(8, 16);
  int64_t h = a->AllocGroups(3, GroupKind::kRegion);
  CHECK_EQUAL(1, h);
  uint32_t g = static_cast<uint32_t>(h);
  CHECK(KindOf(*a, g) == GroupKind::kRegion);
  CHECK_EQUAL(3u, RunOf(*a, g));
  CHECK(KindOf(*a, g + 1) == GroupKind::kRegion);
  CHECK_EQUAL(1u, RunOf(*a, g + 1));
  CHECK(KindOf(*a, g + 2) == GroupKind::kRegion);
  CHECK_EQUAL(2u, RunOf(*a, g + 2));
  int64_t after = a->AllocGroups(1, GroupKind::kRegion);
  CHECK_EQUAL(4, after);
  std::memset(a->At(GroupOff(g)), 0xab, 3 * kGroupSize);

  size_t used = a->used_bytes(), committed = a->committed_bytes();
  a->LockGroups();
  for (uint32_t i = g; i < g + 3; ++i) a->FreeGroupLocked(i);
  a->UnlockGroups();
  // Tier small: the memory goes back to the kernel.
  for (uint32_t i = g; i < g + 3; ++i) {
    CHECK(KindOf(*a, i) == GroupKind::kReleased);
    CHECK_EQUAL(0u, RunOf(*a, i));
  }
  CHECK_EQUAL(3 * kGroupSize, a->hdr()->released_bytes.load());
  CHECK_EQUAL(used - 3 * kGroupSize, a->used_bytes());
  CHECK_EQUAL(committed - 3 * kGroupSize, a->committed_bytes());
  CHECK_EQUAL(0, a->At(GroupOff(g))[100]);  // MADV_REMOVE: reads back zero

  // First fit reuses the freed run, re-faulting the groups it takes.
  int64_t r = a->AllocGroups(2, GroupKind::kSlab);
  CHECK_EQUAL(h, r);
  CHECK(KindOf(*a, g) == GroupKind::kSlab);
  CHECK(KindOf(*a, g + 1) == GroupKind::kSlab);
  CHECK(KindOf(*a, g + 2) == GroupKind::kReleased);
  CHECK_EQUAL(kGroupSize, a->hdr()->released_bytes.load());
  std::memset(a->At(GroupOff(g)), 1, 2 * kGroupSize);
  // A run of 2 no longer fits in the hole (1 group): it extends the top.
  uint32_t hwm = a->hdr()->hwm_groups;
  CHECK_EQUAL(static_cast<int64_t>(hwm), a->AllocGroups(2, GroupKind::kRegion));
  // A single group fills the hole.
  CHECK_EQUAL(static_cast<int64_t>(g + 2), a->AllocGroups(1, GroupKind::kRegion));
  CHECK_EQUAL(0u, a->hdr()->released_bytes.load());
  CHECK_EQUAL(a->populated_bytes(), a->committed_bytes());
}

TEST(Arena, RegionAllocZeroedAlignedDistinct) {
  a = memtest::MakeArena(8, 16);
  struct R {
    Off off;
    size_t bytes;
  };
  std::vector<R> rs;
  const size_t sizes[] = {1, 64, 65, 100, 4096, 12345, 1u << 20, 3u << 20, 7, 200000};
  for (size_t s : sizes) {
    Off o = a->RegionAlloc(s);
    CHECK(o != 0);
    char* p = a->At(o);
    CHECK_EQUAL(0u, reinterpret_cast<uintptr_t>(p) % 64);
    CHECK(a->ReadableFrom(o) >= s);
    size_t nonzero = 0;
    for (size_t i = 0; i < s; ++i) nonzero += p[i] != 0;
    CHECK_EQUAL(0u, nonzero);
    std::memset(p, 0xee, s);  // dirty it: a later overlapping region would not be zero
    rs.push_back({o, s});
  }
  std::sort(rs.begin(), rs.end(), [](const R& x, const R& y) { return x.off < y.off; });
  for (size_t i = 1; i < rs.size(); ++i) {
    CHECK(size_t{rs[i - 1].off} * mem::kUnit + rs[i - 1].bytes <= size_t{rs[i].off} * mem::kUnit);
  }
  // Regions live in kRegion groups; the > 2 MiB one starts a group.
  for (const R& r : rs) {
    uint32_t g = static_cast<uint32_t>(size_t{r.off} * mem::kUnit / kGroupSize);
    CHECK(KindOf(*a, g) == GroupKind::kRegion);
    if (r.bytes > kGroupSize) CHECK_EQUAL(0u, size_t{r.off} * mem::kUnit % kGroupSize);
  }
  CHECK(a->hdr()->region_bytes.load() >= 3 * kGroupSize);
}

TEST(Arena, RegionAllocReusesFreedLargeGroupZeroed) {
  a = memtest::MakeArena(8, 16);
  Off big;
  CHECK(mem::AllocLargeRun(*a, (4u << 20) - 2 * mem::kLargeHdr, &big) == mem::Status::kOk);  // 2 groups
  int64_t h = static_cast<int64_t>(size_t{big} * mem::kUnit / kGroupSize);
  CHECK(h > 0);
  std::memset(a->At(big), 0x77, (4u << 20) - 2 * mem::kLargeHdr);
  CHECK(mem::FreeLargeRun(*a, big));
  Off o = a->RegionAlloc(3u << 20);  // takes the freed run back
  CHECK_EQUAL(GroupOff(static_cast<uint32_t>(h)), o);
  const char* p = a->At(o);
  size_t nonzero = 0;
  for (size_t i = 0; i < (3u << 20); i += 512) nonzero += p[i] != 0;
  CHECK_EQUAL(0u, nonzero);
}

TEST(Arena, RegionAllocFull) {
  a = memtest::MakeArena(6);  // 3 groups, 1 of them metadata
  CHECK(a->RegionAlloc(2 * kGroupSize - 64) != 0);  // (> 1 group: both free groups)
  uint64_t ev = a->hdr()->nomem_events.load();
  CHECK_EQUAL(0u, a->RegionAlloc(64));
  CHECK(a->hdr()->nomem_events.load() > ev);
}

TEST(Arena, ReadableFrom) {
  a = memtest::MakeArena(8, 16);
  size_t meta = size_t{a->hdr()->meta_groups} * kGroupSize;
  size_t pop = a->populated_bytes();
  CHECK_EQUAL(0u, a->ReadableFrom(0));
  CHECK_EQUAL(0u, a->ReadableFrom(1));
  CHECK_EQUAL(0u, a->ReadableFrom(static_cast<Off>(a->hdr()->pools_off / mem::kUnit)));
  CHECK_EQUAL(0u, a->ReadableFrom(static_cast<Off>(meta / mem::kUnit - 1)));
  CHECK_EQUAL(pop - meta, a->ReadableFrom(static_cast<Off>(meta / mem::kUnit)));
  CHECK_EQUAL(8u, a->ReadableFrom(static_cast<Off>(pop / mem::kUnit - 1)));
  CHECK_EQUAL(0u, a->ReadableFrom(static_cast<Off>(pop / mem::kUnit)));
  CHECK_EQUAL(0u, a->ReadableFrom(static_cast<Off>(a->cap_bytes() / mem::kUnit)));
  CHECK_EQUAL(0u, a->ReadableFrom(0xFFFFFFFFu));
  Off mid = static_cast<Off>((meta + 12345 * 8) / mem::kUnit);
  CHECK_EQUAL(pop - meta - 12345 * 8, a->ReadableFrom(mid));
}

TEST(Arena, OffsetRoundTrip) {
  a = memtest::MakeArena(8);
  Off o = a->RegionAlloc(128);
  CHECK(o != 0);
  CHECK_EQUAL(o, a->OffOf(a->At(o)));
  CHECK(a->At(o) == a->base() + size_t{o} * mem::kUnit);
  CHECK_EQUAL(o + 1, a->OffOf(a->At(o) + 8));
}

TEST(Arena, CreateErrors) {
  ArenaOptions o;
  o.arena_mb = 8;
  o.best_tier = Tier::kSmall;
  o.max_procs = 0;
  std::string e = CreateError(o);
  CHECK_TEXT(e.find("max_procs") != std::string::npos, e.c_str());
  o.max_procs = mem::kMaxProcs + 1;
  e = CreateError(o);
  CHECK_TEXT(e.find("max_procs") != std::string::npos, e.c_str());
  o.max_procs = mem::kMaxProcs;  // the limit itself is fine
  STRCMP_EQUAL("<created>", CreateError(o).c_str());
  o.max_procs = 8;
  o.arena_cap_mb = (1u << 20) + 2;  // above 1 TiB of Off reach
  e = CreateError(o);
  CHECK_TEXT(e.find("1048576") != std::string::npos, e.c_str());
  o.arena_cap_mb = 0;
  o.arena_mb = 4;  // metadata group + 2 groups do not fit
  e = CreateError(o);
  CHECK_TEXT(e.find("arena too small") != std::string::npos, e.c_str());
  // The message's minimum is right: it works, 2 MiB less does not.
  size_t at = e.find("at least ");
  CHECK(at != std::string::npos);
  size_t need = std::strtoul(e.c_str() + at + 9, nullptr, 10);
  CHECK_EQUAL(6u, need);
  o.arena_mb = need;
  STRCMP_EQUAL("<created>", CreateError(o).c_str());
  o.arena_mb = need - 2;
  CHECK(CreateError(o).find("arena too small") != std::string::npos);
  o.arena_mb = 0;
  CHECK(CreateError(o).find("arena too small") != std::string::npos);
}

// The fault-in at start reports its progress: first the group MapShared
// faulted, then every step, last done == total; the memory is all there.
TEST(Arena, FaultInProgressFromStartToEnd) {
  ArenaOptions o;
  o.arena_mb = 15;  // 7.5 steps of 2 MiB: the last one is short
  o.best_tier = Tier::kSmall;
  o.progress_step = 2u << 20;
  std::vector<std::pair<size_t, size_t>> calls;
  o.progress = [&](size_t done, size_t total) { calls.emplace_back(done, total); };
  std::string err;
  a = Arena::Create(o, &err);
  CHECK_TEXT(a != nullptr, err.c_str());
  size_t want = 16u << 20;  // rounded up to whole groups
  CHECK_EQUAL(want, a->populated_bytes());
  CHECK_EQUAL(8u, calls.size());  // the start and 7 steps
  CHECK_EQUAL(kGroupSize, calls.front().first);
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK_EQUAL(want, calls[i].second);
    if (i) CHECK(calls[i].first > calls[i - 1].first);
  }
  CHECK_EQUAL(want, calls.back().first);
  // A step that is not a whole number of groups is rounded up to one;
  // without a callback nothing changes.
  Arena::Destroy(a);
  calls.clear();
  o.progress_step = 3u << 20;  // -> 4 MiB
  a = Arena::Create(o, &err);
  CHECK(a != nullptr);
  CHECK_EQUAL(5u, calls.size());  // 2, 6, 10, 14, 16 MiB
  CHECK_EQUAL(6u << 20, calls[1].first);
  CHECK_EQUAL(want, calls.back().first);
  Arena::Destroy(a);
  o.progress = nullptr;
  a = Arena::Create(o, &err);
  CHECK(a != nullptr);
  CHECK_EQUAL(want, a->populated_bytes());
}

TEST(Arena, CapBelowCommitIsRaised) {
  ArenaOptions o;
  o.arena_mb = 10;
  o.arena_cap_mb = 6;
  o.best_tier = Tier::kSmall;
  std::string err;
  a = Arena::Create(o, &err);
  CHECK(a != nullptr);
  CHECK_EQUAL(10u << 20, a->cap_bytes());
  CHECK_EQUAL(10u << 20, a->populated_bytes());
}

TEST(Arena, SharedAcrossFork) {
  a = memtest::MakeArena(8);
  Off o = a->RegionAlloc(64);
  auto* v = reinterpret_cast<uint64_t*>(a->At(o));
  pid_t p = memtest::ForkChild([&] {
    if (*v != 0) return 2;
    *v = 0x1122334455667788ull;
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK(*v == 0x1122334455667788ull);  // MAP_SHARED: the child's store is ours
}

// With mlock refused, the note must still carry both pieces of advice: the
// sysctl for 2 MiB pages and the mlock warning. Run in a child that drops
// CAP_IPC_LOCK and RLIMIT_MEMLOCK so that mlock is refused even for root.
TEST(Arena, TierNoteKeepsAllAdviceWhenMlockRefused) {
  struct Out {
    int created, locked;
    char tier;
    char note[512];
  };
  a = memtest::MakeArena(8);
  auto* out = reinterpret_cast<Out*>(a->At(a->RegionAlloc(sizeof(Out))));
  pid_t p = memtest::ForkChild([&] {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capget, &hdr, data) == 0) {
      data[0].effective &= ~(1u << CAP_IPC_LOCK);
      data[0].permitted &= ~(1u << CAP_IPC_LOCK);
      (void)syscall(SYS_capset, &hdr, data);
    }
    rlimit rl{0, 0};
    setrlimit(RLIMIT_MEMLOCK, &rl);
    alignas(4096) static char probe[4096];
    if (mlock(probe, sizeof probe) == 0) return 77;  // cannot be refused here (ASan fakes mlock)
    ArenaOptions o;
    o.arena_mb = 8;
    o.arena_cap_mb = 16;
    o.best_tier = Tier::kHugetlb;
    o.lock_memory = true;
    std::string err;
    Arena* b = Arena::Create(o, &err);
    if (!b) return 2;
    out->created = 1;
    out->locked = b->hdr()->locked;
    out->tier = static_cast<char>(b->tier());
    std::snprintf(out->note, sizeof out->note, "%s", b->tier_note());
    Arena::Destroy(b);
    return 0;
  });
  int rc = memtest::WaitExit(p);
  if (rc == 77) return;  // no way to make mlock fail in this build: nothing to test
  CHECK_EQUAL(0, rc);
  CHECK_EQUAL(1, out->created);
  CHECK_EQUAL(0, out->locked);
  CHECK_TEXT(std::strstr(out->note, "mlock refused") != nullptr, out->note);
  CHECK_TEXT(std::strstr(out->note, "memory may swap") != nullptr, out->note);
  if (out->tier != static_cast<char>(Tier::kHugetlb)) {
    CHECK_TEXT(std::strstr(out->note, "vm.nr_overcommit_hugepages=8") != nullptr, out->note);
  }
}

TEST(Arena, LockMemory) {
  ArenaOptions o;
  o.arena_mb = 8;
  o.best_tier = Tier::kSmall;
  o.lock_memory = true;
  std::string err;
  a = Arena::Create(o, &err);
  CHECK(a != nullptr);
  // Either locked, or the note says it was refused.
  if (a->hdr()->locked == 0) CHECK(std::strstr(a->tier_note(), "mlock refused") != nullptr);
  if (a->hdr()->locked == 1) CHECK(std::strstr(a->tier_note(), "mlock refused") == nullptr);
  CHECK(a->hdr()->locked <= 1);
}
