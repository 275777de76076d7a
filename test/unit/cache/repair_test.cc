// perfcached — unit tests for dead-holder repair (a process killed inside a lock).
// Copyright (c) 2026 the perfcached authors.
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "cache/internal.h"
#include "test/unit/cache/fixture.h"
#include "test/unit/cache/child.h"  // includes CppUTest: after the standard headers
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;
using namespace cache;
using testing::DieInChild;
using testing::KeyInBucket;

namespace {

void CheckAllUnlocked(mem::Arena& a, const TableRef& t) {
  uint64_t span = uint64_t{t.h->nsegs} << kSegShift;
  for (uint64_t i = 0; i < span; ++i) {
    Bucket* b = detail::BucketAt(a, *t.h, i);
    CHECK_EQUAL(0u, mem::LockHolder(b->lock));
    CHECK_EQUAL(0u, b->seq.load() & 1);
  }
}

}  // namespace

TEST_GROUP(Repair) {
  testing::EngineFixture* f;
  TableRef t;
  void setup() override {
    f = new testing::EngineFixture();
    t = f->Table("t", 64);
  }
  void teardown() override { delete f; }
  Ctx& c() { return *f->ctx; }
};

TEST(Repair, HalfLinkedInsertIsDroppedAndWritersSelfHeal) {
  std::string k0 = KeyInBucket(c(), t, 5, 0), k1 = KeyInBucket(c(), t, 5, 1);
  CHECK(Set(c(), t, k0, "v0") == Status::kOk);
  DieInChild(*f->arena, [&](Ctx& cc) {
    Bucket* b = detail::BucketAt(cc.arena, *t.h, 5);
    detail::LockBucket(cc, *t.h, 5, *b);
    WriteBegin(*b);
    Off junk;
    (void)cc.alloc.Alloc(64, &junk);
    SetSlot(*b, 1, junk);  // slot written, tag/used not: half-linked
  });
  Bucket* b = detail::BucketAt(*f->arena, *t.h, 5);
  CHECK(mem::LockHolder(b->lock) != 0);
  CHECK(b->seq.load() & 1);
  // A writer needs the lock: it waits, sees the holder is dead, takes the
  // lock over and repairs the bucket before using it.
  CHECK(Set(c(), t, k1, "v1") == Status::kOk);
  std::string v;
  CHECK(GetString(c(), t, k0, &v) == Status::kOk);
  STRCMP_EQUAL("v0", v.c_str());
  CHECK(GetString(c(), t, k1, &v) == Status::kOk);
  STRCMP_EQUAL("v1", v.c_str());
  CHECK_EQUAL(2u, Used(TagsHi(*b)));
  CheckAllUnlocked(*f->arena, t);
  CHECK(SumStat(c(), t, kStatRepairs) >= 1);
}

TEST(Repair, InterruptedRemovalLeavesNoDuplicate) {
  std::string k[3];
  for (int i = 0; i < 3; ++i) {
    k[i] = KeyInBucket(c(), t, 9, i);
    CHECK(Set(c(), t, k[i], "v" + std::to_string(i)) == Status::kOk);
  }
  // Removal of slot 0 interrupted after the last slot was copied into the
  // hole but before `used` dropped: slot 2's record is linked twice.
  DieInChild(*f->arena, [&](Ctx& cc) {
    Bucket* b = detail::BucketAt(cc.arena, *t.h, 9);
    detail::LockBucket(cc, *t.h, 9, *b);
    WriteBegin(*b);
    SetSlot(*b, 0, SlotAt(*b, 2));
    SetTag(*b, 0, GetTag(*b, 2));
  });
  CHECK(RepairDead(c()) >= 1);
  Bucket* b = detail::BucketAt(*f->arena, *t.h, 9);
  CHECK_EQUAL(2u, Used(TagsHi(*b)));
  std::string v;
  CHECK(GetString(c(), t, k[0], &v) == Status::kNotFound);
  CHECK(GetString(c(), t, k[1], &v) == Status::kOk);
  CHECK(GetString(c(), t, k[2], &v) == Status::kOk);
  CHECK(Del(c(), t, k[2]) == Status::kOk);
  CHECK(GetString(c(), t, k[2], &v) == Status::kNotFound);  // no second copy left behind
  CheckAllUnlocked(*f->arena, t);
}

TEST(Repair, SplitInterruptedAfterPublishLosesNoKey) {
  for (int i = 0; i < 500; ++i) CHECK(Set(c(), t, testing::Key(i), testing::Key(i)) == Status::kOk);
  // Re-enact the splitter dying after it published the new route but before
  // it dropped the moved entries from S (both buckets locked and odd).
  DieInChild(*f->arena, [&](Ctx& cc) {
    TableHeader& h = *t.h;
    (void)mem::Lock(h.admin);
    uint64_t route = h.route.load();
    uint32_t level = detail::RouteLevel(route);
    uint64_t s = detail::RouteSplit(route), p = s + (uint64_t{1} << level);
    detail::EnsureSegment(cc, h, static_cast<uint32_t>(p >> kSegShift));
    Bucket* bs = detail::BucketAt(cc.arena, h, s);
    Bucket* bp = detail::BucketAt(cc.arena, h, p);
    detail::LockBucket(cc, h, s, *bs);
    detail::LockBucket(cc, h, p, *bp);
    WriteBegin(*bs);
    WriteBegin(*bp);
    uint32_t pu = 0;
    for (uint32_t i = 0; i < Used(TagsHi(*bs)); ++i) {
      Off rec = SlotAt(*bs, static_cast<int>(i));
      RecView rv{cc.arena.At(rec)};
      uint64_t hh = detail::HashOf(cc, std::string_view(rv.key(), rv.klen()));
      if ((hh >> level) & 1) {
        SetSlot(*bp, static_cast<int>(pu), rec);
        SetTag(*bp, static_cast<int>(pu), detail::TagOf(hh));
        SetUsed(*bp, ++pu);
      }
    }
    h.route.store(detail::NextRoute(route, level, s + 1));
  });
  CHECK(RepairDead(c()) >= 2);
  CheckAllUnlocked(*f->arena, t);
  std::string v;
  for (int i = 0; i < 500; ++i) {
    CHECK(GetString(c(), t, testing::Key(i), &v) == Status::kOk);
    CHECK(v == testing::Key(i));
  }
  // Each key is linked exactly once: deleting leaves nothing behind.
  for (int i = 0; i < 500; ++i) CHECK(Del(c(), t, testing::Key(i)) == Status::kOk);
  for (int i = 0; i < 500; ++i) CHECK(GetString(c(), t, testing::Key(i), &v) == Status::kNotFound);
  // Growth carries on from the repaired state.
  for (int i = 0; i < 2000; ++i) CHECK(Set(c(), t, testing::Key(i), "x") == Status::kOk);
  CHECK(GrowStep(c(), t, 4096) > 0);
  for (int i = 0; i < 2000; ++i) CHECK(GetString(c(), t, testing::Key(i), &v) == Status::kOk);
}

TEST(Repair, DeadOverflowHolder) {
  TableRef s = f->Table("s", 16, 1000000);
  for (int i = 0; i < 400; ++i) CHECK(Set(c(), s, testing::Key(i), "v") == Status::kOk);
  uint32_t before = s.h->ovf.count.load();
  CHECK(before > 0);
  DieInChild(*f->arena, [&](Ctx& cc) {
    detail::LockOverflow(cc, *s.h);
    s.h->ovf.seq.fetch_add(1);
    s.h->ovf.count.fetch_add(5);  // a count that no longer matches the chains
  });
  CHECK(Set(c(), s, "new-key", "v") == Status::kOk);  // needs the overflow lock
  CHECK_EQUAL(0u, s.h->ovf.seq.load() & 1);
  CHECK_EQUAL(before + 1, s.h->ovf.count.load());
  for (int i = 0; i < 400; ++i) {
    cache::ReadInfo ri;
    CHECK(Probe(c(), s, testing::Key(i), &ri) == Status::kOk);
  }
}

TEST(Repair, DeadAllocatorSlotIsAdopted) {
  DieInChild(*f->arena, [&](Ctx& cc) {
    for (int i = 0; i < 100; ++i) CHECK(Set(cc, t, testing::Key(i), "v") == Status::kOk);
    for (int i = 0; i < 100; ++i) CHECK(Del(cc, t, testing::Key(i)) == Status::kOk);
  });
  CHECK(mem::SlotAt(*f->arena, 1)->owner_tid.load() != 0);
  CHECK(RepairDead(c()) >= 1);
  CHECK_EQUAL(0u, mem::SlotAt(*f->arena, 1)->owner_tid.load());
}
