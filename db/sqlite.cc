// perfcached — the SQLite backend (db/backend.h).
// Copyright (c) 2026 the perfcached authors.
#include <sqlite3.h>

#include "db/backend.h"

namespace db {
namespace {

class Sqlite final : public Backend {
 public:
  ~Sqlite() override {
    Rollback();
    for (sqlite3_stmt* s : {put_, del_, load_, expire_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  const char* kind() const override { return "sqlite"; }

  bool Init(const std::string& path, const std::string& name, std::string* err) {
    path_ = path;
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      return Fail(err, "cannot open");
    }
    // Another process (an operator's sqlite3, a second daemon's save) may
    // hold the lock for a while: wait for it rather than fail at once.
    sqlite3_busy_timeout(db_, 10000);
    // Quoted: a table named like an SQL keyword ("order") works too.
    const std::string table = "\"" + name + "\"";
    std::string create = "CREATE TABLE IF NOT EXISTS " + table +
                         " (collection TEXT NOT NULL, pkey BLOB NOT NULL, pvalue BLOB,"
                         " expires INTEGER NOT NULL DEFAULT 0, type TEXT NOT NULL DEFAULT 'string',"
                         " PRIMARY KEY (collection, pkey))";
    if (!Exec(create.c_str(), err)) return false;
    return Prepare("INSERT OR REPLACE INTO " + table +
                       " (collection, pkey, pvalue, expires, type) VALUES (?1, ?2, ?3, ?4, ?5)",
                   &put_, err) &&
           Prepare("DELETE FROM " + table + " WHERE collection = ?1", &del_, err) &&
           Prepare("SELECT pkey, pvalue, expires, type FROM " + table + " WHERE collection = ?1", &load_, err) &&
           Prepare("DELETE FROM " + table + " WHERE collection = ?1 AND expires <> 0 AND expires <= ?2",
                   &expire_, err);
  }

  bool BeginSave(std::string_view collection, std::string* err) override {
    // IMMEDIATE: the write lock now, so a busy database fails here (after
    // the busy timeout) and not half-way through the rows.
    if (!Exec("BEGIN IMMEDIATE", err)) return false;
    in_tx_ = true;
    sqlite3_reset(del_);
    sqlite3_bind_text(del_, 1, collection.data(), static_cast<int>(collection.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(del_) != SQLITE_DONE) return Fail(err, "delete");
    sqlite3_bind_text(put_, 1, collection.data(), static_cast<int>(collection.size()), SQLITE_TRANSIENT);
    return true;
  }

  bool Put(const Row& r, std::string* err) override {
    sqlite3_reset(put_);
    // Keys, strings and counters are bound as TEXT (SQLite keeps their
    // bytes as they are, valid UTF-8 or not), so an operator's
    // `WHERE pkey = 'k'` finds them; aggregates' encodings as BLOBs.
    // Every bind is checked: a value above SQLite's length limit fails
    // with SQLITE_TOOBIG and would otherwise be stored as NULL.
    int b = sqlite3_bind_text64(put_, 2, r.key.data(), r.key.size(), SQLITE_STATIC, SQLITE_UTF8);
    if (b == SQLITE_OK) {
      b = r.type == "string" || r.type == "counter"
              ? sqlite3_bind_text64(put_, 3, r.value.data(), r.value.size(), SQLITE_STATIC, SQLITE_UTF8)
              : sqlite3_bind_blob64(put_, 3, r.value.data(), r.value.size(), SQLITE_STATIC);
    }
    if (b == SQLITE_OK) b = sqlite3_bind_int64(put_, 4, r.expires_ms);
    if (b == SQLITE_OK) b = sqlite3_bind_text(put_, 5, r.type.data(), static_cast<int>(r.type.size()), SQLITE_STATIC);
    if (b != SQLITE_OK) {
      *err = "sqlite " + path_ + ": key '" + std::string(r.key.substr(0, 64)) + "' (" +
             std::to_string(r.value.size()) + " bytes): " + sqlite3_errstr(b);
      return false;
    }
    int rc = sqlite3_step(put_);
    sqlite3_reset(put_);
    if (rc != SQLITE_DONE) return Fail(err, "insert");
    return true;
  }

  bool Commit(std::string* err) override {
    if (!Exec("COMMIT", err)) return false;
    in_tx_ = false;
    return true;
  }

  void Rollback() override {
    if (!in_tx_) return;
    in_tx_ = false;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

  bool DeleteExpired(std::string_view collection, int64_t now_ms, uint64_t* deleted, std::string* err) override {
    sqlite3_reset(expire_);
    sqlite3_bind_text(expire_, 1, collection.data(), static_cast<int>(collection.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(expire_, 2, now_ms);
    int rc = sqlite3_step(expire_);
    sqlite3_reset(expire_);
    if (rc != SQLITE_DONE) return Fail(err, "delete expired rows");
    *deleted = static_cast<uint64_t>(sqlite3_changes64(db_));
    return true;
  }

  bool Load(std::string_view collection, const std::function<bool(const Row&)>& fn, std::string* err) override {
    sqlite3_reset(load_);
    sqlite3_bind_text(load_, 1, collection.data(), static_cast<int>(collection.size()), SQLITE_TRANSIENT);
    for (;;) {
      int rc = sqlite3_step(load_);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        sqlite3_reset(load_);
        return Fail(err, "read");
      }
      auto col = [&](int i) {
        const void* p = sqlite3_column_blob(load_, i);  // TEXT values come as their bytes, unconverted
        return std::string_view(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(load_, i)));
      };
      Row r;
      r.key = col(0);
      r.value = col(1);
      r.expires_ms = sqlite3_column_int64(load_, 2);
      r.type = col(3);
      if (!fn(r)) {
        sqlite3_reset(load_);
        return false;
      }
    }
    sqlite3_reset(load_);
    return true;
  }

 private:
  bool Fail(std::string* err, const char* what) {
    *err = "sqlite " + path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    return false;
  }
  bool Exec(const char* sql, std::string* err) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
    *err = "sqlite " + path_ + ": " + (msg ? msg : sqlite3_errmsg(db_));
    sqlite3_free(msg);
    return false;
  }
  bool Prepare(const std::string& sql, sqlite3_stmt** out, std::string* err) {
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, out, nullptr) == SQLITE_OK) return true;
    return Fail(err, "prepare");
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* del_ = nullptr;
  sqlite3_stmt* load_ = nullptr;
  sqlite3_stmt* expire_ = nullptr;
  bool in_tx_ = false;
};

}  // namespace

std::unique_ptr<Backend> OpenSqlite(const std::string& path, const std::string& table, std::string* err) {
  auto b = std::make_unique<Sqlite>();
  if (!b->Init(path, table, err)) return nullptr;
  return b;
}

}  // namespace db
