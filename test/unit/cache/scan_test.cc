// perfcached — unit tests for cache/scan (SCAN guarantees across splits and merges).
// Copyright (c) 2026 the perfcached authors.
#include <map>
#include <random>
#include <set>

#include "cache/internal.h"
#include "test/unit/cache/fixture.h"
#include "test/unit/cache/child.h"  // KeyInBucket (includes CppUTest)
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

namespace {

// Run a whole scan, calling `between` after every step.
std::multiset<std::string> FullScan(cache::Ctx& c, const cache::TableRef& t, uint32_t count,
                                    const cache::ScanFilter& f,
                                    const std::function<void()>& between = {}) {
  std::multiset<std::string> out;
  uint64_t cursor = 0;
  int guard = 0;
  do {
    Status s = cache::ScanStep(c, t, cursor, count, f,
                               [&](const cache::ScanItem& it) { out.insert(std::string(it.key)); },
                               &cursor);
    if (s != Status::kOk) break;
    if (between) between();
  } while (cursor != 0 && ++guard < 1000000);
  return out;
}

// 40 keys: 10 with a TTL ahead, 10 expired, 20 without one.
void SetTtlMix(cache::Ctx& c, const cache::TableRef& t, int64_t now) {
  for (int i = 0; i < 40; ++i) {
    cache::StoreOpts o;
    o.expire_ms = i % 4 == 0 ? now + 60000 : i % 4 == 1 ? now - 1 : 0;
    CHECK(cache::Set(c, t, testing::Key(i), "v", o) == Status::kOk);
  }
}

cache::ScanFilter TypeF(int type) {
  cache::ScanFilter f;
  f.type = type;
  return f;
}

}  // namespace

TEST_GROUP(Scan) {
  testing::EngineFixture* f;
  void setup() override { f = new testing::EngineFixture(); }
  void teardown() override { delete f; }
  cache::Ctx& c() { return *f->ctx; }
};

TEST(Scan, ReturnsEveryKeyOnce) {
  cache::TableRef t = f->Table("t", 64);
  for (int i = 0; i < 3000; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  while (cache::GrowStep(c(), t, 4096) > 0) {
  }
  auto keys = FullScan(c(), t, 10, {});
  CHECK_EQUAL(3000u, keys.size());
  CHECK_EQUAL(3000u, std::set<std::string>(keys.begin(), keys.end()).size());
}

TEST(Scan, IncludesOverflowEntries) {
  cache::TableRef t = f->Table("t", 16, 1000000);
  for (int i = 0; i < 1000; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  CHECK(t.h->ovf.count.load() > 0);
  auto keys = FullScan(c(), t, 3, {});
  CHECK_EQUAL(1000u, std::set<std::string>(keys.begin(), keys.end()).size());
  CHECK_EQUAL(1000u, keys.size());
}

TEST(Scan, SurvivesSplitsDuringScan) {
  cache::TableRef t = f->Table("t", 16);
  for (int i = 0; i < 2000; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  // The table is far above its load factor: every step below splits.
  int extra = 0;
  auto keys = FullScan(c(), t, 1, {}, [&] {
    cache::GrowStep(c(), t, 7);
    // Keys come and go during the scan; the stable ones must all appear.
    CHECK(cache::Set(c(), t, "tmp:" + std::to_string(extra++), "v") == Status::kOk);
  });
  std::set<std::string> uniq(keys.begin(), keys.end());
  for (int i = 0; i < 2000; ++i) CHECK(uniq.count(testing::Key(i)) == 1);
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), t, &ci));
  CHECK(ci.stats[cache::kStatSplits] > 50);
}

TEST(Scan, SurvivesMergesDuringScan) {
  cache::TableRef t = f->Table("t", 16);
  for (int i = 0; i < 4000; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  while (cache::GrowStep(c(), t, 4096) > 0) {
  }
  for (int i = 200; i < 4000; ++i) CHECK(cache::Del(c(), t, testing::Key(i)) == Status::kOk);
  auto keys = FullScan(c(), t, 1, {}, [&] { cache::GrowStep(c(), t, 5); });
  std::set<std::string> uniq(keys.begin(), keys.end());
  for (int i = 0; i < 200; ++i) CHECK(uniq.count(testing::Key(i)) == 1);
  CHECK_EQUAL(200u, uniq.size());
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(c(), t, &ci));
  CHECK(ci.stats[cache::kStatMerges] > 50);
}

TEST(Scan, FiltersGlobTypeAndExpired) {
  cache::TableRef t = f->Table("t");
  CHECK(cache::Set(c(), t, "user:1", "a") == Status::kOk);
  CHECK(cache::Set(c(), t, "user:2", "b") == Status::kOk);
  CHECK(cache::Set(c(), t, "sess:1", "c") == Status::kOk);
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "user:ctr", 1, &r) == Status::kOk);
  cache::StoreOpts o;
  o.expire_ms = cache::NowMs(c()) - 1;  // already expired
  CHECK(cache::Set(c(), t, "user:gone", "x", o) == Status::kOk);
  CHECK_EQUAL(3u, FullScan(c(), t, 100, {.glob = "user:*"}).size());
  CHECK_EQUAL(1u, FullScan(c(), t, 100, {.glob = "USER:1", .nocase = true}).size());
  CHECK_EQUAL(4u, FullScan(c(), t, 100, TypeF(cache::kTypeString)).size());  // ints are strings
  CHECK_EQUAL(0u, FullScan(c(), t, 100, TypeF(cache::kTypeHash)).size());
}

TEST(Scan, ValuesAndBadCursor) {
  cache::TableRef t = f->Table("t");
  CHECK(cache::Set(c(), t, "k", "value") == Status::kOk);
  std::map<std::string, std::string> got;
  uint64_t cur = 0;
  cache::ScanFilter vf;
  vf.values = true;
  do {
    CHECK(cache::ScanStep(c(), t, cur, 100, vf,
                          [&](const cache::ScanItem& it) {
                            got[std::string(it.key)] = std::string(it.value);
                          },
                          &cur) == Status::kOk);
  } while (cur != 0);
  STRCMP_EQUAL("value", got["k"].c_str());
  uint64_t next;
  CHECK(cache::ScanStep(c(), t, (uint64_t{1} << 40) | 10, 1, {}, [](const cache::ScanItem&) {},
                        &next) == Status::kInvalid);
  CHECK(cache::ScanStep(c(), t, 63, 1, {}, [](const cache::ScanItem&) {}, &next) ==
        Status::kInvalid);
}

// ---- the eviction sampler (SampleStep) ---------------------------------------

// Whole buckets from its start on, until it has what it wants: no more
// buckets read than that.
TEST(Scan, SampleStepReadsBucketsUntilItHasEnough) {
  cache::TableRef t = f->Table("t", 64);
  for (int i = 0; i < 200; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  CHECK_EQUAL(0u, t.h->ovf.count.load());  // (overflow chains come on top: next test)
  for (uint64_t start = 0; start < 64; ++start) {
    std::vector<cache::SampledRecord> out;
    uint64_t visited = 0;
    CHECK(cache::SampleStep(c(), t, start, 5, 8, false, &out, &visited) == Status::kOk);
    uint32_t expect = 0, buckets = 0;
    for (uint64_t x = start; expect < 5; x = (x + 1) % 64, ++buckets) {
      expect += cache::UsedOf(*cache::detail::BucketAt(*f->arena, *t.h, x));
    }
    CHECK_EQUAL(expect, out.size());
    CHECK_EQUAL(buckets, visited);
    for (auto& r : out) CHECK(r.info.version != 0);
  }
}

// Every key can be sampled, including one that lives in overflow: a
// sampler that skipped the overflow chains would leave those keys for
// ever under maxmemory.
TEST(Scan, SampleStepReachesOverflow) {
  cache::TableRef t = f->Table("t", 16, 1000000);  // never grows: full buckets, overflow
  for (int i = 0; i < 600; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  CHECK(t.h->ovf.count.load() > 0);
  std::set<std::string> seen;
  for (uint64_t start = 0; start < 16; ++start) {
    std::vector<cache::SampledRecord> out;
    uint64_t visited = 0;
    CHECK(cache::SampleStep(c(), t, start, 1, 1, false, &out, &visited) == Status::kOk);
    for (auto& r : out) seen.insert(r.key);
  }
  CHECK_EQUAL(600u, seen.size());
}

TEST(Scan, SampleStepSkipsExpiredAndCanWantATtl) {
  cache::TableRef t = f->Table("t", 16);
  int64_t now = cache::NowMs(c());
  SetTtlMix(c(), t, now);
  std::vector<cache::SampledRecord> all, ttl;
  uint64_t visited = 0;
  CHECK(cache::SampleStep(c(), t, 0, 1000, 16, false, &all, &visited) == Status::kOk);
  CHECK_EQUAL(30u, all.size());  // the 10 expired ones are not candidates
  CHECK(cache::SampleStep(c(), t, 0, 1000, 16, true, &ttl, &visited) == Status::kOk);
  CHECK_EQUAL(10u, ttl.size());
  for (auto& r : ttl) CHECK(r.info.expire_ms > now);
}

// At level >= 12 an overflow chain holds the keys of several buckets: a
// bucket's sample takes only those that route to it (else an overflow key
// was sampled 2^(level-12) times as often as any other).
TEST(Scan, SampleStepTakesOnlyTheOverflowKeysOfItsBucket) {
  cache::TableRef t = f->Table("t", 8192, 1000000);  // level 13: chain j serves j and j + 4096
  std::vector<std::string> in_b, in_partner;
  for (int i = 0; i < 12; ++i) in_b.push_back(testing::KeyInBucket(c(), t, 5, i));
  for (int i = 0; i < 12; ++i) in_partner.push_back(testing::KeyInBucket(c(), t, 5 + 4096, i));
  for (auto& k : in_b) CHECK(cache::Set(c(), t, k, "v") == Status::kOk);
  for (auto& k : in_partner) CHECK(cache::Set(c(), t, k, "v") == Status::kOk);
  CHECK_EQUAL(6u, t.h->ovf.count.load());  // 9 positions a bucket: 3 + 3 spill
  std::vector<cache::SampledRecord> out;
  uint64_t visited = 0;
  CHECK(cache::SampleStep(c(), t, 5, 1000, 1, false, &out, &visited) == Status::kOk);
  std::set<std::string> got;
  for (auto& r : out) got.insert(r.key);
  CHECK_EQUAL(12u, out.size());
  CHECK(got == std::set<std::string>(in_b.begin(), in_b.end()));
}

// One lap of the table at most, whatever the bucket budget.
TEST(Scan, SampleStepStopsAfterOneLap) {
  cache::TableRef t = f->Table("t", 16);
  for (int i = 0; i < 3; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  std::vector<cache::SampledRecord> out;
  uint64_t visited = 0;
  CHECK(cache::SampleStep(c(), t, 7, 1000, 8192, false, &out, &visited) == Status::kOk);
  CHECK_EQUAL(16u, visited);
  CHECK_EQUAL(3u, out.size());
}

// ---- the uniform sampler (SampleUniform) ------------------------------------

namespace {
std::mt19937_64 g_rng(17);
uint64_t TestRandom() { return g_rng(); }

// Draw `n` keys one call at a time (each call: one key) and count them.
std::map<std::string, int> Draw(cache::Ctx& c, const cache::TableRef& t, int n, bool ttl_only = false) {
  std::map<std::string, int> seen;
  for (int i = 0; i < n; ++i) {
    std::vector<cache::SampledRecord> out;
    uint32_t draws = 0;
    CHECK(cache::SampleUniform(c, t, 1, 1u << 20, ttl_only, TestRandom, &out, &draws) == Status::kOk);
    CHECK_EQUAL(1u, out.size());
    ++seen[out[0].key];
  }
  return seen;
}
}  // namespace

// The bias SampleUniform removes: 20 keys crowd bucket 5 (9 there, 11 in
// overflow), 40 keys sit alone in buckets of their own. A crowded key must
// be drawn as often as a lone one (whole-bucket samples drew it a third
// as often; a sampler that never drew overflow, never).
TEST(Scan, SampleUniformDrawsCrowdedAndOverflowKeysAsOftenAsTheRest) {
  cache::TableRef t = f->Table("t", 64, 1000000);  // never grows
  std::set<std::string> crowded, lone;
  for (int i = 0; i < 20; ++i) crowded.insert(testing::KeyInBucket(c(), t, 5, i));
  for (uint64_t b = 10; b < 50; ++b) lone.insert(testing::KeyInBucket(c(), t, b, 0));
  for (auto& k : crowded) CHECK(cache::Set(c(), t, k, "v") == Status::kOk);
  for (auto& k : lone) CHECK(cache::Set(c(), t, k, "v") == Status::kOk);
  CHECK_EQUAL(11u, t.h->ovf.count.load());
  auto seen = Draw(c(), t, 6000);
  CHECK_EQUAL(60u, seen.size());  // every key, overflow ones too
  double in_crowd = 0, alone = 0;
  for (auto& [k, n] : seen) (crowded.count(k) ? in_crowd : alone) += n;
  double ratio = (in_crowd / 20) / (alone / 40);  // per key; 1.0 expected (+-0.08 at 3 sigma)
  CHECK_TEXT(ratio > 0.85 && ratio < 1.15, ("crowded / lone per key " + std::to_string(ratio)).c_str());
}

// A chain longer than the draw's positions for it (cap) is drawn over its
// whole length: none of its keys is out of reach; and cap then learns
// its length, so its keys are drawn as often as the bucket's (else 6 / 21
// as often, and a long chain, evicted less, stays long).
TEST(Scan, SampleUniformReachesEveryKeyOfAnOverlongChain) {
  cache::TableRef t = f->Table("t", 16, 1000000);
  std::vector<std::string> keys;  // one chain (the low 12 bits of the hash), bucket 7
  for (int i = 0; keys.size() < 30; ++i) {
    std::string k = "chain:" + std::to_string(i);
    if ((cache::detail::HashOf(c(), k) & (cache::kOvfHeads - 1)) == 7) keys.push_back(k);
  }
  for (auto& k : keys) CHECK(cache::Set(c(), t, k, "v") == Status::kOk);
  CHECK_EQUAL(21u, t.h->ovf.count.load());  // cap starts at 6: the chain is 3.5 times longer
  auto seen = Draw(c(), t, 3000);
  CHECK_EQUAL(30u, seen.size());
  std::set<std::string> in_bucket(keys.begin(), keys.begin() + 9);  // the first 9 stayed in the bucket
  double b = 0, o = 0;
  for (auto& [k, n] : seen) (in_bucket.count(k) ? b : o) += n;
  double ratio = (o / 21) / (b / 9);  // per key; 1.0 expected
  CHECK_TEXT(ratio > 0.8 && ratio < 1.25, ("chain / bucket per key " + std::to_string(ratio)).c_str());
}

TEST(Scan, SampleUniformSkipsExpiredAndCanWantATtl) {
  cache::TableRef t = f->Table("t", 16);
  int64_t now = cache::NowMs(c());
  SetTtlMix(c(), t, now);
  CHECK_EQUAL(30u, Draw(c(), t, 1000).size());  // the 10 expired ones never
  auto ttl = Draw(c(), t, 500, true);
  CHECK_EQUAL(10u, ttl.size());
  for (auto& [k, n] : ttl) {
    cache::ReadInfo ri;
    CHECK(cache::Probe(c(), t, k, &ri) == Status::kOk);
    CHECK(ri.expire_ms > now);
  }
}

// An empty table, or draws that all miss: nothing, and a bounded number
// of draws.
TEST(Scan, SampleUniformStopsAtItsDraws) {
  cache::TableRef t = f->Table("t", 1024);
  std::vector<cache::SampledRecord> out;
  uint32_t draws = 0;
  CHECK(cache::SampleUniform(c(), t, 5, 100, false, TestRandom, &out, &draws) == Status::kOk);
  CHECK_EQUAL(0u, out.size());
  CHECK_EQUAL(100u, draws);
  CHECK_EQUAL(16u * 5, cache::SampleDraws(t, 5, false));
  CHECK_EQUAL(16u * 5, cache::SampleDraws(t, 5, true));
}

// A small table with overflow spends most draws on empty chains: it gets
// more of them, so a key is still found.
TEST(Scan, SampleDrawsGrowWithTheChainsAgainstTheBuckets) {
  cache::TableRef t = f->Table("t", 16, 1000000);
  for (int i = 0; i < 200; ++i) CHECK(cache::Set(c(), t, testing::Key(i), "v") == Status::kOk);
  CHECK(t.h->ovf.count.load() > 0);
  uint32_t per_key = cache::SampleDraws(t, 1, false);
  CHECK(per_key > 16 && per_key <= 1024);
  CHECK(cache::SampleDraws(t, 1, true) <= 256);  // few keys with a TTL: the walk is cheaper
  int found = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<cache::SampledRecord> out;
    uint32_t draws = 0;
    CHECK(cache::SampleUniform(c(), t, 1, per_key, false, TestRandom, &out, &draws) == Status::kOk);
    found += static_cast<int>(out.size());
  }
  CHECK(found >= 190);
}
