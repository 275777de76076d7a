// perfcached — the WAL's shared memory: one ring per writing process, drained by the WAL process.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The supervisor maps this area before any fork (MapWal), so every child
// sees it at the same address. Each process that writes (a worker, the MI
// process) owns the ring of its process-table index: it is the only
// producer, the WAL process the only consumer. Positions are byte counts
// since the daemon started and only grow; the ring holds [tail, head).
//
//   WalShared (320 B) | eventfds | ring 0 head (128 B) | ring 0 bytes | ring 1 head | ...
//
//   ring head: 0 head u64 (producer: bytes appended)
//              8 tail u64 (WAL process: bytes written into a segment)
//             16 durable u64 (WAL process: bytes fsynced by the policy)
//             24 waiters u32 (producer: it holds replies until `durable`)
//             28 efd i32 (eventfd: the WAL process wakes a waiting producer)
//             32 owner i32 | 36 pad | 40 records u64 | 48 refused u64
//             56 waits u64 (times the producer waited for room)
//             64 max_version u64 (the largest version it logged) | 72 pad
//
// A producer copies a record in, then publishes head (release): a
// producer killed in between leaves nothing half visible. (A record too
// large for a quarter of the ring goes in as part records, each published
// so: one killed between parts leaves the first ones, which the reader
// drops as a record that never got its last part: db/wal.h kind 7.) The consumer
// publishes tail only once the bytes are in a segment file, and durable
// only once they are fsynced (always: every batch; everysec: once a
// second; no: never — durable = tail). A write whose record cannot get
// into the ring is refused before it is applied (WalLogger::Admit), and a
// record that cannot be logged after the write closes the client's
// connection without a reply: never acknowledged and then lost.

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cache/table.h"

namespace cache {
struct DictChange;
}

namespace db {

enum class WalPolicy : uint32_t { kOff = 0, kNo = 1, kEverysec = 2, kAlways = 3 };
const char* WalPolicyName(WalPolicy p);
bool ParseWalPolicy(std::string_view s, WalPolicy* out);

struct alignas(64) WalRing {
  std::atomic<uint64_t> head;
  std::atomic<uint64_t> tail;
  std::atomic<uint64_t> durable;
  std::atomic<uint32_t> waiters;
  int32_t efd;
  std::atomic<int32_t> owner;
  uint32_t pad0;
  std::atomic<uint64_t> records, refused, waits;
  std::atomic<uint64_t> max_version;  // producer: the largest version it logged
  uint64_t pad[7];
};
static_assert(sizeof(WalRing) == 128 && std::is_standard_layout_v<WalRing>);
static_assert(offsetof(WalRing, efd) == 28 && offsetof(WalRing, records) == 40 &&
              offsetof(WalRing, max_version) == 64);

// The area's header. Counters are written by the WAL process only
// (recovery's by the supervisor, before the fork).
//
//   0 magic | 8 version | 12 nrings | 16 ring_bytes | 24 policy | 28 failed_errno
//   32 written_pos | 40 durable_pos | 48 wal_pid | 52 wake_fd | 56 sleeping | 60 pad
//   64 records | 72 bytes | 80 fsyncs | 88 fsync_us_total | 96 fsync_us_max
//   104 segments_opened | 112 segment_start | 120 last_fsync_ms | 128 write_errors
//   136 replayed | 144 replay_torn | 152 replay_ms | 160 segments_dropped
//   168 last_write_error_ms | 176 recovered_max_version | 184 sync_failed | 188 commit_wanted
//   192 zero_fills | 200 seg_alloc | 208 rotating | 212 pad | 216 worker_commits
//   224 slow_fsync_ms | 232 pad | 256 commit_mu (a pthread_mutex_t in 64 B) | 320
//
// Committing (drain the rings, write, fdatasync, publish) is done under
// commit_mu, a robust process-shared mutex: by the WAL process, and under
// fsync = always with [wal] commit = worker by a worker whose replies
// wait (the leader of a group commit; modules/db/wal_process.cc). The
// current segment is written at written_pos - segment_start (the one
// position every committer reads); the WAL process alone opens segments
// (rotating = 1 meanwhile: no worker commits) and lays zeros ahead
// (seg_alloc: the current segment's file size).
struct WalShared {
  char magic[8];
  uint32_t version;
  uint32_t nrings;
  uint64_t ring_bytes;
  uint32_t policy;                       // WalPolicy
  std::atomic<int32_t> failed_errno;     // != 0: writes are refused (a segment cannot be written)
  std::atomic<uint64_t> written_pos;     // WAL position written into segments
  std::atomic<uint64_t> durable_pos;     // ... and fsynced
  std::atomic<int32_t> wal_pid;
  int32_t wake_fd;                       // eventfd: producers wake the WAL process
  std::atomic<uint32_t> sleeping;        // the WAL process waits on wake_fd
  uint32_t pad0;
  std::atomic<uint64_t> records, bytes, fsyncs, fsync_us_total, fsync_us_max;
  std::atomic<uint64_t> segments_opened, segment_start;
  std::atomic<int64_t> last_fsync_ms;
  std::atomic<uint64_t> write_errors, replayed, replay_torn;
  std::atomic<int64_t> replay_ms;
  std::atomic<uint64_t> segments_dropped;
  std::atomic<int64_t> last_write_error_ms;
  std::atomic<uint64_t> recovered_max_version;  // the largest version recovery saw
  std::atomic<uint32_t> sync_failed;            // an fdatasync failed: nothing is durable until a restart
  std::atomic<uint32_t> commit_wanted;          // a worker found commit_mu taken: commit again after
  std::atomic<uint64_t> zero_fills;             // zeros laid down ahead of the records (fsync = always)
  std::atomic<uint64_t> seg_alloc;              // the current segment's file size (zeros ahead included)
  std::atomic<uint32_t> rotating;               // the WAL process is opening a segment: no worker commits
  uint32_t pad2;
  std::atomic<uint64_t> worker_commits;         // turns taken by workers (the rest: the WAL process)
  std::atomic<int64_t> slow_fsync_ms;           // when an fdatasync last took over 1 s (workers then do not lead)
  uint64_t pad3[3];
  union {
    pthread_mutex_t commit_mu;                  // robust, process-shared: one committer at a time
    char commit_mu_room[64];
  };
};
static_assert(sizeof(WalShared) == 320 && std::is_standard_layout_v<WalShared>);
static_assert(offsetof(WalShared, written_pos) == 32 && offsetof(WalShared, records) == 64 &&
              offsetof(WalShared, segments_dropped) == 160 && offsetof(WalShared, recovered_max_version) == 176 &&
              offsetof(WalShared, sync_failed) == 184 && offsetof(WalShared, zero_fills) == 192 &&
              offsetof(WalShared, seg_alloc) == 200 && offsetof(WalShared, rotating) == 208 &&
              offsetof(WalShared, worker_commits) == 216 && offsetof(WalShared, slow_fsync_ms) == 224 &&
              offsetof(WalShared, commit_mu) == 256 && sizeof(pthread_mutex_t) <= 64);

// The largest version recovery saw or any process logged since: a
// collection made at run time (perf_create) starts its versions above it,
// so its writes outrank the log's records of an older one of that name.
uint64_t WalMaxVersion();

inline constexpr uint32_t kWalShmVersion = 2;  // 2: commit_mu, rotating, seg_alloc, worker_commits

// Supervisor, before any fork: map the area with `nrings` rings of
// ring_bytes (a power of two) and their eventfds. False and *err.
bool MapWal(uint32_t nrings, uint64_t ring_bytes, WalPolicy policy, std::string* err);
// The mapped area (nullptr: no WAL, the daemon is memory-only or
// snapshot-only).
WalShared* Wal();
WalRing* WalRingAt(uint32_t index);  // nullptr past nrings
char* WalRingBytes(uint32_t index);

// The WAL's figures (INFO persistence wal_*, MI wal_status, the "wal"
// statistics group); empty without a WAL.
struct WalFigure {
  const char* name;
  int64_t value;
  bool counter;  // else a gauge
};
std::vector<WalFigure> WalFigures();

// Committers (the WAL process, a leading worker): take commit_mu. wait:
// up to 200 ms, else give up at once when another holds it (kBusy).
// kOwnerDied: taken, and the previous holder died holding it (what it
// wrote may not be fsynced yet).
enum class CommitLock { kBusy, kTaken, kOwnerDied };
CommitLock LockCommit(bool wait);
void UnlockCommit();
// Wake the WAL process if it sleeps (a segment to open, zeros to lay).
void WakeWalProcess();

// The consumer: copy [tail, upto) of ring i into *out.
void WalRingCopy(uint32_t index, uint64_t upto, std::string* out);

// Tests only: called by WalLogger::LogKey between its floor read and its
// read-back of the key (a removal in that window).
extern void (*g_wal_test_after_floor)();

// A producer: the process's side of its ring.
class WalLogger {
 public:
  // ring index = the process's process-table index. False when no WAL.
  bool Attach(uint32_t index);
  bool active() const { return ring_ != nullptr || broken_; }
  WalPolicy policy() const;
  // Before a write: nullptr if it may go ahead, else the error text to
  // answer (nothing is applied): the WAL cannot be written, or the ring
  // has had no room for `timeout_ms`.
  const char* Admit(int timeout_ms = 100);
  // True when the WAL can be written and the ring has `bytes` free now:
  // work that may log (a tick's evictions) goes ahead without waiting,
  // and without Admit's refusals that follow a wait. True with no WAL.
  bool HasRoom(uint64_t bytes) const;
  // After a write: log each changed key's state. False: the record could
  // not go into the ring (*err says why) — the caller must not acknowledge.
  // With the write's aggregate changes (cache::Ctx::dict_journal), a large
  // hash or set written by field logs the fields it changed (kind 5), and
  // one whose expiry alone changed logs that (kind 6), instead of its
  // whole state; see the rule in wal_ring.cc.
  bool LogKey(cache::Ctx& c, const cache::TableRef& t, std::string_view collection, std::string_view key,
              std::string* err, const std::vector<cache::DictChange>* journal = nullptr);
  // After a write to a large hash or set that neither made nor removed the
  // key (cache/journal.h DictChange): log only the entries it changed, at
  // the version it published (kind 5), or its new expiry when that alone
  // changed (DictChange::expire_only: kind 6). See WalLogWrite for the choice.
  bool LogFields(std::string_view collection, const cache::DictChange& ch, std::string* err);
  // A key removed at a known version: an eviction, a FLUSHDB / FLUSHALL
  // (cache::Ctx::on_evict, on_cleared).
  bool LogTombstone(std::string_view collection, std::string_view key, uint64_t version, std::string* err);
  // The collection is gone (after its keys' tombstones): kind 4, db/wal.h,
  // at `version` (WalMaxVersion when dropped: every version of the dropped
  // life is at or below it, a collection made again starts above it).
  bool LogDrop(std::string_view collection, uint64_t version, std::string* err);
  // The ring position a reply waits for (everything logged so far).
  uint64_t position() const;
  bool Durable(uint64_t pos) const;
  // Ask the WAL process to write now (always: after a batch of writes).
  void Wake();
  // fsync = always, [wal] commit = worker: this process commits its own
  // records at the end of its loop round (WalLead): appending one does
  // not wake the WAL process.
  void set_leads(bool on) { leads_ = on; }
  uint32_t index() const { return index_; }
  // Mark that replies wait (the WAL process then writes the ring's eventfd
  // when it publishes durable); re-check Durable after setting it.
  void SetWaiting(bool on);
  int efd() const;
  // For processes without an event loop (MI): wait until pos is durable.
  bool WaitDurable(uint64_t pos, int timeout_ms);

 private:
  // Append an encoded record (as parts when large: db/wal.h kind 7).
  bool Push(std::string_view rec, std::string_view collection, std::string_view key, std::string* err);
  // deadline: when waiting for room ends (0: set at the first wait).
  bool PushOne(std::string_view rec, int64_t* deadline, std::string* err);
  WalRing* ring_ = nullptr;
  uint32_t index_ = 0;
  char* bytes_ = nullptr;
  uint64_t cap_ = 0;
  std::string buf_;
  uint64_t pending_version_ = 0;  // the version of the record Push appends
  bool broken_ = false;           // a WAL without a ring for this process: every write refused
  bool leads_ = false;            // set_leads
  int64_t refuse_until_ms_ = 0;   // Admit timed out: refuse at once until then
};

}  // namespace db
