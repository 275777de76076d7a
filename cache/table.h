// perfcached — collections (named seqlock hash tables) and their operations.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A collection is a linear-hashing table of 64-byte buckets (cache/bucket.h)
// over a segmented directory, plus an overflow side table, living in the
// shared arena. Any process holding a Ctx (its own allocator slot) may read
// and write any collection; the admin calls (create, drop, rename, resize)
// may run concurrently with them.
//
// Routing: route = level << 32 | split. idx = h mod 2^level; if idx < split,
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
inline constexpr uint32_t kMaxSegs = 8192;          // 2^25 buckets
inline constexpr uint32_t kMaxLevel = 25;
inline constexpr uint32_t kOvfHeads = 1024;
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
  Off heads;                       // Off -> Off[kOvfHeads]
};
static_assert(sizeof(Overflow) == 16);

enum TableState : uint32_t { kTableFree = 0, kTableLive = 1, kTableDropping = 2 };

// One catalog entry. Fixed layout (an API between processes).
struct alignas(64) TableHeader {
  std::atomic<uint32_t> name_seq;  // seqlock over name (rename)
  std::atomic<uint32_t> state;     // TableState
  std::atomic<uint32_t> gen;       // bumped at create and at drop
  uint32_t flags;                  // kTableExpiredEvents ...
  char name[64];                   // NUL-terminated
  std::atomic<uint64_t> route;     // level << 32 | split (published whole)
  Off dir;                         // Off -> Off[2 * kMaxSegs]: segment, hints
  Off stats;                       // Off -> StatLine[max_procs]
  uint32_t min_buckets;            // resize target (grow to / shrink no lower)
  uint32_t load_x100;              // target entries per bucket x 100
  uint8_t pad_read_mostly[24];     // lines 0-1: read by every operation
  Overflow ovf;                    // line 2: written by overflow writers only
  uint8_t pad_ovf[48];
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
  uint32_t pad;
  Off free_segs;                   // freed segment pairs, linked (admin reuse)
  uint32_t pending_index;          // rename in flight: entry + 1 (0 = none)
  char pending_name[64];           // rename in flight: the new name
  // Encoding thresholds of aggregates (cache/dict.h DictLimits, in its
  // field order; 0 = the default). Written by CONFIG SET, read by writes.
  std::atomic<uint32_t> dict_limits[8];
  TableHeader tables[kMaxCollections];
};
static_assert(std::is_standard_layout_v<Catalog>);
static_assert(offsetof(Catalog, lock) == 16);
static_assert(offsetof(Catalog, free_segs) == 24);
static_assert(offsetof(Catalog, pending_index) == 28);
static_assert(offsetof(Catalog, pending_name) == 32);
static_assert(offsetof(Catalog, dict_limits) == 96);
static_assert(offsetof(Catalog, tables) == 128);
static_assert(sizeof(Catalog) == 128 + kMaxCollections * sizeof(TableHeader));

// A process's handle on the engine: its arena, allocator slot and scratch.
struct Ctx {
  Ctx(mem::Arena& a, uint32_t slot);
  mem::Arena& arena;
  mem::Allocator alloc;
  Catalog* catalog;
  uint32_t tid;
  uint32_t slot;
  int64_t clock_skew_ms = 0;       // tests: pretend time moved
  std::string scratch;             // reused buffers (no malloc per op)
  std::vector<Off> dead;           // cells to free after unlock
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
};
std::vector<CollectionInfo> ListCollections(Ctx& c);
bool CollectionInfoOf(Ctx& c, const TableRef& t, CollectionInfo* out);
void ResetCollectionStats(Ctx& c, const TableRef& t);
void ResetCollectionStat(Ctx& c, const TableRef& t, Stat s);
uint64_t CollectionEntries(const Ctx& c, const TableRef& t);
uint64_t SumStat(const Ctx& c, const TableRef& t, Stat s);

// ---- operations (cache/ops.cc) ---------------------------------------------
struct ReadInfo {
  uint8_t type = 0;
  uint32_t vlen = 0;         // value bytes (for kTypeInt: 8)
  int64_t expire_ms = 0;     // 0 = never
  uint64_t version = 0;      // 48 bits, never 0 for a stored record (record.h)
};

// Copy the value of `key` into buf. kOk: info->vlen bytes copied.
// kBufferTooSmall: nothing trustworthy copied, info->vlen is the size needed.
// kNotFound: absent or expired. A kTypeInt value is its 8-byte int64.
[[nodiscard]] Status Get(Ctx& c, const TableRef& t, std::string_view key, std::span<char> buf,
                         ReadInfo* info);
// Get into a std::string, growing it as needed; kTypeInt values are
// formatted as decimal text (what a client reads).
[[nodiscard]] Status GetString(Ctx& c, const TableRef& t, std::string_view key, std::string* out,
                               ReadInfo* info = nullptr);
// Metadata only (TTL, TYPE, EXISTS).
[[nodiscard]] Status Probe(Ctx& c, const TableRef& t, std::string_view key, ReadInfo* info);

enum class Cond : uint8_t { kAlways, kNx, kXx };
struct StoreOpts {
  int64_t expire_ms = 0;       // absolute ms, 0 = never
  Cond cond = Cond::kAlways;
  bool keep_ttl = false;       // keep the old record's expiry
  uint8_t type = kTypeString;
  bool check_version = false;  // store only if the current version == expect_version
  uint64_t expect_version = 0; // (0 = "absent")
  bool if_newer = false;       // loaders: apply only if `version` is newer
  uint64_t version = 0;        // with if_newer: the version to store
  std::string* old_value = nullptr;  // SET .. GET: receives the previous value
  bool* had_old = nullptr;           // set when there was a previous value
  uint64_t* stored_version = nullptr;  // receives the version now stored
  // The old record's value is carried over by the new one (an aggregate
  // write that swapped its root, cache/dict.h): free only the old record's
  // own cell. Otherwise the old value is freed whole (FreeValue).
  bool shallow_old = false;
};
// kOk, kExists (NX), kNotExists (XX), kVersion, kNoMem, kTooBig, kStale.
[[nodiscard]] Status Set(Ctx& c, const TableRef& t, std::string_view key, std::string_view value,
                         const StoreOpts& o = {});
[[nodiscard]] Status Del(Ctx& c, const TableRef& t, std::string_view key);
// Delete only if the record's version is still `version` (kVersion if not):
// the second half of a read-then-delete (RENAME, GETDEL) without a lost write.
[[nodiscard]] Status DelIfVersion(Ctx& c, const TableRef& t, std::string_view key,
                                  uint64_t version);
// MSETNX: set every key (kv = key, value, key, value ...) only if none of
// them exists; a key given twice takes its last value, as in Redis.
// *all_set says which happened. Not atomic against a concurrent writer of
// the same keys: a key that appears meanwhile makes it undo what it set
// (with version-checked deletes) and answer "none set".
[[nodiscard]] Status MSetNx(Ctx& c, const TableRef& t, std::span<const std::string_view> kv,
                            bool* all_set);
// INCRBY semantics of Redis: absent = 0; a string value must parse as int64.
[[nodiscard]] Status IncrBy(Ctx& c, const TableRef& t, std::string_view key, int64_t delta,
                            int64_t* result);
enum class ExpireCond : uint8_t { kAlways, kNx, kXx, kGt, kLt };
// Set the absolute expiry (0 = persist). *changed says whether it applied.
// An expiry in the past deletes the key. kNotFound when absent.
[[nodiscard]] Status SetExpire(Ctx& c, const TableRef& t, std::string_view key, int64_t expire_ms,
                               ExpireCond cond, bool* changed);

// ---- iteration (cache/scan.cc) ----------------------------------------------
struct ScanItem {
  std::string_view key;
  std::string_view value;   // only with ScanFilter::values
  ReadInfo info;
};
struct ScanFilter {
  std::string_view glob;    // empty = all
  bool nocase = false;
  int type = -1;            // RecordType or -1
  bool values = false;      // copy values too
};
// One SCAN step. cursor 0 starts; *next == 0 when done. `count` residues
// (about `count` buckets) per call. Guarantee (Redis SCAN): a key present
// for the whole scan is returned at least once, across splits and merges.
[[nodiscard]] Status ScanStep(Ctx& c, const TableRef& t, uint64_t cursor, uint32_t count,
                              const ScanFilter& f, const std::function<void(const ScanItem&)>& emit,
                              uint64_t* next);

// ---- maintenance (cache/maint.cc) -------------------------------------------
// Split (or merge) up to `budget` buckets toward the target load / size.
// Only one process should call it per table at a time (the admin lock
// enforces it). Returns the number of splits + merges done.
uint32_t GrowStep(Ctx& c, const TableRef& t, uint32_t budget);
// Remove expired records from due buckets (hint <= now) and the overflow
// table; `on_expired` (may be empty) sees each key after the lock is gone.
uint32_t SweepExpired(Ctx& c, const TableRef& t, uint32_t budget,
                      const std::function<void(std::string_view key)>& on_expired);
// Repair every bucket / overflow / admin lock of every collection whose
// holder is dead, and return the number repaired.
uint32_t RepairDead(Ctx& c);
// The timer's slow background pass: the global locks and slots, then
// `budget` buckets from *cursor on (round robin over every table). Deaths
// are repaired when the supervisor reaps the child (RepairDead) and by any
// waiter that finds a dead holder; this pass only catches what neither saw.
uint32_t RepairDeadStep(Ctx& c, uint64_t* cursor, uint32_t budget);

// ---- internals shared by the .cc files ------------------------------------
namespace detail {
Bucket* BucketAt(const mem::Arena& a, const TableHeader& h, uint64_t idx);
uint32_t* HintAt(const mem::Arena& a, const TableHeader& h, uint64_t idx);
inline uint64_t RouteIdx(uint64_t route, uint64_t h) {
  uint32_t level = static_cast<uint32_t>(route >> 32);
  uint64_t split = route & 0xFFFFFFFFu;
  uint64_t idx = h & ((uint64_t{1} << level) - 1);
  if (idx < split) idx = h & ((uint64_t{2} << level) - 1);
  return idx;
}
inline uint64_t RouteBuckets(uint64_t route) {
  return (uint64_t{1} << (route >> 32)) + (route & 0xFFFFFFFFu);
}
inline uint8_t TagOf(uint64_t h) { return static_cast<uint8_t>(h >> 56); }
// Take a bucket lock; if its holder died, repair the bucket first.
void LockBucket(Ctx& c, const TableHeader& h, uint64_t idx, Bucket& b);
void RepairBucketLocked(Ctx& c, const TableHeader& h, uint64_t idx, Bucket& b);
void LockOverflow(Ctx& c, TableHeader& h);
void RepairOverflowLocked(Ctx& c, TableHeader& h);
StatLine& Line(const Ctx& c, const TableHeader& h);
inline void Count(const Ctx& c, const TableHeader& h, Stat s, uint64_t n = 1) {
  auto& v = Line(c, h).c[s];
  v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
uint64_t HashOf(const Ctx& c, std::string_view key);
// Admin lock held: make sure directory segment `seg` exists.
bool EnsureSegment(Ctx& c, TableHeader& h, uint32_t seg);
// Locked or lock-free search of one bucket: slot index or -1.
int FindInBucket(const mem::Arena& a, const Bucket& b, uint8_t tag, std::string_view key,
                 Off* rec);
// Overflow node (a 16-byte cell): class | next @4 | rec @8 | hash>>32 @12.
inline constexpr size_t kNodeNext = 4, kNodeRec = 8, kNodeHash = 12, kNodeBytes = 16;
inline uint32_t ExpireHint(int64_t expire_ms) {
  if (expire_ms <= 0) return 0;
  uint64_t s = static_cast<uint64_t>(expire_ms) / 1000;
  return s == 0 ? 1 : (s > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<uint32_t>(s));
}
Off OvfFind(const mem::Arena& a, const TableHeader& h, uint64_t hash, std::string_view key,
            Off** link_out);
void LowerHint(const mem::Arena& a, const TableHeader& h, uint64_t idx, int64_t expire_ms);
// Copies of big values (> 4 KiB) made by this thread: all of them, and
// those made while holding a bucket lock (the rare fallback). Tests and
// benchmarks read them; plain thread-local counters.
struct BigReadCounters {
  uint64_t copies = 0;
  uint64_t locked_copies = 0;
};
BigReadCounters& ThreadBigReads();
// The catalog lock's holder died: take the lock over, finish a rename it
// left half done, release.
void RepairCatalogIfDead(Catalog& cat);
// Raise the table's version floor to at least v (before unlinking a record
// of version v). A store only when v is above the floor.
inline void RaiseFloor(TableHeader& h, uint64_t v) {
  uint64_t cur = h.ver_floor.load(std::memory_order_relaxed);
  if (v > cur) PC_CRASH_POINT();
  while (v > cur && !h.ver_floor.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
  }
}
// Strict Redis integer parse (no spaces, no '+', no leading zeros).
bool ParseInt64(std::string_view s, int64_t* out);
}  // namespace detail

}  // namespace cache
