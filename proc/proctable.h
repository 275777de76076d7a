// perfcached — the process table in shared memory, with per-process counters.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// One entry per process the supervisor may run (rank as in OpenSIPS:
// supervisor 0, timer -1, workers 1..N). Every counter is written only by
// the process that owns the entry (plain load + store, no locked RMW) and
// summed by readers: stats never share an atomic counter on the hot path.
//
//   entry (128 B): pid rank role slot | start heartbeat restarts | counters

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "proc/events.h"

namespace proc {

enum class Role : uint32_t { kNone = 0, kSupervisor, kTimer, kWorker, kModule };
const char* RoleName(Role r);

enum DoorStat : uint8_t {
  kDoorOpen, kDoorAccepted, kDoorRejected, kDoorCommands, kDoorErrors, kDoorBytesIn,
  kDoorBytesOut, kDoorOutputLimit, kDoorQueryLimit, kDoorEvictedClients, kDoorStatCount
};

struct alignas(64) ProcEntry {
  std::atomic<int32_t> pid;
  int32_t rank;
  std::atomic<uint32_t> role;
  uint32_t slot;                    // allocator slot in the arena
  std::atomic<int64_t> start_ms;
  std::atomic<int64_t> heartbeat_ms;
  std::atomic<uint32_t> restarts;
  std::atomic<uint32_t> config_gen;  // the reload generation this process applied (proc/reload.h)
  std::atomic<uint64_t> door[kDoorStatCount];
  uint64_t pad2[16 - kDoorStatCount - 5];
};
static_assert(sizeof(ProcEntry) == 128);
static_assert(std::is_standard_layout_v<ProcEntry>);

inline constexpr uint32_t kMaxProcEntries = 256;

// The reload channel (proc/reload.h). Written by the supervisor only;
// read by every child under `seq` (odd while the supervisor writes).
//
//   gen | seq | len | bytes[len]: records "u32 key length, key, u32 value length, value"
inline constexpr uint32_t kReloadBytes = 64 * 1024;
struct ReloadArea {
  std::atomic<uint32_t> gen;  // bumped once per published reload
  std::atomic<uint32_t> seq;  // seqlock over len and bytes
  uint32_t len;
  uint32_t pad;
  char bytes[kReloadBytes];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::is_standard_layout_v<ReloadArea>);
static_assert(offsetof(ReloadArea, bytes) == 16 && sizeof(ReloadArea) == 16 + kReloadBytes);

// SQL persistence (modules/db): one save or load at a time, claimed by
// busy_pid (the supervisor's at start and stop, the MI process's on
// demand; a dead claimer's pid is taken over). Its writer stores, INFO,
// MI and /metrics read.
//
//   0 saves  8 save_failures  16 loads  24 load_failures  32 rows_saved
//   40 rows_loaded  48 rows_expired  56 rows_bad  64 last_save_at_ms
//   72 last_save_took_ms  80 last_save_rows  88 last_load_at_ms
//   96 last_load_took_ms  104 last_load_rows  112 busy_pid  116 busy_kind
//   120 last_save_failed  124 pad
struct PersistStats {
  std::atomic<uint64_t> saves, save_failures, loads, load_failures;
  std::atomic<uint64_t> rows_saved, rows_loaded, rows_expired, rows_bad;
  std::atomic<int64_t> last_save_at_ms, last_save_took_ms, last_save_rows;  // wall ms, ms, rows
  std::atomic<int64_t> last_load_at_ms, last_load_took_ms, last_load_rows;
  std::atomic<int32_t> busy_pid;    // 0 = idle
  std::atomic<uint32_t> busy_kind;  // 1 saving, 2 loading
  std::atomic<uint32_t> last_save_failed;  // 1 when the last save did not commit
  uint32_t pad;
};
static_assert(sizeof(PersistStats) == 128);
static_assert(offsetof(PersistStats, busy_pid) == 112 && offsetof(PersistStats, last_save_failed) == 120);

// Snapshots (modules/db, db/snapshot.h): BGSAVE asks by bumping
// `requests`; the persist process takes them (`handled`). One snapshot at a
// time, claimed by busy_pid like PersistStats. `changes_at_last` is the
// change count (collections' stores + removes + expired + evicted) when the
// last good snapshot began: the save rules' "changes since".
//
//   0 requests  8 handled  16 snapshots  24 failures  32 last_at_ms
//   40 last_took_ms  48 started_ms  56 last_records  64 last_bytes
//   72 changes_at_last  80 seq  88 busy_pid  92 last_failed
//   96 recovered_records  104 recovered_ms  112 recovered_seq  120 pad
struct SnapshotStats {
  std::atomic<uint64_t> requests, handled, snapshots, failures;
  std::atomic<int64_t> last_at_ms, last_took_ms, started_ms;  // wall ms of the last good one's end; ms; 0 = idle
  std::atomic<uint64_t> last_records, last_bytes, changes_at_last, seq;
  std::atomic<int32_t> busy_pid;
  std::atomic<uint32_t> last_failed;
  std::atomic<uint64_t> recovered_records;
  std::atomic<int64_t> recovered_ms;
  std::atomic<uint64_t> recovered_seq;
  uint64_t pad;
};
static_assert(sizeof(SnapshotStats) == 128);
static_assert(offsetof(SnapshotStats, busy_pid) == 88 && offsetof(SnapshotStats, recovered_seq) == 112);

struct ProcTable {
  uint32_t count;                  // entries in use
  uint32_t pad[10];
  uint8_t replid[20];              // random per supervisor start (INFO replication master_replid)
  std::atomic<int64_t> started_ms; // supervisor start
  // Live settings (CONFIG SET): written by any process, applied by each
  // worker on its next tick.
  std::atomic<int32_t> live_timeout;
  std::atomic<int32_t> live_loglevel;
  std::atomic<uint32_t> live_gen;  // bumped on every CONFIG SET
  uint32_t pad3;
  uint64_t door_base[kDoorStatCount];  // CONFIG RESETSTAT baselines (summed counters)
  uint64_t pad2[8 - kDoorStatCount + 5];
  ProcEntry e[kMaxProcEntries];
  EventTable events;               // event subscribers (proc/events.h)
  // RESP connections open across all workers (maxclients is exact): each
  // worker adds before it keeps a connection and subtracts when it closes
  // it; the supervisor gives back the open count of a worker that died.
  std::atomic<int32_t> clients;
  uint32_t pad4;
  // Live limits (CONFIG SET), bytes; applied by each worker on its tick.
  std::atomic<int64_t> live_proto_max_bulk;
  std::atomic<int64_t> live_query_buf;
  std::atomic<int64_t> live_output[2][3];  // class (normal, pubsub) x (hard, soft, seconds)
  // maxmemory-eviction-tenacity (0..100) and maxmemory-clients (bytes, or
  // -N for N% of maxmemory; 0 = no limit), applied by each worker.
  std::atomic<int32_t> live_tenacity;
  uint32_t pad5;
  std::atomic<int64_t> live_clients_limit;
  // Memory of each worker's RESP clients (bytes, all of them) and of its
  // largest client that may be evicted, by entry index: written by the
  // owner on its tick, summed by every worker for maxmemory-clients.
  std::atomic<uint64_t> client_mem[kMaxProcEntries];
  std::atomic<uint64_t> client_big[kMaxProcEntries];
  ReloadArea reload;               // SIGHUP: the reloadable settings (proc/reload.h)
  PersistStats persist;            // SQL persistence (modules/db)
  SnapshotStats snap;              // snapshots (modules/db)
};
static_assert(offsetof(ProcTable, e) % 64 == 0);

// Sum of one door counter over every process, minus the reset baseline.
inline uint64_t DoorSum(const ProcTable& t, DoorStat s, bool raw = false) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < kMaxProcEntries; ++i) v += t.e[i].door[s].load(std::memory_order_relaxed);
  if (raw || s == kDoorOpen) return v;
  return v > t.door_base[s] ? v - t.door_base[s] : 0;
}

// Owner-only increment.
inline void Bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace proc
