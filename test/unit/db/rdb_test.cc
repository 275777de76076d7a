// perfcached — unit tests for db/rdb: DUMP payloads we write, and the Redis encodings we read.
// Copyright (c) 2026 the perfcached authors.
#include <string>
#include <vector>

#include "cache/export.h"
#include "db/rdb.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// The trailer Redis appends: version (LE16), CRC-64 of all before (LE64).
std::string Seal(std::string body, uint16_t version) {
  body.push_back(static_cast<char>(version & 0xff));
  body.push_back(static_cast<char>(version >> 8));
  uint64_t crc = db::Crc64Jones(body.data(), body.size());
  for (int s = 0; s < 64; s += 8) body.push_back(static_cast<char>((crc >> s) & 0xff));
  return body;
}

std::vector<std::string> Items(const std::string& enc, bool pairs) {
  std::vector<std::string> out;
  std::string err;
  CHECK(cache::DecodeItems(enc, pairs, [&](std::string_view a, std::string_view b) {
    out.emplace_back(a);
    if (pairs) out.emplace_back(b);
  }, &err));
  return out;
}

cache::Entry Restore(const std::string& payload) {
  cache::Entry e;
  std::string err, why;
  bool ok = db::RdbRestore(payload, &e, &err, &why);
  if (!ok) FAIL((err + ": " + why).c_str());
  return e;
}

std::string Refused(const std::string& payload) {
  cache::Entry e;
  std::string err, why;
  CHECK_FALSE(db::RdbRestore(payload, &e, &err, &why));
  CHECK(!why.empty());
  return err;
}

}  // namespace

TEST_GROUP(Rdb){};

TEST(Rdb, Crc64CheckValue) {
  UNSIGNED_LONGLONGS_EQUAL(0xe9c6d914c4b8d9caULL, db::Crc64Jones("123456789", 9));
  // continued over two pieces, as over one
  uint64_t c = db::Crc64Jones("1234", 4);
  UNSIGNED_LONGLONGS_EQUAL(0xe9c6d914c4b8d9caULL, db::Crc64Jones("56789", 5, c));
}

// Redis's documentation: SET mykey 10; DUMP mykey.
TEST(Rdb, RedisDocumentationPayload) {
  std::string p = Bytes({0x00, 0xc0, 0x0a, 0x09, 0x00, 0xbe, 0x6d, 0x06, 0x89, 0x5a, 0x28, 0x00, 0x0a});
  cache::Entry e = Restore(p);
  LONGS_EQUAL(cache::kTypeInt, e.type);
  STRCMP_EQUAL("10", e.value.c_str());
  p[2] = 0x0b;  // one bit of the value changed: the CRC no longer matches
  STRCMP_EQUAL(db::kRdbBadChecksum, Refused(p).c_str());
}

TEST(Rdb, RoundTripsEveryType) {
  std::vector<cache::Entry> in(6);
  in[0].type = cache::kTypeString;
  in[0].value = std::string(20000, 'x') + std::string("\0\r\n", 3);
  in[1].type = cache::kTypeInt;
  in[1].value = "-9223372036854775808";
  in[2].type = cache::kTypeInt;
  in[2].value = "-200";
  in[3].type = cache::kTypeInt;
  in[3].value = "70000";
  in[4].type = cache::kTypeHash;
  cache::AppendItem(&in[4].value, "f1");
  cache::AppendItem(&in[4].value, "");
  cache::AppendItem(&in[4].value, std::string(100, 'f'));
  cache::AppendItem(&in[4].value, "v2");
  in[5].type = cache::kTypeSet;
  for (int k = 0; k < 300; ++k) cache::AppendItem(&in[5].value, "m" + std::to_string(k));
  for (const cache::Entry& e : in) {
    std::string p, err;
    CHECK(db::RdbDump(e, &p, &err));
    LONGS_EQUAL(db::kRdbDumpVersion, static_cast<uint8_t>(p[p.size() - 10]));
    cache::Entry back = Restore(p);
    // RDB has integer encodings up to 32 bits only: a wider counter goes as
    // its digits and comes back a counter (as Redis keeps any canonical
    // integer string an integer).
    LONGS_EQUAL(int{e.type}, int{back.type});
    CHECK(e.value == back.value);
  }
}

TEST(Rdb, DigitsComeBackACounterOnlyWhenCanonical) {
  // Strings of digits that are not canonical int64 stay strings: a leading
  // zero or '+', a space, 2^63, more than 20 bytes.
  for (const char* v : {"007", "+5", " 5", "9223372036854775808", "-0", "1e3", "123456789012345678901"}) {
    cache::Entry e;
    e.type = cache::kTypeString;
    e.value = v;
    std::string p, err;
    CHECK(db::RdbDump(e, &p, &err));
    cache::Entry back = Restore(p);
    LONGS_EQUAL(int{cache::kTypeString}, int{back.type});
    STRCMP_EQUAL(v, back.value.c_str());
  }
  cache::Entry e;
  e.type = cache::kTypeString;
  e.value = "-9223372036854775807";  // canonical: a counter, as in Redis
  std::string p, err;
  CHECK(db::RdbDump(e, &p, &err));
  LONGS_EQUAL(int{cache::kTypeInt}, int{Restore(p).type});
}

TEST(Rdb, SmallCountersUseRedisIntegerEncodings) {
  cache::Entry e;
  e.type = cache::kTypeInt;
  e.value = "-2";
  std::string p, err;
  CHECK(db::RdbDump(e, &p, &err));
  CHECK(p.substr(0, 3) == Bytes({0x00, 0xc0, 0xfe}));
  e.value = "1000";
  CHECK(db::RdbDump(e, &p, &err));
  CHECK(p.substr(0, 4) == Bytes({0x00, 0xc1, 0xe8, 0x03}));
}

// What Redis 7 writes for a short string it compresses: LZF.
TEST(Rdb, LzfStrings) {
  // "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"
  // by hand: literal "a", a back-reference of 99 - 1 ... at distance 1, literal "b".
  std::string want = std::string(99, 'a') + "b";
  std::string lzf = Bytes({0x00, 'a'});
  // 98 more 'a': reference len = 98 - 2 = 96 = 7 + 89 -> ctrl (7 << 5) | 0, extra 89, offset byte 0
  lzf += Bytes({0xe0, 89, 0x00});
  lzf += Bytes({0x00, 'b'});
  std::string body = Bytes({0x00, 0xc3, static_cast<int>(lzf.size()), 0x40, 100}) + lzf;  // 100: a 14-bit length
  cache::Entry e = Restore(Seal(body, 10));
  LONGS_EQUAL(cache::kTypeString, e.type);
  CHECK(want == e.value);
  // the declared length longer than the stream: refused
  body[4] = 101;
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(body, 10)).c_str());
  // a reference before the start: refused
  std::string bad = Bytes({0x00, 0xc3, 3, 10, 0x20, 0x05, 0x00});
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(bad, 10)).c_str());
}

TEST(Rdb, Intset) {
  // width 2, three members: 1, -5, 300
  std::string blob = Bytes({2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0xfb, 0xff, 0x2c, 0x01});
  std::string body = Bytes({11, static_cast<int>(blob.size())}) + blob;
  cache::Entry e = Restore(Seal(body, 10));
  LONGS_EQUAL(cache::kTypeSet, e.type);
  std::vector<std::string> want{"1", "-5", "300"};
  CHECK(want == Items(e.value, false));
  blob[4] = 4;  // a count the blob does not hold
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({11, static_cast<int>(blob.size())}) + blob, 10)).c_str());
}

TEST(Rdb, ListpackHash) {
  // entries "name" (6-bit str), "x" , "n" , 5 (7-bit uint), "neg", -3 (13-bit int)
  std::string entries = Bytes({0x84, 'n', 'a', 'm', 'e', 5}) + Bytes({0x81, 'x', 2}) + Bytes({0x81, 'n', 2}) +
                        Bytes({0x05, 1}) + Bytes({0x83, 'n', 'e', 'g', 4}) + Bytes({0xdf, 0xfd, 2});
  uint32_t total = static_cast<uint32_t>(6 + entries.size() + 1);
  std::string blob = Bytes({static_cast<int>(total), 0, 0, 0, 6, 0}) + entries + Bytes({0xff});
  cache::Entry e = Restore(Seal(Bytes({16, static_cast<int>(blob.size())}) + blob, 11));
  LONGS_EQUAL(cache::kTypeHash, e.type);
  std::vector<std::string> want{"name", "x", "n", "5", "neg", "-3"};
  CHECK(want == Items(e.value, true));
  // five entries: an odd number for a hash
  std::string odd = Bytes({static_cast<int>(total - 3), 0, 0, 0, 5, 0}) + entries.substr(0, entries.size() - 3) +
                    Bytes({0xff});
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({16, static_cast<int>(odd.size())}) + odd, 11)).c_str());
}

TEST(Rdb, ZiplistHash) {
  // zlbytes, zltail, zllen; entries: prevlen, encoding/data
  std::string entries = Bytes({0x00, 0x01, 'f'}) + Bytes({0x03, 0xf3}) +  // "f", immediate 2
                        Bytes({0x02, 0xfe, 0x80}) + Bytes({0x03, 0x01, 'v'});  // int8 -128, "v"
  uint32_t total = static_cast<uint32_t>(10 + entries.size() + 1);
  std::string blob = Bytes({static_cast<int>(total), 0, 0, 0, 0, 0, 0, 0, 4, 0}) + entries + Bytes({0xff});
  cache::Entry e = Restore(Seal(Bytes({13, static_cast<int>(blob.size())}) + blob, 9));
  std::vector<std::string> want{"f", "2", "-128", "v"};
  CHECK(want == Items(e.value, true));
}

TEST(Rdb, RefusesWhatItCannotRead) {
  // a list (type 1): not served yet
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({1, 1, 1, 'a'}), 10)).c_str());
  // a newer RDB version than we read
  STRCMP_EQUAL(db::kRdbBadChecksum, Refused(Seal(Bytes({0, 1, 'a'}), 13)).c_str());
  // trailing bytes after the object
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({0, 1, 'a', 'b'}), 10)).c_str());
  // a set claiming more members than bytes
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({2, 0x80, 0x10, 0, 0, 0, 1, 'a'}), 10)).c_str());
  // an empty set
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({2, 0}), 10)).c_str());
  // a string length past the end
  STRCMP_EQUAL(db::kRdbBadFormat, Refused(Seal(Bytes({0, 5, 'a'}), 10)).c_str());
  // too short to hold a trailer
  STRCMP_EQUAL(db::kRdbBadChecksum, Refused("\x00\x01").c_str());
}

// Back-lengths at the limits Redis uses (lpEncodeBacklen): an entry of
// 127 bytes has a 1-byte back-length, of 16383 bytes a 3-byte one.
TEST(Rdb, ListpackBackLengthsAtTheLimits) {
  for (size_t len : {size_t{127}, size_t{128}, size_t{16382}, size_t{16383}, size_t{16384}}) {
    // a 32-bit string entry: 0xF0, 4-byte length, data; len = 5 + data
    size_t data = len - 5;
    std::string entry = Bytes({0xF0, static_cast<int>(data & 0xff), static_cast<int>((data >> 8) & 0xff), 0, 0}) +
                        std::string(data, 'd');
    size_t backlen = len <= 127 ? 1 : len < 16383 ? 2 : 3;
    entry += std::string(backlen, '\x01');  // the reader skips it
    std::string second = Bytes({0x81, 'v', 2});
    uint32_t total = static_cast<uint32_t>(6 + entry.size() + second.size() + 1);
    std::string blob = Bytes({static_cast<int>(total & 0xff), static_cast<int>((total >> 8) & 0xff), 0, 0, 2, 0}) +
                       entry + second + Bytes({0xff});
    size_t n = blob.size();  // a 32-bit RDB length: 0x80, big-endian
    std::string body = Bytes({16, 0x80, 0, 0, static_cast<int>(n >> 8), static_cast<int>(n & 0xff)});
    cache::Entry e = Restore(Seal(body + blob, 10));
    std::vector<std::string> want{std::string(data, 'd'), "v"};
    CHECK_TEXT(want == Items(e.value, true), std::to_string(len).c_str());
  }
}

TEST(Rdb, WideIntegers) {
  // intset of width 8: -2^40, 7
  std::string blob = Bytes({8, 0, 0, 0, 2, 0, 0, 0}) + Bytes({0, 0, 0, 0, 0, 0xff, 0xff, 0xff}) +
                     Bytes({7, 0, 0, 0, 0, 0, 0, 0});
  cache::Entry e = Restore(Seal(Bytes({11, static_cast<int>(blob.size())}) + blob, 10));
  std::vector<std::string> want{"-1099511627776", "7"};
  CHECK(want == Items(e.value, false));
  // listpack set (type 20): int16 -300, int24 70000, int64 -5, 12-bit string of 100 bytes
  std::string entries = Bytes({0xF1, 0xd4, 0xfe, 4}) + Bytes({0xF2, 0x70, 0x11, 0x01, 5}) +
                        Bytes({0xF4, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 10}) +
                        Bytes({0xE0, 100}) + std::string(100, 's') + Bytes({102});
  uint32_t total = static_cast<uint32_t>(6 + entries.size() + 1);
  std::string lp = Bytes({static_cast<int>(total), 0, 0, 0, 4, 0}) + entries + Bytes({0xff});
  cache::Entry s = Restore(Seal(Bytes({20, 0x40, static_cast<int>(lp.size())}) + lp, 11));
  std::vector<std::string> want_s{"-300", "70000", "-5", std::string(100, 's')};
  CHECK(want_s == Items(s.value, false));
  // a ziplist entry after a 254-byte one: its prevlen is 0xFE + 4 bytes
  std::string big(250, 'b');
  std::string zl = Bytes({0x00, 0x40, 250}) + big + Bytes({0xFE, 0xFD, 0, 0, 0, 0x01, 'x'});
  uint32_t ztotal = static_cast<uint32_t>(10 + zl.size() + 1);
  std::string zblob = Bytes({static_cast<int>(ztotal & 0xff), static_cast<int>(ztotal >> 8), 0, 0, 0, 0, 0, 0, 2, 0}) +
                      zl + Bytes({0xff});
  cache::Entry z = Restore(Seal(Bytes({13, 0x41, static_cast<int>(zblob.size() & 0xff)}) + zblob, 9));
  std::vector<std::string> want_z{big, "x"};
  CHECK(want_z == Items(z.value, true));
}
