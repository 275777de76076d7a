// perfcached — unit tests for offsets above 32 GiB (40-bit bucket positions).
// Copyright (c) 2026 the perfcached authors.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "cache/audit.h"
#include "cache/dict.h"
#include "cache/hash_ops.h"
#include "cache/internal.h"
#include "test/unit/cache/fixture.h"
#include "test/unit/cache/child.h"  // includes CppUTest: after the standard headers

#include "CppUTest/TestHarness.h"

using namespace cache;
using testing::DieInChild;
using testing::KeyInBucket;
using mem::Off;
using mem::Status;

namespace {

constexpr Off kHigh = Off{1} << 32;  // the first Off at 32 GiB

// The arena maps 33 GiB; SkipGroups() takes the next 32 GiB untouched, so
// every page allocated after it lies above 32 GiB.
void SkipGroups(mem::Arena& a) { CHECK(a.SkipGroupsForTest(16384) > 0); }

uint64_t Records(mem::Arena& a, const TableRef& t, bool high) {
  uint64_t n = 0;
  uint64_t nb = detail::RouteBuckets(t.h->route.load());
  for (uint64_t i = 0; i < nb; ++i) {
    Bucket* b = detail::BucketAt(a, *t.h, i);
    for (uint32_t s = 0; b && s < UsedOf(*b); ++s) n += (SlotAt(*b, static_cast<int>(s)) >= kHigh) == high;
  }
  return n;
}

// Round 1's values take cells of 128 KiB pages, which no group below the
// skipped ones holds: they are allocated above 32 GiB. (Round 0's small
// cells share 64 KiB pages, which low slab groups still have room for.)
std::string Val(int i, int round) { return std::string(round == 0 ? 8 : 3000, static_cast<char>('a' + round)) + std::to_string(i); }

void CheckAll(Ctx& c, const TableRef& t, int n, int round, int deleted_every = 0) {
  for (int i = 0; i < n; ++i) {
    std::string v;
    Status s = GetString(c, t, testing::Key(i), &v);
    if (deleted_every && i % deleted_every == 0) {
      CHECK(s == Status::kNotFound);
      continue;
    }
    CHECK(s == Status::kOk);
    STRCMP_EQUAL(Val(i, round).c_str(), v.c_str());
  }
}



}  // namespace

TEST_GROUP(Wide) {
  testing::EngineFixture* f;
  TableRef t;
  void setup() override {
    f = new testing::EngineFixture(64, 33 * 1024);
    t = f->Table("w", 64);
  }
  void teardown() override { delete f; }
  Ctx& c() { return *f->ctx; }
};

TEST(Wide, RecordsMoveAcrossThirtyTwoGiB) {
  constexpr int kKeys = 3000;  // 64 buckets and no growth yet: full buckets, overflow
  for (int i = 0; i < kKeys; ++i) CHECK(Set(c(), t, testing::Key(i), Val(i, 0)) == Status::kOk);
  CHECK_EQUAL(0u, Records(*f->arena, t, true));
  SkipGroups(*f->arena);
  uint64_t spills = SumStat(c(), t, kStatOvfInserts);
  // 3000-byte values: pages of another order, above 32 GiB. Every
  // replacement changes a position's high byte: through the scratch
  // position, or to overflow when the bucket is full.
  for (int i = 0; i < kKeys; ++i) CHECK(Set(c(), t, testing::Key(i), Val(i, 1)) == Status::kOk);
  CHECK(SumStat(c(), t, kStatOvfInserts) > spills);  // full buckets spilled
  CHECK_EQUAL(0u, Records(*f->arena, t, false));
  CHECK(Records(*f->arena, t, true) > 0);
  CheckAll(c(), t, kKeys, 1);
  CHECK_EQUAL(uint64_t{kKeys}, CollectionEntries(c(), t));
  // Removals move a high position into a low one and back.
  for (int i = 0; i < kKeys; i += 3) CHECK(Del(c(), t, testing::Key(i)) == Status::kOk);
  for (int i = 0; i < kKeys; i += 3) CHECK(Set(c(), t, testing::Key(i), Val(i, 0)) == Status::kOk);
  for (int i = 0; i < kKeys; i += 3) CHECK(Del(c(), t, testing::Key(i)) == Status::kOk);
  CheckAll(c(), t, kKeys, 1, 3);
  // Splits compact in place, merges move whole buckets.
  while (GrowStep(c(), t, 4096) > 0) {
  }
  CheckAll(c(), t, kKeys, 1, 3);
  CHECK(ResizeCollection(c(), "w", 64) == Status::kOk);
  while (GrowStep(c(), t, 4096) > 0) {
  }
  CheckAll(c(), t, kKeys, 1, 3);
  AuditReport r = Audit(c());
  CHECK_TEXT(r.clean(), r.Summary().c_str());
  for (int i = 0; i < kKeys; ++i) (void)Del(c(), t, testing::Key(i));
  CHECK_EQUAL(0u, CollectionEntries(c(), t));
  CHECK_EQUAL(0u, t.h->ovf.count.load());
}

TEST(Wide, HashTrieAboveThirtyTwoGiB) {
  SkipGroups(*f->arena);
  for (int i = 0; i < 2000; ++i) {
    std::string fld = "f" + std::to_string(i), val = "v" + std::to_string(i);
    std::string_view fv[2] = {fld, val};
    uint64_t added = 0;
    CHECK(HSet(c(), t, "h", fv, &added) == Status::kOk);
  }
  std::string v;
  ReadInfo ri;
  CHECK(GetString(c(), t, "h", &v, &ri) == Status::kOk);
  CHECK_EQUAL(16u, v.size());
  Off root = 0;
  std::memcpy(&root, v.data() + 1, 7);
  CHECK(root >= kHigh);  // the root's Off needs more than 32 bits
  for (int i = 0; i < 2000; i += 7) {
    CHECK(HGet(c(), t, "h", "f" + std::to_string(i), &v) == Status::kOk);
    STRCMP_EQUAL(("v" + std::to_string(i)).c_str(), v.c_str());
  }
  AuditReport r = Audit(c());
  CHECK_TEXT(r.clean(), r.Summary().c_str());
  CHECK(Del(c(), t, "h") == Status::kOk);
}

// A replacement whose high byte changes, killed after the low word went into
// the live position: the repair finishes the copy from the scratch position.
// (Without the journal the position would point 32 GiB below the record.)
TEST(Wide, TheRepairFinishesACopyLeftInFlight) {
  std::string k[3];
  for (int i = 0; i < 3; ++i) {
    k[i] = KeyInBucket(c(), t, 9, i);
    CHECK(Set(c(), t, k[i], "old" + std::to_string(i)) == Status::kOk);
  }
  SkipGroups(*f->arena);
  Off nrec = 0;
  DieInChild(*f->arena, [&](Ctx& cc) {
    // The record a SET of k[0] to "nld0" would link, above 32 GiB: a copy
    // of the old one with the value's first byte changed and a newer version.
    Bucket* b0 = detail::BucketAt(cc.arena, *t.h, 9);
    Off old = 0;
    for (int s = 0; s < 3; ++s) {
      RecView rv{cc.arena.At(SlotAt(*b0, s))};
      if (std::string_view(rv.key(), rv.klen()) == k[0]) old = SlotAt(*b0, s);
    }
    if (old == 0) _exit(5);
    size_t bytes = mem::CellBound(cc.arena, old);
    // A cell of 128 KiB pages: a fresh group, above 32 GiB.
    if (cc.alloc.Alloc(4096, &nrec) != Status::kOk || nrec < kHigh) _exit(4);
    std::memcpy(cc.arena.At(nrec), cc.arena.At(old), bytes);
    RecView nv{cc.arena.At(nrec)};
    nv.value(kTypeString, nv.klen())[0] = 'n';
    nv.set_meta(0, RecView{cc.arena.At(old)}.version() + 1);
    Bucket* b = detail::BucketAt(cc.arena, *t.h, 9);
    detail::LockBucket(cc, *t.h, 9, *b);
    WriteBegin(*b);
    int i = -1;
    for (int s = 0; s < 3; ++s) i = SlotAt(*b, s) == old ? s : i;
    if (i < 0) _exit(5);
    // ReplaceSlot's steps up to the kill: scratch written, journal set, low
    // word of the live position written, high byte not.
    SetSlot(*b, 3, nrec);
    SetCtl(*b, TagsHi(*b) | (uint32_t(i + 1) << 24) | (3u << 20));
    mem::StoreRelaxed32(&b->lo[i], static_cast<uint32_t>(nrec));
  });
  CHECK(RepairDead(c()) >= 1);
  std::string v;
  CHECK(GetString(c(), t, k[0], &v) == Status::kOk);
  STRCMP_EQUAL("nld0", v.c_str());  // the copy: first byte changed
  for (int i = 1; i < 3; ++i) {
    CHECK(GetString(c(), t, k[i], &v) == Status::kOk);
    STRCMP_EQUAL(("old" + std::to_string(i)).c_str(), v.c_str());
  }
  Bucket* b = detail::BucketAt(*f->arena, *t.h, 9);
  CHECK_EQUAL(3u, UsedOf(*b));
  CHECK_EQUAL(0u, JournalDst(TagsHi(*b)));
  AuditReport r = Audit(c());
  // The old record of k[0] leaks (the repair never frees): nothing else.
  CHECK_TEXT(r.error_count == 0, r.Summary().c_str());
}

// Regression (review of layout 8): a SET spilled to overflow from a full
// bucket, killed after the node was linked and before the old position went:
// the key is in both. The repair must keep the bucket's record and unlink
// the overflow copy, so a DEL afterwards leaves nothing to come back. (The
// overflow count was bumped after the link, and a repair that read 0 skipped
// the overflow check: DEL then uncovered the unacknowledged value.)
TEST(Wide, ASpillKilledAfterTheLinkLeavesNoSecondCopy) {
  std::string k[kSlots];
  for (int i = 0; i < kSlots; ++i) {
    k[i] = KeyInBucket(c(), t, 9, i);
    CHECK(Set(c(), t, k[i], "old" + std::to_string(i)) == Status::kOk);
  }
  CHECK_EQUAL(0u, t.h->ovf.count.load());
  SkipGroups(*f->arena);
  DieInChild(*f->arena, [&](Ctx& cc) {
    Bucket* b = detail::BucketAt(cc.arena, *t.h, 9);
    Off old = SlotAt(*b, 0);
    Off nrec = 0, node = 0;
    size_t bytes = mem::CellBound(cc.arena, old);
    if (cc.alloc.Alloc(4096, &nrec) != Status::kOk || nrec < kHigh) _exit(4);
    if (cc.alloc.Alloc(detail::kNodeBytes, &node) != Status::kOk) _exit(4);
    std::memcpy(cc.arena.At(nrec), cc.arena.At(old), bytes);
    RecView nv{cc.arena.At(nrec)};
    nv.value(kTypeString, nv.klen())[0] = 'n';
    nv.set_meta(0, RecView{cc.arena.At(old)}.version() + 1);
    uint64_t hash = detail::HashOf(cc, std::string_view(nv.key(), nv.klen()));
    detail::LockBucket(cc, *t.h, 9, *b);
    WriteBegin(*b);
    detail::LockOverflow(cc, *t.h);
    // The Store path's spill up to the kill: node built and linked, the
    // overflow bracket open, the bucket still holding the old record. The
    // count is left 0, as the older order left it; the repair must look at
    // overflow all the same (its lock is held by the dead).
    char* np = cc.arena.At(node);
    mem::StoreOff(np + detail::kNodeRec, nrec);
    mem::StoreRelaxed32(np + detail::kNodeHash, static_cast<uint32_t>(hash >> 32));
    Off* heads = reinterpret_cast<Off*>(cc.arena.At(t.h->ovf.heads));
    mem::StoreOff(np + detail::kNodeNext, mem::LoadOff(&heads[hash & (kOvfHeads - 1)]));
    t.h->ovf.seq.fetch_add(1);
    mem::StoreOff(&heads[hash & (kOvfHeads - 1)], node);
  });
  CHECK(RepairDead(c()) >= 1);
  std::string v;
  CHECK(GetString(c(), t, k[0], &v) == Status::kOk);
  STRCMP_EQUAL("old0", v.c_str());  // the bucket's record: the SET was not acknowledged
  CHECK_EQUAL(0u, t.h->ovf.count.load());
  CHECK(Del(c(), t, k[0]) == Status::kOk);
  CHECK(GetString(c(), t, k[0], &v) == Status::kNotFound);
  AuditReport r = Audit(c());
  CHECK_TEXT(r.error_count == 0, r.Summary().c_str());
}

// Regression (review of layout 8): a dropped table's segments are linked on
// the catalog's free list through bucket 0. The link must not touch the seq
// and lock words: with a segment above 32 GiB its high half made the lock
// look held, a stale locker hung or "repaired" the link into a wild Off.
TEST(Wide, FreedSegmentsLeaveBucketZeroUnlocked) {
  SkipGroups(*f->arena);
  // 32 segments: the first few come from the region group below the skip.
  TableRef g = f->Table("big", 32 * 4096);
  for (int i = 0; i < 1000; ++i) CHECK(Set(c(), g, testing::Key(i), "v") == Status::kOk);
  std::vector<Bucket*> firsts;
  for (uint64_t s = 0; s < 32; ++s) {
    Bucket* b = detail::BucketAt(*f->arena, *g.h, s << kSegShift);
    if (f->arena->OffOf(b) >= kHigh) firsts.push_back(b);
  }
  CHECK(firsts.size() >= 16);
  CHECK(DropCollection(c(), "big") == Status::kOk);
  for (Bucket* b : firsts) {
    CHECK_EQUAL(0u, mem::LockHolder(b->lock));
    CHECK_EQUAL(0u, b->seq.load() & 1);
  }
  // Reused by the next table: every segment comes back whole.
  TableRef g2 = f->Table("again", 32 * 4096);
  for (int i = 0; i < 1000; ++i) CHECK(Set(c(), g2, testing::Key(i), "w") == Status::kOk);
  for (int i = 0; i < 1000; i += 37) STRCMP_EQUAL("w", [&] { std::string v; (void)GetString(c(), g2, testing::Key(i), &v); return v; }().c_str());
  AuditReport r = Audit(c());
  CHECK_TEXT(r.clean(), r.Summary().c_str());
}
