// perfcached — the RESP door's side of the WAL: admit a write, log what it changed, hold its reply.
// Copyright (c) 2026 the perfcached authors.
//
// After a write command succeeds, each key it changed (the command row's
// first/last/step positions; only the destination for the *STORE commands
// and COPY) is read back and logged as its state: a put, or a tombstone
// when the key is absent now (db/wal.h). A large hash or set written by
// field is logged as the fields the write changed (kind 5, LogKeyIn). MOVE and COPY ... DB also log the
// key in the other collection. Keys removed by FLUSHDB / FLUSHALL
// (cache::Ctx::on_cleared) and by eviction (on_evict) are logged as
// tombstones at the removed record's own version, so a restart brings none
// back and a write that raced the flush keeps its place.
//
// Under [wal] fsync = always the connection's replies and its next
// commands wait until the WAL process says the records are on disk
// (net::Conn::hold_until); other connections are served meanwhile.
#include "modules/resp/command.h"

#include "proc/log.h"

namespace modules::resp {
namespace {

bool LogKeyIn(Env& e, int db, std::string_view key, std::string* err) {
  cache::TableRef t;
  if (!TableForDb(e, db, &t)) return true;  // gone: its flush covers it
  // Under the name the table has now, not the db's configured one: after
  // `perf_rename 0 archive` this worker's ref still names the same table,
  // and its writes land there. Logged under "0", a write the rename's walk
  // had passed was dropped at replay with "0" (session 22, found by
  // review). Dropped since: its drop covers it.
  if (!cache::CollectionNameOf(t, &e.wal_name)) return true;
  return e.wal.LogKey(*e.ctx, t, e.wal_name, key, err, &e.journal);
}

// Commands whose key range names keys they only read: the keys they change.
bool OnlyDestination(std::string_view name) {
  return name == "sinterstore" || name == "sunionstore" || name == "sdiffstore";
}

}  // namespace

bool WalLogWrite(Env& e, net::Conn& c, const CommandSpec& spec, std::string* err) {
  std::span<const std::string_view> argv(c.argv);
  int argc = static_cast<int>(argv.size());
  std::string_view name = spec.name;
  if (OnlyDestination(name)) return LogKeyIn(e, c.db, argv[1], err);
  if (spec.first_key > 0 && name != "copy") {
    int last = spec.last_key < 0 ? argc + spec.last_key : spec.last_key;
    int step = spec.key_step > 0 ? spec.key_step : 1;
    for (int i = spec.first_key; i <= last && i < argc; i += step) {
      if (!LogKeyIn(e, c.db, argv[static_cast<size_t>(i)], err)) return false;
    }
  }
  if (name == "move") {
    long long db;
    if (ParseLL(argv[2], &db) && db >= 0 && db <= INT32_MAX) return LogKeyIn(e, static_cast<int>(db), argv[1], err);
  } else if (name == "copy") {
    int db = c.db;
    for (int i = 3; i + 1 < argc; ++i) {
      long long d;
      if (EqNoCase(argv[static_cast<size_t>(i)], "db") && ParseLL(argv[static_cast<size_t>(i) + 1], &d) &&
          d >= 0 && d <= INT32_MAX) {
        db = static_cast<int>(d);
      }
    }
    return LogKeyIn(e, db, argv[2], err);
  }
  return true;
}

void WalLogRemoved(Env& e, std::string_view coll, std::string_view key, uint64_t version) {
  if (!e.wal_error.empty()) return;  // one failure fails the command: do not wait again per key
  std::string err;
  if (!e.wal.LogTombstone(coll, key, version, &err)) e.wal_error = err;
}

}  // namespace modules::resp
