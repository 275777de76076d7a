// perfcached — unit tests for db/: urls, the SQLite backend, whole-collection save and load.
// Copyright (c) 2026 the perfcached authors.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "cache/export.h"
#include "db/backend.h"
#include "db/persist.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

TEST_GROUP(DbUrl) {};

TEST(DbUrl, Parses) {
  db::Url u;
  std::string err;
  CHECK(db::ParseUrl("sqlite:///var/lib/perfcached/cache.db", &u, &err));
  STRCMP_EQUAL("sqlite", u.kind.c_str());
  STRCMP_EQUAL("/var/lib/perfcached/cache.db", u.target.c_str());
  CHECK(db::ParseUrl("sqlite://rel.db", &u, &err));
  STRCMP_EQUAL("rel.db", u.target.c_str());
  CHECK(db::ParseUrl("postgresql://u@/db?host=/tmp", &u, &err));
  STRCMP_EQUAL("postgres", u.kind.c_str());
  STRCMP_EQUAL("postgresql://u@/db?host=/tmp", u.target.c_str());
}

TEST(DbUrl, Refuses) {
  db::Url u;
  std::string err;
  CHECK_FALSE(db::ParseUrl("mysql://x/y", &u, &err));
  STRCMP_EQUAL("unknown database url scheme 'mysql' (sqlite:///path/file.db or postgres://user@host/db)", err.c_str());
  CHECK_FALSE(db::ParseUrl("sqlite://", &u, &err));
  STRCMP_CONTAINS("without a file", err.c_str());
  CHECK_FALSE(db::ParseUrl("sqlite:///x.db?mode=ro", &u, &err));
  CHECK_FALSE(db::ValidTableName("x;drop table y", &err));
  STRCMP_CONTAINS("not a plain SQL name", err.c_str());
  CHECK_FALSE(db::ValidTableName("1abc", &err));
  CHECK_FALSE(db::ValidTableName("", &err));
  CHECK(db::ValidTableName("perf_cache_2", &err));
}

TEST_GROUP(DbSqlite) {
  std::string dir, path;
  testing::EngineFixture* f;
  cache::TableRef t;
  void setup() override {
    char tmpl[] = "/tmp/perfcached-dbunit-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/c.db";
    f = new testing::EngineFixture();
    t = f->Table("t");
  }
  void teardown() override {
    delete f;
    std::filesystem::remove_all(dir);
  }
  std::unique_ptr<db::Backend> Open() {
    std::string err;
    auto b = db::Open("sqlite://" + path, "perfcached", &err);
    if (!b) FAIL(err.c_str());
    return b;
  }
  uint64_t Rows(db::Backend& b, std::string_view coll) {
    uint64_t n = 0;
    std::string err;
    CHECK(b.Load(coll, [&](const db::Row&) { return ++n, true; }, &err));
    return n;
  }
};

TEST(DbSqlite, AnUnfinishedSaveLeavesThePreviousRows) {
  auto b = Open();
  std::string err;
  CHECK(b->BeginSave("c", &err));
  CHECK(b->Put(db::Row{"a", "string", "1", 0}, &err));
  CHECK(b->Put(db::Row{"a", "string", "2", 0}, &err));  // twice: the last stays
  CHECK(b->Commit(&err));
  LONGS_EQUAL(1, Rows(*b, "c"));
  CHECK(b->BeginSave("c", &err));
  CHECK(b->Put(db::Row{"b", "string", "x", 0}, &err));
  b.reset();  // the process "dies" before Commit
  auto b2 = Open();
  std::string v;
  CHECK(b2->Load("c", [&](const db::Row& r) { return v.assign(r.key).append("=").append(r.value), true; }, &err));
  STRCMP_EQUAL("a=2", v.c_str());
}

TEST(DbSqlite, CollectionsAreSeparateAndExpiredRowsGo) {
  auto b = Open();
  std::string err;
  for (const char* coll : {"x", "y"}) {
    CHECK(b->BeginSave(coll, &err));
    CHECK(b->Put(db::Row{"k", "string", coll, 0}, &err));
    CHECK(b->Put(db::Row{"old", "string", "v", 1000}, &err));
    CHECK(b->Commit(&err));
  }
  uint64_t gone = 0;
  CHECK(b->DeleteExpired("x", 2000, &gone, &err));
  LONGS_EQUAL(1, gone);
  LONGS_EQUAL(1, Rows(*b, "x"));
  LONGS_EQUAL(2, Rows(*b, "y"));
}

TEST(DbSqlite, AnUnopenableFileSaysWhy) {
  std::string err;
  CHECK(db::Open("sqlite:///nonexistent-dir/c.db", "perfcached", &err) == nullptr);
  STRCMP_CONTAINS("sqlite /nonexistent-dir/c.db: cannot open", err.c_str());
}

TEST(DbSqlite, SaveAndLoadACollection) {
  int64_t later = cache::NowMs(*f->ctx) + 60000;
  cache::StoreOpts o;
  o.expire_ms = later;
  for (int i = 0; i < 3000; ++i) CHECK(cache::Set(*f->ctx, t, "k" + std::to_string(i), "v" + std::to_string(i), o) == Status::kOk);
  int64_t n;
  CHECK(cache::IncrBy(*f->ctx, t, "counter", 7, &n) == Status::kOk);
  auto b = Open();
  db::Result r;
  std::string err;
  CHECK(db::SaveCollection(*f->ctx, *b, "t", &r, &err));
  LONGS_EQUAL(3001, r.rows);
  CHECK_FALSE(db::SaveCollection(*f->ctx, *b, "nosuch", &r, &err));
  STRCMP_EQUAL("collection 'nosuch': no such collection", err.c_str());
  cache::TableRef u = f->Table("u");
  // Load into another collection by saving "t" rows under "u".
  CHECK(b->BeginSave("u", &err));
  CHECK(b->Load("t", [&](const db::Row& row) { return b->Put(row, &err); }, &err));
  CHECK(b->Commit(&err));
  CHECK(db::LoadCollection(*f->ctx, *b, "u", &r, &err));
  LONGS_EQUAL(3001, r.rows);
  LONGS_EQUAL(0, r.bad);
  std::string v;
  cache::ReadInfo ri;
  CHECK(cache::GetString(*f->ctx, u, "k42", &v, &ri) == Status::kOk);
  STRCMP_EQUAL("v42", v.c_str());
  LONGS_EQUAL(later, ri.expire_ms);
  CHECK(cache::IncrBy(*f->ctx, u, "counter", 1, &n) == Status::kOk);
  LONGS_EQUAL(8, n);
}
