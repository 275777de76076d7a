// perfcached — the PostgreSQL backend (db/backend.h), over libpq.
// Copyright (c) 2026 the perfcached authors.
#include <arpa/inet.h>
#include <libpq-fe.h>

#include <cstring>
#include <string>

#include "db/backend.h"

namespace db {
namespace {

// A save sends its inserts in pipeline mode, this many between syncs: one
// round trip per batch, not per row (the seeds' lesson: per-row costs are
// what make a save not finish).
constexpr int kBatch = 512;

class Postgres final : public Backend {
 public:
  ~Postgres() override {
    Rollback();
    PQfinish(conn_);
  }
  const char* kind() const override { return "postgres"; }

  bool Init(const std::string& uri, const std::string& name, std::string* err) {
    // A server that does not answer must not hang the start-up load or
    // the final save: 10 s to connect unless the url says otherwise.
    std::string u = uri;
    if (u.find("connect_timeout=") == std::string::npos) {
      u += (u.find('?') == std::string::npos ? "?" : "&") + std::string("connect_timeout=10");
    }
    conn_ = PQconnectdb(u.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) return Fail(err, "cannot connect");
    name_ = name;
    const std::string table = "\"" + name + "\"";  // quoted: a keyword works as a name
    table_ = table;
    // Quiet NOTICEs ("relation already exists, skipping") stay out of stderr.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
    std::string create = "CREATE TABLE IF NOT EXISTS " + table +
                         " (collection TEXT NOT NULL, pkey BYTEA NOT NULL, pvalue BYTEA,"
                         " expires BIGINT NOT NULL DEFAULT 0, type TEXT NOT NULL DEFAULT 'string',"
                         " PRIMARY KEY (collection, pkey))";
    return Exec(create.c_str(), err);
  }

  bool BeginSave(std::string_view collection, std::string* err) override {
    if (!Exec("BEGIN", err)) return false;
    in_tx_ = true;
    collection_.assign(collection);
    // Two daemons saving one collection of one table take turns: without
    // the lock, READ COMMITTED lets their deletes and upserts interleave
    // into the union of both saves.
    std::string lock_key = name_ + "/" + collection_;
    const char* lk[1] = {lock_key.c_str()};
    PGresult* lr = PQexecParams(conn_, "SELECT pg_advisory_xact_lock(hashtext($1))", 1, nullptr, lk, nullptr,
                                nullptr, 0);
    bool locked = PQresultStatus(lr) == PGRES_TUPLES_OK;
    PQclear(lr);
    if (!locked) return Fail(err, "advisory lock");
    std::string del = "DELETE FROM " + table_ + " WHERE collection = $1";
    const char* v[1] = {collection_.c_str()};
    if (!Params(del.c_str(), 1, v, nullptr, nullptr, err)) return false;
    if (!prepared_) {
      // Once per connection: a prepared statement outlives the
      // transaction, and a second PREPARE of the name fails (one save of
      // several collections uses one connection).
      std::string ins = "INSERT INTO " + table_ +
                        " (collection, pkey, pvalue, expires, type) VALUES ($1, $2, $3, $4, $5)"
                        " ON CONFLICT (collection, pkey) DO UPDATE SET pvalue = EXCLUDED.pvalue,"
                        " expires = EXCLUDED.expires, type = EXCLUDED.type";
      PGresult* r = PQprepare(conn_, "put", ins.c_str(), 5, nullptr);
      bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
      PQclear(r);
      if (!ok) return Fail(err, "prepare");
      prepared_ = true;
    }
    if (PQenterPipelineMode(conn_) != 1) return Fail(err, "pipeline mode");
    pending_ = 0;
    return true;
  }

  bool Put(const Row& r, std::string* err) override {
    std::string exp = std::to_string(r.expires_ms), type(r.type);
    const char* v[5] = {collection_.c_str(), r.key.data(), r.value.data(), exp.c_str(), type.c_str()};
    int len[5] = {0, static_cast<int>(r.key.size()), static_cast<int>(r.value.size()), 0, 0};
    int fmt[5] = {0, 1, 1, 0, 0};  // the bytea parameters in binary
    static const char kEmpty[1] = {0};
    if (r.key.empty()) v[1] = kEmpty;
    if (r.value.empty()) v[2] = kEmpty;
    if (PQsendQueryPrepared(conn_, "put", 5, v, len, fmt, 0) != 1) return Fail(err, "insert");
    if (++pending_ >= kBatch) return Drain(err);
    return true;
  }

  bool Commit(std::string* err) override {
    if (!Drain(err)) return false;
    if (PQexitPipelineMode(conn_) != 1) return Fail(err, "pipeline mode");
    if (!Exec("COMMIT", err)) return false;
    in_tx_ = false;
    return true;
  }

  void Rollback() override {
    if (!in_tx_) return;
    in_tx_ = false;
    if (PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) {
      std::string ignored;
      (void)Drain(&ignored);
      PQexitPipelineMode(conn_);
    }
    PQclear(PQexec(conn_, "ROLLBACK"));
  }

  bool DeleteExpired(std::string_view collection, int64_t now_ms, uint64_t* deleted, std::string* err) override {
    std::string c(collection), now = std::to_string(now_ms);
    std::string sql = "DELETE FROM " + table_ + " WHERE collection = $1 AND expires <> 0 AND expires <= $2";
    const char* v[2] = {c.c_str(), now.c_str()};
    std::string n;
    if (!Params(sql.c_str(), 2, v, nullptr, &n, err)) return false;
    *deleted = std::strtoull(n.c_str(), nullptr, 10);
    return true;
  }

  bool Load(std::string_view collection, const std::function<bool(const Row&)>& fn, std::string* err) override {
    std::string c(collection);
    std::string sql = "SELECT pkey, pvalue, expires, type FROM " + table_ + " WHERE collection = $1";
    const char* v[1] = {c.c_str()};
    // Binary results (bytea as its bytes, expires as a big-endian int8),
    // one row at a time: a large collection is never held whole by libpq.
    if (PQsendQueryParams(conn_, sql.c_str(), 1, nullptr, v, nullptr, nullptr, 1) != 1) return Fail(err, "read");
    PQsetSingleRowMode(conn_);
    bool ok = true, stopped = false;
    while (PGresult* r = PQgetResult(conn_)) {
      ExecStatusType st = PQresultStatus(r);
      if (st == PGRES_SINGLE_TUPLE && !stopped) {
        Row row;
        auto col = [&](int i) { return std::string_view(PQgetvalue(r, 0, i), static_cast<size_t>(PQgetlength(r, 0, i))); };
        row.key = col(0);
        row.value = col(1);
        std::string_view e = col(2);
        uint64_t be = 0;
        if (e.size() == 8) std::memcpy(&be, e.data(), 8);
        row.expires_ms = static_cast<int64_t>(be64toh(be));
        row.type = col(3);
        if (!fn(row)) stopped = true, ok = false;
      } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && ok) {
        ok = Fail(err, "read");
      }
      PQclear(r);
    }
    return ok;
  }

 private:
  bool Fail(std::string* err, const char* what) {
    std::string m = conn_ ? PQerrorMessage(conn_) : "out of memory";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    *err = std::string("postgres: ") + what + ": " + m;
    return false;
  }
  bool Exec(const char* sql, std::string* err) {
    PGresult* r = PQexec(conn_, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok || Fail(err, sql);
  }
  bool Params(const char* sql, int n, const char* const* v, const int* len, std::string* tuples, std::string* err) {
    PGresult* r = PQexecParams(conn_, sql, n, nullptr, v, len, nullptr, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (ok && tuples) *tuples = PQcmdTuples(r);
    PQclear(r);
    return ok || Fail(err, "statement");
  }
  // Sync the pipeline and read every result of the batch.
  bool Drain(std::string* err) {
    if (pending_ == 0) return true;
    if (PQpipelineSync(conn_) != 1) return Fail(err, "sync");
    bool ok = true;
    int ends = 0;
    for (;;) {
      PGresult* r = PQgetResult(conn_);
      if (!r) {  // the end of one query's results; more than one per query: the connection is gone
        if (++ends > pending_ + 1 || PQstatus(conn_) == CONNECTION_BAD) {
          pending_ = 0;
          return Fail(err, "connection lost");
        }
        continue;
      }
      ExecStatusType st = PQresultStatus(r);
      if (st == PGRES_PIPELINE_SYNC) {
        PQclear(r);
        break;
      }
      if (st != PGRES_COMMAND_OK && ok) {
        ok = false;
        const char* m = PQresultErrorMessage(r);
        *err = std::string("postgres: insert: ") + (m && *m ? m : PQresStatus(st));
        while (!err->empty() && err->back() == '\n') err->pop_back();
      }
      PQclear(r);
    }
    pending_ = 0;
    return ok;
  }

  PGconn* conn_ = nullptr;
  std::string name_, table_, collection_;
  bool prepared_ = false;
  bool in_tx_ = false;
  int pending_ = 0;
};

}  // namespace

std::unique_ptr<Backend> OpenPostgres(const std::string& uri, const std::string& table, std::string* err) {
  auto b = std::make_unique<Postgres>();
  if (!b->Init(uri, table, err)) return nullptr;
  return b;
}

}  // namespace db
