// perfcached — large objects: records above the largest slab class.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A record above 256 KiB (kMaxCell) takes a run of 32 KiB *units*, with a
// 64-byte header before it, so a large object wastes at most 1/8 of its
// size (a 256 KiB + 1 record takes 9 units: 288 KiB; the bound is the worst
// case, docs/memory.md "Large objects"). Runs live in kLarge groups, which
// are carved in 64 units; a run may start anywhere in one and go on into
// the groups after it (the arena is one mapping: groups follow each other
// in memory), so a value is always contiguous and read with one copy.
//
//   kLarge group g                       kLarge group g+1
//   +------+------+------+------+--//--+------+------+------+--//--+
//   | hdr  record ...    | hdr  record ..................| free ... |
//   +------+------+------+------+--//--+------+------+------+--//--+
//   unit 0      1      2      3    ..     0      1      2
//   heads: 1 0 0 1 ...                    0 0 0 ...
//   used:  1 1 1 1 ...                    1 1 0 ...
//
// UnitMasks (mem/arena.h) per group: `used` marks a unit that belongs to
// an object, `heads` the unit where one starts (its header). Every change
// to them is made under group_lock, in an order a crash anywhere leaves
// repairable (RepairLargeLocked, run when the lock is taken over from a
// dead holder):
//   alloc: groups readied and marked kLarge (empty) -> header written ->
//          used bits set, group by group -> head bit set (the commit)
//   free:  head bit cleared (the object is gone) -> used bits cleared,
//          group by group, a group that empties given back at once
// so a crash leaves at worst used units that no head covers, or kLarge
// groups with no unit used: repair frees both. A crash after the commit
// and before the record is linked leaks the object (the audit counts it).
//
// Lock-free readers (ClassifyCell) see a large cell through its group's
// kind, its head bit, the header's magic and unit count. A stale Off can
// race a free and the reuse of the header's unit (by another record's
// bytes, or a slab page once the group went back): it gets kNoClass or a
// bound read from whatever is there, always clipped to the populated
// arena, so never a fault; the seqlock and version re-checks of the read
// throw the result away.
//
// Pins live in the header, so PinLarge is only ever called on a record
// that is linked, under its bucket lock (cache/ops.cc CopyBig): then the
// run cannot be freed under the pin.
//
// Placement: first fit by address, first among runs inside kLarge groups,
// then anywhere (free groups, the high-water mark). One step per group
// and per run of free units in a partly used one, under group_lock: tens
// of microseconds for a 32 GiB arena, against a copy of 256 KiB or more.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mem/arena.h"
#include "mem/status.h"

namespace mem {

inline constexpr size_t kLargeUnit = 32u << 10;                        // 32 KiB
inline constexpr uint32_t kUnitsPerGroup = kGroupSize / kLargeUnit;     // 64
inline constexpr size_t kLargeHdr = 64;  // LargeHeader, before the record
inline constexpr uint32_t kLargeMagic = 0x4C524745;                     // "LRGE"
static_assert(kUnitsPerGroup == 64, "unit masks are 64-bit words");

// The 64 bytes at the start of a run. An API (shared memory): fixed layout.
struct LargeHeader {
  std::atomic<uint32_t> magic;  // kLargeMagic while the object exists
  uint32_t units;               // run length, in kLargeUnit
  std::atomic<uint32_t> pins;   // readers copying it with no lock (PinLarge)
  uint32_t pad[13];
};
static_assert(sizeof(LargeHeader) == kLargeHdr);
static_assert(offsetof(LargeHeader, units) == 4);
static_assert(offsetof(LargeHeader, pins) == 8);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Units a record of `bytes` takes (header included).
inline constexpr uint64_t LargeUnitsFor(size_t bytes) {
  return (uint64_t{bytes} + kLargeHdr + kLargeUnit - 1) / kLargeUnit;
}

// The header of the large object whose record starts at byte `byte` of the
// arena, or nullptr: group of kind kLarge, head bit set. Lock-free.
inline const LargeHeader* LargeAt(const Arena& a, size_t byte) {
  if (byte < kLargeHdr || (byte - kLargeHdr) % kLargeUnit != 0) return nullptr;
  size_t start = byte - kLargeHdr;
  uint32_t g = static_cast<uint32_t>(start / kGroupSize);
  if (g >= a.hdr()->ngroups || Arena::EntryKind(a.GroupEntry(g)) != GroupKind::kLarge) return nullptr;
  uint32_t u = static_cast<uint32_t>((start % kGroupSize) / kLargeUnit);
  if (!((a.UnitsOf(g).heads.load(std::memory_order_acquire) >> u) & 1)) return nullptr;
  return reinterpret_cast<const LargeHeader*>(a.base() + start);
}

// A run of units for a record of `bytes` (takes group_lock). *out: the
// record's Off (64 bytes past the run start). kNoMem when no run fits.
[[nodiscard]] Status AllocLargeRun(Arena& a, size_t bytes, Off* out);
// Give back the run of the large object at `cell` (takes group_lock); pins
// are the caller's business (slab.h FreeGlobal). False if `cell` heads no
// large object (nothing changed).
bool FreeLargeRun(Arena& a, Off cell);
// group_lock held (taken over from a dead holder): free used units no head
// covers and kLarge groups with no unit used, and count large_objects and
// large_bytes again. Returns the units freed plus the groups given back.
uint32_t RepairLargeLocked(Arena& a);

// Figures for reports (a walk of the group map and unit masks).
struct LargeUsage {
  uint64_t objects = 0;     // heads
  uint64_t units = 0;       // units used
  uint64_t groups = 0;      // kLarge groups
};
LargeUsage LargeUsageOf(const Arena& a);

}  // namespace mem
