// perfcached — snapshots in the daemon: SAVE / BGSAVE, save rules, the persist process, recovery.
// Copyright (c) 2026 the perfcached authors.
//
// Where each step runs:
//   recovery at start    the supervisor, before any fork (workers start warm)
//   BGSAVE, save rules   the persist process ("pc-persist"), walking the
//                        tables lock-free: no fork, no copy-on-write, no
//                        worker waits
//   SAVE                 the worker that received it (Redis's SAVE blocks;
//                        here only that worker's clients wait)
//   graceful stop        the supervisor, when save rules are set (Redis)
#include <sys/stat.h>
#include <time.h>

#include <cstdio>
#include <vector>

#include "cache/export.h"
#include "db/wal.h"
#include "db/wal_ring.h"
#include "modules/db/db_module.h"
#include "proc/daemon.h"
#include "proc/log.h"

namespace modules::db_module {
namespace {


bool MakeDirs(const std::string& dir, std::string* err) {
  std::string part;
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      part = dir.substr(0, i);
      if (mkdir(part.c_str(), 0750) != 0 && errno != EEXIST) {
        *err = "[wal] dir " + dir + ": cannot create " + part + ": " + std::strerror(errno);
        return false;
      }
    }
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || access(dir.c_str(), W_OK) != 0) {
    *err = "[wal] dir " + dir + " is not a writable directory";
    return false;
  }
  return true;
}

// The save rules as (seconds, changes).
std::vector<std::pair<int64_t, uint64_t>> Rules(const proc::Config& cfg) {
  std::vector<std::pair<int64_t, uint64_t>> out;
  for (const std::string& r : cfg.wal_save) {
    long long s = 0;
    unsigned long long n = 0;
    if (std::sscanf(r.c_str(), "%lld %llu", &s, &n) == 2) out.emplace_back(s, n);
  }
  return out;
}

}  // namespace

uint64_t ChangeCount(cache::Ctx& c) {
  uint64_t n = 0;
  for (const auto& ci : cache::ListCollections(c)) n += ci.changes;  // not reset by reset_statistics
  return n;
}

bool TakeSnapshot(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, const char* why,
                  db::SnapshotInfo* info, std::string* err, const SnapshotHooks& hooks) {
  proc::SnapshotStats& ss = pt->snap;
  if (cfg.wal_dir.empty()) {
    *err = "no snapshot directory: set [wal] dir";
    return false;
  }
  Claim claim(ss.busy_pid);
  if (!claim.held()) {
    *err = "Background save already in progress (pid " + std::to_string(claim.holder()) + ")";
    return false;  // busy, not failed: a BGSAVE request stays pending (RunPersist)
  }
  int64_t t0 = WallMs();
  ss.started_ms.store(t0);
  // The request is taken only now that this process holds the claim: a
  // BGSAVE asked while a SAVE ran is not lost.
  if (hooks.take_request) ss.handled.store(hooks.take_request);
  auto failed = [&](int64_t took) {
    ss.started_ms.store(0);
    ss.last_failed.store(1);
    ss.failures.fetch_add(1);
    LOG_ERR("snapshot (%s) failed after %lld ms: %s; the previous snapshots stay", why,
            static_cast<long long>(took), err->c_str());
    return false;
  };
  if (!MakeDirs(cfg.wal_dir, err)) return failed(0);
  uint64_t changes = ChangeCount(c);
  // A seq above every file's and every earlier run's.
  uint64_t seq = ss.seq.load();
  auto files = db::ListSnapshots(cfg.wal_dir);
  if (!files.empty() && files.front().first > seq) seq = files.front().first;
  ++seq;
  ss.seq.store(seq);
  std::vector<std::string> names;
  for (const auto& ci : cache::ListCollections(c)) names.push_back(ci.name);
  // Every WAL record below this position belongs to a write applied before
  // the walk began: the snapshot holds it (or something newer).
  // Without a WAL (fsync = off): the end of whatever segments an earlier
  // run left, so that a later run with the WAL does not replay them over
  // this snapshot.
  uint64_t wal_pos = db::Wal() ? WalWrittenPosition() : db::WalEndPosition(cfg.wal_dir);
  bool ok = db::WriteSnapshot(c, cfg.wal_dir, seq, names, wal_pos, info, err, hooks.progress);
  int64_t took = WallMs() - t0;
  if (!ok) return failed(took);
  ss.started_ms.store(0);
  ss.last_failed.store(0);
  ss.snapshots.fetch_add(1);
  ss.last_at_ms.store(WallMs());
  ss.last_took_ms.store(took);
  ss.last_records.store(info->records);
  ss.last_bytes.store(info->file_bytes);
  ss.changes_at_last.store(changes);
  int pruned = db::PruneSnapshots(cfg.wal_dir, cfg.wal_snapshots_kept);
  // WAL segments every kept snapshot covers are not needed any more (the
  // oldest kept one is the fallback: keep what it needs).
  uint64_t keep_from = UINT64_MAX;
  for (const auto& [fseq, path] : db::ListSnapshots(cfg.wal_dir)) {
    db::SnapshotInfo h;
    keep_from = db::ReadSnapshotHeader(path, &h) ? std::min(keep_from, h.wal_pos) : 0;
  }
  if (keep_from != UINT64_MAX && keep_from != 0) {
    int dropped = db::DropWalSegmentsBelow(cfg.wal_dir, keep_from);
    if (dropped && db::Wal()) db::Wal()->segments_dropped.fetch_add(static_cast<uint64_t>(dropped));
  }
  LOG_NOTICE("snapshot (%s): %llu key(s) of %llu collection(s), %llu bytes (%llu before zstd) in %lld ms: %s%s",
             why, static_cast<unsigned long long>(info->records), static_cast<unsigned long long>(info->collections),
             static_cast<unsigned long long>(info->file_bytes), static_cast<unsigned long long>(info->raw_bytes),
             static_cast<long long>(took), info->path.c_str(),
             pruned ? (", " + std::to_string(pruned) + " old file(s) removed").c_str() : "");
  return true;
}

bool RequestSnapshot(proc::ProcTable* pt, const proc::Config& cfg, std::string* err) {
  proc::SnapshotStats& ss = pt->snap;
  if (cfg.wal_dir.empty()) {
    *err = "no snapshot directory: set [wal] dir";
    return false;
  }
  int32_t busy = ss.busy_pid.load();
  bool pending = ss.requests.load() != ss.handled.load() || ss.started_ms.load() != 0;  // asked, or running
  if (pending || (busy != 0 && (kill(busy, 0) == 0 || errno != ESRCH))) {
    *err = "Background save already in progress";
    return false;
  }
  ss.requests.fetch_add(1);
  return true;
}

namespace {
// After a load that kept versions: every table's floor goes above every
// version the snapshot and the log hold, so new writes outrank them.
void RaiseFloors(cache::Ctx& c, const std::map<std::string, uint64_t>& top) {
  for (const auto& [name, v] : top) {
    cache::TableRef t;
    if (v != 0 && cache::OpenCollection(c, name, &t) == mem::Status::kOk) cache::RaiseVersionFloor(t, v);
  }
}
}  // namespace

bool RecoverFromSnapshots(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, std::string* err) {
  if (cfg.wal_dir.empty()) return true;
  if (!MakeDirs(cfg.wal_dir, err)) return false;
  Recovered rec;
  db::RecoveryClock clock(c);
  rec.clock = &clock;
  // A full arena while recovering (hashes and sets that expired in the
  // downtime stay until the sweep; a snapshot's walk can hold more than
  // the arena held at once): under noeviction the start stops with an
  // error that names arena_mb; under an evicting policy the engine evicts
  // as it does when serving, and each key it evicts is gone for the rest
  // of the replay (a later fields or expire record must not rebuild a
  // part of it), counted and logged. maxmemory is not enforced while
  // loading (the RESP door enforces it), as redis-server loads past it.
  uint64_t evicted = 0;
  struct OnEvict {
    cache::Ctx& c;
    std::function<void(std::string_view, std::string_view, uint64_t)> saved;
    OnEvict(cache::Ctx& x, Recovered* r, uint64_t* n) : c(x), saved(std::move(x.on_evict)) {
      c.on_evict = [r, n](std::string_view coll, std::string_view key, uint64_t) {
        r->tomb[TombKey(coll, key)] = UINT64_MAX;
        ++*n;
      };
    }
    ~OnEvict() { c.on_evict = std::move(saved); }
  } on_evict(c, &rec, &evicted);
  if (!LoadNewestSnapshot(c, pt, cfg, &rec, err)) return false;
  // Replayed also with fsync = off: segments a run with the WAL left hold
  // acknowledged writes the snapshot may not (turning the WAL off must not
  // drop them).
  bool ok = true;
  if (!db::ListWalSegments(cfg.wal_dir).empty()) {
    ok = ReplayWal(c, cfg, &rec, err);
  } else if (rec.have_snapshot && rec.wal_from > 0) {
    // No segment at all (removed by hand, or the snapshot copied to a new
    // host): the WAL goes on after the snapshot's position, never below it
    // — the next replay starts there and would skip every record written
    // from 0 (session 22: all writes since such a start were lost at the
    // next crash).
    LOG_WARN("WAL: the snapshot covers position %llu but %s holds no segment: the WAL after the snapshot is "
             "missing (removed, or lost with the machine); new records start at %llu",
             static_cast<unsigned long long>(rec.wal_from), cfg.wal_dir.c_str(),
             static_cast<unsigned long long>(rec.wal_from));
    if (db::WalShared* w = db::Wal(); w && w->written_pos.load() < rec.wal_from) w->written_pos.store(rec.wal_from);
  }
  // What expired in the downtime goes now, with every expiry the log states
  // known, and before the floors rise (a sweep's removal raises a floor to
  // the removed version, which the log's versions already bound).
  if (uint64_t gone = clock.Release()) {
    LOG_NOTICE("recovery: %llu key(s) whose expiry passed while the daemon was down removed",
               static_cast<unsigned long long>(gone));
  }
  if (evicted) {
    LOG_WARN("recovery: the arena was full: %llu key(s) evicted by the policy to fit (raise [memory] arena_mb "
             "to keep them)", static_cast<unsigned long long>(evicted));
  }
  RaiseFloors(c, rec.top);
  if (db::WalShared* w = db::Wal()) {
    uint64_t mx = 0;
    for (const auto& [name, v] : rec.top) mx = std::max(mx, v);
    w->recovered_max_version.store(mx);
  }
  return ok;
}

bool LoadNewestSnapshot(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, Recovered* rec,
                        std::string* err) {
  std::map<std::string, uint64_t>* top = &rec->top;
  proc::SnapshotStats& ss = pt->snap;
  auto files = db::ListSnapshots(cfg.wal_dir);
  if (!files.empty()) ss.seq.store(files.front().first);
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i].second;
    db::SnapshotInfo info;
    std::string why;
    int64_t t0 = WallMs();
    // Verify the whole file first: a damaged one is not half loaded.
    if (!db::ReadSnapshot(path, {}, &info, &why)) {
      LOG_ERR("snapshot %s is damaged (%s): %s", path.c_str(), why.c_str(),
              i + 1 < files.size() ? "falling back to the previous one" : "no older snapshot: starting empty");
      continue;
    }
    uint64_t loaded = 0, expired = 0, skipped = 0;
    std::string cur, first_skip;
    cache::TableRef t;
    LoadGrowth growth;
    bool have = false, full = false;
    bool ok = db::ReadSnapshot(path, [&](std::string_view coll, const cache::Entry& e) {
      if (!have || coll != cur) {
        cur.assign(coll);
        have = cache::OpenCollection(c, cur, &t) == mem::Status::kOk;
        if (!have && cache::CreateCollection(c, cur, cache::CollectionOptions{}, &t) == mem::Status::kOk) {
          LOG_NOTICE("snapshot: collection '%s' is not configured: made it (as allow_create would)", cur.c_str());
          have = true;
        }
      }
      std::string ierr;
      mem::Status s = !have                                ? mem::Status::kStale
                      : rec->clock && rec->clock->Gone(e) ? mem::Status::kNotFound
                                                          : cache::ImportEntry(c, t, e, &ierr);
      uint64_t& mx = (*top)[cur];
      if (e.version > mx) mx = e.version;
      if (s == mem::Status::kOk) {
        ++loaded;
        growth.Stored(c, t);
      } else if (s == mem::Status::kVersion) {
        // The walk met the key twice (across a split): the newer stays.
      } else if (s == mem::Status::kNotFound) {
        ++expired;
        std::string tk = TombKey(cur, e.key);
        uint64_t& tv = rec->tomb[tk];
        if (e.version > tv) tv = e.version;
        rec->snap_expired.insert(std::move(tk));
      } else if (s == mem::Status::kNoMem) {
        full = true;
        return false;
      } else if (skipped++ == 0) {  // kTooBig (max_value_mb lowered), kInvalid, no collection
        first_skip = "collection '" + cur + "' key '" + e.key.substr(0, 64) + "': " +
                     (!have ? std::string("the collection cannot be made")
                            : ierr.empty() ? std::string(mem::StatusName(s)) : ierr);
      }
      return true;
    }, &info, &why);
    if (full) {
      *err = "snapshot " + path + " does not fit the arena (" + std::to_string(loaded) + " of " +
             std::to_string(info.records) + " keys loaded): raise [memory] arena_mb / arena_cap_mb";
      return false;
    }
    if (!ok) {
      // The file changed under us after verifying: say so and stop here.
      *err = "snapshot " + path + ": " + why;
      return false;
    }
    for (const auto& [name, floor] : info.floors) {
      uint64_t& mx = (*top)[name];
      if (floor > mx) mx = floor;
      rec->snap_floor[name] = floor;
    }
    rec->wal_from = info.wal_pos;
    rec->have_snapshot = true;
    ss.recovered_records.store(loaded);
    ss.recovered_ms.store(WallMs() - t0);
    ss.recovered_seq.store(info.seq);
    ss.last_at_ms.store(info.finished_ms);  // LASTSAVE after a restart: the snapshot's time
    ss.changes_at_last.store(ChangeCount(c));
    LOG_NOTICE("recovered %llu key(s) from snapshot %s (taken %lld s ago; %llu expired since) in %lld ms%s",
               static_cast<unsigned long long>(loaded), path.c_str(),
               static_cast<long long>((WallMs() - info.finished_ms) / 1000), static_cast<unsigned long long>(expired),
               static_cast<long long>(WallMs() - t0), i ? " (a newer snapshot was damaged)" : "");
    if (skipped) {
      LOG_ERR("snapshot %s: %llu key(s) could not be stored and are NOT loaded; the first: %s", path.c_str(),
              static_cast<unsigned long long>(skipped), first_skip.c_str());
    }
    return true;
  }
  if (!files.empty()) {
    *err = "none of the " + std::to_string(files.size()) + " snapshot(s) in " + cfg.wal_dir +
           " can be read (see above); move them away to start empty";
    return false;
  }
  LOG_NOTICE("no snapshot in %s: starting empty", cfg.wal_dir.c_str());
  return true;
}

int PersistProcesses(const proc::Config& cfg) { return cfg.wal_dir.empty() ? 0 : 1; }

void RunPersist(proc::ModuleProcContext& pc) {
  proc::SnapshotStats& ss = pc.procs->snap;
  int64_t last_try = 0;
  while (!proc::StopRequested()) {
    if (pc.tick) pc.tick();
    const proc::Config& cfg = *pc.cfg;
    int64_t now = WallMs();
    uint64_t req = ss.requests.load(), handled = ss.handled.load();
    const char* why = nullptr;
    std::string rule;
    if (req != handled) {
      why = "BGSAVE";  // marked handled by TakeSnapshot once it holds the claim
    } else if (now - last_try >= 5000 || ss.last_failed.load() == 0) {
      // A rule: SECONDS since the last good snapshot and CHANGES since.
      // After a failure, rules retry every 5 s (Redis: CONFIG_BGSAVE_RETRY_DELAY).
      uint64_t changes = ChangeCount(*pc.ctx), base = ss.changes_at_last.load();
      if (changes < base) ss.changes_at_last.store(base = changes);  // statistics were reset
      int64_t since = ss.last_at_ms.load() ? now - ss.last_at_ms.load() : now - pc.procs->started_ms.load();
      for (const auto& [secs, n] : Rules(cfg)) {
        if (changes - base >= n && since >= secs * 1000) {
          rule = std::to_string(n) + " change(s) in " + std::to_string(secs) + " s";
          why = rule.c_str();
          break;
        }
      }
    }
    if (why) {
      last_try = now;
      db::SnapshotInfo info;
      std::string err;
      SnapshotHooks hooks;
      if (req != handled) hooks.take_request = req;
      (void)TakeSnapshot(*pc.ctx, pc.procs, cfg, why, &info, &err, hooks);
    }
    usleep(100 * 1000);
  }
}

}  // namespace modules::db_module
