// perfcached — the db module: SQL persistence (perf_save, perf_load, perf_sync, db mode 1 / 2).
// Copyright (c) 2026 the perfcached authors.
//
// The cachedb_perf model over db/: whole collections saved to and loaded
// from one SQL table. Where each step runs:
//   start (db mode 1, 2)   the supervisor, before any fork: workers start warm
//   perf_save / perf_load  the MI process (its own connection, walking the
//                          table lock-free: data traffic never waits)
//   graceful stop (mode 2) the supervisor, after every child is gone
// One save or load runs at a time (proc::PersistStats::busy_pid).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "db/backend.h"
#include "db/persist.h"
#include "db/wal_ring.h"
#include "modules/db/db_module.h"
#include "mi/mi.h"
#include "modules/exports.h"
#include "proc/log.h"
#include "proc/proctable.h"

namespace modules::db_module {
namespace {

using mi::Json;
using mi::Params;


void Store(std::atomic<int64_t>& v, int64_t x) { v.store(x, std::memory_order_relaxed); }
void Add(std::atomic<uint64_t>& v, uint64_t x) { v.fetch_add(x, std::memory_order_relaxed); }

// The collections an operation covers: the one named, else
// persist_collections, else every collection of the config.
bool Collections(const proc::Config& cfg, const std::string* named, std::vector<std::string>* out,
                 std::string* err) {
  out->clear();
  if (named) {
    for (const auto& cc : cfg.collections) {
      if (cc.name == *named) out->push_back(cc.name);
    }
    if (out->empty()) {
      // A collection made at run time (allow_create) is saved by name too.
      out->push_back(*named);
    }
    return true;
  }
  if (!cfg.persist_collections.empty()) {
    *out = cfg.persist_collections;
  } else {
    for (const auto& cc : cfg.collections) out->push_back(cc.name);
  }
  if (out->empty()) *err = "no collection to persist";
  return !out->empty();
}

struct Totals {
  uint64_t collections = 0, rows = 0, expired = 0, bad = 0;
  int64_t ms = 0;
  std::string first_error;
};

// Save (save = true) or load every collection in `names`. False and *err
// at the first failure (a save's collections before it stay saved).
bool Run(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, const std::vector<std::string>& names,
         bool save, Totals* t, std::string* err, ::db::WalLogger* wal = nullptr) {
  proc::PersistStats& ps = pt->persist;
  Claim claim(ps.busy_pid);
  if (!claim.held()) {
    *err = std::string("a ") + (ps.busy_kind.load() == 1 ? "save" : "load") + " is running (pid " +
           std::to_string(claim.holder()) + "): try again when it is done";
    return false;
  }
  ps.busy_kind.store(save ? 1 : 2);
  int64_t start = WallMs();
  std::unique_ptr<::db::Backend> b = ::db::Open(cfg.db_url, cfg.db_table, err);
  bool ok = b != nullptr;
  for (size_t i = 0; ok && i < names.size(); ++i) {
    ::db::Result r;
    // A load with the WAL on logs every key it stores (then waits for the
    // last to be durable): a crash after perf_load answered keeps them.
    ::db::ImportedFn logged;
    if (wal && wal->active()) {
      const std::string& coll = names[i];
      logged = [&c, wal, &coll](const cache::TableRef& tr, std::string_view key, std::string* e) {
        return wal->LogKey(c, tr, coll, key, e);
      };
    }
    ok = save ? ::db::SaveCollection(c, *b, names[i], &r, err)
              : ::db::LoadCollection(c, *b, names[i], &r, err, logged);
    t->rows += r.rows;
    t->expired += r.expired;
    t->bad += r.bad;
    if (t->first_error.empty()) t->first_error = r.first_error;
    if (ok) {
      ++t->collections;
      LOG_NOTICE("%s collection '%s': %llu row(s) in %lld ms%s%s", save ? "saved" : "loaded", names[i].c_str(),
                 static_cast<unsigned long long>(r.rows), static_cast<long long>(r.ms),
                 r.expired ? (", " + std::to_string(r.expired) + " expired row(s) deleted").c_str() : "",
                 r.bad ? (", " + std::to_string(r.bad) + " row(s) skipped: " + r.first_error).c_str() : "");
    }
  }
  t->ms = WallMs() - start;
  if (save) {
    Add(ok ? ps.saves : ps.save_failures, 1);
    if (ok) Add(ps.rows_saved, t->rows);  // a failed save's rows were rolled back
    ps.last_save_failed.store(ok ? 0 : 1);
    if (ok) {
      Store(ps.last_save_at_ms, WallMs());
      Store(ps.last_save_took_ms, t->ms);
      Store(ps.last_save_rows, static_cast<int64_t>(t->rows));
    }
  } else {
    Add(ok ? ps.loads : ps.load_failures, 1);
    Add(ps.rows_loaded, t->rows);
    Add(ps.rows_expired, t->expired);
    Add(ps.rows_bad, t->bad);
    if (ok) {
      Store(ps.last_load_at_ms, WallMs());
      Store(ps.last_load_took_ms, t->ms);
      Store(ps.last_load_rows, static_cast<int64_t>(t->rows));
    }
  }
  if (!ok) *err = (save ? "save: " : "load: ") + *err;
  return ok;
}

Json Reply(const Totals& t, bool save) {
  Json j = Json::object();
  j["collections"] = t.collections;
  j[save ? "saved" : "loaded"] = t.rows;
  j["ms"] = t.ms;
  j["rows_per_s"] = t.ms > 0 ? t.rows * 1000 / static_cast<uint64_t>(t.ms) : t.rows * 1000;
  if (!save) {
    j["expired"] = t.expired;
    if (t.bad) {
      j["skipped"] = t.bad;
      j["first_error"] = t.first_error;
    }
  }
  return j;
}

// ---- the MI commands ----------------------------------------------------------

// The MI process's side of the WAL ring, for perf_load.
::db::WalLogger g_wal;

void RegisterCommands(mi::Registry& r, proc::ModuleProcContext& pc) {
  // A copy that lives as long as the process (the handlers use it).
  static std::vector<std::unique_ptr<proc::ModuleProcContext>> keep;
  keep.push_back(std::make_unique<proc::ModuleProcContext>(pc));
  proc::ModuleProcContext* ctx = keep.back().get();
  auto op = [ctx](bool save, bool sync) {
    return [ctx, save, sync](const Params& p) {
      const proc::Config& cfg = *ctx->cfg;
      if (cfg.db_url.empty()) {
        return mi::MiError(500, "no database: set [db] url (sqlite:///var/lib/perfcached/cache.db)");
      }
      std::string name, err;
      if (p.Has("collection") && !p.GetString("collection", &name, &err)) return mi::MiParamError(err);
      std::vector<std::string> names;
      if (!Collections(cfg, p.Has("collection") ? &name : nullptr, &names, &err)) return mi::MiError(500, err);
      Totals t;
      if (!save && !g_wal.active() && ctx->self) (void)g_wal.Attach(static_cast<uint32_t>(ctx->self - ctx->procs->e));
      if (!save) {
        if (const char* why = g_wal.Admit()) return mi::MiError(500, why);
      }
      if (!Run(*ctx->ctx, ctx->procs, cfg, names, save, &t, &err, &g_wal)) return mi::MiError(500, err);
      if (!save && !g_wal.WaitDurable(g_wal.position(), 60000)) {
        return mi::MiError(500, "loaded, but the WAL did not make it durable within 60 s");
      }
      Json j = Reply(t, save);
      if (sync) {
        // perf_sync: save, then tell the cluster's peers to reload. There
        // is no cluster yet: the save is all, and the reply says so.
        j["broadcast"] = 0;
        j["note"] = "no cluster: saved only (peers reload with perf_load)";
      }
      return mi::MiResult(std::move(j));
    };
  };
  auto add = [&](const char* name, const char* help, mi::Handler h) {
    mi::Command c;
    c.name = name;
    c.module = "db";
    c.help = help;
    c.recipes = {{}, {"collection"}};
    c.handler = std::move(h);
    r.Add(std::move(c));
  };
  add("perf_save", "save a collection (default: [db] persist_collections, else all) to the [db] url, one transaction",
      op(true, false));
  add("perf_load", "load a collection (default: [db] persist_collections, else all) from the [db] url",
      op(false, false));
  add("perf_sync", "save, then have cluster peers reload (no cluster yet: saves and says so)", op(true, true));
  mi::Command ws;
  ws.name = "wal_status";
  ws.module = "db";
  ws.help = "the WAL: policy, positions written and fsynced, fsync latency, segments, refused writes, replay";
  ws.recipes = {{}};
  ws.handler = [ctx](const Params&) {
    if (!db::Wal()) {
      return mi::MiResult(Json{{"enabled", "no"},
                               {"note", ctx->cfg->wal_dir.empty() ? "memory only: set [wal] dir"
                                                                  : "[wal] fsync = off: snapshots only"}});
    }
    Json j{{"enabled", "yes"}};
    for (const StatValue& v : WalStatValues()) j[v.name] = static_cast<int64_t>(v.value);
    j["fsync"] = ctx->cfg->wal_fsync;
    j["dir"] = ctx->cfg->wal_dir;
    j["status"] = db::Wal()->failed_errno.load() ? std::string("error: ") + std::strerror(db::Wal()->failed_errno.load())
                                                 : std::string("ok");
    return mi::MiResult(std::move(j));
  };
  r.Add(std::move(ws));
}

// ---- start and stop -------------------------------------------------------------

bool Init(const proc::Config& cfg, std::string* err) {
  if (!InitWal(cfg, err)) return false;
  if (cfg.db_url.empty()) return true;
  ::db::Url u;
  if (!::db::ParseUrl(cfg.db_url, &u, err)) return false;
  return true;
}

bool Warm(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, std::string* err) {
  // The newest good snapshot first; an SQL load (db mode 1 / 2) after it
  // replaces the keys the table holds. None of its look-ups is a client's:
  // INFO keyspace_hits / misses start at 0 after a restart.
  cache::NoStats quiet(c);
  if (!RecoverFromSnapshots(c, pt, cfg, err)) {
    *err = "recovery: " + *err;
    return false;
  }
  if (cfg.db_mode < 1) return true;
  std::vector<std::string> names;
  if (!Collections(cfg, nullptr, &names, err)) return false;
  Totals t;
  // A full arena under an evicting policy evicts as when serving; say how
  // many went (under noeviction the load fails below and names the cause).
  uint64_t evicted = 0;
  struct OnEvict {
    cache::Ctx& c;
    std::function<void(std::string_view, std::string_view, uint64_t)> saved;
    OnEvict(cache::Ctx& x, uint64_t* n) : c(x), saved(std::move(x.on_evict)) {
      c.on_evict = [n](std::string_view, std::string_view, uint64_t) { ++*n; };
    }
    ~OnEvict() { c.on_evict = std::move(saved); }
  } on_evict(c, &evicted);
  // A start-up load that fails is fatal: starting empty with mode 2 would
  // save the empty cache over the snapshot at the next stop.
  if (!Run(c, pt, cfg, names, false, &t, err)) {
    *err = "start-up " + *err + " (db mode " + std::to_string(cfg.db_mode) + "; set [db] mode = 0 to start empty)";
    return false;
  }
  LOG_NOTICE("start-up load from %s: %llu row(s) into %llu collection(s) in %lld ms%s",
             proc::MaskDbUrl(cfg.db_url).c_str(), static_cast<unsigned long long>(t.rows),
             static_cast<unsigned long long>(t.collections), static_cast<long long>(t.ms),
             t.bad ? (", " + std::to_string(t.bad) + " row(s) skipped").c_str() : "");
  if (evicted) {
    LOG_WARN("start-up load: the arena was full: %llu key(s) evicted by the policy to fit (raise [memory] "
             "arena_mb to keep them)", static_cast<unsigned long long>(evicted));
  }
  return true;
}

void AtStop(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg) {
  FinalWalDrain(cfg);  // before the snapshot: its WAL position covers every record
  if (!cfg.wal_dir.empty() && !cfg.wal_save.empty()) {
    // Redis: with save points, a shutdown saves.
    db::SnapshotInfo info;
    std::string serr;
    (void)TakeSnapshot(c, pt, cfg, "shutdown", &info, &serr);
  }
  if (cfg.db_mode < 2) return;
  std::vector<std::string> names;
  std::string err;
  Totals t;
  if (!Collections(cfg, nullptr, &names, &err) || !Run(c, pt, cfg, names, true, &t, &err)) {
    LOG_ERR("final %s: the database keeps its previous snapshot", err.c_str());
    return;
  }
  LOG_NOTICE("final save to %s: %llu row(s) of %llu collection(s) in %lld ms", proc::MaskDbUrl(cfg.db_url).c_str(),
             static_cast<unsigned long long>(t.rows), static_cast<unsigned long long>(t.collections),
             static_cast<long long>(t.ms));
}

// ---- statistics ("db" group) -----------------------------------------------------

void CollectStats(proc::ModuleProcContext& pc, std::vector<StatValue>* out) {
  const proc::PersistStats& ps = pc.procs->persist;
  auto counter = [&](const char* n, uint64_t v) { out->push_back({"db", n, static_cast<double>(v), true}); };
  auto gauge = [&](const char* n, int64_t v) { out->push_back({"db", n, static_cast<double>(v), false}); };
  counter("saves", ps.saves.load());
  counter("save_failures", ps.save_failures.load());
  counter("loads", ps.loads.load());
  counter("load_failures", ps.load_failures.load());
  counter("rows_saved", ps.rows_saved.load());
  counter("rows_loaded", ps.rows_loaded.load());
  counter("rows_expired", ps.rows_expired.load());
  counter("rows_skipped", ps.rows_bad.load());
  gauge("last_save_time", ps.last_save_at_ms.load() / 1000);
  gauge("last_save_ms", ps.last_save_took_ms.load());
  gauge("last_save_rows", ps.last_save_rows.load());
  gauge("last_save_failed", ps.last_save_failed.load());
  gauge("in_progress", ps.busy_pid.load() != 0 ? ps.busy_kind.load() : 0);
  for (StatValue& v : WalStatValues()) out->push_back(std::move(v));
}
// The counters live in shared memory, written by the process that saves;
// they are not re-baselined (a reset answers "not found" for them).
bool ResetNone(proc::ModuleProcContext&, const std::string&) { return false; }
void ResetNoneAll(proc::ModuleProcContext&) {}

const StatExport kStats[] = {{40, &CollectStats, &ResetNone, &ResetNoneAll}};
constexpr RespFamily kFamilies[] = {{&RegisterPersistFamily, "server"}};
constexpr ProcExport kProcs[] = {{"persist", &PersistProcesses, &RunPersist, nullptr, nullptr},
                                 {"wal", &WalProcesses, &RunWal, nullptr, nullptr}};

}  // namespace
}  // namespace modules::db_module

namespace modules::db_module {
extern const ModuleExports kExports;
const ModuleExports kExports = {
    .name = "db",
    .init = &Init,
    .child_init = nullptr,
    .stop_accepting = nullptr,
    .drain = nullptr,
    .tick = nullptr,
    .reload = nullptr,
    .destroy = nullptr,
    .procs = kProcs,
    .stats = kStats,
    .mi_commands = &RegisterCommands,
    .resp_families = kFamilies,
    .warm = &Warm,
    .at_stop = &AtStop,
};
}  // namespace modules::db_module
