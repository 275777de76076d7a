// perfcached — regression tests for the allocator defects of issue 7:
// a cell handed out twice after a killed adopter (1), a restarted worker
// aborting on its adopter (6), and process-id reuse (7).
// Copyright (c) 2026 the perfcached authors.
#include <signal.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "mem/atomic_copy.h"
#include "mem/page.h"
#include "mem/slab.h"
#include "test/unit/mem/mem_fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Off;

namespace {

// A pid that is certainly dead (a child that exited and was reaped).
uint32_t DeadPid() {
  pid_t p = memtest::ForkChild([] { return 0; });
  memtest::WaitExit(p);
  return static_cast<uint32_t>(p);
}

// A child on `slot` that allocates `n` cells of `bytes`, frees them and
// dies holding its claim.
void DieHoldingCells(mem::Arena& a, uint32_t slot, int n, size_t bytes) {
  pid_t p = memtest::ForkChild([&] {
    mem::Allocator al(a, slot);
    std::vector<Off> cells(n);
    for (auto& c : cells) {
      if (al.Alloc(bytes, &c) != mem::Status::kOk) return 1;
    }
    for (Off c : cells) al.Free(c);
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
}

}  // namespace

TEST_GROUP(SlabTrust) {
  mem::Arena* a = nullptr;
  void setup() override { a = memtest::MakeArena(16); }
  void teardown() override { mem::Arena::Destroy(a); }
};

// Defect 1: an adopter killed mid-drain left the slot's cells in place
// after making them free; the next adopter freed them a second time, after
// a live process had been handed them: one cell, two owners.
TEST(SlabTrust, AdopterKilledMidDrainNeverDuplicatesACell) {
  const size_t bytes = 100;
  const int cls = mem::ClassFor(bytes);
  DieHoldingCells(*a, 1, 40, bytes);
  mem::ProcSlot* ps = mem::SlotAt(*a, 1);
  uint32_t held = static_cast<uint32_t>(__builtin_popcountll(ps->cls[cls].mask));
  uint32_t stacked = ps->cls[cls].stack_n;
  CHECK(held >= 10 && stacked > 0);
  // The first adopter claims the slot, gives the stack back and dies inside
  // the claim.
  uint32_t adopter = DeadPid();
  ps->owner_tid.store(adopter | mem::kSlotBusy);
  CHECK_EQUAL(stacked, mem::DrainSlot(*a, ps, stacked + 1));
  // A live process takes every free cell of the class's page meanwhile.
  mem::Allocator live(*a, 2);
  std::set<Off> mine;
  uint32_t ncells = mem::ClassGeometry(cls).ncells;
  for (uint32_t i = 0; i < ncells; ++i) {
    Off o;
    if (live.Alloc(bytes, &o) != mem::Status::kOk) break;
    mine.insert(o);
    if (mem::PoolAt(*a, cls)->pages.load() > 1) break;
  }
  // The next adopter finishes the job: it must not free what `live` holds.
  CHECK(mem::AdoptDeadSlot(*a, 1));
  mem::Allocator other(*a, 3);
  size_t dup = 0;
  for (uint32_t i = 0; i < 2 * ncells; ++i) {
    Off o;
    CHECK(other.Alloc(bytes, &o) == mem::Status::kOk);
    dup += mine.count(o);
  }
  CHECK_EQUAL(0u, dup);  // no cell handed out twice
}

// Defect 6: a restarted worker found the timer (adopting the dead
// predecessor's slot) recorded as the owner and aborted. It must wait for
// the adoption to finish and then claim the slot.
TEST(SlabTrust, RestartedOwnerWaitsForTheAdopter) {
  int fds[2];
  CHECK_EQUAL(0, pipe(fds));
  pid_t adopter = memtest::ForkChild([&] {
    close(fds[1]);
    char ch;
    return read(fds[0], &ch, 1) == 0 ? 0 : 1;
  });
  close(fds[0]);
  mem::ProcSlot* ps = mem::SlotAt(*a, 1);
  ps->owner_tid.store(static_cast<uint32_t>(adopter) | mem::kSlotBusy);  // adopting, alive
  pid_t worker = memtest::ForkChild([&] {
    mem::Allocator al(*a, 1);
    return ps->owner_tid.load() == mem::SelfTid() ? 0 : 3;
  }, true);
  usleep(100 * 1000);
  int st = 0;
  bool still_waiting = waitpid(worker, &st, WNOHANG) == 0;
  ps->owner_tid.store(0);  // the adoption finished
  close(fds[1]);
  CHECK_EQUAL(0, memtest::WaitExit(adopter));
  CHECK(still_waiting);
  CHECK_EQUAL(0, memtest::WaitExit(worker));
}

// Defect 7: a slot owner or lock holder was judged alive by kill(tid, 0):
// once its id is reused, a dead holder looked immortal. The recorded start
// time (and, for locks, the slot generation in the token) tells.
TEST(SlabTrust, ReusedProcessIdDoesNotMakeTheDeadImmortal) {
  int fds[2];
  CHECK_EQUAL(0, pipe(fds));
  pid_t other = memtest::ForkChild([&] {  // a live process that now has the id
    close(fds[1]);
    char ch;
    return read(fds[0], &ch, 1) == 0 ? 0 : 1;
  });
  close(fds[0]);
  uint32_t tid = static_cast<uint32_t>(other);
  uint64_t start = mem::TidStartTime(tid);
  CHECK(start != 0);
  CHECK_FALSE(mem::TidIsDead(tid, start));
  CHECK(mem::TidIsDead(tid, start + 12345));  // same id, another process
  // A slot whose recorded owner started at another time is adoptable.
  mem::ProcSlot* ps = mem::SlotAt(*a, 2);
  ps->owner_tid.store(tid);
  ps->owner_start.store(start + 12345);
  CHECK(mem::SlotOwnerDead(*ps));
  CHECK(mem::AdoptDeadSlot(*a, 2));
  // A lock held under that slot's token: a waiter takes it over.
  ps->owner_tid.store(tid);
  ps->owner_start.store(start + 12345);
  {
    mem::Allocator bind(*a, 3);  // installs the token judge for this arena
    mem::ShmLock l{};
    l.word.store(mem::SlotToken(2, ps->gen.load()));
    double t0 = memtest::NowSec();
    CHECK(mem::Lock(l) == mem::LockResult::kTookFromDead);
    CHECK(memtest::NowSec() - t0 < 5.0);
    mem::Unlock(l);
    // A token of an older generation is dead even if the slot is owned now.
    ps->owner_tid.store(mem::SelfTid());
    ps->owner_start.store(mem::TidStartTime(mem::SelfTid()));
    uint32_t gen = ps->gen.load();
    CHECK_FALSE(mem::TidIsDead(mem::SlotToken(2, gen)));
    CHECK(mem::TidIsDead(mem::SlotToken(2, gen - 1)));
    ps->owner_tid.store(0);
  }
  close(fds[1]);
  CHECK_EQUAL(0, memtest::WaitExit(other));
}

// Defect 13, in its form since large objects are runs of units (mem/large.h):
// a large object's memory leaked when a free (or an allocation) was killed
// mid-way. The next holder of the group lock frees the units no head covers
// and gives back the groups left with none.
TEST(SlabTrust, KilledLargeFreeLeavesNoOrphanUnits) {
  mem::Allocator al(*a, 0);
  mem::Off keep, big;
  CHECK(al.Alloc(300u << 10, &keep) == mem::Status::kOk);  // 10 units
  CHECK(al.Alloc(3u << 20, &big) == mem::Status::kOk);     // 97 units, right after: 2 groups
  size_t start = size_t{big} * mem::kUnit - mem::kLargeHdr;
  uint32_t g = static_cast<uint32_t>(start / mem::kGroupSize), u = static_cast<uint32_t>(start % mem::kGroupSize / mem::kLargeUnit);
  CHECK_EQUAL(10u, u);
  CHECK_EQUAL(static_cast<uint32_t>((size_t{keep} * mem::kUnit) / mem::kGroupSize), g);
  CHECK(mem::Arena::EntryKind(a->GroupEntry(g + 1)) == mem::GroupKind::kLarge);
  pid_t p = memtest::ForkChild([&] {
    // FreeLargeRun's first step, then death: the head bit is gone, the units not.
    (void)mem::Lock(a->hdr()->group_lock);
    a->UnitsOf(g).heads.fetch_and(~(uint64_t{1} << u));
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK(a->UnitsOf(g + 1).used.load() != 0);
  CHECK(a->AllocGroups(1, mem::GroupKind::kRegion) >= 0);  // takes the lock over: repairs
  CHECK_EQUAL((uint64_t{1} << 10) - 1, a->UnitsOf(g).used.load());  // `keep` only
  CHECK(mem::Arena::EntryKind(a->GroupEntry(g + 1)) != mem::GroupKind::kLarge);
  mem::LargeUsage lu = mem::LargeUsageOf(*a);
  CHECK_EQUAL(1u, lu.objects);
  CHECK_EQUAL(1u, a->hdr()->large_objects.load());  // counted again
  CHECK_EQUAL(10 * mem::kLargeUnit, a->hdr()->large_bytes.load());
  CHECK_EQUAL(10u, lu.units);
  CHECK_EQUAL(1u, lu.groups);
  CHECK_EQUAL(mem::kLargeClass, mem::CellClass(*a, keep));
  CHECK_EQUAL(mem::kNoClass, mem::CellClass(*a, big));

  // An allocation killed after marking its units, before its head bit: the
  // group it had readied goes back too.
  uint32_t fresh = a->hdr()->hwm_groups;
  p = memtest::ForkChild([&] {
    (void)mem::Lock(a->hdr()->group_lock);
    if (!a->ReadyGroupLocked(fresh)) return 1;
    a->SetGroupEntryLocked(fresh, mem::GroupKind::kLarge, 0);
    a->UnitsOf(fresh).used.store(0xFF);
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK(mem::Arena::EntryKind(a->GroupEntry(fresh)) == mem::GroupKind::kLarge);
  mem::Off again;
  CHECK(al.Alloc(300u << 10, &again) == mem::Status::kOk);  // takes the lock over: repairs
  CHECK(mem::Arena::EntryKind(a->GroupEntry(fresh)) != mem::GroupKind::kLarge);
  CHECK_EQUAL(0u, a->UnitsOf(fresh).used.load());
  CHECK_EQUAL(2u, mem::LargeUsageOf(*a).objects);
  al.Free(keep);
  al.Free(again);
  CHECK_EQUAL(0u, mem::LargeUsageOf(*a).groups);
  CHECK_EQUAL(0u, a->hdr()->large_objects.load());
  CHECK_EQUAL(0u, a->hdr()->large_bytes.load());
}

// The review of the unit runs: a holder killed inside FreeGroupLocked (the
// released figure added, the group not yet marked) left released_bytes 2 MiB
// high for good, and the repair's own FreeGroupLocked added it again. And
// a head whose run lost some of its used bits (no crash order makes one,
// but the repair must not make it worse) gets them back instead of its
// group being given away under a live object.
TEST(SlabTrust, LargeRepairRecountsAndNeverFreesALiveRun) {
  mem::Allocator al(*a, 0);
  mem::Off lone, big;
  CHECK(al.Alloc(300u << 10, &lone) == mem::Status::kOk);
  uint32_t g = static_cast<uint32_t>(size_t{lone} * mem::kUnit / mem::kGroupSize);
  pid_t p = memtest::ForkChild([&] {
    (void)mem::Lock(a->hdr()->group_lock);
    a->UnitsOf(g).heads.store(0);
    a->UnitsOf(g).used.store(0);
    a->hdr()->released_bytes.fetch_add(mem::kGroupSize);  // FreeGroupLocked's first store
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK(mem::Arena::EntryKind(a->GroupEntry(g)) == mem::GroupKind::kLarge);
  CHECK(al.Alloc(3u << 20, &big) == mem::Status::kOk);  // takes the lock over: repairs
  // g given back once (and taken again by big, first fit): the figure is
  // the released groups', not 2 MiB above it
  CHECK_EQUAL(size_t{g} * mem::kGroupSize + mem::kLargeHdr, size_t{big} * mem::kUnit);
  uint64_t before = a->hdr()->released_bytes.load();
  uint32_t released_groups = 0;
  for (uint32_t i = a->hdr()->meta_groups; i < a->hdr()->hwm_groups; ++i) {
    released_groups += mem::Arena::EntryKind(a->GroupEntry(i)) == mem::GroupKind::kReleased;
  }
  CHECK_EQUAL(released_groups * mem::kGroupSize, before);

  // A live 3 MiB run whose second group lost its used bits.
  size_t start = size_t{big} * mem::kUnit - mem::kLargeHdr;
  uint32_t bg = static_cast<uint32_t>(start / mem::kGroupSize);
  std::memset(a->At(big), 0x5A, 3u << 20);
  uint64_t want = a->UnitsOf(bg + 1).used.load();
  CHECK(want != 0);
  p = memtest::ForkChild([&] {
    (void)mem::Lock(a->hdr()->group_lock);
    a->UnitsOf(bg + 1).used.store(0);
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK(a->AllocGroups(1, mem::GroupKind::kRegion) >= 0);  // repairs
  CHECK(mem::Arena::EntryKind(a->GroupEntry(bg + 1)) == mem::GroupKind::kLarge);
  CHECK_EQUAL(want, a->UnitsOf(bg + 1).used.load());
  const unsigned char* v = reinterpret_cast<const unsigned char*>(a->At(big));
  CHECK(v[0] == 0x5A && v[(3u << 20) - 1] == 0x5A);
  al.Free(big);
  CHECK_EQUAL(0u, mem::LargeUsageOf(*a).groups);
}

