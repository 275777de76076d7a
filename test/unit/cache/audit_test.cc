// perfcached — unit tests for the audit: clean on a sound arena, and it fails
// on each kind of damage it claims to find (a test that cannot fail is a defect).
// Copyright (c) 2026 the perfcached authors.
#include <sys/wait.h>
#include <unistd.h>

#include "cache/audit.h"
#include "cache/internal.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;
using namespace cache;

TEST_GROUP(Audit) {
  testing::EngineFixture* f;
  TableRef t;
  void setup() override {
    f = new testing::EngineFixture();
    t = f->Table("t", 16, 1000000);  // small, never grows: overflow gets used
    for (int i = 0; i < 400; ++i) {
      StoreOpts o;
      if (i % 3 == 0) o.expire_ms = NowMs(c()) + 100000;
      CHECK(Set(c(), t, testing::Key(i), std::string(10 + i % 50, 'x'), o) == Status::kOk);
    }
    for (int i = 0; i < 100; ++i) CHECK(Del(c(), t, testing::Key(i * 4)) == Status::kOk);
  }
  void teardown() override { delete f; }
  Ctx& c() { return *f->ctx; }
  // A child on slot 1 takes the bucket's lock and dies holding it.
  void DieHoldingLock(Bucket& b) {
    pid_t p = fork();
    if (p == 0) {
      Ctx c2(*f->arena, 1);
      (void)mem::Lock(b.lock, c2.tid);
      _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    CHECK_TEXT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed before its planned death");
  }
  Bucket* FirstUsed() {
    for (uint64_t i = 0; i < 16; ++i) {
      Bucket* b = detail::BucketAt(*f->arena, *t.h, i);
      if (Used(TagsHi(*b)) > 0) return b;
    }
    return nullptr;
  }
};

TEST(Audit, CleanArena) {
  AuditReport r = Audit(c());
  CHECK_TEXT(r.clean(), r.Summary().c_str());
  CHECK(r.memory_checked);
  CHECK_EQUAL(300u, r.records);
  CHECK(r.overflow_nodes > 0);
  CHECK_EQUAL(0u, r.cells_leaked);
  AuditReport live = Audit(c(), {.live = true});
  CHECK_TEXT(live.clean(), live.Summary().c_str());
}

TEST(Audit, FindsAWrongTag) {
  Bucket* b = FirstUsed();
  SetTag(*b, 0, static_cast<uint8_t>(GetTag(*b, 0) + 1));
  CHECK(Audit(c()).error_count > 0);
}

TEST(Audit, FindsAnOddSeqlock) {
  FirstUsed()->seq.fetch_add(1);
  CHECK(Audit(c()).error_count > 0);
}

TEST(Audit, FindsALiveCellOnAFreeList) {
  Bucket* b = FirstUsed();
  mem::FreeGlobal(*f->arena, SlotAt(*b, 0));  // the defect-1 shape: a live cell handed out again
  AuditReport r = Audit(c());
  CHECK(r.error_count > 0);
}

TEST(Audit, FindsALeakedCell) {
  mem::Off cell;
  CHECK(c().alloc.Alloc(40, &cell) == Status::kOk);  // allocated, never linked, never freed
  AuditReport r = Audit(c());
  CHECK_EQUAL(1u, r.cells_leaked);
}

TEST(Audit, FindsALockHeldByTheDead) {
  Bucket* b = FirstUsed();
  DieHoldingLock(*b);
  AuditReport r = Audit(c());
  CHECK(r.dead_holders > 0);
  CHECK(RepairDead(c()) > 0);
  AuditReport after = Audit(c());
  CHECK_TEXT(after.clean(), after.Summary().c_str());
}

TEST(Audit, FindsAnOverflowCountThatLies) {
  t.h->ovf.count.fetch_add(1);
  CHECK(Audit(c()).error_count > 0);
}

TEST(Audit, BackgroundPassFindsADeadHolderWithinItsBudget) {
  Bucket* b = detail::BucketAt(*f->arena, *t.h, 9);
  DieHoldingLock(*b);
  uint64_t cursor = 0;
  uint32_t fixed = 0;
  for (int i = 0; i < 2000 && mem::LockHolder(b->lock) != 0; ++i) fixed += RepairDeadStep(c(), &cursor, 3);
  CHECK_EQUAL(0u, mem::LockHolder(b->lock));
  CHECK(fixed > 0);
  AuditReport r = Audit(c());
  CHECK_TEXT(r.clean(), r.Summary().c_str());
}
