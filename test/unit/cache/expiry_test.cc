// perfcached — unit tests for the hint-routed expiry sweep.
// Copyright (c) 2026 the perfcached authors.
#include <set>

#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

TEST_GROUP(Expiry) {
  testing::EngineFixture* f;
  void setup() override { f = new testing::EngineFixture(); }
  void teardown() override { delete f; }
  cache::Ctx& c() { return *f->ctx; }
};

TEST(Expiry, SweepRemovesOnlyDueKeysAndReportsThem) {
  cache::TableRef t = f->Table("t", 1024);
  int64_t now = cache::NowMs(c());
  for (int i = 0; i < 1000; ++i) {
    cache::StoreOpts o;
    o.expire_ms = i < 300 ? now + 1000 : (i < 600 ? now + 3600000 : 0);
    CHECK(cache::Set(c(), t, testing::Key(i), "v", o) == Status::kOk);
  }
  std::set<std::string> seen;
  CHECK_EQUAL(0u, cache::SweepExpired(c(), t, 1u << 20, [&](std::string_view k) {
                seen.insert(std::string(k));
              }));
  c().clock_skew_ms = 5000;
  CHECK_EQUAL(300u, cache::SweepExpired(c(), t, 1u << 20, [&](std::string_view k) {
                seen.insert(std::string(k));
              }));
  CHECK_EQUAL(300u, seen.size());
  CHECK(seen.count(testing::Key(0)) == 1);
  CHECK(seen.count(testing::Key(299)) == 1);
  CHECK_EQUAL(700u, cache::CollectionEntries(c(), t));
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), t, &ci));
  CHECK_EQUAL(300u, ci.stats[cache::kStatExpired]);
  // A second sweep finds nothing due: the hints were recomputed.
  CHECK_EQUAL(0u, cache::SweepExpired(c(), t, 1u << 20, {}));
  for (int i = 300; i < 1000; ++i) {
    cache::ReadInfo ri;
    CHECK(cache::Probe(c(), t, testing::Key(i), &ri) == Status::kOk);
  }
}

TEST(Expiry, SweepCoversOverflow) {
  cache::TableRef t = f->Table("t", 16, 1000000);
  int64_t now = cache::NowMs(c());
  for (int i = 0; i < 1000; ++i) {
    cache::StoreOpts o;
    o.expire_ms = i % 2 ? now + 500 : 0;
    CHECK(cache::Set(c(), t, testing::Key(i), "v", o) == Status::kOk);
  }
  CHECK(t.h->ovf.count.load() > 100);
  c().clock_skew_ms = 2000;
  CHECK_EQUAL(500u, cache::SweepExpired(c(), t, 1u << 20, {}));
  CHECK_EQUAL(500u, cache::CollectionEntries(c(), t));
  // The regression of cachedb_perf's production crash: overflow + expiry +
  // reuse of the freed cells must keep every class byte intact.
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 1000; i += 2) {
      cache::StoreOpts o;
      o.expire_ms = cache::NowMs(c()) + 100;
      CHECK(cache::Set(c(), t, "r" + std::to_string(round) + testing::Key(i), "w", o) == Status::kOk);
    }
    c().clock_skew_ms += 1000;
    CHECK_EQUAL(500u, cache::SweepExpired(c(), t, 1u << 20, {}));
  }
  for (int i = 0; i < 1000; i += 2) {
    std::string v;
    CHECK(cache::GetString(c(), t, testing::Key(i), &v) == Status::kOk);
  }
}

TEST(Expiry, BudgetLimitsLockedBuckets) {
  cache::TableRef t = f->Table("t", 4096);
  int64_t now = cache::NowMs(c());
  for (int i = 0; i < 4000; ++i) {
    cache::StoreOpts o;
    o.expire_ms = now + 100;
    CHECK(cache::Set(c(), t, testing::Key(i), "v", o) == Status::kOk);
  }
  c().clock_skew_ms = 2000;
  uint32_t first = cache::SweepExpired(c(), t, 10, {});
  CHECK(first > 0 && first < 4000);
  uint32_t total = first;
  for (int i = 0; i < 1000 && total < 4000; ++i) total += cache::SweepExpired(c(), t, 100, {});
  CHECK_EQUAL(4000u, total);
}
