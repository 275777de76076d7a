// perfcached — the catalog of collections: shared layout, handles, create/open/drop/rename/list.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A collection is a linear-hashing table of 64-byte buckets (cache/bucket.h)
// over a segmented directory, plus an overflow side table, living in the
// shared arena. Any process holding a Ctx (its own allocator slot) may read
// and write any collection; the admin calls (create, drop, rename, resize)
// may run concurrently with them.
//
// Routing: route = count << 40 | level << 32 | split (count: 24 bits that
// move on at every split and merge, cache/internal.h NextRoute). idx = h
// mod 2^level; if idx < split,
// idx = h mod 2^(level+1). nbuckets = 2^level + split. Segments of 4096
// buckets are appended as the table grows, so buckets never move.
//
// Catalog: kMaxCollections TableHeader entries. A TableRef remembers the
// entry's generation; every operation checks it (writers under the bucket
// lock, readers after their copy), so a collection dropped under a caller
// answers kStale instead of touching a table that is no longer its own.
//
// Lock order: admin lock -> bucket locks in ascending index -> overflow lock
// -> slab pool / group locks. No allocation and no free happen while a
// bucket or the overflow lock is held.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/bucket.h"
#include "cache/record.h"
#include "mem/arena.h"
#include "mem/lock.h"
#include "mem/slab.h"
#include "mem/status.h"

namespace cache {

using mem::Off;
using mem::Status;

inline constexpr uint32_t kSegBuckets = 4096;
inline constexpr uint32_t kSegShift = 12;
// The directory (one pair of Offs per segment: buckets, hints) comes in
// chunks of 8192 segments (2^25 buckets, 128 KiB). Chunk 0 is `dir`, laid
// out at create; chunks 1..127 are allocated when the table first grows
// into them and listed in `dir_ext` (Off[kDirChunks], entry 0 unused),
// itself allocated with the first of them. A table of up to 2^25 buckets
// never reads `dir_ext`.
//
//   TableHeader.dir ----> [seg 0 | seg 1 | ... | seg 8191]      chunk 0
//   TableHeader.dir_ext -> [- | c1 | c2 | ... | c127]
//                               c1 -> [seg 8192 | ... | seg 16383]
inline constexpr uint32_t kDirChunkShift = 13;
inline constexpr uint32_t kDirChunkSegs = 1u << kDirChunkShift;
inline constexpr uint32_t kMaxLevel = 32;           // a table stops splitting at 2^32 buckets
inline constexpr uint32_t kMaxSegs = static_cast<uint32_t>((uint64_t{1} << kMaxLevel) >> kSegShift);
inline constexpr uint32_t kDirChunks = kMaxSegs >> kDirChunkShift;
inline constexpr uint32_t kMaxCreateLevel = 31;     // min_buckets is 32 bits
static_assert(kMaxSegs == 1u << 20 && kDirChunks == 128);
inline constexpr uint32_t kOvfBits = 12;
inline constexpr uint32_t kOvfHeads = 1u << kOvfBits;
inline constexpr uint32_t kMaxCollections = 128;
inline constexpr size_t kMaxName = 63;
inline constexpr int kReadRetries = 64;
inline constexpr uint32_t kCatalogMagic = 0x43544C47;  // "GLTC"

// Per-process, per-collection counters (one line per process slot, summed on
// read; only the owning process writes its line, with plain load+store).
enum Stat : uint8_t {
  kStatHits, kStatMisses, kStatStores, kStatRemoves, kStatExpired, kStatEvicted,
  kStatCreated, kStatDestroyed, kStatSeqRetries, kStatLockFallbacks, kStatSplits,
  kStatMerges, kStatReads, kStatNoMem, kStatOvfInserts, kStatRepairs, kStatCount
};
struct alignas(64) StatLine {
  std::atomic<uint64_t> c[16];
};
static_assert(sizeof(StatLine) == 128);
static_assert(kStatCount <= 16);

struct Overflow {
  std::atomic<uint32_t> seq;       // seqlock over all chains
  mem::ShmLock lock;
  std::atomic<uint32_t> count;     // nodes linked
  uint32_t pad;
  Off heads;                       // Off -> Off[kOvfHeads]
};
static_assert(sizeof(Overflow) == 24);
static_assert(offsetof(Overflow, heads) == 16);

enum TableState : uint32_t { kTableFree = 0, kTableLive = 1, kTableDropping = 2 };

// One catalog entry. Fixed layout (an API between processes).
struct alignas(64) TableHeader {
  std::atomic<uint32_t> name_seq;  // seqlock over name (rename)
  std::atomic<uint32_t> state;     // TableState
  std::atomic<uint32_t> gen;       // bumped at create and at drop
  uint32_t flags;                  // kTableExpiredEvents ...
  char name[64];                   // NUL-terminated
  std::atomic<uint64_t> route;     // count << 40 | level << 32 | split (published whole)
  Off dir;                         // Off -> Off[2 * kDirChunkSegs]: segment, hints
  Off stats;                       // Off -> StatLine[max_procs]
  uint32_t min_buckets;            // resize target (grow to / shrink no lower)
  uint32_t load_x100;              // target entries per bucket x 100
  Off dir_ext;                     // Off -> Off[kDirChunks]: chunks 1.. (0 until needed)
  uint8_t pad_read_mostly[8];      // lines 0-1: read by every operation
  Overflow ovf;                    // line 2: written by overflow writers only
  uint8_t pad_ovf[40];
  mem::ShmLock admin;              // line 3+: split / merge / resize / drop
  uint32_t nsegs;                  // segments allocated (admin lock)
  std::atomic<int64_t> created_ms;
  std::atomic<uint64_t> stat_base[16];  // reset baselines (perf_stats_reset)
  uint8_t pad_admin[48];
  // line 6: the version floor (record.h): >= every version a removed record
  // of this table had; raised before the unlink, read by every create.
  std::atomic<uint64_t> ver_floor;
  uint8_t pad_floor[56];
};
static_assert(std::is_standard_layout_v<TableHeader>);
static_assert(std::is_trivially_destructible_v<TableHeader>);
static_assert(offsetof(TableHeader, name_seq) == 0);
static_assert(offsetof(TableHeader, state) == 4);
static_assert(offsetof(TableHeader, gen) == 8);
static_assert(offsetof(TableHeader, name) == 16);
static_assert(offsetof(TableHeader, route) == 80);
static_assert(offsetof(TableHeader, dir) == 88);
static_assert(offsetof(TableHeader, stats) == 96);
static_assert(offsetof(TableHeader, min_buckets) == 104);
static_assert(offsetof(TableHeader, dir_ext) == 112);
static_assert(offsetof(TableHeader, ovf) == 128);   // own cache line: no false sharing
static_assert(offsetof(TableHeader, admin) == 192);  // with route / dir / gen
static_assert(offsetof(TableHeader, ver_floor) == 384);
static_assert(sizeof(TableHeader) == 448);

inline constexpr uint32_t kTableExpiredEvents = 1;

// The catalog: the arena's user root points at it. A rename writes the new
// name into `pending_name` first, then copies it into the entry inside the
// entry's name seqlock; a process that takes the catalog lock over from a
// dead holder finishes that copy (roll forward), so a killed rename never
// leaves a half-written name or an odd name seqlock behind.
struct Catalog {
  uint32_t magic;                  // kCatalogMagic
  uint32_t count;
  uint64_t seed;                   // hash seed (random per arena)
  mem::ShmLock lock;               // create / drop / rename
  uint32_t pending_index;          // rename in flight: entry + 1 (0 = none)
  Off free_segs;                   // freed segment pairs, linked (admin reuse)
  char pending_name[64];           // rename in flight: the new name
  // Encoding thresholds of aggregates (cache/dict.h DictLimits, in its
  // field order; 0 = the default). Written by CONFIG SET, read by writes.
  std::atomic<uint32_t> dict_limits[8];
  // maxmemory and its policy (cache/evict.h), shared like dict_limits.
  std::atomic<uint64_t> maxmemory;         // bytes of used memory; 0 = none
  std::atomic<uint32_t> maxmemory_policy;  // EvictPolicy
  std::atomic<uint32_t> maxmemory_samples;
  // The access clock and LFU tuning (cache/access.h).
  std::atomic<uint32_t> access_clock;      // seconds (the timer's tick)
  std::atomic<uint32_t> lfu_log_factor;
  std::atomic<uint32_t> lfu_decay_time;    // minutes
  // Automove (cache/automove.h): settings and counters.
  std::atomic<uint32_t> automove_off;      // 1 = no passes unless asked
  std::atomic<uint64_t> automove_passes;
  std::atomic<uint64_t> automove_moved;    // records moved
  std::atomic<uint64_t> automove_freed;    // marked pages that came free
  std::atomic<uint32_t> automove_request;  // 1 = a pass now (MI)
  std::atomic<uint32_t> automove_active;   // 1 while a pass runs
  TableHeader tables[kMaxCollections];
};
static_assert(std::is_standard_layout_v<Catalog>);
static_assert(offsetof(Catalog, lock) == 16);
static_assert(offsetof(Catalog, free_segs) == 24);
static_assert(offsetof(Catalog, pending_index) == 20);
static_assert(offsetof(Catalog, pending_name) == 32);
static_assert(offsetof(Catalog, dict_limits) == 96);
static_assert(offsetof(Catalog, maxmemory) == 128);
static_assert(offsetof(Catalog, access_clock) == 144);
static_assert(offsetof(Catalog, automove_passes) == 160);
static_assert(offsetof(Catalog, automove_request) == 184);
static_assert(offsetof(Catalog, tables) == 192);
static_assert(sizeof(Catalog) == 192 + kMaxCollections * sizeof(TableHeader));

struct DictChange;  // cache/journal.h

// A process's handle on the engine: its arena, allocator slot and scratch.
struct Ctx {
  Ctx(mem::Arena& a, uint32_t slot);
  mem::Arena& arena;
  mem::Allocator alloc;
  Catalog* catalog;
  uint32_t tid;
  uint32_t slot;
  int64_t clock_skew_ms = 0;       // tests: pretend time moved
  bool touch = true;               // reads count as accesses (cache/access.h; NoTouch)
  bool stats = true;               // reads count in keyspace hits / misses (NoStats)
  // Told of each key a full arena made this process evict (cache/evict.h
  // MakeRoomFor): collection, key, the evicted record's version. Set by a
  // door that raises events or logs (the WAL).
  std::function<void(std::string_view, std::string_view, uint64_t)> on_evict;
  // Told of each key a clear removed (FLUSHDB, FLUSHALL, a drop:
  // ClearCollection), after the bucket's lock is gone: collection, key, the
  // removed record's version. The WAL logs a tombstone for each.
  std::function<void(std::string_view, std::string_view, uint64_t)> on_cleared;
  // When set, each committed aggregate write (cache/dict.h Dict::Commit)
  // appends what it changed: the WAL logs the fields of a large hash or
  // set instead of the whole aggregate (db/wal.h kind 5).
  std::vector<DictChange>* dict_journal = nullptr;
  std::string scratch;             // reused buffers (no malloc per op)
  std::vector<Off> dead;           // cells to free after unlock
};

// Reads inside this scope do not count as accesses (OBJECT, MEMORY USAGE:
// Redis's LOOKUP_NOTOUCH).
struct NoTouch {
  explicit NoTouch(Ctx& c) : c_(c), was_(c.touch) { c.touch = false; }
  ~NoTouch() { c_.touch = was_; }
  NoTouch(const NoTouch&) = delete;
  NoTouch& operator=(const NoTouch&) = delete;

 private:
  Ctx& c_;
  bool was_;
};

// Reads inside this scope do not count as reads, hits or misses: the
// engine's own look-ups (an eviction's re-check, a snapshot's or the WAL's
// export, a re-read that proves nothing changed, MEMORY USAGE), which
// Redis makes without its lookupKey statistics.
struct NoStats {
  explicit NoStats(Ctx& c) : c_(c), was_(c.stats) { c.stats = false; }
  ~NoStats() { c_.stats = was_; }
  NoStats(const NoStats&) = delete;
  NoStats& operator=(const NoStats&) = delete;

 private:
  Ctx& c_;
  bool was_;
};

struct TableRef {
  TableHeader* h = nullptr;
  uint32_t gen = 0;
  uint32_t index = 0;
  explicit operator bool() const { return h != nullptr; }
};

int64_t NowMs(const Ctx& c);

// ---- catalog (cache/table.cc) ----------------------------------------------
struct CollectionOptions {
  uint32_t buckets = 1024;          // initial / minimum size (rounded to 2^n)
  uint32_t load_x100 = 400;         // grow above 4 entries per bucket
  bool expired_events = false;
  // Versions of the collection's writes start above this (VersionFloor),
  // from before the collection is visible: a write by another process
  // the moment it is made cannot take a version at or below it. With a
  // WAL, the largest version logged (a dropped collection of the same
  // name has records there that must never outrank the new one's).
  uint64_t version_floor = 0;
};

// Pre-fork, once: lay out the catalog in the arena's user root.
Status InitCatalog(mem::Arena& a, uint64_t seed);
Status CreateCollection(Ctx& c, std::string_view name, const CollectionOptions& o, TableRef* out);
Status OpenCollection(Ctx& c, std::string_view name, TableRef* out);
Status DropCollection(Ctx& c, std::string_view name);
Status RenameCollection(Ctx& c, std::string_view from, std::string_view to);
Status ResizeCollection(Ctx& c, std::string_view name, uint32_t buckets);
// Clear every key (FLUSHDB); the table keeps its size.
Status ClearCollection(Ctx& c, const TableRef& t, uint64_t* removed);

struct CollectionInfo {
  std::string name;
  uint32_t index;
  uint64_t buckets;
  uint64_t entries;
  uint64_t overflow;
  uint32_t level;
  uint32_t split;
  double load_factor;
  uint64_t stats[kStatCount];       // summed, minus the reset baseline
  uint64_t changes = 0;             // stores + removes + expired + evicted, never re-baselined (save rules)
};
std::vector<CollectionInfo> ListCollections(Ctx& c);
bool CollectionInfoOf(Ctx& c, const TableRef& t, CollectionInfo* out);
// The name t's collection has now (a rename keeps the table and its refs);
// false when it was dropped since t was opened.
bool CollectionNameOf(const TableRef& t, std::string* out);
void ResetCollectionStats(Ctx& c, const TableRef& t);
void ResetCollectionStat(Ctx& c, const TableRef& t, Stat s);
uint64_t CollectionEntries(const Ctx& c, const TableRef& t);
// The table's version floor (record.h): at least the version of every
// record ever removed from it. A WAL tombstone carries it (db/wal.h).
uint64_t VersionFloor(const TableRef& t);
// After a load that kept versions (snapshot, WAL replay): raise the floor
// to v, so every later write outranks what was loaded and logged.
void RaiseVersionFloor(const TableRef& t, uint64_t v);
uint64_t SumStat(const Ctx& c, const TableRef& t, Stat s);

}  // namespace cache
