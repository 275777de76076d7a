// perfcached — unit tests for the segment directory past 2^25 buckets (its chunks).
// Copyright (c) 2026 the perfcached authors.
#include <string>
#include <vector>

#include "cache/internal.h"
#include "cache/maint.h"
#include "mem/lock.h"
#include "test/unit/cache/fixture.h"
#include "test/unit/cache/child.h"  // includes CppUTest: after the standard headers

#include "CppUTest/TestHarness.h"

using namespace cache;
using mem::Off;
using mem::Status;

namespace {

constexpr uint32_t kLevel = 25;  // chunk 0 ends here: 8192 segments
constexpr uint64_t kChunk0Buckets = uint64_t{kDirChunkSegs} << kSegShift;
static_assert(kChunk0Buckets == uint64_t{1} << kLevel);

// Take an empty table to 2^25 buckets without faulting 2 GiB in: its
// segments 1..8191 and their hints are laid over groups that
// SkipGroupsForTest hands out untouched (fresh shared memory reads as
// zero: empty buckets, no hints). Only the pages the test's keys land in
// are ever touched.
void PresizeUntouched(mem::Arena& a, TableHeader& h) {
  constexpr uint32_t kSegsPerGroup = mem::kGroupSize / (kSegBuckets * sizeof(Bucket));
  constexpr uint32_t kHintsPerGroup = mem::kGroupSize / (kSegBuckets * sizeof(uint32_t));
  constexpr uint32_t kGroups = kDirChunkSegs / kSegsPerGroup + kDirChunkSegs / kHintsPerGroup;
  int64_t g = a.SkipGroupsForTest(kGroups);
  CHECK(g > 0);
  char* segs = a.base() + static_cast<size_t>(g) * mem::kGroupSize;
  char* hints = segs + size_t{kDirChunkSegs / kSegsPerGroup} * mem::kGroupSize;
  (void)mem::Lock(h.admin);
  Off* dir = reinterpret_cast<Off*>(a.At(h.dir));
  for (uint32_t s = 1; s < kDirChunkSegs; ++s) {
    CHECK_EQUAL(0u, dir[2 * s]);
    dir[2 * s + 1] = a.OffOf(hints + size_t{s} * kSegBuckets * sizeof(uint32_t));
    dir[2 * s] = a.OffOf(segs + size_t{s} * kSegBuckets * sizeof(Bucket));
  }
  h.nsegs = kDirChunkSegs;
  h.route.store(detail::NextRoute(h.route.load(), kLevel, 0), std::memory_order_release);
  mem::Unlock(h.admin);
}

// A key whose bucket at level 25 is below `below`.
std::string KeyBelow(Ctx& c, uint64_t below, int* probe) {
  for (;; ++*probe) {
    std::string k = "dir:" + std::to_string(*probe);
    if ((detail::HashOf(c, k) & (kChunk0Buckets - 1)) < below) {
      ++*probe;
      return k;
    }
  }
}

}  // namespace

TEST_GROUP(Directory) {
  testing::EngineFixture* f = nullptr;
  Ctx& c() { return *f->ctx; }
  void teardown() override { delete f; }
};

// Until layout 9 a table stopped splitting at 2^25 buckets (a directory of
// 8192 segments): the keys above went on filling the same buckets and
// overflow. Now the split of bucket s moves its half into bucket 2^25 + s
// of segment 8192, the first of directory chunk 1.
TEST(Directory, TablesSplitPastTwoToTheTwentyFiveBuckets) {
  f = new testing::EngineFixture(64, 4096);
  TableRef t = f->Table("big", 16);
  PresizeUntouched(*f->arena, *t.h);
  CHECK_EQUAL(kChunk0Buckets, detail::RouteBuckets(t.h->route.load()));
  // 256 keys in buckets 0..4095 (the ones the next 4096 splits divide),
  // and 1,000 anywhere.
  constexpr uint32_t kSplits = kSegBuckets;
  std::vector<std::string> keys;
  int probe = 0;
  for (int i = 0; i < 256; ++i) keys.push_back(KeyBelow(c(), kSplits, &probe));
  for (int i = 0; i < 1000; ++i) keys.push_back(testing::Key(i));
  for (size_t i = 0; i < keys.size(); ++i) CHECK(Set(c(), t, keys[i], "v" + std::to_string(i)) == Status::kOk);
  CHECK_EQUAL(0u, t.h->dir_ext);

  // The target rounds up to 2^26 buckets: the budget stops the growth.
  CHECK(ResizeCollection(c(), "big", static_cast<uint32_t>(kChunk0Buckets + 1)) == Status::kOk);
  CHECK_EQUAL(kSplits, GrowStep(c(), t, kSplits));
  uint64_t route = t.h->route.load();
  CHECK_EQUAL(kLevel, detail::RouteLevel(route));
  CHECK_EQUAL(kSplits, detail::RouteSplit(route));
  CHECK_EQUAL(kDirChunkSegs + 1, t.h->nsegs);
  CHECK(t.h->dir_ext != 0);
  uint32_t high = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t idx = detail::RouteIdx(route, detail::HashOf(c(), keys[i]));
    if (idx >= kChunk0Buckets) {
      ++high;
      // The key's bucket lies in the chunk-1 segment, not in chunk 0.
      Bucket* b = detail::BucketAt(*f->arena, *t.h, idx);
      CHECK(b != nullptr);
      CHECK(b != detail::BucketAt(*f->arena, *t.h, idx - kChunk0Buckets));
      CHECK(detail::HintAt(*f->arena, *t.h, idx) != nullptr);
    }
    std::string v;
    CHECK(GetString(c(), t, keys[i], &v) == Status::kOk);
    STRCMP_EQUAL(("v" + std::to_string(i)).c_str(), v.c_str());
  }
  CHECK(high > 64);  // about half of the 256
  // Writes and removals in the new buckets, then merge back into chunk 0.
  for (size_t i = 0; i < 256; i += 2) CHECK(Set(c(), t, keys[i], "w") == Status::kOk);
  for (size_t i = 1; i < 256; i += 4) CHECK(Del(c(), t, keys[i]) == Status::kOk);
  CHECK(ResizeCollection(c(), "big", static_cast<uint32_t>(kChunk0Buckets)) == Status::kOk);
  CHECK_EQUAL(kSplits, GrowStep(c(), t, 2 * kSplits));
  CHECK_EQUAL(kChunk0Buckets, detail::RouteBuckets(t.h->route.load()));
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string v;
    Status s = GetString(c(), t, keys[i], &v);
    if (i < 256 && i % 4 == 1) {
      CHECK(s == Status::kNotFound);
    } else {
      CHECK(s == Status::kOk);
      STRCMP_EQUAL(i < 256 && i % 2 == 0 ? "w" : ("v" + std::to_string(i)).c_str(), v.c_str());
    }
  }
  // (No drop here: its clear reads every bucket, which would fault in the
  // 2 GiB this test leaves untouched. TheLastSegmentIsAddressable drops.)
}

// The last of the 2^20 segments (buckets up to 2^32 - 1) is reachable
// through chunk 127; nothing beyond it is. A drop gives chunk 1's segment
// back and keeps the chunks for the entry's next table.
TEST(Directory, TheLastSegmentIsAddressable) {
  f = new testing::EngineFixture(64);
  TableRef t = f->Table("t", 16);
  TableHeader& h = *t.h;
  uint32_t nsegs = h.nsegs;
  (void)mem::Lock(h.admin);
  CHECK(detail::EnsureSegment(c(), h, kMaxSegs - 1));
  CHECK(!detail::EnsureSegment(c(), h, kMaxSegs));
  CHECK(detail::EnsureSegment(c(), h, kDirChunkSegs));  // chunk 1 as well: distinct segments
  CHECK(nsegs < kDirChunkSegs);
  // Segments 1..8191 are missing (no bucket, skipped by whole-table walks);
  // the drop's walk stops at 8193 segments.
  h.nsegs = kDirChunkSegs + 1;
  mem::Unlock(h.admin);
  const Off* ext = reinterpret_cast<const Off*>(f->arena->At(h.dir_ext));
  for (uint32_t k = 2; k + 1 < kDirChunks; ++k) CHECK_EQUAL(0u, ext[k]);  // chunks only as needed
  CHECK(ext[1] != 0 && ext[kDirChunks - 1] != 0 && ext[1] != ext[kDirChunks - 1]);
  uint64_t last = (uint64_t{1} << 32) - 1;
  Bucket* b = detail::BucketAt(*f->arena, h, last);
  CHECK(b != nullptr);
  const Off* pair = detail::DirPair(*f->arena, h, kMaxSegs - 1);
  POINTERS_EQUAL(reinterpret_cast<Bucket*>(f->arena->At(pair[0])) + (kSegBuckets - 1), b);
  POINTERS_EQUAL(reinterpret_cast<uint32_t*>(f->arena->At(pair[1])) + (kSegBuckets - 1),
                 detail::HintAt(*f->arena, h, last));
  CHECK(b != detail::BucketAt(*f->arena, h, uint64_t{kDirChunkSegs} << kSegShift));
  CHECK(detail::BucketAt(*f->arena, h, last + 1) == nullptr);
  CHECK(detail::BucketAt(*f->arena, h, last - kSegBuckets) == nullptr);  // segment never made
  CHECK(detail::BucketAt(*f->arena, h, 0) != nullptr);

  // The last segment lies above nsegs (the test's doing): give its pair
  // up by hand, so the drop leaves nothing behind for the next table.
  Off* last_pair = detail::DirPair(*f->arena, h, kMaxSegs - 1);
  last_pair[0] = last_pair[1] = 0;
  Off ext_off = h.dir_ext;
  Off seg0 = detail::DirPair(*f->arena, h, 0)[0];
  Off seg = detail::DirPair(*f->arena, h, kDirChunkSegs)[0];
  CHECK(seg != 0 && seg0 != 0);
  CHECK(DropCollection(c(), "t") == Status::kOk);
  CHECK_EQUAL(ext_off, h.dir_ext);
  CHECK_EQUAL(0u, detail::DirPair(*f->arena, h, kDirChunkSegs)[0]);
  CHECK_EQUAL(0u, detail::DirPair(*f->arena, h, kDirChunkSegs)[1]);
  // The next table in the entry reuses the chunks and the freed segment.
  TableRef t2 = f->Table("t2", 16);
  POINTERS_EQUAL(&h, t2.h);
  CHECK_EQUAL(ext_off, t2.h->dir_ext);
  (void)mem::Lock(h.admin);
  CHECK(detail::EnsureSegment(c(), h, kDirChunkSegs));
  mem::Unlock(h.admin);
  Off now0 = detail::DirPair(*f->arena, h, 0)[0], now1 = detail::DirPair(*f->arena, h, kDirChunkSegs)[0];
  CHECK((now0 == seg0 && now1 == seg) || (now0 == seg && now1 == seg0));  // both from the free list
}
