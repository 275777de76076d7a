// perfcached — unit tests for db/backup: chunk files and the manifest of `perfcached --dump`.
// Copyright (c) 2026 the perfcached authors.
#include <string>
#include <vector>

#include "db/backup.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

namespace {

std::string Chunk(db::BackupChunkInfo* info, uint64_t n = 3) {
  std::string raw;
  for (uint64_t k = 0; k < n; ++k) {
    db::AppendBackupRecord(&raw, "key" + std::to_string(k), k == 1 ? 1796000000000 : 0,
                           std::string(20 + k, static_cast<char>('a' + k)));
  }
  return db::EncodeBackupChunk(7, n, raw, info);
}

std::string Refused(const std::string& file) {
  db::BackupChunkInfo info;
  std::vector<db::BackupRecord> recs;
  std::string err;
  CHECK_FALSE(db::DecodeBackupChunk(file, &info, &recs, &err));
  CHECK(recs.empty());
  CHECK(!err.empty());
  return err;
}

}  // namespace

TEST_GROUP(BackupChunk){};

TEST(BackupChunk, RoundTrip) {
  db::BackupChunkInfo in, out;
  std::string file = Chunk(&in);
  std::vector<db::BackupRecord> recs;
  std::string err;
  CHECK(db::DecodeBackupChunk(file, &out, &recs, &err));
  LONGS_EQUAL(7, out.db);
  LONGS_EQUAL(3, recs.size());
  UNSIGNED_LONGS_EQUAL(in.crc, out.crc);
  UNSIGNED_LONGLONGS_EQUAL(in.raw, out.raw);
  UNSIGNED_LONGLONGS_EQUAL(file.size() - db::kBackupHeader, out.bytes);
  STRCMP_EQUAL("key1", recs[1].key.c_str());
  LONGLONGS_EQUAL(1796000000000, recs[1].expire_ms);
  CHECK(recs[2].payload == std::string(22, 'c'));
}

TEST(BackupChunk, EveryDamageIsFound) {
  db::BackupChunkInfo info;
  std::string file = Chunk(&info);
  // any single flipped byte, header or body
  for (size_t i = 0; i < file.size(); ++i) {
    std::string bad = file;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    Refused(bad);
  }
  // cut short anywhere, or a byte more
  for (size_t n = 0; n < file.size(); n += 7) Refused(file.substr(0, n));
  Refused(file + "x");
  STRCMP_CONTAINS("PCBACKUP", Refused("not a chunk at all, but long enough to hold a header...").c_str());
}

TEST_GROUP(BackupManifest){};

TEST(BackupManifest, RoundTrip) {
  db::BackupManifest m;
  m.source = "127.0.0.1:6379 perfcached 0.1.0";
  m.started_ms = 5;
  db::BackupManifest::Chunk c;
  c.name = "db0-p001-00002.chunk";
  c.info.db = 3;
  c.info.records = 10;
  c.info.raw = 100;
  c.info.bytes = 50;
  c.info.crc = 0xdeadbeef;
  m.chunks.push_back(c);
  m.keys = 10;
  m.raw = 100;
  m.bytes = 50;
  for (bool complete : {false, true}) {
    m.complete = complete;
    m.finished_ms = complete ? 9 : 0;
    db::BackupManifest back;
    std::string err;
    CHECK_TEXT(db::ParseBackupManifest(db::FormatBackupManifest(m), &back, &err), err.c_str());
    CHECK_EQUAL(complete, back.complete);
    STRCMP_EQUAL(m.source.c_str(), back.source.c_str());
    LONGS_EQUAL(1, back.chunks.size());
    UNSIGNED_LONGS_EQUAL(0xdeadbeef, back.chunks[0].info.crc);
    LONGS_EQUAL(3, back.chunks[0].info.db);
    LONGLONGS_EQUAL(m.finished_ms, back.finished_ms);
  }
}

TEST(BackupManifest, RefusesWhatIsNotOne) {
  const char* bad[] = {
      "",
      "perfcached-backup 2\nstate complete\ntotals keys=0 raw=0 bytes=0\n",
      "perfcached-backup 1\nstate complete\n",                                      // no totals: cut short
      "perfcached-backup 1\nstate complete\ntotals keys=0 raw=0 bytes=0",           // no final newline
      "perfcached-backup 1\nchunk ../etc/passwd db=0 records=1 raw=1 bytes=1 crc=0\nstate complete\n"
      "totals keys=0 raw=0 bytes=0\n",                                               // not a plain name
      "perfcached-backup 1\nchunk a db=x records=1 raw=1 bytes=1 crc=0\nstate complete\ntotals keys=0 raw=0 bytes=0\n",
      "perfcached-backup 1\nstate maybe\ntotals keys=0 raw=0 bytes=0\n",
      "perfcached-backup 1\nsomething else\nstate complete\ntotals keys=0 raw=0 bytes=0\n",
  };
  for (const char* text : bad) {
    db::BackupManifest m;
    std::string err;
    CHECK_FALSE_TEXT(db::ParseBackupManifest(text, &m, &err), text);
    CHECK(!err.empty());
  }
}
