// perfcached — unit tests for cache/string_ops (the string commands as Ops).
// Copyright (c) 2026 the perfcached authors.
#include <cmath>
#include <cstring>
#include <limits>

#include "cache/internal.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

namespace {

constexpr size_t kMax = 512 * 1024 * 1024;

// Run `fn` as a concurrent writer the first `times` times an Op sits between
// its read and its version-checked write; clears itself at scope exit.
struct Interleave {
  Interleave(int times, std::function<void()> fn) {
    cache::detail::rmw_test_hook = [this, times, fn] {
      if (calls++ < times) fn();
    };
  }
  ~Interleave() { cache::detail::rmw_test_hook = nullptr; }
  int calls = 0;
};

}  // namespace

TEST_GROUP(StringOps) {
  testing::EngineFixture* f;
  cache::TableRef t;
  void setup() override {
    f = new testing::EngineFixture();
    t = f->Table("t");
  }
  void teardown() override {
    cache::detail::rmw_test_hook = nullptr;
    delete f;
  }
  cache::Ctx& c() { return *f->ctx; }
  std::string Get(std::string_view k) {
    std::string v;
    Status s = cache::StrGet(c(), t, k, &v);
    return s == Status::kOk ? v : "<" + std::string(mem::StatusName(s)) + ">";
  }
  void MakeHash(std::string_view k) {
    cache::StoreOpts so;
    so.type = cache::kTypeHash;
    CHECK(cache::Set(c(), t, k, "opaque", so) == Status::kOk);
  }
  int64_t ExpireOf(std::string_view k) {
    cache::ReadInfo ri;
    return cache::Probe(c(), t, k, &ri) == Status::kOk ? ri.expire_ms : -2;
  }
};

TEST(StringOps, GetWrongTypeAndCounterAsText) {
  MakeHash("h");
  std::string v;
  CHECK(cache::StrGet(c(), t, "h", &v) == Status::kWrongType);
  CHECK(cache::StrGet(c(), t, "none", &v) == Status::kNotFound);
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", 41, &r) == Status::kOk);
  STRCMP_EQUAL("41", Get("n").c_str());
}

TEST(StringOps, SetGetOption) {
  cache::StrSetArgs a;
  a.get = true;
  cache::StrSetResult r;
  CHECK(cache::StrSet(c(), t, "k", "v1", a, &r) == Status::kOk);
  CHECK_FALSE(r.had_old);
  CHECK(cache::StrSet(c(), t, "k", "v2", a, &r) == Status::kOk);
  CHECK(r.had_old);
  STRCMP_EQUAL("v1", r.old.c_str());
  // NX fails, GET still reports the current value.
  a.cond = cache::Cond::kNx;
  CHECK(cache::StrSet(c(), t, "k", "v3", a, &r) == Status::kExists);
  CHECK(r.had_old);
  STRCMP_EQUAL("v2", r.old.c_str());
  STRCMP_EQUAL("v2", Get("k").c_str());
  // XX on an absent key.
  a.cond = cache::Cond::kXx;
  CHECK(cache::StrSet(c(), t, "absent", "x", a, &r) == Status::kNotExists);
  CHECK_FALSE(r.had_old);
  // SET .. GET on a hash: WRONGTYPE and nothing stored.
  MakeHash("h");
  a.cond = cache::Cond::kAlways;
  CHECK(cache::StrSet(c(), t, "h", "x", a, &r) == Status::kWrongType);
  std::string v;
  CHECK(cache::StrGet(c(), t, "h", &v) == Status::kWrongType);
  // Plain SET overwrites a hash (Redis).
  a.get = false;
  CHECK(cache::StrSet(c(), t, "h", "s", a, &r) == Status::kOk);
  STRCMP_EQUAL("s", Get("h").c_str());
}

TEST(StringOps, SetKeepTtlAndExpire) {
  cache::StrSetArgs a;
  cache::StrSetResult r;
  a.expire_ms = cache::NowMs(c()) + 100000;
  CHECK(cache::StrSet(c(), t, "k", "v", a, &r) == Status::kOk);
  int64_t e = ExpireOf("k");
  CHECK_EQUAL(a.expire_ms, e);
  cache::StrSetArgs keep;
  keep.keep_ttl = true;
  CHECK(cache::StrSet(c(), t, "k", "w", keep, &r) == Status::kOk);
  CHECK_EQUAL(e, ExpireOf("k"));
  CHECK(cache::StrSet(c(), t, "k", "x", cache::StrSetArgs{}, &r) == Status::kOk);
  CHECK_EQUAL(0, ExpireOf("k"));
}

TEST(StringOps, GetSetGetDelGetEx) {
  std::string old;
  bool had = true;
  CHECK(cache::GetSet(c(), t, "k", "a", &old, &had) == Status::kOk);
  CHECK_FALSE(had);
  CHECK(cache::GetSet(c(), t, "k", "b", &old, &had) == Status::kOk);
  CHECK(had);
  STRCMP_EQUAL("a", old.c_str());
  std::string v;
  CHECK(cache::GetDel(c(), t, "k", &v) == Status::kOk);
  STRCMP_EQUAL("b", v.c_str());
  CHECK(cache::GetDel(c(), t, "k", &v) == Status::kNotFound);
  MakeHash("h");
  CHECK(cache::GetDel(c(), t, "h", &v) == Status::kWrongType);
  // GETEX: set, then persist.
  CHECK(cache::Set(c(), t, "e", "v") == Status::kOk);
  int64_t at = cache::NowMs(c()) + 50000;
  std::string at_text = std::to_string(at);
  CHECK(cache::GetEx(c(), t, "e", {cache::ExpireKind::kPxAt, at_text}, &v) == Status::kOk);
  STRCMP_EQUAL("v", v.c_str());
  CHECK_EQUAL(at, ExpireOf("e"));
  CHECK(cache::GetEx(c(), t, "e", {}, &v) == Status::kOk);
  CHECK_EQUAL(at, ExpireOf("e"));
  CHECK(cache::GetEx(c(), t, "e", {cache::ExpireKind::kPersist, {}}, &v) == Status::kOk);
  CHECK_EQUAL(0, ExpireOf("e"));
  CHECK(cache::GetEx(c(), t, "absent", {cache::ExpireKind::kPxAt, at_text}, &v) ==
        Status::kNotFound);
}

TEST(StringOps, ResolveExpire) {
  using K = cache::ExpireKind;
  int64_t ms = -1;
  CHECK(cache::ResolveExpire(1000, {}, &ms) == Status::kOk);
  CHECK_EQUAL(0, ms);
  CHECK(cache::ResolveExpire(1000, {K::kPersist, {}}, &ms) == Status::kOk);
  CHECK_EQUAL(0, ms);
  CHECK(cache::ResolveExpire(1000, {K::kEx, "5"}, &ms) == Status::kOk);
  CHECK_EQUAL(6000, ms);
  CHECK(cache::ResolveExpire(1000, {K::kPx, "5"}, &ms) == Status::kOk);
  CHECK_EQUAL(1005, ms);
  CHECK(cache::ResolveExpire(1000, {K::kExAt, "5"}, &ms) == Status::kOk);
  CHECK_EQUAL(5000, ms);
  CHECK(cache::ResolveExpire(1000, {K::kPxAt, "5"}, &ms) == Status::kOk);
  CHECK_EQUAL(5, ms);
  CHECK(cache::ResolveExpire(1000, {K::kEx, "x"}, &ms) == Status::kNotInteger);
  CHECK(cache::ResolveExpire(1000, {K::kPx, ""}, &ms) == Status::kNotInteger);
  CHECK(cache::ResolveExpire(1000, {K::kEx, "1.5"}, &ms) == Status::kNotInteger);
  CHECK(cache::ResolveExpire(1000, {K::kEx, "0"}, &ms) == Status::kInvalidExpire);
  CHECK(cache::ResolveExpire(1000, {K::kPxAt, "-1"}, &ms) == Status::kInvalidExpire);
  CHECK(cache::ResolveExpire(1000, {K::kExAt, "9223372036854775"}, &ms) == Status::kOk);
  CHECK(cache::ResolveExpire(1000, {K::kExAt, "9223372036854776"}, &ms) ==
        Status::kInvalidExpire);
  CHECK(cache::ResolveExpire(1000, {K::kPx, "9223372036854775807"}, &ms) ==
        Status::kInvalidExpire);
}

// Redis's GETEX looks the key up and checks its type before it reads the
// expiry: nil / WRONGTYPE whatever the number; a bad number changes nothing.
TEST(StringOps, GetExLooksUpBeforeReadingTheExpiry) {
  using K = cache::ExpireKind;
  std::string v;
  CHECK(cache::GetEx(c(), t, "absent", {K::kEx, "x"}, &v) == Status::kNotFound);
  CHECK(cache::GetEx(c(), t, "absent", {K::kEx, "0"}, &v) == Status::kNotFound);
  CHECK(cache::GetEx(c(), t, "absent", {K::kPx, "-5"}, &v) == Status::kNotFound);
  MakeHash("h");
  CHECK(cache::GetEx(c(), t, "h", {K::kEx, "x"}, &v) == Status::kWrongType);
  CHECK(cache::GetEx(c(), t, "h", {K::kEx, "0"}, &v) == Status::kWrongType);
  int64_t at = cache::NowMs(c()) + 50000;
  cache::StrSetArgs a;
  a.expire_ms = at;
  cache::StrSetResult r;
  CHECK(cache::StrSet(c(), t, "k", "v", a, &r) == Status::kOk);
  CHECK(cache::GetEx(c(), t, "k", {K::kEx, "x"}, &v) == Status::kNotInteger);
  CHECK(cache::GetEx(c(), t, "k", {K::kEx, "0"}, &v) == Status::kInvalidExpire);
  CHECK(cache::GetEx(c(), t, "k", {K::kExAt, "-1"}, &v) == Status::kInvalidExpire);
  CHECK_EQUAL(at, ExpireOf("k"));  // unchanged by the refused ones
  // An absolute time in the past: the value, and the key is gone.
  CHECK(cache::GetEx(c(), t, "k", {K::kPxAt, "1"}, &v) == Status::kOk);
  STRCMP_EQUAL("v", v.c_str());
  CHECK(cache::StrGet(c(), t, "k", &v) == Status::kNotFound);
}

TEST(StringOps, GetDelRetriesWhenWrittenBetweenReadAndDelete) {
  CHECK(cache::Set(c(), t, "k", "old") == Status::kOk);
  Interleave w(1, [&] { CHECK(cache::Set(c(), t, "k", "new") == Status::kOk); });
  std::string v;
  CHECK(cache::GetDel(c(), t, "k", &v) == Status::kOk);
  // The first delete lost its version check; the retry read and deleted "new".
  STRCMP_EQUAL("new", v.c_str());
  CHECK_EQUAL(2, w.calls);
  CHECK(cache::StrGet(c(), t, "k", &v) == Status::kNotFound);
}

TEST(StringOps, MGetMSet) {
  std::string_view kv[] = {"a", "1", "b", "2", "a", "3"};
  CHECK(cache::MSet(c(), t, kv) == Status::kOk);
  std::string_view odd[] = {"a", "1", "b"};
  CHECK(cache::MSet(c(), t, odd) == Status::kInvalid);
  MakeHash("h");
  std::string_view keys[] = {"a", "h", "missing", "b"};
  std::vector<std::string> got;
  cache::MGet(c(), t, keys, [&](size_t i, const std::string* v) {
    CHECK_EQUAL(got.size(), i);
    got.push_back(v ? *v : "<nil>");
  });
  CHECK_EQUAL(4u, got.size());
  STRCMP_EQUAL("3", got[0].c_str());
  STRCMP_EQUAL("<nil>", got[1].c_str());
  STRCMP_EQUAL("<nil>", got[2].c_str());
  STRCMP_EQUAL("2", got[3].c_str());
}

TEST(StringOps, Append) {
  int64_t len = 0;
  CHECK(cache::Append(c(), t, "k", "ab", kMax, &len) == Status::kOk);
  CHECK_EQUAL(2, len);
  CHECK(cache::Append(c(), t, "k", "cd", kMax, &len) == Status::kOk);
  CHECK_EQUAL(4, len);
  STRCMP_EQUAL("abcd", Get("k").c_str());
  // To an int-encoded counter: appended to its decimal text, now a string.
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", -12, &r) == Status::kOk);
  CHECK(cache::Append(c(), t, "n", "5", kMax, &len) == Status::kOk);
  CHECK_EQUAL(4, len);
  STRCMP_EQUAL("-125", Get("n").c_str());
  CHECK(cache::IncrBy(c(), t, "n", 1, &r) == Status::kOk);
  CHECK_EQUAL(-124, r);
  // Limits, wrong type, TTL kept.
  CHECK(cache::Append(c(), t, "k", "xyz", 6, &len) == Status::kTooBig);
  STRCMP_EQUAL("abcd", Get("k").c_str());
  MakeHash("h");
  CHECK(cache::Append(c(), t, "h", "x", kMax, &len) == Status::kWrongType);
  bool changed;
  int64_t at = cache::NowMs(c()) + 60000;
  CHECK(cache::SetExpire(c(), t, "k", at, cache::ExpireCond::kAlways, &changed) == Status::kOk);
  CHECK(cache::Append(c(), t, "k", "e", kMax, &len) == Status::kOk);
  CHECK_EQUAL(at, ExpireOf("k"));
}

TEST(StringOps, AppendRetriesOnConcurrentWriter) {
  CHECK(cache::Set(c(), t, "k", "x") == Status::kOk);
  Interleave w(1, [&] { CHECK(cache::Set(c(), t, "k", "yy") == Status::kOk); });
  int64_t len = 0;
  CHECK(cache::Append(c(), t, "k", "z", kMax, &len) == Status::kOk);
  // Not "xz" (a lost write): the retry appended to the concurrent value.
  STRCMP_EQUAL("yyz", Get("k").c_str());
  CHECK_EQUAL(3, len);
  CHECK_EQUAL(2, w.calls);
}

TEST(StringOps, AppendToKeyCreatedConcurrently) {
  Interleave w(1, [&] { CHECK(cache::Set(c(), t, "k", "first") == Status::kOk); });
  int64_t len = 0;
  CHECK(cache::Append(c(), t, "k", "!", kMax, &len) == Status::kOk);
  STRCMP_EQUAL("first!", Get("k").c_str());
}

TEST(StringOps, RmwGivesUpWithBusy) {
  CHECK(cache::Set(c(), t, "k", "0") == Status::kOk);
  int n = 0;
  Interleave w(1 << 30, [&] { CHECK(cache::Set(c(), t, "k", std::to_string(++n)) == Status::kOk); });
  int64_t len;
  CHECK(cache::Append(c(), t, "k", "z", kMax, &len) == Status::kBusy);
  CHECK_EQUAL(1000, w.calls);
}

TEST(StringOps, StrLenGetRange) {
  int64_t len = -1;
  CHECK(cache::StrLen(c(), t, "k", &len) == Status::kOk);
  CHECK_EQUAL(0, len);
  CHECK(cache::Set(c(), t, "k", "Hello World") == Status::kOk);
  CHECK(cache::StrLen(c(), t, "k", &len) == Status::kOk);
  CHECK_EQUAL(11, len);
  std::string v;
  CHECK(cache::GetRange(c(), t, "k", 0, 4, &v) == Status::kOk);
  STRCMP_EQUAL("Hello", v.c_str());
  CHECK(cache::GetRange(c(), t, "k", -5, -1, &v) == Status::kOk);
  STRCMP_EQUAL("World", v.c_str());
  CHECK(cache::GetRange(c(), t, "k", -1, -5, &v) == Status::kOk);
  STRCMP_EQUAL("", v.c_str());
  CHECK(cache::GetRange(c(), t, "k", 5, 3, &v) == Status::kOk);
  STRCMP_EQUAL("", v.c_str());
  CHECK(cache::GetRange(c(), t, "k", -100, 100, &v) == Status::kOk);
  STRCMP_EQUAL("Hello World", v.c_str());
  CHECK(cache::GetRange(c(), t, "k", 20, 30, &v) == Status::kOk);
  STRCMP_EQUAL("", v.c_str());
  CHECK(cache::GetRange(c(), t, "absent", 0, -1, &v) == Status::kOk);
  STRCMP_EQUAL("", v.c_str());
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", 12345, &r) == Status::kOk);
  CHECK(cache::GetRange(c(), t, "n", 1, 2, &v) == Status::kOk);
  STRCMP_EQUAL("23", v.c_str());
  MakeHash("h");
  CHECK(cache::StrLen(c(), t, "h", &len) == Status::kWrongType);
  CHECK(cache::GetRange(c(), t, "h", 0, 1, &v) == Status::kWrongType);
}

TEST(StringOps, SetRangePadsAndLimits) {
  int64_t len = 0;
  CHECK(cache::SetRange(c(), t, "k", 3, "ab", kMax, &len) == Status::kOk);
  CHECK_EQUAL(5, len);
  std::string v = Get("k");
  CHECK(v == std::string("\0\0\0ab", 5));
  CHECK(cache::SetRange(c(), t, "k", 1, "XYZW", kMax, &len) == Status::kOk);
  CHECK(Get("k") == std::string("\0XYZW", 5));
  CHECK(cache::SetRange(c(), t, "k", -1, "a", kMax, &len) == Status::kOutOfRange);
  // offset + size above the maximum value: refused, nothing changed.
  CHECK(cache::SetRange(c(), t, "k", 100, "a", 100, &len) == Status::kTooBig);
  CHECK(cache::SetRange(c(), t, "k", 99, "a", 100, &len) == Status::kOk);
  CHECK_EQUAL(100, len);
  // An empty value: the length, no creation.
  CHECK(cache::SetRange(c(), t, "k", 1000, "", 100, &len) == Status::kOk);
  CHECK_EQUAL(100, len);
  CHECK(cache::SetRange(c(), t, "none", 5, "", kMax, &len) == Status::kOk);
  CHECK_EQUAL(0, len);
  std::string x;
  CHECK(cache::StrGet(c(), t, "none", &x) == Status::kNotFound);
  // On a counter: its text is overwritten.
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", 100, &r) == Status::kOk);
  CHECK(cache::SetRange(c(), t, "n", 0, "2", kMax, &len) == Status::kOk);
  STRCMP_EQUAL("200", Get("n").c_str());
  MakeHash("h");
  CHECK(cache::SetRange(c(), t, "h", 0, "x", kMax, &len) == Status::kWrongType);
}

TEST(StringOps, SetRangeRetriesOnConcurrentWriter) {
  CHECK(cache::Set(c(), t, "k", "aaaa") == Status::kOk);
  Interleave w(2, [&] { CHECK(cache::Set(c(), t, "k", "bbbbbb") == Status::kOk); });
  int64_t len = 0;
  CHECK(cache::SetRange(c(), t, "k", 1, "X", kMax, &len) == Status::kOk);
  STRCMP_EQUAL("bXbbbb", Get("k").c_str());
  CHECK_EQUAL(3, w.calls);
}

TEST(StringOps, IncrDecrEdges) {
  int64_t r;
  CHECK(cache::Set(c(), t, "max", std::to_string(std::numeric_limits<int64_t>::max())) == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "max", 1, &r) == Status::kOverflow);
  CHECK(cache::DecrBy(c(), t, "x", std::numeric_limits<int64_t>::min(), &r) == Status::kDecrOverflow);
  CHECK(cache::DecrBy(c(), t, "x", 5, &r) == Status::kOk);
  CHECK_EQUAL(-5, r);
  CHECK(cache::Set(c(), t, "s", "12a") == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "s", 1, &r) == Status::kNotInteger);
  CHECK(cache::Set(c(), t, "sp", " 1") == Status::kOk);
  CHECK(cache::IncrBy(c(), t, "sp", 1, &r) == Status::kNotInteger);
  MakeHash("h");
  CHECK(cache::IncrBy(c(), t, "h", 1, &r) == Status::kWrongType);
}

TEST(StringOps, IncrByFloat) {
  std::string out;
  CHECK(cache::IncrByFloat(c(), t, "f", 10.5L, &out) == Status::kOk);
  STRCMP_EQUAL("10.5", out.c_str());
  CHECK(cache::IncrByFloat(c(), t, "f", 0.1L, &out) == Status::kOk);
  STRCMP_EQUAL("10.6", out.c_str());
  CHECK(cache::IncrByFloat(c(), t, "f", -10.6L, &out) == Status::kOk);
  STRCMP_EQUAL("0", out.c_str());
  // On a counter, on a string that is not a float, NaN / infinity.
  int64_t r;
  CHECK(cache::IncrBy(c(), t, "n", 3, &r) == Status::kOk);
  CHECK(cache::IncrByFloat(c(), t, "n", 1.5L, &out) == Status::kOk);
  STRCMP_EQUAL("4.5", out.c_str());
  CHECK(cache::Set(c(), t, "s", "abc") == Status::kOk);
  CHECK(cache::IncrByFloat(c(), t, "s", 1, &out) == Status::kNotFloat);
  STRCMP_EQUAL("abc", Get("s").c_str());
  long double huge = std::numeric_limits<long double>::max();
  CHECK(cache::IncrByFloat(c(), t, "f", huge, &out) == Status::kOk);
  CHECK(cache::IncrByFloat(c(), t, "f", huge, &out) == Status::kNanOrInf);
  CHECK(cache::IncrByFloat(c(), t, "z", std::numeric_limits<long double>::infinity(), &out) ==
        Status::kNanOrInf);
  std::string v;
  CHECK(cache::StrGet(c(), t, "z", &v) == Status::kNotFound);
  MakeHash("h");
  CHECK(cache::IncrByFloat(c(), t, "h", 1, &out) == Status::kWrongType);
  // TTL kept.
  bool changed;
  int64_t at = cache::NowMs(c()) + 60000;
  CHECK(cache::SetExpire(c(), t, "f", at, cache::ExpireCond::kAlways, &changed) == Status::kOk);
  CHECK(cache::IncrByFloat(c(), t, "f", 1, &out) == Status::kOk);
  CHECK_EQUAL(at, ExpireOf("f"));
}

TEST(StringOps, IncrByFloatRetriesOnConcurrentWriter) {
  CHECK(cache::Set(c(), t, "f", "1") == Status::kOk);
  Interleave w(1, [&] { CHECK(cache::Set(c(), t, "f", "100") == Status::kOk); });
  std::string out;
  CHECK(cache::IncrByFloat(c(), t, "f", 0.5L, &out) == Status::kOk);
  STRCMP_EQUAL("100.5", out.c_str());
}

TEST(StringOps, NumberParsing) {
  int64_t v;
  CHECK(cache::ParseInt64("-9223372036854775808", &v));
  CHECK_EQUAL(std::numeric_limits<int64_t>::min(), v);
  CHECK_FALSE(cache::ParseInt64("9223372036854775808", &v));
  CHECK_FALSE(cache::ParseInt64("01", &v));
  CHECK_FALSE(cache::ParseInt64("+1", &v));
  CHECK_FALSE(cache::ParseInt64("-0", &v));
  CHECK_FALSE(cache::ParseInt64("", &v));
  long double d;
  CHECK(cache::ParseLongDouble("1.5e3", &d));
  CHECK(d == 1500.0L);
  CHECK_FALSE(cache::ParseLongDouble(" 1", &d));
  CHECK_FALSE(cache::ParseLongDouble("1 ", &d));
  CHECK_FALSE(cache::ParseLongDouble("nan", &d));
  CHECK_FALSE(cache::ParseLongDouble("1e99999", &d));
  STRCMP_EQUAL("3", cache::FormatLongDouble(3.0L).c_str());
  STRCMP_EQUAL("0", cache::FormatLongDouble(-0.0L).c_str());
  STRCMP_EQUAL("-1.25", cache::FormatLongDouble(-1.25L).c_str());
}
