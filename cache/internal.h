// perfcached — engine internals shared by the cache/ .cc files (namespace detail).
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Only cache/ (and the engine's own tests, soak and bench) may include this
// header: modules/, proc/, net/ and mi/ use the public headers behind
// cache/table.h (scripts/check-deps.sh fails the build otherwise).

#include <functional>
#include <string>
#include <string_view>

#include "cache/catalog.h"
#include "cache/ops.h"
#include "mem/canary.h"
#include "mem/crash_point.h"

namespace cache {

// ---- internals shared by the .cc files ------------------------------------
namespace detail {
// Segment `seg`'s directory pair (buckets, hints), null if its chunk is missing.
Off* DirPair(const mem::Arena& a, const TableHeader& h, uint64_t seg);
Bucket* BucketAt(const mem::Arena& a, const TableHeader& h, uint64_t idx);
uint32_t* HintAt(const mem::Arena& a, const TableHeader& h, uint64_t idx);
// The route word (catalog.h): change count << 40 | level << 32 | split.
// The count moves on at every split and merge, so a reader that compares
// the word before and after a lock-free visit never takes a split undone
// by a merge (the same level and split again) for no change: that ABA let
// SCAN miss keys while a table grew and shrank under it.
inline uint32_t RouteLevel(uint64_t route) { return static_cast<uint32_t>(route >> 32) & 0xFF; }
inline uint64_t RouteSplit(uint64_t route) { return route & 0xFFFFFFFFu; }
inline uint64_t NextRoute(uint64_t prev, uint32_t level, uint64_t split) {
  uint64_t count = PC_CANARY(14) ? 0 : ((prev >> 40) + 1) & 0xFFFFFF;
  return count << 40 | uint64_t{level} << 32 | split;
}
inline uint64_t RouteIdx(uint64_t route, uint64_t h) {
  uint32_t level = RouteLevel(route);
  uint64_t split = RouteSplit(route);
  uint64_t idx = h & ((uint64_t{1} << level) - 1);
  if (idx < split) idx = h & ((uint64_t{2} << level) - 1);
  return idx;
}
inline uint64_t RouteBuckets(uint64_t route) {
  return (uint64_t{1} << RouteLevel(route)) + RouteSplit(route);
}
inline uint8_t TagOf(uint64_t h) { return static_cast<uint8_t>(h >> 56); }
// Take a bucket lock; if its holder died, repair the bucket first.
void LockBucket(Ctx& c, const TableHeader& h, uint64_t idx, Bucket& b);
void RepairBucketLocked(Ctx& c, const TableHeader& h, uint64_t idx, Bucket& b);
void LockOverflow(Ctx& c, TableHeader& h);
// A read changed the coarse access of `rec` (cache/access.h): store `acc`
// if the bucket lock is free at once and `rec` is still linked. True when
// stored.
bool TouchRecord(Ctx& c, TableHeader& h, uint64_t hash, Off rec, uint16_t acc);
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
// *bound (when given): the found record's mem::CellBound.
int FindInBucket(const mem::Arena& a, const Bucket& b, uint8_t tag, std::string_view key,
                 Off* rec, size_t* bound = nullptr);
// Overflow node (a 24-byte cell): 0 unused | hash>>32 @4 | next Off @8 | rec Off @16.
// Values above this are never copied inside a seqlock bracket or under a
// lock: GET copies them outside and checks the record after (ops.cc), a
// scan leaves them to be read by key (ScanFilter::value_cap, export.cc).
inline constexpr size_t kBigRead = 4096;
inline constexpr size_t kNodeHash = 4, kNodeNext = 8, kNodeRec = 16, kNodeBytes = 24;
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
inline bool Expired(int64_t expire_ms, int64_t now) { return expire_ms != 0 && expire_ms <= now; }
inline bool Live(const TableHeader& h, const TableRef& t) {
  return h.gen.load(std::memory_order_acquire) == t.gen &&
         h.state.load(std::memory_order_relaxed) == kTableLive;
}

// The name of the collection t refers to (read under its name seqlock;
// table.cc); false when it is no longer live at t's generation.
bool LiveTableName(const TableHeader& h, const TableRef& t, std::string* out);

// Lock the bucket that `hash` routes to, re-routing if a split/merge moved
// it meanwhile. Returns nullptr if the table has no such bucket (stale).
Bucket* LockRouted(Ctx& c, TableHeader& h, uint64_t hash, uint64_t* idx_out);
// The record of `key` under its bucket lock (and the overflow lock when it
// lives there). For in-place updates of one field of a live record.
struct KeyLock {
  Bucket* b = nullptr;
  uint64_t idx = 0;
  Off rec = 0;
  int slot = -1;          // the record's slot in b, or -1
  Off node = 0;           // its overflow node (slot == -1)
  Off* link = nullptr;    // the link that points at node
  bool ovf_locked = false;
};

// false: the table is stale (no bucket to lock).
bool LockKey(Ctx& c, TableHeader& h, uint64_t hash, std::string_view key, KeyLock* k);
// The seqlock that brackets changes of the locked key's record.
std::atomic<uint32_t>& KeySeq(TableHeader& h, const KeyLock& k);
// Unlink the locked key's record (raising the version floor first). The
// caller frees k.rec (and k.node) after unlocking.
void UnlinkKeyLocked(const mem::Arena& a, TableHeader& h, const KeyLock& k);
void UnlockKey(TableHeader& h, const KeyLock& k);

// Tests only: run by the read-modify-write Ops (string_ops.cc, key_ops.cc)
// between their read and their version-checked store or delete, i.e. a
// concurrent writer at the worst moment (and by DbSize between its two
// counts). Empty in production.
inline thread_local std::function<void()> rmw_test_hook;
inline void BetweenReadAndWrite() {
  if (rmw_test_hook) [[unlikely]] rmw_test_hook();
}
}  // namespace detail

}  // namespace cache
