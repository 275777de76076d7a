// perfcached — unit tests for the hash Ops and the Dict engine under them:
// a model check over random operations, every encoding change, a tree of
// 200,000 fields, cursors, random fields, the audit of the trie (and that it
// finds a broken one), and forked readers that never see half of a write.
// Copyright (c) 2026 the perfcached authors.
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <random>
#include <set>

#include "cache/audit.h"
#include "cache/dict.h"
#include "cache/hash_ops.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"
#include "CppUTest/MemoryLeakWarningPlugin.h"

using mem::Status;
using namespace cache;

namespace {

std::string Enc(Ctx& c, const TableRef& t, std::string_view key) {
  std::string e;
  if (AggregateEncoding(c, t, key, &e) != Status::kOk) return "?";
  return e;
}

Status Put1(Ctx& c, const TableRef& t, std::string_view key, std::string_view f,
            std::string_view v, uint64_t* added = nullptr) {
  std::string_view fv[2] = {f, v};
  uint64_t n = 0;
  Status s = HSet(c, t, key, fv, &n);
  if (added) *added = n;
  return s;
}

}  // namespace

TEST_GROUP(HashOps) {
  testing::EngineFixture* f;
  TableRef t;
  // CppUTest's leak detector books every std::string of a million-entry
  // walk (minutes instead of seconds): off for this group, as in Threads.
  void setup() override {
    MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
    f = new testing::EngineFixture(256);
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

TEST(HashOps, SetGetDelAndTheKeyGoesWithItsLastField) {
  uint64_t added;
  CHECK(Put1(c(), t, "h", "a", "1", &added) == Status::kOk);
  CHECK_EQUAL(1u, added);
  CHECK(Put1(c(), t, "h", "a", "2", &added) == Status::kOk);
  CHECK_EQUAL(0u, added);
  std::string v;
  CHECK(HGet(c(), t, "h", "a", &v) == Status::kOk);
  STRCMP_EQUAL("2", v.c_str());
  CHECK(HGet(c(), t, "h", "b", &v) == Status::kNotFound);
  CHECK(HGet(c(), t, "nokey", "b", &v) == Status::kNotFound);
  std::string_view del[2] = {"a", "zz"};
  uint64_t removed;
  CHECK(HDel(c(), t, "h", del, &removed) == Status::kOk);
  CHECK_EQUAL(1u, removed);
  ReadInfo ri;
  CHECK(Probe(c(), t, "h", &ri) == Status::kNotFound);
  Clean();
}

TEST(HashOps, WrongTypeBothWays) {
  CHECK(Set(c(), t, "s", "text") == Status::kOk);
  std::string v;
  CHECK(Put1(c(), t, "s", "f", "v") == Status::kWrongType);
  CHECK(HGet(c(), t, "s", "f", &v) == Status::kWrongType);
  CHECK(Put1(c(), t, "h", "f", "v") == Status::kOk);
  int64_t n;
  CHECK(IncrBy(c(), t, "h", 1, &n) == Status::kWrongType);
  // SET over a hash replaces it (and frees all of it: Clean checks).
  for (int i = 0; i < 1000; ++i) CHECK(Put1(c(), t, "h", std::to_string(i), "v") == Status::kOk);
  CHECK(Set(c(), t, "h", "plain") == Status::kOk);
  CHECK(GetString(c(), t, "h", &v) == Status::kOk);
  STRCMP_EQUAL("plain", v.c_str());
  Clean();
}

TEST(HashOps, EncodingFollowsTheThresholds) {
  for (int i = 0; i < 512; ++i) CHECK(Put1(c(), t, "h", "f" + std::to_string(i), "v") == Status::kOk);
  STRCMP_EQUAL("listpack", Enc(c(), t, "h").c_str());
  CHECK(Put1(c(), t, "h", "f512", "v") == Status::kOk);
  STRCMP_EQUAL("hashtable", Enc(c(), t, "h").c_str());
  CHECK(Put1(c(), t, "h2", "f", std::string(64, 'x')) == Status::kOk);
  STRCMP_EQUAL("listpack", Enc(c(), t, "h2").c_str());
  CHECK(Put1(c(), t, "h2", "g", std::string(65, 'x')) == Status::kOk);
  STRCMP_EQUAL("hashtable", Enc(c(), t, "h2").c_str());
  DictLimits l = GetDictLimits(c());
  l.hash_pack_entries = 2;
  SetDictLimits(c(), l);
  CHECK(Put1(c(), t, "h3", "a", "1") == Status::kOk);
  CHECK(Put1(c(), t, "h3", "b", "1") == Status::kOk);
  STRCMP_EQUAL("listpack", Enc(c(), t, "h3").c_str());
  CHECK(Put1(c(), t, "h3", "c", "1") == Status::kOk);
  STRCMP_EQUAL("hashtable", Enc(c(), t, "h3").c_str());
  uint64_t n;
  CHECK(HLen(c(), t, "h3", &n) == Status::kOk);
  CHECK_EQUAL(3u, n);
  Clean();
}

// Random operations against a std::map model, across both encodings.
TEST(HashOps, MatchesAModel) {
  std::mt19937_64 rng(42);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 20000; ++i) {
    std::string fld = "f" + std::to_string(rng() % 400);
    int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      std::string val(rng() % 80, static_cast<char>('a' + rng() % 26));
      uint64_t added;
      CHECK(Put1(c(), t, "h", fld, val, &added) == Status::kOk);
      CHECK_EQUAL(model.count(fld) ? 0u : 1u, added);
      model[fld] = val;
    } else if (op < 8) {
      std::string_view fs[1] = {fld};
      uint64_t removed;
      CHECK(HDel(c(), t, "h", fs, &removed) == Status::kOk);
      CHECK_EQUAL(model.erase(fld), removed);
    } else {
      std::string v;
      Status s = HGet(c(), t, "h", fld, &v);
      if (model.count(fld)) {
        CHECK(s == Status::kOk);
        CHECK(v == model[fld]);
      } else {
        CHECK(s == Status::kNotFound);
      }
    }
  }
  FieldValues all;
  CHECK(HGetAll(c(), t, "h", HPart::kBoth, &all) == Status::kOk);
  std::map<std::string, std::string> got(all.begin(), all.end());
  CHECK(got == model);
  Clean();
}

TEST(HashOps, ATreeOf200kFieldsScansEveryFieldOnce) {
  const int kN = 200000;
  std::vector<std::string> fv;
  for (int i = 0; i < kN; i += 1000) {
    std::vector<std::string> batch;
    for (int j = i; j < i + 1000; ++j) {
      batch.push_back("field:" + std::to_string(j));
      batch.push_back(std::to_string(j));
    }
    std::vector<std::string_view> views(batch.begin(), batch.end());
    uint64_t added;
    CHECK(HSet(c(), t, "big", views, &added) == Status::kOk);
    CHECK_EQUAL(1000u, added);
  }
  uint64_t n;
  CHECK(HLen(c(), t, "big", &n) == Status::kOk);
  CHECK_EQUAL(static_cast<uint64_t>(kN), n);
  std::string v;
  CHECK(HGet(c(), t, "big", "field:123456", &v) == Status::kOk);
  STRCMP_EQUAL("123456", v.c_str());
  std::set<std::string> seen;
  uint64_t cursor = 0, calls = 0;
  do {
    FieldValues part;
    CHECK(HScan(c(), t, "big", cursor, 1000, "", &part, &cursor) == Status::kOk);
    for (auto& [fl, vl] : part) CHECK(seen.insert(fl).second);
    ++calls;
  } while (cursor != 0 && calls < 10000);
  CHECK_EQUAL(static_cast<size_t>(kN), seen.size());
  CHECK(calls > 150);
  FieldValues r;
  CHECK(HRandField(c(), t, "big", 50, &r) == Status::kOk);
  CHECK_EQUAL(50u, r.size());
  const int64_t over = -static_cast<int64_t>(kMaxRandomRepeats) - 1;
  CHECK(HRandField(c(), t, "big", over, &r) == Status::kOutOfRange);  // regression
  CHECK(HRandField(c(), t, "big", INT64_MIN, &r) == Status::kOutOfRange);
  std::set<std::string> distinct;
  for (auto& [fl, vl] : r) {
    distinct.insert(fl);
    CHECK(fl == "field:" + vl);
  }
  CHECK_EQUAL(50u, distinct.size());
  AuditReport a = Audit(c());
  CHECK_TEXT(a.clean(), a.Summary().c_str());
  CHECK_EQUAL(static_cast<uint64_t>(kN), a.aggregate_entries);
  CHECK(Del(c(), t, "big") == Status::kOk);
  Clean();  // every trie cell went with the key
}

TEST(HashOps, ScanWhileTheHashChangesReturnsEveryStayingField) {
  for (int i = 0; i < 5000; ++i) CHECK(Put1(c(), t, "h", "keep" + std::to_string(i), "v") == Status::kOk);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int step = 0;
  do {
    FieldValues part;
    CHECK(HScan(c(), t, "h", cursor, 100, "keep*", &part, &cursor) == Status::kOk);
    for (auto& [fl, vl] : part) seen.insert(fl);
    for (int j = 0; j < 50; ++j) {  // churn: other fields come and go
      std::string x = "tmp" + std::to_string(step * 50 + j);
      CHECK(Put1(c(), t, "h", x, "v") == Status::kOk);
      if (j % 2) {
        std::string_view d[1] = {x};
        uint64_t rm;
        CHECK(HDel(c(), t, "h", d, &rm) == Status::kOk);
      }
    }
    ++step;
  } while (cursor != 0 && step < 100000);
  CHECK_EQUAL(5000u, seen.size());
}

TEST(HashOps, IncrByAndFloat) {
  int64_t r;
  CHECK(HIncrBy(c(), t, "h", "n", 5, &r) == Status::kOk);
  CHECK_EQUAL(5, r);
  CHECK(HIncrBy(c(), t, "h", "n", -7, &r) == Status::kOk);
  CHECK_EQUAL(-2, r);
  CHECK(Put1(c(), t, "h", "s", "abc") == Status::kOk);
  CHECK(HIncrBy(c(), t, "h", "s", 1, &r) == Status::kNotInteger);
  CHECK(Put1(c(), t, "h", "big", "9223372036854775807") == Status::kOk);
  CHECK(HIncrBy(c(), t, "h", "big", 1, &r) == Status::kOverflow);
  std::string fr;
  CHECK(HIncrByFloat(c(), t, "h", "f", 10.5L, &fr) == Status::kOk);
  STRCMP_EQUAL("10.5", fr.c_str());
  CHECK(HIncrByFloat(c(), t, "h", "s", 1.0L, &fr) == Status::kNotFloat);
  CHECK(Put1(c(), t, "h", "huge", "1.1e4932") == Status::kOk);
  CHECK(HIncrByFloat(c(), t, "h", "huge", 1.1e4932L, &fr) == Status::kNanOrInf);
}

TEST(HashOps, BinarySafeFieldsAndAMegabyteValue) {
  std::string fld("a\0b\r\n", 5), big(1 << 20, 'z');
  big[12345] = '\0';
  CHECK(Put1(c(), t, "h", fld, big) == Status::kOk);
  std::string v;
  CHECK(HGet(c(), t, "h", fld, &v) == Status::kOk);
  CHECK(v == big);
  CHECK(HGet(c(), t, "h", std::string_view("a", 1), &v) == Status::kNotFound);
  STRCMP_EQUAL("hashtable", Enc(c(), t, "h").c_str());
  Clean();
}

TEST(HashOps, TheAuditFindsABrokenTrie) {
  for (int i = 0; i < 600; ++i) CHECK(Put1(c(), t, "h", std::to_string(i), "v") == Status::kOk);
  Clean();
  // Corrupt the root node's count through the record value.
  std::string v;
  ReadInfo ri;
  CHECK(GetString(c(), t, "h", &v, &ri) == Status::kOk);
  Off root = 0;
  std::memcpy(&root, v.data() + 1, 7);  // [3][root, 7 bytes LE][count] (dict.h)
  char* p = f->arena->At(root);
  mem::StoreRelaxed64(p + 16, mem::LoadRelaxed64(p + 16) + 1);
  AuditReport r = Audit(c());
  CHECK(r.error_count > 0);
}

TEST(HashOps, AWriteThatLosesTheRaceIsRetriedNotLost) {
  // Two contexts on one arena (two "processes"): interleave by hand through
  // Dict, so the second Commit sees a changed version and the Op retries.
  CHECK(Put1(c(), t, "h", "a", "0") == Status::kOk);
  Dict d1(c(), t, "h", kTypeHash);
  CHECK(d1.Load() == Status::kOk);
  d1.Put("a", "from-d1");
  CHECK(Put1(c(), t, "h", "b", "other") == Status::kOk);  // beats d1
  CHECK(d1.Commit() == Status::kVersion);
  std::string v;
  CHECK(HGet(c(), t, "h", "b", &v) == Status::kOk);
  STRCMP_EQUAL("other", v.c_str());
  CHECK(HGet(c(), t, "h", "a", &v) == Status::kOk);
  STRCMP_EQUAL("0", v.c_str());
}

// A read of a trie whose key was written meanwhile must be told its
// snapshot is gone (the cells it read may be freed and reused).
TEST(HashOps, AReaderWhoseSnapshotWasReplacedIsToldSo) {
  for (int i = 0; i < 1000; ++i) CHECK(Put1(c(), t, "h", std::to_string(i), "v") == Status::kOk);
  Dict d(c(), t, "h", kTypeHash);
  CHECK(d.Load() == Status::kOk);
  CHECK_EQUAL(static_cast<int>(DictEnc::kTree), static_cast<int>(d.encoding()));
  std::string v;
  CHECK(d.Find("7", &v));
  CHECK(d.Validate() == Status::kOk);
  CHECK(Put1(c(), t, "h", "7", "changed") == Status::kOk);
  CHECK(d.Validate() == Status::kVersion);
}

// The readers' last resort: load under the key's lock (a writer storm on
// the key cannot starve them); the lock goes with Validate.
TEST(HashOps, ALockedLoadReadsAndLetsGo) {
  for (int i = 0; i < 1000; ++i) CHECK(Put1(c(), t, "h", std::to_string(i), "v" + std::to_string(i)) == Status::kOk);
  CHECK(Set(c(), t, "s", "text") == Status::kOk);
  {
    Dict d(c(), t, "h", kTypeHash);
    CHECK(d.LoadLocked() == Status::kOk);
    std::string v;
    CHECK(d.Find("77", &v));
    STRCMP_EQUAL("v77", v.c_str());
    CHECK_EQUAL(1000u, d.size());
    CHECK(d.Validate() == Status::kOk);
  }
  {
    Dict d(c(), t, "s", kTypeHash);
    CHECK(d.LoadLocked() == Status::kWrongType);
  }
  {
    Dict d(c(), t, "nokey", kTypeHash);
    CHECK(d.LoadLocked() == Status::kNotFound);
  }
  CHECK(Put1(c(), t, "h", "77", "new") == Status::kOk);  // no lock left behind
  std::string v;
  CHECK(HGet(c(), t, "h", "77", &v) == Status::kOk);
  STRCMP_EQUAL("new", v.c_str());
}

// Forked readers and a writer on one big hash: every HSET writes the same
// value to fields a and b in one command; a reader must never see them
// differ (half of a write). Then a writer is killed mid-run: the audit
// after repair finds no defect (cells in flight may leak, nothing else).
TEST(HashOps, ForkedReadersNeverSeeHalfAWrite) {
  for (int i = 0; i < 3000; ++i) CHECK(Put1(c(), t, "h", "pad" + std::to_string(i), "v") == Status::kOk);
  CHECK(Put1(c(), t, "h", "a", "0") == Status::kOk);
  CHECK(Put1(c(), t, "h", "b", "0") == Status::kOk);
  pid_t writer = fork();
  if (writer == 0) {
    Ctx cw(*f->arena, 1);
    for (int i = 1; i < 1000000; ++i) {
      std::string n = std::to_string(i);
      std::string_view fv[4] = {"a", n, "b", n};
      uint64_t added;
      if (HSet(cw, t, "h", fv, &added) != Status::kOk) _exit(3);
    }
    _exit(0);
  }
  std::vector<pid_t> readers;
  for (int r = 0; r < 2; ++r) {
    pid_t p = fork();
    if (p == 0) {
      Ctx cr(*f->arena, 2 + static_cast<uint32_t>(r));
      std::string_view fs[2] = {"a", "b"};
      std::vector<std::optional<std::string>> out;
      for (int i = 0; i < 20000; ++i) {
        if (HMGet(cr, t, "h", fs, &out) != Status::kOk) _exit(3);
        if (!out[0] || !out[1] || *out[0] != *out[1]) _exit(4);
      }
      _exit(0);
    }
    readers.push_back(p);
  }
  for (pid_t p : readers) {
    int st = 0;
    waitpid(p, &st, 0);
    CHECK_TEXT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a reader saw half of a write (or failed)");
  }
  kill(writer, SIGKILL);
  int st = 0;
  waitpid(writer, &st, 0);
  (void)RepairDead(c());
  AuditReport r = Audit(c());
  CHECK_TEXT(r.clean(), r.Summary().c_str());
  std::string_view fs[2] = {"a", "b"};
  std::vector<std::optional<std::string>> out;
  CHECK(HMGet(c(), t, "h", fs, &out) == Status::kOk);
  CHECK(out[0] && out[1] && *out[0] == *out[1]);
}
