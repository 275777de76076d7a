// perfcached — SQL persistence: one small interface, a backend per database.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// What perf_save / perf_load (and db mode 1 / 2) need from an SQL
// database, and nothing more: the cachedb_perf model. One table holds
// every persisted collection:
//
//   collection TEXT | pkey BLOB | pvalue BLOB | expires INTEGER | type TEXT
//   PRIMARY KEY (collection, pkey)
//
// expires is absolute wall-clock unix ms (0 = never), so a TTL survives a
// restart; type is cache::ExportTypeName ("string", "counter", "hash",
// "set") and pvalue the logical encoding of cache/export.h. The table is
// created when missing.
//
// A save is ONE transaction: BeginSave deletes the collection's rows, Put
// inserts (a key given twice keeps the last), Commit publishes. Until
// Commit nothing changes for a reader, and a save that dies (the process
// killed, the disk full, the server gone) leaves the previous snapshot
// whole — the database rolls the transaction back.
//
// A backend object is one connection, used by one process at a time; it
// is opened for one operation and closed after (nothing crosses a fork).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace db {

struct Row {
  std::string_view key;
  std::string_view type;   // "string", "counter", ...
  std::string_view value;
  int64_t expires_ms = 0;  // absolute unix ms, 0 = never
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "sqlite" / "postgres".
  virtual const char* kind() const = 0;
  // Start a save of `collection`: BEGIN, then delete its rows.
  virtual bool BeginSave(std::string_view collection, std::string* err) = 0;
  virtual bool Put(const Row& r, std::string* err) = 0;
  virtual bool Commit(std::string* err) = 0;
  // Undo an unfinished save (also done by the destructor).
  virtual void Rollback() = 0;
  // Delete the collection's rows whose expiry is at or before now_ms
  // (their own transaction); *deleted = how many.
  virtual bool DeleteExpired(std::string_view collection, int64_t now_ms, uint64_t* deleted,
                             std::string* err) = 0;
  // Every row of the collection; fn returns false to stop (an error of
  // the caller's, already in its *err: Load answers false).
  virtual bool Load(std::string_view collection, const std::function<bool(const Row&)>& fn,
                    std::string* err) = 0;
};

// The parts of a [db] url. sqlite:///abs/path.db or sqlite://rel/path.db;
// postgres://... or postgresql://... (a libpq connection URI, passed on
// as it is). False with *err naming what is wrong.
struct Url {
  std::string kind;     // "sqlite" | "postgres"
  std::string target;   // the file path | the libpq URI
};
bool ParseUrl(std::string_view url, Url* out, std::string* err);
// [db] table: an SQL identifier (letters, digits, _; not starting with a
// digit; at most 63 bytes), so it can be spliced into statements.
bool ValidTableName(std::string_view name, std::string* err);

// Connect and create the table when missing. nullptr and *err on failure.
std::unique_ptr<Backend> Open(std::string_view url, std::string_view table, std::string* err);

// The backends (db/sqlite.cc, db/postgres.cc).
std::unique_ptr<Backend> OpenSqlite(const std::string& path, const std::string& table, std::string* err);
std::unique_ptr<Backend> OpenPostgres(const std::string& uri, const std::string& table, std::string* err);

}  // namespace db
