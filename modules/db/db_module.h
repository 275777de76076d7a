// perfcached — the db module's parts (modules/db): SQL persistence and snapshots.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include <string>

#include "cache/maint.h"
#include "cache/table.h"
#include "db/snapshot.h"
#include "db/wal_apply.h"
#include "modules/exports.h"
#include "proc/proctable.h"

namespace modules::db_module {

// Wall-clock unix ms: the stats' times, snapshot durations, heartbeats.
inline int64_t WallMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// A claim on a one-at-a-time slot in shared memory (PersistStats::busy_pid,
// SnapshotStats::busy_pid): the holder's pid; a dead holder's is taken over.
class Claim {
 public:
  explicit Claim(std::atomic<int32_t>& slot) : slot_(slot) {
    int32_t me = getpid();
    for (int i = 0; i < 4 && !held_; ++i) {
      int32_t cur = 0;
      if (slot_.compare_exchange_strong(cur, me)) {
        held_ = true;
      } else if (kill(cur, 0) != 0 && errno == ESRCH) {
        held_ = slot_.compare_exchange_strong(cur, me);  // its holder died mid-way
      } else {
        holder_ = cur;
        break;
      }
    }
  }
  ~Claim() {
    if (held_) slot_.store(0);
  }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  bool held() const { return held_; }
  int32_t holder() const { return holder_; }

 private:
  std::atomic<int32_t>& slot_;
  bool held_ = false;
  int32_t holder_ = 0;
};

// A load before the fork (snapshot, WAL replay) runs without the timer
// process, which grows tables in service: without this, a large load
// piles keys into overflow chains (quadratic). Call after each key stored.
class LoadGrowth {
 public:
  void Stored(cache::Ctx& c, const cache::TableRef& t) {
    if (++n_ % 1024 == 0) (void)cache::GrowStep(c, t, 1u << 16);
  }

 private:
  uint64_t n_ = 0;
};

// ---- snapshots (modules/db/snapshots.cc) ----------------------------------------
// The change count the save rules compare: every collection's stores,
// removes, expired and evicted.
uint64_t ChangeCount(cache::Ctx& c);
// Write a snapshot of every collection now, in this process (SAVE, the
// persist process, the final save). `why` goes to the log. False and *err
// (a snapshot is running; the disk; ...); the previous snapshots stay.
struct SnapshotHooks {
  uint64_t take_request = 0;        // the persist process: the BGSAVE request count it takes
  std::function<void()> progress;   // called between steps of the walk (a worker's heartbeat)
};
bool TakeSnapshot(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, const char* why,
                  db::SnapshotInfo* info, std::string* err, const SnapshotHooks& hooks = {});
// BGSAVE: have the persist process take one. False and *err when there is
// no [wal] dir or one is running already.
bool RequestSnapshot(proc::ProcTable* pt, const proc::Config& cfg, std::string* err);
// At start (supervisor, before the fork): load the newest snapshot that
// verifies, falling back to older ones; false only when none can be read
// although some exist, or the arena cannot hold it.
bool RecoverFromSnapshots(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, std::string* err);
// What recovery carries from the snapshot into the WAL replay.
struct Recovered {
  std::map<std::string, uint64_t> top;             // collection -> largest version loaded, logged or floor
  std::unordered_map<std::string, uint64_t> tomb;  // collection \0 key -> newest version known gone
  std::map<std::string, uint64_t> snap_floor;      // collection -> its floor when the snapshot's walk began
  std::unordered_set<std::string> snap_expired;    // collection \0 key: held by the snapshot, expired by the load
  uint64_t wal_from = 0;                           // replay from this WAL position
  bool have_snapshot = false;
  // Held while recovery runs (db/wal_apply.h RecoveryClock): hashes and
  // sets that expired in the downtime are loaded, strings are not.
  const db::RecoveryClock* clock = nullptr;
};
inline std::string TombKey(std::string_view coll, std::string_view key) {
  std::string k(coll);
  k.push_back('\0');
  k.append(key);
  return k;
}
// RecoverFromSnapshots' first half: the newest good snapshot. An entry
// that expired while the daemon was down is a tombstone at its version
// (an older state of the key in the WAL must not come back).
bool LoadNewestSnapshot(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, Recovered* rec,
                        std::string* err);

// ---- the WAL (modules/db/wal_process.cc) ---------------------------------------
// Supervisor, before any fork: map the rings when [wal] dir is set and
// fsync is not off.
bool InitWal(const proc::Config& cfg, std::string* err);
int WalProcesses(const proc::Config& cfg);
void RunWal(proc::ModuleProcContext& pc);
// Supervisor, after every child stopped: what the rings still hold.
void FinalWalDrain(const proc::Config& cfg);
// fsync = always, [wal] commit = worker: commit every ring's records now
// as the leader of a group commit (the worker's ring index: its own
// replies it releases itself). A net::CommitResult: kCommitNone when it
// did not (another committer will: its records are covered without a
// wait); kCommitAgain when another worker asked for a turn meanwhile.
int WalLead(const proc::Config& cfg, uint32_t self_ring);
// The "wal" statistics group (empty without a WAL): INFO, MI, /metrics.
std::vector<StatValue> WalStatValues();
// The WAL position written so far (0 without a WAL).
uint64_t WalWrittenPosition();
// Replay every record at position >= rec->wal_from (newer wins).
bool ReplayWal(cache::Ctx& c, const proc::Config& cfg, Recovered* rec, std::string* err);

// The persist process: save rules and BGSAVE requests.
int PersistProcesses(const proc::Config& cfg);
void RunPersist(proc::ModuleProcContext& pc);
// SAVE, BGSAVE, LASTSAVE (modules/db/persist_family.cc).
void RegisterPersistFamily(resp::Env& e);

}  // namespace modules::db_module
