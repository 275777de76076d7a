// perfcached — unit tests for cache/export (records in a portable form).
// Copyright (c) 2026 the perfcached authors.
#include <map>
#include <set>

#include "cache/export.h"
#include "cache/hash_ops.h"
#include "cache/set_ops.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

namespace {

std::string Items(std::initializer_list<std::string_view> items) {
  std::string out;
  for (auto i : items) cache::AppendItem(&out, i);
  return out;
}

std::vector<std::pair<std::string, std::string>> Decode(std::string_view enc, bool pairs, std::string* err) {
  std::vector<std::pair<std::string, std::string>> v;
  if (!cache::DecodeItems(enc, pairs, [&](std::string_view a, std::string_view b) { v.emplace_back(a, b); }, err)) {
    v.clear();
    v.emplace_back("<error>", *err);
  }
  return v;
}

}  // namespace

TEST_GROUP(Export) {
  testing::EngineFixture* f;
  cache::TableRef t, u;
  void setup() override {
    f = new testing::EngineFixture();
    t = f->Table("t");
    u = f->Table("u");
  }
  void teardown() override { delete f; }
  cache::Ctx& c() { return *f->ctx; }
  // Export every key of tb (keyed by name; a key emitted twice keeps the last).
  std::map<std::string, cache::Entry> All(const cache::TableRef& tb) {
    std::map<std::string, cache::Entry> out;
    uint64_t cursor = 0;
    do {
      CHECK(cache::ExportStep(c(), tb, cursor, 64, [&](const cache::Entry& e) { out[e.key] = e; }, &cursor) ==
            Status::kOk);
    } while (cursor != 0);
    return out;
  }
};

TEST(Export, TypeNames) {
  STRCMP_EQUAL("string", cache::ExportTypeName(cache::kTypeString));
  STRCMP_EQUAL("counter", cache::ExportTypeName(cache::kTypeInt));
  STRCMP_EQUAL("hash", cache::ExportTypeName(cache::kTypeHash));
  STRCMP_EQUAL("set", cache::ExportTypeName(cache::kTypeSet));
  CHECK(cache::ExportTypeName(cache::kTypeList) == nullptr);
  LONGS_EQUAL(cache::kTypeHash, cache::ExportTypeFromName("hash"));
  LONGS_EQUAL(-1, cache::ExportTypeFromName("list"));
  LONGS_EQUAL(-1, cache::ExportTypeFromName(""));
}

TEST(Export, ItemEncoding) {
  std::string enc = Items({"", "a", std::string(200, 'x')});
  // [0] [1 a] [200 = 0xc8 0x01, then 200 bytes]
  LONGS_EQUAL(1 + 2 + 2 + 200, enc.size());
  BYTES_EQUAL(0xc8, static_cast<uint8_t>(enc[3]));
  BYTES_EQUAL(0x01, static_cast<uint8_t>(enc[4]));
  std::string err;
  auto v = Decode(enc, false, &err);
  LONGS_EQUAL(3, v.size());
  STRCMP_EQUAL("", v[0].first.c_str());
  STRCMP_EQUAL("a", v[1].first.c_str());
  LONGS_EQUAL(200, v[2].first.size());
  auto p = Decode(Items({"f", "v", "g", ""}), true, &err);
  LONGS_EQUAL(2, p.size());
  STRCMP_EQUAL("v", p[0].second.c_str());
  STRCMP_EQUAL("g", p[1].first.c_str());
  LONGS_EQUAL(0, Decode("", true, &err).size());  // an empty aggregate
}

TEST(Export, ItemEncodingErrors) {
  std::string err;
  STRCMP_EQUAL("item 0 at byte 0: truncated length", Decode("\x80", false, &err)[0].second.c_str());
  STRCMP_EQUAL("item 1 at byte 2: length 5 runs past the end (2 bytes left)",
               Decode(std::string("\x01" "a" "\x05" "bc", 5), false, &err)[0].second.c_str());
  STRCMP_EQUAL("item 0 at byte 0: length above 2^32-1",
               Decode(std::string("\xff\xff\xff\xff\x1f", 5), false, &err)[0].second.c_str());
  STRCMP_EQUAL("a hash field without its value (3 items)", Decode(Items({"a", "b", "c"}), true, &err)[0].second.c_str());
  // The largest length the format allows still decodes (and runs past the end here).
  STRCMP_CONTAINS("length 4294967295 runs past the end",
                  Decode(std::string("\xff\xff\xff\xff\x0f", 5), false, &err)[0].second.c_str());
}

TEST(Export, EveryTypeRoundTripsWithItsTtl) {
  int64_t later = cache::NowMs(c()) + 100000;
  CHECK(cache::Set(c(), t, "s", "text") == Status::kOk);
  cache::StoreOpts o;
  o.expire_ms = later;
  CHECK(cache::Set(c(), t, "sx", std::string("bin\0ary", 7), o) == Status::kOk);
  int64_t n;
  CHECK(cache::IncrBy(c(), t, "n", -42, &n) == Status::kOk);
  uint64_t added;
  std::vector<std::string_view> fv = {"f1", "v1", "f2", ""};
  CHECK(cache::HSet(c(), t, "h", fv, &added) == Status::kOk);
  std::vector<std::string> big;
  for (int i = 0; i < 700; ++i) big.push_back("m" + std::to_string(i));
  std::vector<std::string_view> bigv(big.begin(), big.end());
  CHECK(cache::SAdd(c(), t, "bigset", bigv, &added) == Status::kOk);
  std::vector<std::string_view> ints = {"3", "1", "2"};
  CHECK(cache::SAdd(c(), t, "ints", ints, &added) == Status::kOk);
  bool changed;
  CHECK(cache::SetExpire(c(), t, "bigset", later, cache::ExpireCond::kAlways, &changed) == Status::kOk);

  auto all = All(t);
  LONGS_EQUAL(6, all.size());
  STRCMP_EQUAL("-42", all["n"].value.c_str());
  LONGS_EQUAL(cache::kTypeInt, all["n"].type);
  LONGS_EQUAL(later, all["sx"].expire_ms);
  LONGS_EQUAL(later, all["bigset"].expire_ms);
  CHECK(all["s"].version != 0);
  for (auto& [k, e] : all) {
    std::string err;
    CHECK(cache::ImportEntry(c(), u, e, &err) == Status::kOk);
  }
  auto back = All(u);
  LONGS_EQUAL(all.size(), back.size());
  for (auto& [k, e] : all) {
    const cache::Entry& b = back[k];
    LONGS_EQUAL(e.type, b.type);
    LONGS_EQUAL(e.expire_ms, b.expire_ms);
    if (e.type == cache::kTypeSet || e.type == cache::kTypeHash) {
      // Same items, maybe in another order.
      std::string err;
      std::set<std::pair<std::string, std::string>> x, y;
      auto v1 = Decode(e.value, e.type == cache::kTypeHash, &err), v2 = Decode(b.value, b.type == cache::kTypeHash, &err);
      x.insert(v1.begin(), v1.end());
      y.insert(v2.begin(), v2.end());
      CHECK(x == y);
    } else {
      CHECK(e.value == b.value);
    }
  }
  std::string enc;
  CHECK(cache::ObjectEncoding(c(), u, "ints", &enc) == Status::kOk);
  STRCMP_EQUAL("intset", enc.c_str());
  CHECK(cache::ObjectEncoding(c(), u, "bigset", &enc) == Status::kOk);
  STRCMP_EQUAL("hashtable", enc.c_str());
  CHECK(cache::IncrBy(c(), u, "n", 2, &n) == Status::kOk);  // still a counter
  LONGS_EQUAL(-40, n);
}

TEST(Export, ImportReplacesAnyTypeAndSkipsExpired) {
  CHECK(cache::Set(c(), t, "k", "old") == Status::kOk);
  cache::Entry e;
  e.key = "k";
  e.type = cache::kTypeSet;
  e.value = Items({"a", "b"});
  std::string err;
  CHECK(cache::ImportEntry(c(), t, e, &err) == Status::kOk);
  STRCMP_EQUAL("set", cache::KeyType(c(), t, "k"));
  e.type = cache::kTypeString;
  e.value = "again";
  e.expire_ms = cache::NowMs(c()) - 1;
  CHECK(cache::ImportEntry(c(), t, e, &err) == Status::kNotFound);
  STRCMP_EQUAL("set", cache::KeyType(c(), t, "k"));  // untouched
}

TEST(Export, ImportRefusesBadValuesAndChangesNothing) {
  CHECK(cache::Set(c(), t, "k", "old") == Status::kOk);
  cache::Entry e;
  e.key = "k";
  e.type = cache::kTypeHash;
  e.value = Items({"field-without-value"});
  std::string err;
  CHECK(cache::ImportEntry(c(), t, e, &err) == Status::kInvalid);
  STRCMP_EQUAL("hash value: a hash field without its value (1 items)", err.c_str());
  e.type = cache::kTypeInt;
  e.value = "12x";
  CHECK(cache::ImportEntry(c(), t, e, &err) == Status::kInvalid);
  STRCMP_CONTAINS("not a 64-bit decimal integer", err.c_str());
  e.type = cache::kTypeList;
  CHECK(cache::ImportEntry(c(), t, e, &err) == Status::kInvalid);
  std::string v;
  CHECK(cache::GetString(c(), t, "k", &v) == Status::kOk);
  STRCMP_EQUAL("old", v.c_str());
}

TEST(Export, StepSeesEveryKeyOfAGrowingTable) {
  for (int i = 0; i < 5000; ++i) CHECK(cache::Set(c(), t, "k" + std::to_string(i), "v") == Status::kOk);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int steps = 0;
  do {
    CHECK(cache::ExportStep(c(), t, cursor, 16, [&](const cache::Entry& e) { seen.insert(e.key); }, &cursor) ==
          Status::kOk);
    // Splits between the steps (the timer's growth while a save walks).
    (void)cache::GrowStep(c(), t, 64);
    ++steps;
  } while (cursor != 0 && steps < 100000);
  LONGS_EQUAL(5000, seen.size());
}
