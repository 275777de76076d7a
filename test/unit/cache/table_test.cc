// perfcached — unit tests for cache/table (catalog) and cache/ops.
// Copyright (c) 2026 the perfcached authors.
#include <cstring>
#include <set>

#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using cache::Cond;
using cache::ReadInfo;
using cache::StoreOpts;
using mem::Status;

namespace {

std::string Get(cache::Ctx& c, const cache::TableRef& t, const std::string& k) {
  std::string v;
  Status s = cache::GetString(c, t, k, &v);
  return s == Status::kOk ? v : std::string("<") + std::string(mem::StatusName(s)) + ">";
}

}  // namespace

TEST_GROUP(Ops) {
  testing::EngineFixture* f;
  cache::TableRef t;
  void setup() override {
    f = new testing::EngineFixture();
    t = f->Table("t");
  }
  void teardown() override { delete f; }
  cache::Ctx& c() { return *f->ctx; }
};

TEST(Ops, SetGetDel) {
  CHECK(cache::Set(c(), t, "a", "1") == Status::kOk);
  STRCMP_EQUAL("1", Get(c(), t, "a").c_str());
  CHECK(cache::Set(c(), t, "a", "22") == Status::kOk);
  STRCMP_EQUAL("22", Get(c(), t, "a").c_str());
  CHECK(cache::Del(c(), t, "a") == Status::kOk);
  CHECK(cache::Del(c(), t, "a") == Status::kNotFound);
  STRCMP_EQUAL("<not found>", Get(c(), t, "a").c_str());
  CHECK_EQUAL(0u, cache::CollectionEntries(c(), t));
}

TEST(Ops, BinarySafeKeysAndValues) {
  std::string k("k\0ey", 4), v("v\0\xff\r\nal", 7);
  CHECK(cache::Set(c(), t, k, v) == Status::kOk);
  std::string out;
  CHECK(cache::GetString(c(), t, k, &out) == Status::kOk);
  CHECK(out == v);
  CHECK(cache::GetString(c(), t, std::string("k\0ex", 4), &out) == Status::kNotFound);
  CHECK(cache::Set(c(), t, "", "empty key") == Status::kOk);
  STRCMP_EQUAL("empty key", Get(c(), t, "").c_str());
  CHECK(cache::Set(c(), t, "ev", "") == Status::kOk);
  STRCMP_EQUAL("", Get(c(), t, "ev").c_str());
}

TEST(Ops, NxXx) {
  StoreOpts nx;
  nx.cond = Cond::kNx;
  StoreOpts xx;
  xx.cond = Cond::kXx;
  CHECK(cache::Set(c(), t, "k", "v", xx) == Status::kNotExists);
  CHECK(cache::Set(c(), t, "k", "v", nx) == Status::kOk);
  CHECK(cache::Set(c(), t, "k", "w", nx) == Status::kExists);
  CHECK(cache::Set(c(), t, "k", "x", xx) == Status::kOk);
  STRCMP_EQUAL("x", Get(c(), t, "k").c_str());
}

TEST(Ops, BufferTooSmallReportsSize) {
  CHECK(cache::Set(c(), t, "k", std::string(1000, 'x')) == Status::kOk);
  char buf[10];
  ReadInfo ri;
  CHECK(cache::Get(c(), t, "k", buf, &ri) == Status::kBufferTooSmall);
  CHECK_EQUAL(1000u, ri.vlen);
}

TEST(Ops, VersionsAndConditionalStore) {
  ReadInfo ri;
  CHECK(cache::Set(c(), t, "k", "1") == Status::kOk);
  CHECK(cache::Probe(c(), t, "k", &ri) == Status::kOk);
  CHECK_EQUAL(1u, ri.version);
  CHECK(cache::Set(c(), t, "k", "2") == Status::kOk);
  CHECK(cache::Probe(c(), t, "k", &ri) == Status::kOk);
  CHECK_EQUAL(2u, ri.version);
  StoreOpts cv;
  cv.check_version = true;
  cv.expect_version = 1;
  CHECK(cache::Set(c(), t, "k", "3", cv) == Status::kVersion);
  cv.expect_version = 2;
  CHECK(cache::Set(c(), t, "k", "3", cv) == Status::kOk);
  StoreOpts newer;
  newer.if_newer = true;
  newer.version = 2;  // older than 3
  CHECK(cache::Set(c(), t, "k", "old", newer) == Status::kVersion);
  newer.version = 10;
  CHECK(cache::Set(c(), t, "k", "new", newer) == Status::kOk);
  CHECK(cache::Probe(c(), t, "k", &ri) == Status::kOk);
  CHECK_EQUAL(10u, ri.version);
  STRCMP_EQUAL("new", Get(c(), t, "k").c_str());
}

TEST(Ops, SetGetOldValue) {
  std::string old;
  bool had = true;
  StoreOpts o;
  o.old_value = &old;
  o.had_old = &had;
  CHECK(cache::Set(c(), t, "k", "a", o) == Status::kOk);
  CHECK_FALSE(had);
  CHECK(cache::Set(c(), t, "k", "b", o) == Status::kOk);
  CHECK(had);
  STRCMP_EQUAL("a", old.c_str());
}

TEST(Ops, TtlBumpChangesVersion) {
  int64_t now = cache::NowMs(c());
  StoreOpts o;
  o.expire_ms = now + 10000;
  CHECK(cache::Set(c(), t, "k", "same", o) == Status::kOk);
  ReadInfo a, b;
  CHECK(cache::Probe(c(), t, "k", &a) == Status::kOk);
  o.expire_ms = now + 20000;
  CHECK(cache::Set(c(), t, "k", "same", o) == Status::kOk);
  CHECK(cache::Probe(c(), t, "k", &b) == Status::kOk);
  CHECK(b.version > a.version);  // a TTL-only change is a change (ABA, issue 7)
  CHECK_EQUAL(now + 20000, b.expire_ms);
  StoreOpts keep;
  keep.keep_ttl = true;
  CHECK(cache::Set(c(), t, "k", "other", keep) == Status::kOk);
  ReadInfo d;
  CHECK(cache::Probe(c(), t, "k", &d) == Status::kOk);
  CHECK_EQUAL(now + 20000, d.expire_ms);
  CHECK(d.version > b.version);
}

TEST(Ops, ExpiredIsAbsent) {
  StoreOpts o;
  o.expire_ms = cache::NowMs(c()) + 1000;
  CHECK(cache::Set(c(), t, "k", "v", o) == Status::kOk);
  STRCMP_EQUAL("v", Get(c(), t, "k").c_str());
  c().clock_skew_ms = 2000;
  STRCMP_EQUAL("<not found>", Get(c(), t, "k").c_str());
  StoreOpts nx;
  nx.cond = Cond::kNx;
  CHECK(cache::Set(c(), t, "k", "fresh", nx) == Status::kOk);  // expired counts as absent
  STRCMP_EQUAL("fresh", Get(c(), t, "k").c_str());
}

TEST(Ops, SetExpireConditions) {
  bool ch;
  int64_t now = cache::NowMs(c());
  CHECK(cache::SetExpire(c(), t, "nokey", now + 5000, cache::ExpireCond::kAlways, &ch) ==
        Status::kNotFound);
  CHECK(cache::Set(c(), t, "k", "v") == Status::kOk);
  CHECK(cache::SetExpire(c(), t, "k", 0, cache::ExpireCond::kAlways, &ch) == Status::kOk);
  CHECK_FALSE(ch);  // PERSIST on a key without TTL
  CHECK(cache::SetExpire(c(), t, "k", now + 5000, cache::ExpireCond::kXx, &ch) == Status::kOk);
  CHECK_FALSE(ch);
  CHECK(cache::SetExpire(c(), t, "k", now + 5000, cache::ExpireCond::kGt, &ch) == Status::kOk);
  CHECK_FALSE(ch);  // GT against "no TTL" (infinite) fails, as in Redis
  CHECK(cache::SetExpire(c(), t, "k", now + 5000, cache::ExpireCond::kNx, &ch) == Status::kOk);
  CHECK(ch);
  CHECK(cache::SetExpire(c(), t, "k", now + 9000, cache::ExpireCond::kNx, &ch) == Status::kOk);
  CHECK_FALSE(ch);
  CHECK(cache::SetExpire(c(), t, "k", now + 4000, cache::ExpireCond::kGt, &ch) == Status::kOk);
  CHECK_FALSE(ch);
  CHECK(cache::SetExpire(c(), t, "k", now + 9000, cache::ExpireCond::kGt, &ch) == Status::kOk);
  CHECK(ch);
  CHECK(cache::SetExpire(c(), t, "k", now + 8000, cache::ExpireCond::kLt, &ch) == Status::kOk);
  CHECK(ch);
  ReadInfo ri;
  CHECK(cache::Probe(c(), t, "k", &ri) == Status::kOk);
  CHECK_EQUAL(now + 8000, ri.expire_ms);
  CHECK(cache::SetExpire(c(), t, "k", 0, cache::ExpireCond::kAlways, &ch) == Status::kOk);
  CHECK(ch);
  CHECK(cache::Probe(c(), t, "k", &ri) == Status::kOk);
  CHECK_EQUAL(0, ri.expire_ms);
  CHECK(cache::SetExpire(c(), t, "k", now - 1, cache::ExpireCond::kAlways, &ch) == Status::kOk);
  CHECK(ch);
  CHECK(cache::Probe(c(), t, "k", &ri) == Status::kNotFound);  // past expiry deletes
}

TEST(Ops, IncrBy) {
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", 5, &r) == Status::kOk);
  CHECK_EQUAL(5, r);
  CHECK(cache::IncrBy(c(), t, "n", -7, &r) == Status::kOk);
  CHECK_EQUAL(-2, r);
  STRCMP_EQUAL("-2", Get(c(), t, "n").c_str());
  CHECK(cache::Set(c(), t, "s", "41") == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "s", 1, &r) == Status::kOk);
  CHECK_EQUAL(42, r);
  ReadInfo ri;
  CHECK(cache::Probe(c(), t, "s", &ri) == Status::kOk);
  CHECK_EQUAL(cache::kTypeInt, ri.type);
  CHECK(cache::Set(c(), t, "bad", "12a") == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "bad", 1, &r) == Status::kNotInteger);
  CHECK(cache::Set(c(), t, "sp", " 1") == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "sp", 1, &r) == Status::kNotInteger);
  CHECK(cache::Set(c(), t, "max", "9223372036854775807") == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "max", 1, &r) == Status::kOverflow);
  STRCMP_EQUAL("9223372036854775807", Get(c(), t, "max").c_str());
  // A string stored over a counter is a string again (the rflags lesson).
  CHECK(cache::Set(c(), t, "n", "12345678") == Status::kOk);
  STRCMP_EQUAL("12345678", Get(c(), t, "n").c_str());
  CHECK(cache::Probe(c(), t, "n", &ri) == Status::kOk);
  CHECK_EQUAL(cache::kTypeString, ri.type);
}

TEST(Ops, IncrKeepsTtl) {
  int64_t now = cache::NowMs(c());
  StoreOpts o;
  o.expire_ms = now + 60000;
  CHECK(cache::Set(c(), t, "n", "10", o) == Status::kOk);
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", 1, &r) == Status::kOk);
  ReadInfo ri;
  CHECK(cache::Probe(c(), t, "n", &ri) == Status::kOk);
  CHECK_EQUAL(now + 60000, ri.expire_ms);
}

TEST(Ops, Limits) {
  CHECK(cache::Set(c(), t, std::string(cache::kMaxKey + 1, 'k'), "v") == Status::kTooBig);
  CHECK(cache::Set(c(), t, std::string(cache::kMaxKey, 'k'), "v") == Status::kOk);
  STRCMP_EQUAL("v", Get(c(), t, std::string(cache::kMaxKey, 'k')).c_str());
}

TEST(Ops, LargeValues) {
  std::string big(3u << 20, 'z');
  big[12345] = 'q';
  CHECK(cache::Set(c(), t, "big", big) == Status::kOk);
  CHECK(Get(c(), t, "big") == big);
  std::string mid(300000, 'm');
  CHECK(cache::Set(c(), t, "big", mid) == Status::kOk);  // large -> large (frees 2 groups)
  CHECK(Get(c(), t, "big") == mid);
  CHECK(cache::Del(c(), t, "big") == Status::kOk);
  CHECK(f->arena->hdr()->large_objects.load() == 0);
}

TEST(Ops, OverflowTable) {
  // A 16-bucket table that never grows: 16 x 11 slots, so most keys spill.
  cache::TableRef s = f->Table("small", 16, 1000000);
  for (int i = 0; i < 2000; ++i) CHECK(cache::Set(c(), s, testing::Key(i), testing::Key(i)) == Status::kOk);
  CHECK(s.h->ovf.count.load() > 1000);
  for (int i = 0; i < 2000; ++i) STRCMP_EQUAL(testing::Key(i).c_str(), Get(c(), s, testing::Key(i)).c_str());
  for (int i = 0; i < 2000; i += 2) CHECK(cache::Del(c(), s, testing::Key(i)) == Status::kOk);
  for (int i = 0; i < 2000; ++i) {
    std::string want = i % 2 ? testing::Key(i) : "<not found>";
    STRCMP_EQUAL(want.c_str(), Get(c(), s, testing::Key(i)).c_str());
  }
  int64_t r;
  CHECK(cache::IncrBy(c(), s, testing::Key(1999), 0, &r) == Status::kNotInteger);
  CHECK(cache::Set(c(), s, "ctr", "1") == Status::kOk);
  for (int i = 0; i < 10; ++i) CHECK(cache::IncrBy(c(), s, "ctr", 1, &r) == Status::kOk);
  CHECK_EQUAL(11, r);
  CHECK_EQUAL(1001u, cache::CollectionEntries(c(), s));
}

TEST(Ops, GrowthKeepsEveryKey) {
  cache::TableRef g = f->Table("grow", 16);
  for (int i = 0; i < 50000; ++i) {
    CHECK(cache::Set(c(), g, testing::Key(i), testing::Key(i)) == Status::kOk);
    if (i % 1000 == 0) cache::GrowStep(c(), g, 64);
  }
  while (cache::GrowStep(c(), g, 4096) > 0) {
  }
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), g, &ci));
  CHECK(ci.buckets >= 50000 / 4);
  CHECK(ci.load_factor <= 4.0);
  for (int i = 0; i < 50000; ++i) STRCMP_EQUAL(testing::Key(i).c_str(), Get(c(), g, testing::Key(i)).c_str());
  // Shrink: delete most keys, lower the floor, merge back down.
  for (int i = 0; i < 49000; ++i) CHECK(cache::Del(c(), g, testing::Key(i)) == Status::kOk);
  while (cache::GrowStep(c(), g, 4096) > 0) {
  }
  CHECK(cache::CollectionInfoOf(c(), g, &ci));
  CHECK(ci.buckets < 2000);
  CHECK(ci.stats[cache::kStatMerges] > 0);
  for (int i = 49000; i < 50000; ++i) STRCMP_EQUAL(testing::Key(i).c_str(), Get(c(), g, testing::Key(i)).c_str());
}

TEST(Ops, FullArenaLosesNothing) {
  delete f;
  f = new testing::EngineFixture(16, 16);
  t = f->Table("t", 16);
  std::string v(200, 'v');
  int ok = 0;
  Status s = Status::kOk;
  for (int i = 0; i < 1000000 && s == Status::kOk; ++i) {
    s = cache::Set(c(), t, testing::Key(i), v);
    if (s == Status::kOk) ++ok;
    if (i % 512 == 0) cache::GrowStep(c(), t, 64);
  }
  CHECK(s == Status::kNoMem);
  CHECK(ok > 10000);
  CHECK(f->arena->hdr()->nomem_events.load() > 0);
  for (int i = 0; i < ok; ++i) CHECK(Get(c(), t, testing::Key(i)) == v);
  // Deleting makes room again.
  for (int i = 0; i < 100; ++i) CHECK(cache::Del(c(), t, testing::Key(i)) == Status::kOk);
  CHECK(cache::Set(c(), t, "after", v) == Status::kOk);
}

TEST_GROUP(Catalog) {
  testing::EngineFixture* f;
  void setup() override { f = new testing::EngineFixture(); }
  void teardown() override { delete f; }
  cache::Ctx& c() { return *f->ctx; }
};

TEST(Catalog, CreateOpenRenameDrop) {
  cache::TableRef a = f->Table("sessions");
  cache::TableRef x;
  CHECK(cache::CreateCollection(c(), "sessions", {}, &x) == Status::kExists);
  CHECK(cache::CreateCollection(c(), "", {}, &x) == Status::kInvalid);
  CHECK(cache::CreateCollection(c(), "has space", {}, &x) == Status::kInvalid);
  CHECK(cache::CreateCollection(c(), std::string(64, 'n'), {}, &x) == Status::kInvalid);
  CHECK(cache::Set(c(), a, "k", "v") == Status::kOk);
  CHECK(cache::RenameCollection(c(), "sessions", "s2") == Status::kOk);
  CHECK(cache::OpenCollection(c(), "sessions", &x) == Status::kNotFound);
  CHECK(cache::OpenCollection(c(), "s2", &x) == Status::kOk);
  STRCMP_EQUAL("v", Get(c(), x, "k").c_str());
  STRCMP_EQUAL("v", Get(c(), a, "k").c_str());  // the old ref still works: same table
  f->Table("other");
  CHECK(cache::RenameCollection(c(), "s2", "other") == Status::kExists);
  CHECK_EQUAL(2u, cache::ListCollections(c()).size());
  CHECK(cache::DropCollection(c(), "s2") == Status::kOk);
  CHECK(cache::Get(c(), a, "k", {}, nullptr) == Status::kStale);
  CHECK(cache::Set(c(), a, "k", "v") == Status::kStale);
  CHECK(cache::DropCollection(c(), "s2") == Status::kNotFound);
  cache::TableRef n = f->Table("s2");  // reuses the freed entry and segments
  CHECK(cache::Get(c(), a, "k", {}, nullptr) == Status::kStale);
  STRCMP_EQUAL("<not found>", Get(c(), n, "k").c_str());
}

// perf_create with a WAL: the new collection's versions start above the
// log's (a dropped collection of the name has records there). The floor
// is in place before the collection is visible to another process, not
// raised after CreateCollection returns (a worker writing in between
// took a version the log's older records outrank at replay).
TEST(Catalog, CreateWithVersionFloorIsVisibleAboveIt) {
  cache::CollectionOptions o;
  o.version_floor = 1000;
  cache::TableRef made;
  CHECK(cache::CreateCollection(c(), "fresh", o, &made) == Status::kOk);
  cache::TableRef seen;  // as another process finds it by name
  CHECK(cache::OpenCollection(c(), "fresh", &seen) == Status::kOk);
  CHECK_EQUAL(1000u, cache::VersionFloor(seen));
  CHECK(cache::Set(c(), seen, "k", "v") == Status::kOk);
  ReadInfo ri;
  CHECK(cache::Probe(c(), seen, "k", &ri) == Status::kOk);
  CHECK_EQUAL(1001u, ri.version);
  // Without one, versions start at 1.
  cache::TableRef plain = f->Table("plain");
  CHECK(cache::Set(c(), plain, "k", "v") == Status::kOk);
  CHECK(cache::Probe(c(), plain, "k", &ri) == Status::kOk);
  CHECK_EQUAL(1u, ri.version);
}

TEST(Catalog, ClearAndStatsReset) {
  cache::TableRef a = f->Table("a");
  for (int i = 0; i < 100; ++i) CHECK(cache::Set(c(), a, testing::Key(i), "v") == Status::kOk);
  std::string v;
  CHECK(cache::GetString(c(), a, testing::Key(1), &v) == Status::kOk);
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), a, &ci));
  CHECK_EQUAL(100u, ci.entries);
  CHECK_EQUAL(100u, ci.stats[cache::kStatStores]);
  CHECK_EQUAL(1u, ci.stats[cache::kStatHits]);
  cache::ResetCollectionStats(c(), a);
  CHECK(cache::CollectionInfoOf(c(), a, &ci));
  CHECK_EQUAL(0u, ci.stats[cache::kStatStores]);
  CHECK_EQUAL(100u, ci.entries);  // a gauge: not reset
  uint64_t removed;
  CHECK(cache::ClearCollection(c(), a, &removed) == Status::kOk);
  CHECK_EQUAL(100u, removed);
  CHECK_EQUAL(0u, cache::CollectionEntries(c(), a));
}

TEST(Catalog, ResizeBothWays) {
  cache::TableRef a = f->Table("a", 64);
  for (int i = 0; i < 200; ++i) CHECK(cache::Set(c(), a, testing::Key(i), "v") == Status::kOk);
  CHECK(cache::ResizeCollection(c(), "a", 8192) == Status::kOk);
  while (cache::GrowStep(c(), a, 1024) > 0) {
  }
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), a, &ci));
  CHECK_EQUAL(8192u, ci.buckets);
  CHECK(cache::ResizeCollection(c(), "a", 64) == Status::kOk);
  while (cache::GrowStep(c(), a, 1024) > 0) {
  }
  CHECK(cache::CollectionInfoOf(c(), a, &ci));
  CHECK(ci.buckets <= 128);  // shrinks while load < lf/2 (200 keys, lf 4)
  for (int i = 0; i < 200; ++i) STRCMP_EQUAL("v", Get(c(), a, testing::Key(i)).c_str());
}

// At a low level a split's keys lie in many overflow chains (every chain
// whose low level+1 bits are s or p): all of them are visited, so both
// halves fill. (Visiting one chain per half still passed the test above,
// whose later splits at level >= kOvfBits bring everything home anyway.)
TEST(Ops, EarlySplitsTakeHomeFromEveryChainOfTheirHalves) {
  cache::TableRef g = f->Table("early", 16);
  for (int i = 0; i < 2000; ++i) CHECK(cache::Set(c(), g, testing::Key(i), testing::Key(i)) == Status::kOk);
  CHECK_EQUAL(2000u - 16u * cache::kLive, g.h->ovf.count.load());
  // 16 splits: 16 -> 32 buckets at level 4, each half filled from overflow
  // (~62 of its keys there, spread over 128 chains).
  CHECK_EQUAL(16u, cache::GrowStep(c(), g, 16));
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), g, &ci));
  CHECK_EQUAL(32u, ci.buckets);
  CHECK_EQUAL(2000u - 32u * cache::kLive, g.h->ovf.count.load());
  for (int i = 0; i < 2000; ++i) STRCMP_EQUAL(testing::Key(i).c_str(), Get(c(), g, testing::Key(i)).c_str());
}

TEST(Ops, OverflowEntriesComeHomeOnSplit) {
  cache::TableRef g = f->Table("late", 16);
  // Insert 20,000 keys into 16 buckets before any growth: nearly all spill.
  for (int i = 0; i < 20000; ++i) CHECK(cache::Set(c(), g, testing::Key(i), testing::Key(i)) == Status::kOk);
  CHECK(g.h->ovf.count.load() > 19000);
  while (cache::GrowStep(c(), g, 4096) > 0) {
  }
  // At load 4 with 9 positions a grown table keeps ~0.6% in overflow (127
  // of 20,000 here; 23 with the 11 slots of layout 7).
  CHECK(g.h->ovf.count.load() < 200);
  for (int i = 0; i < 20000; ++i) STRCMP_EQUAL(testing::Key(i).c_str(), Get(c(), g, testing::Key(i)).c_str());
  CHECK_EQUAL(20000u, cache::CollectionEntries(c(), g));
  for (int i = 0; i < 20000; ++i) CHECK(cache::Del(c(), g, testing::Key(i)) == Status::kOk);
  CHECK_EQUAL(0u, g.h->ovf.count.load());
}
