// perfcached — unit tests for the set Ops: encodings (intset, listpack,
// hashtable), a model check, algebra, SPOP / SRANDMEMBER, SMOVE, STORE
// over a key of another type, and a million-member set.
// Copyright (c) 2026 the perfcached authors.
#include <algorithm>
#include <random>
#include <set>

#include "cache/audit.h"
#include "cache/dict.h"
#include "cache/hash_ops.h"
#include "cache/set_ops.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"
#include "CppUTest/MemoryLeakWarningPlugin.h"

using mem::Status;
using namespace cache;

namespace {

Status Add(Ctx& c, const TableRef& t, std::string_view key, std::vector<std::string> ms,
           uint64_t* added = nullptr) {
  std::vector<std::string_view> v(ms.begin(), ms.end());
  uint64_t n = 0;
  Status s = SAdd(c, t, key, v, &n);
  if (added) *added = n;
  return s;
}

std::string Enc(Ctx& c, const TableRef& t, std::string_view key) {
  std::string e;
  return AggregateEncoding(c, t, key, &e) == Status::kOk ? e : "?";
}

std::set<std::string> Members(Ctx& c, const TableRef& t, std::string_view key) {
  std::vector<std::string> m;
  CHECK(SMembers(c, t, key, &m) == Status::kOk);
  std::set<std::string> s(m.begin(), m.end());
  CHECK_EQUAL(m.size(), s.size());
  return s;
}

}  // namespace

TEST_GROUP(SetOps) {
  testing::EngineFixture* f;
  TableRef t;
  // CppUTest's leak detector books every std::string of a million-entry
  // walk (minutes instead of seconds): off for this group, as in Threads.
  void setup() override {
    MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
    f = new testing::EngineFixture(512);
    t = f->Table("t");
  }
  void teardown() override {
    delete f;
    MemoryLeakWarningPlugin::restoreNewDeleteOverloads();
  }
  Ctx& c() { return *f->ctx; }
  void Clean() {
    AuditReport r = Audit(c());
    CHECK_TEXT(r.clean(), r.Summary().c_str());
    CHECK_EQUAL(0u, r.cells_leaked);
  }
};

TEST(SetOps, IntsetThenListpackThenHashtable) {
  CHECK(Add(c(), t, "s", {"1", "2", "3"}) == Status::kOk);
  STRCMP_EQUAL("intset", Enc(c(), t, "s").c_str());
  CHECK(Add(c(), t, "s", {"abc"}) == Status::kOk);
  STRCMP_EQUAL("listpack", Enc(c(), t, "s").c_str());
  CHECK(Add(c(), t, "n", {"01"}) == Status::kOk);  // not canonical: not an intset member
  STRCMP_EQUAL("listpack", Enc(c(), t, "n").c_str());
  std::vector<std::string> many;
  for (int i = 0; i < 513; ++i) many.push_back(std::to_string(i));
  CHECK(Add(c(), t, "i", many) == Status::kOk);
  STRCMP_EQUAL("hashtable", Enc(c(), t, "i").c_str());
  uint64_t n;
  CHECK(SCard(c(), t, "i", &n) == Status::kOk);
  CHECK_EQUAL(513u, n);
  bool in;
  CHECK(SIsMember(c(), t, "s", "2", &in) == Status::kOk);
  CHECK(in);
  CHECK(SIsMember(c(), t, "s", "02", &in) == Status::kOk);
  CHECK(!in);
  Clean();
}

TEST(SetOps, MatchesAModel) {
  std::mt19937_64 rng(7);
  std::set<std::string> model;
  for (int i = 0; i < 20000; ++i) {
    std::string m = rng() % 2 ? std::to_string(rng() % 700) : "m" + std::to_string(rng() % 700);
    int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      uint64_t added;
      CHECK(Add(c(), t, "s", {m}, &added) == Status::kOk);
      CHECK_EQUAL(model.insert(m).second ? 1u : 0u, added);
    } else if (op < 9) {
      std::string_view mv[1] = {m};
      uint64_t removed;
      CHECK(SRem(c(), t, "s", mv, &removed) == Status::kOk);
      CHECK_EQUAL(model.erase(m), removed);
    } else {
      bool in;
      CHECK(SIsMember(c(), t, "s", m, &in) == Status::kOk);
      CHECK_EQUAL(model.count(m) == 1, in);
    }
  }
  CHECK(Members(c(), t, "s") == model);
  Clean();
}

TEST(SetOps, Algebra) {
  CHECK(Add(c(), t, "a", {"1", "2", "3", "x"}) == Status::kOk);
  CHECK(Add(c(), t, "b", {"2", "3", "4", "x"}) == Status::kOk);
  std::string_view ab[2] = {"a", "b"};
  std::vector<std::string> out;
  CHECK(SCombine(c(), t, SetAlgebra::kInter, ab, &out) == Status::kOk);
  std::sort(out.begin(), out.end());
  CHECK((out == std::vector<std::string>{"2", "3", "x"}));
  CHECK(SCombine(c(), t, SetAlgebra::kUnion, ab, &out) == Status::kOk);
  CHECK_EQUAL(5u, out.size());
  CHECK(SCombine(c(), t, SetAlgebra::kDiff, ab, &out) == Status::kOk);
  CHECK((out == std::vector<std::string>{"1"}));
  uint64_t n;
  CHECK(SInterCard(c(), t, ab, 2, &n) == Status::kOk);
  CHECK_EQUAL(2u, n);
  // An absent key makes SINTER empty, but every later key's type is still
  // checked (Redis: SINTER nokey str is WRONGTYPE; regression test).
  CHECK(Set(c(), t, "str", "v") == Status::kOk);
  std::string_view miss[3] = {"a", "nokey", "str"};
  CHECK(SCombine(c(), t, SetAlgebra::kInter, miss, &out) == Status::kWrongType);
  CHECK(SInterCard(c(), t, miss, 0, &n) == Status::kWrongType);
  CHECK(SCombineStore(c(), t, SetAlgebra::kInter, "dst", miss, &n) == Status::kWrongType);
  std::string_view miss_ok[3] = {"nokey", "a", "b"};
  CHECK(SCombine(c(), t, SetAlgebra::kInter, miss_ok, &out) == Status::kOk);
  CHECK(out.empty());
  std::string_view wrong[2] = {"a", "str"};
  CHECK(SCombine(c(), t, SetAlgebra::kUnion, wrong, &out) == Status::kWrongType);
  // STORE replaces any type, TTL dropped.
  StoreOpts o;
  o.expire_ms = NowMs(c()) + 100000;
  CHECK(Set(c(), t, "dst", "old", o) == Status::kOk);
  CHECK(SCombineStore(c(), t, SetAlgebra::kUnion, "dst", ab, &n) == Status::kOk);
  CHECK_EQUAL(5u, n);
  ReadInfo ri;
  CHECK(Probe(c(), t, "dst", &ri) == Status::kOk);
  CHECK_EQUAL(kTypeSet, ri.type);
  CHECK_EQUAL(0, ri.expire_ms);
  std::string_view none[2] = {"a", "nokey"};
  CHECK(SCombineStore(c(), t, SetAlgebra::kInter, "dst", none, &n) == Status::kOk);
  CHECK_EQUAL(0u, n);
  CHECK(Probe(c(), t, "dst", &ri) == Status::kNotFound);
  Clean();
}

TEST(SetOps, PopRandomAndMove) {
  std::vector<std::string> ms;
  for (int i = 0; i < 300; ++i) ms.push_back("m" + std::to_string(i));
  CHECK(Add(c(), t, "s", ms) == Status::kOk);
  std::vector<std::string> out;
  CHECK(SRandMember(c(), t, "s", 20, &out) == Status::kOk);
  CHECK_EQUAL(20u, std::set<std::string>(out.begin(), out.end()).size());
  CHECK(SRandMember(c(), t, "s", -1000, &out) == Status::kOk);
  CHECK_EQUAL(1000u, out.size());
  CHECK(SRandMember(c(), t, "s", 1000, &out) == Status::kOk);
  CHECK_EQUAL(300u, out.size());
  // A repeat count past the bound is refused, not built until the worker
  // runs out of memory (regression: SRANDMEMBER s -9223372036854775807).
  const int64_t over = -static_cast<int64_t>(kMaxRandomRepeats) - 1;
  CHECK(SRandMember(c(), t, "s", over, &out) == Status::kOutOfRange);
  CHECK(SRandMember(c(), t, "s", INT64_MIN, &out) == Status::kOutOfRange);
  CHECK(SPop(c(), t, "s", 100, &out) == Status::kOk);
  CHECK_EQUAL(100u, out.size());
  uint64_t n;
  CHECK(SCard(c(), t, "s", &n) == Status::kOk);
  CHECK_EQUAL(200u, n);
  for (auto& m : out) {
    bool in;
    CHECK(SIsMember(c(), t, "s", m, &in) == Status::kOk);
    CHECK(!in);
  }
  bool moved;
  std::vector<std::string> left;
  CHECK(SMembers(c(), t, "s", &left) == Status::kOk);
  CHECK(SMove(c(), t, "s", "d", left[0], &moved) == Status::kOk);
  CHECK(moved);
  CHECK(SMove(c(), t, "s", "d", left[0], &moved) == Status::kOk);
  CHECK(!moved);
  CHECK(Set(c(), t, "str", "v") == Status::kOk);
  CHECK(SMove(c(), t, "s", "str", left[1], &moved) == Status::kWrongType);
  CHECK(SMove(c(), t, "nokey", "str", left[1], &moved) == Status::kOk);
  CHECK(!moved);
  CHECK(SPop(c(), t, "s", 1000, &out) == Status::kOk);
  CHECK_EQUAL(199u, out.size());
  ReadInfo ri;
  CHECK(Probe(c(), t, "s", &ri) == Status::kNotFound);
  Clean();
}

TEST(SetOps, AMillionMembers) {
  const int kN = 1000000;
  for (int i = 0; i < kN; i += 10000) {
    std::vector<std::string> ms;
    for (int j = i; j < i + 10000; ++j) ms.push_back("member:" + std::to_string(j));
    uint64_t added;
    CHECK(Add(c(), t, "big", ms, &added) == Status::kOk);
    CHECK_EQUAL(10000u, added);
  }
  uint64_t n;
  CHECK(SCard(c(), t, "big", &n) == Status::kOk);
  CHECK_EQUAL(static_cast<uint64_t>(kN), n);
  bool in;
  CHECK(SIsMember(c(), t, "big", "member:999999", &in) == Status::kOk);
  CHECK(in);
  CHECK(SIsMember(c(), t, "big", "member:1000000", &in) == Status::kOk);
  CHECK(!in);
  uint64_t cursor = 0, total = 0, calls = 0;
  do {
    std::vector<std::string> part;
    CHECK(SScan(c(), t, "big", cursor, 5000, "", &part, &cursor) == Status::kOk);
    total += part.size();
  } while (cursor != 0 && ++calls < 100000);
  CHECK_EQUAL(static_cast<uint64_t>(kN), total);
  AuditReport a = Audit(c());
  CHECK_TEXT(a.clean(), a.Summary().c_str());
  CHECK_EQUAL(static_cast<uint64_t>(kN), a.aggregate_entries);
  uint64_t cleared;
  CHECK(ClearCollection(c(), t, &cleared) == Status::kOk);  // FLUSHDB frees the trie
  Clean();
}
