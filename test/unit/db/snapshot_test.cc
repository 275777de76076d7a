// perfcached — unit tests for db/snapshot (files, checksums, damage) and db/crc32c.
// Copyright (c) 2026 the perfcached authors.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "cache/export.h"
#include "db/crc32c.h"
#include "db/snapshot.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

TEST_GROUP(Crc32c) {};

TEST(Crc32c, KnownValues) {
  LONGS_EQUAL(0xE3069283u, db::Crc32c("123456789", 9));
  LONGS_EQUAL(0u, db::Crc32c("", 0));
  // In pieces: the same.
  uint32_t c = db::Crc32c("1234", 4);
  LONGS_EQUAL(0xE3069283u, db::Crc32c("56789", 5, c));
}

TEST_GROUP(Snapshot) {
  std::string dir;
  testing::EngineFixture* f;
  cache::TableRef t, u;
  void setup() override {
    char tmpl[] = "/tmp/perfcached-snapunit-XXXXXX";
    dir = mkdtemp(tmpl);
    f = new testing::EngineFixture();
    t = f->Table("t");
    u = f->Table("u");
  }
  void teardown() override {
    delete f;
    std::filesystem::remove_all(dir);
  }
  std::string Bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Write(const std::string& path, const std::string& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  }
};

TEST(Snapshot, WritesReadsAndCounts) {
  for (int i = 0; i < 20000; ++i) CHECK(cache::Set(*f->ctx, t, "k" + std::to_string(i), std::string(50, 'v')) == Status::kOk);
  CHECK(cache::Set(*f->ctx, u, "only", "one") == Status::kOk);
  CHECK(cache::Del(*f->ctx, t, "k7") == Status::kOk);  // raises t's version floor
  CHECK(cache::Set(*f->ctx, t, "k7", std::string(50, 'v')) == Status::kOk);
  uint64_t floor_t = cache::VersionFloor(t);
  CHECK(floor_t > 0);
  db::SnapshotInfo w, r;
  std::string err;
  CHECK(db::WriteSnapshot(*f->ctx, dir, 7, {"t", "u", "gone"}, 4242, &w, &err));
  STRCMP_EQUAL((dir + "/snapshot-0000000000000007.pcs").c_str(), w.path.c_str());
  LONGS_EQUAL(20001, w.records);
  LONGS_EQUAL(2, w.collections);  // "gone" does not exist: skipped
  std::map<std::string, uint64_t> per;
  CHECK(db::ReadSnapshot(w.path, [&](std::string_view coll, const cache::Entry& e) {
    ++per[std::string(coll)];
    return e.version != 0;
  }, &r, &err));
  LONGS_EQUAL(20000, per["t"]);
  LONGS_EQUAL(1, per["u"]);
  LONGS_EQUAL(7, r.seq);
  LONGS_EQUAL(4242, r.wal_pos);  // where WAL replay starts
  LONGS_EQUAL(2, r.floors.size());
  STRCMP_EQUAL("t", r.floors[0].first.c_str());
  LONGS_EQUAL(floor_t, r.floors[0].second);
  LONGS_EQUAL(w.file_bytes, r.file_bytes);
  CHECK(r.finished_ms >= r.started_ms);
  // No temp file is left.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  LONGS_EQUAL(1, files);
}

TEST(Snapshot, EveryDamagedByteIsRefusedWithWhere) {
  CHECK(cache::Set(*f->ctx, t, "a", "1") == Status::kOk);
  CHECK(cache::Set(*f->ctx, t, "b", "2") == Status::kOk);
  db::SnapshotInfo w, r;
  std::string err;
  CHECK(db::WriteSnapshot(*f->ctx, dir, 1, {"t"}, 0, &w, &err));
  std::string good = Bytes(w.path);
  std::string bad = dir + "/bad.pcs";
  for (size_t i = 0; i < good.size(); ++i) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0x01);
    Write(bad, b);
    err.clear();
    if (db::ReadSnapshot(bad, {}, &r, &err)) {
      // Only the header's reserved bytes and flags are not checked
      // beyond the header checksum: a flip there must still fail it.
      FAIL(("a flip at byte " + std::to_string(i) + " was accepted").c_str());
    }
    STRCMP_CONTAINS("at byte", err.c_str());
  }
  for (size_t n = 0; n < good.size(); ++n) {  // every truncation
    Write(bad, good.substr(0, n));
    CHECK_FALSE(db::ReadSnapshot(bad, {}, &r, &err));
  }
  Write(bad, good + "x");
  CHECK_FALSE(db::ReadSnapshot(bad, {}, &r, &err));
  STRCMP_CONTAINS("data after the end block", err.c_str());
}

TEST(Snapshot, ListAndPrune) {
  db::SnapshotInfo w;
  std::string err;
  for (uint64_t s : {3, 10, 2}) CHECK(db::WriteSnapshot(*f->ctx, dir, s, {"t"}, 0, &w, &err));
  Write(dir + "/snapshot-zz.pcs", "not one");
  Write(dir + "/.snapshot-11-999999999.tmp", "a dead writer's");
  auto all = db::ListSnapshots(dir);
  LONGS_EQUAL(3, all.size());
  LONGS_EQUAL(10, all[0].first);
  LONGS_EQUAL(2, all[2].first);
  LONGS_EQUAL(2, db::PruneSnapshots(dir, 2));  // seq 2 and the dead writer's temp file
  all = db::ListSnapshots(dir);
  LONGS_EQUAL(2, all.size());
  LONGS_EQUAL(3, all[1].first);
  CHECK_FALSE(std::filesystem::exists(dir + "/.snapshot-11-999999999.tmp"));
}

TEST(Snapshot, AnUnwritableDirectorySaysWhy) {
  db::SnapshotInfo w;
  std::string err;
  CHECK_FALSE(db::WriteSnapshot(*f->ctx, dir + "/missing", 1, {"t"}, 0, &w, &err));
  STRCMP_CONTAINS("No such file or directory", err.c_str());
}
