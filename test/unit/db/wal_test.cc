// perfcached — unit tests for db/wal (records, segments, torn tails) and the versions replay relies on.
// Copyright (c) 2026 the perfcached authors.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cache/dict.h"
#include "cache/export.h"
#include "cache/ops.h"
#include "db/probe.h"
#include "db/wal.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

namespace {

std::string Record(db::WalKind k, const std::string& coll, const std::string& key, const std::string& value,
                   uint64_t version) {
  std::string out;
  db::EncodeWalRecord(k, coll, key, cache::kTypeString, value, 0, version, &out);
  return out;
}

}  // namespace

TEST_GROUP(WalRecord) {};

TEST(WalRecord, RoundTripsEveryKind) {
  std::string buf;
  cache::Entry e;
  e.key = "k";
  e.type = cache::kTypeHash;
  cache::AppendItem(&e.value, "f");
  cache::AppendItem(&e.value, "v");
  e.expire_ms = 1234567;
  e.version = 99;
  db::EncodeWalPut("coll", e, &buf);
  db::EncodeWalRecord(db::kWalTombstone, "coll", "gone", 0, {}, 0, 7, &buf);
  db::EncodeWalRecord(db::kWalFlush, "c2", {}, 0, {}, 0, 42, &buf);
  db::WalRecord r;
  size_t used = 0, off = 0;
  std::string err;
  CHECK(db::DecodeWalRecord(std::string_view(buf).substr(off), &r, &used, &err) == db::WalDecode::kOk);
  off += used;
  LONGS_EQUAL(db::kWalPut, r.kind);
  STRCMP_EQUAL("coll", r.collection.c_str());
  STRCMP_EQUAL("k", r.entry.key.c_str());
  LONGS_EQUAL(cache::kTypeHash, r.entry.type);
  CHECK(r.entry.value == e.value);
  LONGS_EQUAL(1234567, r.entry.expire_ms);
  LONGS_EQUAL(99, r.entry.version);
  CHECK(db::DecodeWalRecord(std::string_view(buf).substr(off), &r, &used, &err) == db::WalDecode::kOk);
  off += used;
  LONGS_EQUAL(db::kWalTombstone, r.kind);
  LONGS_EQUAL(7, r.entry.version);
  CHECK(db::DecodeWalRecord(std::string_view(buf).substr(off), &r, &used, &err) == db::WalDecode::kOk);
  off += used;
  LONGS_EQUAL(db::kWalFlush, r.kind);
  STRCMP_EQUAL("c2", r.collection.c_str());
  LONGS_EQUAL(buf.size(), off);
}

TEST(WalRecord, FieldsRecordsRoundTripAndBadChangesAreDamage) {
  db::WalFieldChanges ch = {{"f1", std::string("v1")}, {"gone", std::nullopt}, {"", std::string()}};
  std::string buf;
  db::EncodeWalFields("c", "h", cache::kTypeHash, 777, 42, ch, &buf);
  db::EncodeWalFields("c", "s", cache::kTypeSet, 0, 43, {{"m", std::string()}, {"x", std::nullopt}}, &buf);
  db::WalRecord r;
  size_t used = 0;
  std::string err;
  CHECK(db::DecodeWalRecord(buf, &r, &used, &err) == db::WalDecode::kOk);
  LONGS_EQUAL(db::kWalFields, r.kind);
  LONGS_EQUAL(777, r.entry.expire_ms);
  LONGS_EQUAL(42, r.entry.version);
  db::WalFieldChanges back;
  CHECK(db::DecodeWalFields(r.entry.value, r.entry.type, &back));
  CHECK(back == ch);
  CHECK(db::DecodeWalRecord(std::string_view(buf).substr(used), &r, &used, &err) == db::WalDecode::kOk);
  CHECK(db::DecodeWalFields(r.entry.value, r.entry.type, &back));
  LONGS_EQUAL(2, back.size());
  CHECK(back[0].second.has_value() && back[0].second->empty());
  CHECK(!back[1].second.has_value());
  // A change list that does not parse, or a fields record of a string, is
  // damage even under a good checksum.
  for (std::string value : {std::string("\x02\x01\x01" "f"), std::string("\x01\x03\x01" "f"), std::string("\x01")}) {
    std::string bad;
    db::EncodeWalRecord(db::kWalFields, "c", "h", cache::kTypeHash, value, 0, 1, &bad);
    CHECK(db::DecodeWalRecord(bad, &r, &used, &err) == db::WalDecode::kBad);
  }
  std::string str;
  db::EncodeWalRecord(db::kWalFields, "c", "h", cache::kTypeString, "\x00", 0, 1, &str);
  CHECK(db::DecodeWalRecord(str, &r, &used, &err) == db::WalDecode::kBad);
}

TEST(WalRecord, ExpireRecordsRoundTripAndAnyOtherShapeIsDamage) {
  std::string buf;
  db::EncodeWalRecord(db::kWalExpire, "c", "h", cache::kTypeHash, {}, 1234567, 42, &buf);
  db::EncodeWalRecord(db::kWalExpire, "c", "s", cache::kTypeSet, {}, 0, 43, &buf);  // PERSIST
  db::WalRecord r;
  size_t used = 0;
  std::string err;
  CHECK(db::DecodeWalRecord(buf, &r, &used, &err) == db::WalDecode::kOk);
  LONGS_EQUAL(db::kWalExpire, r.kind);
  STRCMP_EQUAL("h", r.entry.key.c_str());
  LONGS_EQUAL(cache::kTypeHash, r.entry.type);
  LONGS_EQUAL(1234567, r.entry.expire_ms);
  LONGS_EQUAL(42, r.entry.version);
  CHECK(db::DecodeWalRecord(std::string_view(buf).substr(used), &r, &used, &err) == db::WalDecode::kOk);
  LONGS_EQUAL(cache::kTypeSet, r.entry.type);
  LONGS_EQUAL(0, r.entry.expire_ms);
  // Of a string, with a value, without a key, with a negative expiry: damage.
  struct Bad {
    uint8_t type;
    const char* key;
    const char* value;
    int64_t exp;
  } bad[] = {{cache::kTypeString, "k", "", 1}, {cache::kTypeInt, "k", "", 1}, {cache::kTypeHash, "k", "x", 1},
             {cache::kTypeSet, "", "", 1}, {cache::kTypeHash, "k", "", -5}};
  for (const Bad& b : bad) {
    std::string rec;
    db::EncodeWalRecord(db::kWalExpire, "c", b.key, b.type, b.value, b.exp, 1, &rec);
    CHECK(db::DecodeWalRecord(rec, &r, &used, &err) == db::WalDecode::kBad);
  }
  // A kind after the last one (7, part) is unknown.
  std::string next;
  db::EncodeWalRecord(static_cast<db::WalKind>(8), "c", "k", cache::kTypeHash, {}, 0, 1, &next);
  CHECK(db::DecodeWalRecord(next, &r, &used, &err) == db::WalDecode::kBad);
  CHECK(err.find("unknown record kind 8") != std::string::npos);
}

TEST(WalRecord, EveryCutIsShortAndEveryFlippedByteIsCaught) {
  std::string rec = Record(db::kWalPut, "0", "key", "value", 5);
  db::WalRecord r;
  size_t used;
  std::string err;
  for (size_t n = 0; n < rec.size(); ++n) {
    CHECK(db::DecodeWalRecord(std::string_view(rec).substr(0, n), &r, &used, &err) == db::WalDecode::kShort);
  }
  for (size_t i = 0; i < rec.size(); ++i) {
    std::string bad = rec;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    db::WalDecode d = db::DecodeWalRecord(bad, &r, &used, &err);
    // A flipped length byte may make the record look longer (short) or
    // shorter (a checksum over other bytes): never accepted.
    CHECK(d != db::WalDecode::kOk);
  }
  // A length that lies is refused before anything is read for it.
  std::string huge = rec;
  uint32_t len = 0xFFFFFFF0u;
  std::memcpy(huge.data(), &len, 4);
  CHECK(db::DecodeWalRecord(huge, &r, &used, &err) == db::WalDecode::kBad);
  CHECK(err.find("not believable") != std::string::npos);
}

TEST_GROUP(WalSegments) {
  std::string dir;
  void setup() override {
    char tmpl[] = "/tmp/perfcached-walunit-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  void teardown() override { std::filesystem::remove_all(dir); }
  void Segment(uint64_t start, const std::string& body, uint32_t flags = 0) {
    std::ofstream out(dir + "/" + db::WalSegmentName(start), std::ios::binary | std::ios::trunc);
    std::string h = db::WalSegmentHeader(start, flags);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
  }
  // The keys of the records ReadWal hands out from `from`, in order.
  std::vector<std::string> Keys(uint64_t from, bool repair, db::WalReadReport* rep) {
    std::vector<std::string> keys;
    std::string err;
    CHECK(db::ReadWal(dir, from, repair, [&](uint64_t, const db::WalRecord& r) {
      keys.push_back(r.entry.key);
      return true;
    }, rep, &err));
    return keys;
  }
  void Fresh() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directory(dir);
  }
};

TEST(WalSegments, ReadsFromAPositionAcrossSegments) {
  std::string a = Record(db::kWalPut, "0", "a", "1", 1) + Record(db::kWalPut, "0", "b", "2", 2);
  std::string b = Record(db::kWalPut, "0", "c", "3", 3);
  Segment(0, a);
  Segment(a.size(), b);
  STRCMP_EQUAL("wal-0000000000000000.log", db::WalSegmentName(0).c_str());
  LONGS_EQUAL(a.size() + b.size(), db::WalEndPosition(dir));
  std::vector<std::string> keys;
  db::WalReadReport rep;
  std::string err;
  auto collect = [&](uint64_t, const db::WalRecord& r) {
    keys.push_back(r.entry.key);
    return true;
  };
  CHECK(db::ReadWal(dir, 0, false, collect, &rep, &err));
  LONGS_EQUAL(3, keys.size());
  LONGS_EQUAL(a.size() + b.size(), rep.end);
  keys.clear();
  rep = {};
  size_t second = Record(db::kWalPut, "0", "a", "1", 1).size();
  CHECK(db::ReadWal(dir, second, false, collect, &rep, &err));  // from b on
  LONGS_EQUAL(2, keys.size());
  STRCMP_EQUAL("b", keys[0].c_str());
  // A snapshot at position a.size() covers the first segment wholly.
  LONGS_EQUAL(1, db::DropWalSegmentsBelow(dir, a.size()));
  LONGS_EQUAL(1, db::ListWalSegments(dir).size());
  LONGS_EQUAL(0, db::DropWalSegmentsBelow(dir, 1u << 30));  // the newest always stays
}

TEST(WalSegments, ATornTailIsReportedAndCutWithRepair) {
  std::string good = Record(db::kWalPut, "0", "a", "1", 1);
  std::string torn = Record(db::kWalPut, "0", "b", "2", 2);
  Segment(0, good + torn.substr(0, torn.size() - 3));
  db::WalReadReport rep;
  std::string err;
  uint64_t n = 0;
  CHECK(db::ReadWal(dir, 0, false, [&](uint64_t, const db::WalRecord&) { return ++n, true; }, &rep, &err));
  LONGS_EQUAL(1, n);
  LONGS_EQUAL(torn.size() - 3, rep.torn_bytes);
  LONGS_EQUAL(1, rep.problems.size());
  CHECK(rep.problems[0].find("a torn record") != std::string::npos);
  std::string path = db::ListWalSegments(dir)[0].second;
  LONGS_EQUAL(db::kWalSegmentHeader + good.size() + torn.size() - 3, std::filesystem::file_size(path));
  rep = {};
  CHECK(db::ReadWal(dir, 0, true, {}, &rep, &err));  // repair: cut
  LONGS_EQUAL(db::kWalSegmentHeader + good.size(), std::filesystem::file_size(path));
  rep = {};
  CHECK(db::ReadWal(dir, 0, false, {}, &rep, &err));
  LONGS_EQUAL(0, rep.problems.size());
  LONGS_EQUAL(1, rep.records);
}

// fsync = always: the WAL process writes records over zeros laid down
// ahead (db/wal.h kWalSegmentZeroFilled).
TEST(WalSegments, AZeroFilledSegmentEndsAtItsFirstZeroRecordHead) {
  std::string a = Record(db::kWalPut, "0", "a", "1", 1), b = Record(db::kWalPut, "0", "b", "2", 2);
  Segment(0, a + b + std::string(4096, '\0'), db::kWalSegmentZeroFilled);
  std::string path = db::ListWalSegments(dir)[0].second;
  db::WalReadReport rep;
  std::vector<std::string> keys = Keys(0, true, &rep);
  LONGS_EQUAL(2, keys.size());
  LONGS_EQUAL(0, rep.problems.size());
  LONGS_EQUAL(0, rep.torn_bytes);
  LONGS_EQUAL(a.size() + b.size(), rep.end);
  LONGS_EQUAL(a.size() + b.size(), rep.written_end);
  // The next segment starts after the records, not after the zeros.
  LONGS_EQUAL(a.size() + b.size(), db::WalEndPosition(dir));
  LONGS_EQUAL(db::kWalSegmentHeader + a.size() + b.size() + 4096, std::filesystem::file_size(path));  // not cut
  // The same bytes without the flag: the zeros are damage, cut by a repair
  // (what a reader older than the flag does with such a segment).
  Fresh();
  Segment(0, a + b + std::string(4096, '\0'));
  rep = {};
  keys = Keys(0, true, &rep);
  LONGS_EQUAL(2, keys.size());
  LONGS_EQUAL(1, rep.problems.size());
  LONGS_EQUAL(db::kWalSegmentHeader + a.size() + b.size(), std::filesystem::file_size(db::ListWalSegments(dir)[0].second));
}

TEST(WalSegments, ATornRecordInAZeroFilledSegmentIsCutAndOnlyItsBytesCount) {
  std::string good = Record(db::kWalPut, "0", "a", "1", 1), torn = Record(db::kWalPut, "0", "b", "xyz", 2);
  // The last byte never reached the disk: a zero where 'z' was.
  Segment(0, good + torn.substr(0, torn.size() - 1) + std::string(8192, '\0'), db::kWalSegmentZeroFilled);
  std::string path = db::ListWalSegments(dir)[0].second;
  db::WalReadReport rep;
  LONGS_EQUAL(1, Keys(0, false, &rep).size());
  LONGS_EQUAL(1, rep.problems.size());
  CHECK(rep.problems[0].find("cut off") != std::string::npos);
  LONGS_EQUAL(torn.size() - 1, rep.torn_bytes);  // not the zeros after it
  // Not repaired: the next segment starts after the torn bytes.
  LONGS_EQUAL(good.size() + torn.size() - 1, db::WalEndPosition(dir));
  rep = {};
  Keys(0, true, &rep);  // repair: cut at the torn record
  LONGS_EQUAL(db::kWalSegmentHeader + good.size(), std::filesystem::file_size(path));
  LONGS_EQUAL(good.size(), rep.written_end);
  rep = {};
  LONGS_EQUAL(1, Keys(0, false, &rep).size());
  LONGS_EQUAL(0, rep.problems.size());
  LONGS_EQUAL(good.size(), db::WalEndPosition(dir));
}

// Found by the fuzzer: a torn record whose length reaches exactly the end
// of a zero-filled file was skipped as one damaged record, and the next
// segment's start was put after the zeros.
TEST(WalSegments, ATornRecordEndingAtTheEndOfAZeroFilledFileIsCutNotSkipped) {
  std::string good = Record(db::kWalPut, "0", "a", "1", 1), torn = Record(db::kWalPut, "0", "b", std::string(200, 'v'), 2);
  std::string body = good + torn.substr(0, 20);
  body.resize(good.size() + torn.size(), '\0');  // the rest of the record never written: zeros to the end
  Segment(0, body, db::kWalSegmentZeroFilled);
  db::WalReadReport rep;
  LONGS_EQUAL(1, Keys(0, false, &rep).size());
  LONGS_EQUAL(1, rep.problems.size());
  CHECK(rep.problems[0].find("cut off") != std::string::npos);
  CHECK(db::WalEndPosition(dir) <= good.size() + 20);
  Keys(0, true, &rep);
  LONGS_EQUAL(db::kWalSegmentHeader + good.size(), std::filesystem::file_size(db::ListWalSegments(dir)[0].second));
}

TEST(WalSegments, BytesPastAHoleInAZeroFilledSegmentAreATornWrite) {
  // A write whose first sectors were lost and later ones kept: nonzero
  // bytes after the zero record head that ends the records.
  std::string a = Record(db::kWalPut, "0", "a", "1", 1);
  Segment(0, a + std::string(100, '\0') + "\x01\x02\x03" + std::string(1000, '\0'), db::kWalSegmentZeroFilled);
  std::string path = db::ListWalSegments(dir)[0].second;
  db::WalReadReport rep;
  LONGS_EQUAL(1, Keys(0, false, &rep).size());
  LONGS_EQUAL(1, rep.problems.size());
  CHECK(rep.problems[0].find("a torn record (103 byte(s) after the end of the records)") != std::string::npos);
  LONGS_EQUAL(103, rep.torn_bytes);
  LONGS_EQUAL(a.size() + 103, db::WalEndPosition(dir));
  rep = {};
  Keys(0, true, &rep);
  LONGS_EQUAL(db::kWalSegmentHeader + a.size(), std::filesystem::file_size(path));
  rep = {};
  LONGS_EQUAL(1, Keys(0, false, &rep).size());
  LONGS_EQUAL(0, rep.problems.size());
}

TEST(WalSegments, ADamagedRecordInTheMiddleIsSkippedNotCut) {
  std::string a = Record(db::kWalPut, "0", "a", "1", 1);
  std::string b = Record(db::kWalPut, "0", "b", "2", 2);
  std::string c = Record(db::kWalPut, "0", "c", "3", 3);
  b[b.size() - 2] = static_cast<char>(b[b.size() - 2] ^ 1);  // a bit flipped in b's body
  Segment(0, a + b + c);
  db::WalReadReport rep;
  std::vector<std::string> keys = Keys(0, true, &rep);
  LONGS_EQUAL(2, keys.size());  // a and c: the good record after the damage is kept
  STRCMP_EQUAL("c", keys[1].c_str());
  LONGS_EQUAL(1, rep.problems.size());
  CHECK(rep.problems[0].find("skipped") != std::string::npos);
  LONGS_EQUAL(db::kWalSegmentHeader + a.size() + b.size() + c.size(),
              std::filesystem::file_size(db::ListWalSegments(dir)[0].second));  // nothing cut
}

TEST(WalSegments, ADamagedHeaderSkipsOnlyThatSegment) {
  std::string a = Record(db::kWalPut, "0", "a", "1", 1);
  Segment(0, a);
  Segment(a.size(), Record(db::kWalPut, "0", "b", "2", 2));
  std::string path = db::ListWalSegments(dir)[0].second;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(17);
  f.put('\x7f');
  f.close();
  db::WalReadReport rep;
  std::string err;
  uint64_t n = 0;
  CHECK(db::ReadWal(dir, 0, false, [&](uint64_t, const db::WalRecord&) { return ++n, true; }, &rep, &err));
  LONGS_EQUAL(1, n);
  LONGS_EQUAL(1, rep.problems.size());
  CHECK(rep.problems[0].find("header does not check") != std::string::npos);
}

// A record larger than a quarter of its ring is logged as parts (kind 7):
// cut, each part a record of its own, joined again by the reader.
namespace {

std::vector<std::string> Parts(const std::string& whole, uint64_t writer, size_t piece, uint64_t version = 7) {
  std::vector<std::string> out;
  CHECK(db::EncodeWalParts(whole, writer, "c", "big", version, piece, [&](std::string_view p) {
    out.emplace_back(p);
    return true;
  }));
  return out;
}

std::string Join(const std::vector<std::string>& v, size_t from = 0, size_t to = SIZE_MAX) {
  std::string s;
  for (size_t i = from; i < v.size() && i < to; ++i) s += v[i];
  return s;
}

}  // namespace

TEST(WalSegments, ARecordInPartsIsJoinedAtItsLastPartAndInterleavesWithOthers) {
  std::string big = Record(db::kWalPut, "c", "big", std::string(10000, 'x') + "end", 7);
  std::string other = Record(db::kWalPut, "c", "big2", std::string(9000, 'y'), 8);
  std::vector<std::string> a = Parts(big, 1, 1000), b = Parts(other, 2, 1000);
  CHECK(a.size() >= 10);
  for (const std::string& p : a) CHECK(p.size() <= 1000);
  // Two writers' parts interleaved (rings merged in any order), a small
  // record between them.
  std::string small = Record(db::kWalPut, "c", "s", "1", 9);
  std::string body;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size()) body += a[i];
    if (i == 3) body += small;
    if (i < b.size()) body += b[i];
  }
  Segment(0, body);
  std::vector<std::pair<uint64_t, db::WalRecord>> got;
  db::WalReadReport rep;
  std::string err;
  CHECK(db::ReadWal(dir, 0, false, [&](uint64_t pos, const db::WalRecord& r) {
    got.emplace_back(pos, r);
    return true;
  }, &rep, &err));
  LONGS_EQUAL(0, rep.problems.size());
  LONGS_EQUAL(3, got.size());
  LONGS_EQUAL(3, rep.records);
  LONGS_EQUAL(2, rep.joined);
  LONGS_EQUAL(a.size() + b.size(), rep.parts);
  STRCMP_EQUAL("s", got[0].second.entry.key.c_str());
  // Each whole record comes at the position of its last part, as it was.
  for (auto& [pos, r] : got) {
    if (r.entry.key == "s") continue;
    const std::vector<std::string>& v = r.entry.key == "big" ? a : b;
    std::string enc;
    db::EncodeWalPut("c", r.entry, &enc);
    CHECK(enc == (r.entry.key == "big" ? big : other));
    LONGS_EQUAL(body.find(v.back()), pos);
    LONGS_EQUAL(db::kWalPut, r.kind);
  }
}

TEST(WalSegments, PartsWhoseLastNeverCameAreDroppedAndReported) {
  std::string big = Record(db::kWalPut, "c", "big", std::string(5000, 'x'), 7);
  std::vector<std::string> a = Parts(big, 1, 1000);
  std::string after = Record(db::kWalPut, "c", "k", "v", 8);
  // The writer died after three parts; its ring's next writer starts a
  // record of its own (offset 0 again); the log ends mid-record.
  std::vector<std::string> next = Parts(Record(db::kWalPut, "c", "big", std::string(4000, 'y'), 9), 1, 1000, 9);
  std::string body = Join(a, 0, 3) + after + Join(next, 0, 2);
  Segment(0, body);
  db::WalReadReport rep;
  std::vector<std::string> keys = Keys(0, true, &rep);
  LONGS_EQUAL(1, keys.size());
  STRCMP_EQUAL("k", keys[0].c_str());
  LONGS_EQUAL(2, rep.unfinished);
  LONGS_EQUAL(2, rep.problems.size());
  CHECK(rep.problems[0].find("collection c key big") != std::string::npos);
  CHECK(rep.problems[0].find("never got its last part") != std::string::npos);
  LONGS_EQUAL(0, rep.torn_bytes);  // whole records: nothing cut
  LONGS_EQUAL(db::kWalSegmentHeader + body.size(), std::filesystem::file_size(db::ListWalSegments(dir)[0].second));
  // A part missing in the middle: the record is dropped.
  Fresh();
  Segment(0, Join(a, 0, 2) + Join(a, 3));
  rep = {};
  LONGS_EQUAL(0, Keys(0, false, &rep).size());
  LONGS_EQUAL(1, rep.unfinished);
  // A part damaged in the middle (a bit flipped): skipped as one damaged
  // record, and the record it belonged to is dropped; the next one stays.
  Fresh();
  std::string bad = a[2];
  bad[bad.size() - 3] = static_cast<char>(bad[bad.size() - 3] ^ 4);
  Segment(0, Join(a, 0, 2) + bad + Join(a, 3) + after);
  rep = {};
  keys = Keys(0, false, &rep);
  LONGS_EQUAL(1, keys.size());
  STRCMP_EQUAL("k", keys[0].c_str());
  LONGS_EQUAL(1, rep.unfinished);
  LONGS_EQUAL(2, rep.problems.size());  // the damaged part, the dropped record
  // One wholly before the start position (a write refused part-way before
  // the snapshot): dropped without a word at every later start.
  Fresh();
  std::string early = Join(a, 0, 2);
  Segment(0, early + after);
  rep = {};
  LONGS_EQUAL(1, Keys(early.size(), false, &rep).size());
  LONGS_EQUAL(0, rep.unfinished);
  LONGS_EQUAL(0, rep.problems.size());
}

// A WAL process killed after writing a batch and before moving the rings'
// tails: the next one writes the batch again, into a new segment (review,
// session 20: the joiner took the repeated part as a gap, and dropped an
// acknowledged record).
TEST(WalSegments, PartsWrittenAgainByTheNextWalProcessStillJoin) {
  std::string big = Record(db::kWalPut, "c", "big", std::string(6000, 'x'), 7);
  std::vector<std::string> a = Parts(big, 1, 1000);
  CHECK(a.size() >= 6);
  // Old segment: a0 a1 a2 and a torn a3; new segment: a1 .. the last.
  std::string old = Join(a, 0, 3) + a[3].substr(0, a[3].size() / 2);
  Segment(0, old);
  Segment(old.size(), Join(a, 1));
  db::WalReadReport rep;
  std::vector<std::string> keys = Keys(0, true, &rep);
  LONGS_EQUAL(1, keys.size());
  STRCMP_EQUAL("big", keys[0].c_str());
  LONGS_EQUAL(0, rep.unfinished);
  LONGS_EQUAL(1, rep.problems.size());  // the torn a3 of the old segment
  // Written again from its first part, after it was whole: joined twice
  // (replay is idempotent), no problem.
  Fresh();
  Segment(0, Join(a, 0, 2));
  Segment(Join(a, 0, 2).size(), Join(a, 0));
  rep = {};
  keys = Keys(0, false, &rep);
  LONGS_EQUAL(1, keys.size());
  LONGS_EQUAL(0, rep.problems.size());
  // ... and the last parts again after the record was whole: skipped.
  Fresh();
  std::string whole = Join(a, 0);
  Segment(0, whole);
  Segment(whole.size(), Join(a, a.size() - 2) + Record(db::kWalPut, "c", "k", "v", 8));
  rep = {};
  keys = Keys(0, false, &rep);
  LONGS_EQUAL(2, keys.size());
  LONGS_EQUAL(0, rep.problems.size());
}

TEST(WalSegments, PartsBeforeTheStartPositionStillJoinOrAreCoveredByTheSnapshot) {
  std::string big = Record(db::kWalPut, "c", "big", std::string(5000, 'x'), 7);
  std::vector<std::string> a = Parts(big, 1, 1000);
  std::string head = Join(a, 0, 2), tail = Join(a, 2);
  // In one segment: replay from a position between the parts still joins
  // them (the record's position is its last part's).
  Segment(0, head + tail);
  db::WalReadReport rep;
  LONGS_EQUAL(1, Keys(head.size(), false, &rep).size());
  LONGS_EQUAL(0, rep.problems.size());
  LONGS_EQUAL(a.size() - 2, rep.parts);  // parts counted from `from` on
  LONGS_EQUAL(1, rep.joined);
  // Its first parts in a segment wholly before `from` (dropped or
  // skipped): the rest is skipped quietly (the snapshot holds the write).
  Fresh();
  Segment(0, head);
  Segment(head.size(), tail);
  rep = {};
  LONGS_EQUAL(0, Keys(head.size(), false, &rep).size());
  LONGS_EQUAL(0, rep.problems.size());
  LONGS_EQUAL(0, rep.unfinished);
  rep = {};
  LONGS_EQUAL(1, Keys(0, false, &rep).size());  // both segments: joined across them
}

TEST(WalRecord, PartsAreCheckedAndTooSmallAPieceIsRefused) {
  std::string big = Record(db::kWalPut, "c", "big", std::string(3000, 'x'), 7);
  std::vector<std::string> a = Parts(big, 3, 700);
  db::WalRecord r;
  size_t used = 0;
  std::string err;
  LONGS_EQUAL(static_cast<int>(db::WalDecode::kOk), static_cast<int>(db::DecodeWalRecord(a[1], &r, &used, &err)));
  LONGS_EQUAL(db::kWalPart, r.kind);
  db::WalPart p;
  CHECK(db::DecodeWalPart(r, &p));
  LONGS_EQUAL(3, p.writer);
  LONGS_EQUAL(big.size(), p.total);
  CHECK(p.offset > 0);
  CHECK(big.compare(p.offset, p.piece.size(), p.piece) == 0);
  // A part whose piece runs past the whole's length is damage.
  std::string bad;
  std::string v;
  v += '\x03';
  v += '\x0a';  // whole length 10
  v += std::string(20, 'z');
  db::EncodeWalRecord(db::kWalPart, "c", "big", 0, v, 0, 7, &bad);
  LONGS_EQUAL(static_cast<int>(db::WalDecode::kBad), static_cast<int>(db::DecodeWalRecord(bad, &r, &used, &err)));
  CHECK(err.find("part record") != std::string::npos);
  // A piece too small to carry any of the record.
  CHECK_FALSE(db::EncodeWalParts(big, 1, "c", "big", 7, 40, [](std::string_view) { return true; }));
  // A key longer than 256 bytes is cut in the parts (reports only).
  std::string longkey(1000, 'k');
  std::string rec = Record(db::kWalPut, "c", longkey, std::string(3000, 'x'), 7);
  CHECK(db::EncodeWalParts(rec, 1, "c", longkey, 7, 1200, [&](std::string_view part) {
    CHECK(part.size() <= 1200);
    CHECK(db::DecodeWalRecord(part, &r, &used, &err) == db::WalDecode::kOk);
    LONGS_EQUAL(256, r.entry.key.size());
    return true;
  }));
}

// What replay relies on in the engine: an import keeps the source's
// version and only replaces an older one; the floor can be raised.
TEST_GROUP(ReplayVersions) {
  testing::EngineFixture* f;
  cache::TableRef t;
  void setup() override {
    f = new testing::EngineFixture();
    t = f->Table("t");
  }
  void teardown() override { delete f; }
};

TEST(ReplayVersions, ImportKeepsTheVersionAndNewerWins) {
  cache::Entry e;
  e.key = "k";
  e.value = "v10";
  e.version = 10;
  std::string err;
  CHECK(cache::ImportEntry(*f->ctx, t, e, &err) == Status::kOk);
  cache::ReadInfo ri;
  CHECK(cache::Probe(*f->ctx, t, "k", &ri) == Status::kOk);
  LONGS_EQUAL(10, ri.version);
  e.value = "v7";
  e.version = 7;
  CHECK(cache::ImportEntry(*f->ctx, t, e, &err) == Status::kVersion);  // older: the table keeps v10
  e.version = 10;
  CHECK(cache::ImportEntry(*f->ctx, t, e, &err) == Status::kVersion);  // the same state again
  e.value = "v12";
  e.version = 12;
  CHECK(cache::ImportEntry(*f->ctx, t, e, &err) == Status::kOk);
  std::string v;
  CHECK(cache::GetString(*f->ctx, t, "k", &v, &ri) == Status::kOk);
  STRCMP_EQUAL("v12", v.c_str());
  LONGS_EQUAL(12, ri.version);
}

TEST(ReplayVersions, AnAggregateKeepsItsVersionToo) {
  cache::Entry e;
  e.key = "h";
  e.type = cache::kTypeHash;
  cache::AppendItem(&e.value, "f");
  cache::AppendItem(&e.value, "new");
  e.version = 50;
  std::string err;
  CHECK(cache::ImportEntry(*f->ctx, t, e, &err) == Status::kOk);
  cache::ReadInfo ri;
  CHECK(cache::Probe(*f->ctx, t, "h", &ri) == Status::kOk);
  LONGS_EQUAL(50, ri.version);
  cache::Entry old = e;
  old.value.clear();
  cache::AppendItem(&old.value, "f");
  cache::AppendItem(&old.value, "old");
  old.version = 40;
  CHECK(cache::ImportEntry(*f->ctx, t, old, &err) == Status::kVersion);
  cache::Entry back;
  CHECK(cache::ExportKey(*f->ctx, t, "h", &back) == Status::kOk);
  CHECK(back.value == e.value);
}

TEST(ReplayVersions, ARaisedFloorPutsNewKeysAboveTheLog) {
  cache::RaiseVersionFloor(t, 1000);
  LONGS_EQUAL(1000, cache::VersionFloor(t));
  CHECK(cache::Set(*f->ctx, t, "fresh", "x") == Status::kOk);
  cache::ReadInfo ri;
  CHECK(cache::Probe(*f->ctx, t, "fresh", &ri) == Status::kOk);
  CHECK(ri.version > 1000);
  cache::RaiseVersionFloor(t, 5);  // never lowered
  LONGS_EQUAL(1000, cache::VersionFloor(t));
}

TEST(ReplayVersions, ADeleteRaisesTheFloorTheTombstoneCarries) {
  CHECK(cache::Set(*f->ctx, t, "k", "x") == Status::kOk);
  cache::ReadInfo ri;
  CHECK(cache::Probe(*f->ctx, t, "k", &ri) == Status::kOk);
  CHECK(cache::Del(*f->ctx, t, "k") == Status::kOk);
  CHECK(cache::VersionFloor(t) >= ri.version);  // the tombstone beats every earlier put of k
  CHECK(cache::Set(*f->ctx, t, "k", "again") == Status::kOk);
  cache::ReadInfo again;
  CHECK(cache::Probe(*f->ctx, t, "k", &again) == Status::kOk);
  CHECK(again.version > cache::VersionFloor(t) - 1);
  CHECK(again.version > ri.version);
}

TEST_GROUP(Probe) {};

TEST(Probe, RecommendsByTheMeasuredFsync) {
  db::ProbeResult fast;
  fast.p99_ms = 0.4;
  fast.write_mb_s = 500;
  db::ProbeAdvice a = db::Recommend(fast);
  STRCMP_EQUAL("always", a.fsync);
  LONGS_EQUAL(16, a.ring_mb);  // 2 x 500 MB/s x 0.4 ms = 0.4 MB: the default
  db::ProbeResult slow;
  slow.p99_ms = 40;
  slow.write_mb_s = 800;
  a = db::Recommend(slow);
  STRCMP_EQUAL("everysec", a.fsync);
  LONGS_EQUAL(64, a.ring_mb);  // 2 x 800 x 0.04 = 64 MB
  CHECK(a.why.find("p99 40 ms") != std::string::npos);
}

TEST(Probe, MeasuresAndLeavesNothingBehind) {
  char tmpl[] = "/tmp/perfcached-probe-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  db::ProbeResult r;
  std::string err;
  CHECK(db::ProbeDisk(dir, 20, &r, &err));
  CHECK(r.fsyncs > 0 && r.fsyncs <= 20);
  CHECK(r.p50_ms <= r.p99_ms && r.p99_ms <= r.max_ms);
  CHECK(r.bytes_written > 0);
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
  CHECK_FALSE(db::ProbeDisk(dir + "/missing", 20, &r, &err));
  CHECK(err.find("missing") != std::string::npos);
}
