// perfcached — the 64-byte bucket, its seqlock protocol and the SWAR tag scan.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// One bucket is exactly one cache line (layout version 8):
//
//   0      4      8               16          20                      56              64
//   +------+------+---------------+-----------+-----------------------+---------------+
//   | seq  | lock | tags 0..7     | ctl       | lo[9]: low 32 bits of | hi 0..7: high |
//   | u32  | u32  | u64           | u32       | each position's Off   | bytes (u64)   |
//   +------+------+---------------+-----------+-----------------------+---------------+
//   ctl: byte 0 tag of position 8 | byte 1 high byte of position 8 |
//        bits 16..19 used (0..kLive) | bits 20..23 journal source |
//        bits 24..27 journal destination + 1 (0 = no copy in flight)
//
// A position holds a 40-bit Off (1 TiB of reach in 8-byte units; mem/arena.h)
// as a low word and a high byte. Those are two stores, so a live position
// (0..used-1, packed) is never written with both. Every change to one is
//   - a 32-bit store of the low word, when the high byte stays the same
//     (always, in arenas up to 32 GiB);
//   - or a journalled copy from a position that is not written meanwhile
//     (CopySlot): ctl names destination and source in one store, the
//     position is written, the next ctl store clears the journal. A holder
//     killed in between leaves the journal, and the repair finishes the
//     copy (cache/maint.cc).
// A new record replaces a live one by being written to the free position
// `used` (scratch) and copied from there (ReplaceSlot). A full bucket has no
// scratch: then the new record goes to overflow and the old position is
// removed (cache/ops.cc). Positions >= used are written freely: nobody
// follows them.
// Tags may be stale after a killed holder; the repair rebuilds them.
//
// Protocol (the seqlock):
//   writer: Lock(lock) -> seq += 1 (odd, acq_rel) -> change positions/tags/ctl
//           -> seq += 1 (even, acq_rel) -> Unlock. Allocation happens before
//           the lock is taken; cells die (are freed) after it is released.
//   reader: s1 = seq (acquire); odd -> retry. Read tags, follow positions,
//           copy key/value out (relaxed atomics only; every Off is bounds-
//           checked and every length clamped before use); acquire fence;
//           s2 = seq; s1 == s2 -> the copy is a consistent snapshot. Bounded
//           retries, then the lock as fallback.
// The bumps are acq_rel, not release: a release RMW lets the payload stores
// after it become visible before the odd count on ARM/POWER.
//
// A removal moves the last position into the hole. The tag of a position is
// the top byte of the key's hash. lock holds the holder's tid (mem/lock.h);
// a bucket whose holder died is repaired by the next process that takes the
// lock over (cache/maint.cc).

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "mem/arena.h"
#include "mem/atomic_copy.h"
#include "mem/canary.h"
#include "mem/lock.h"

namespace cache {

inline constexpr int kSlots = 9;  // positions
inline constexpr int kLive = 9;   // live positions at most

struct alignas(64) Bucket {
  std::atomic<uint32_t> seq;
  mem::ShmLock lock;
  uint64_t tags_lo;    // tags of positions 0..7 (relaxed atomic access only)
  uint32_t ctl;        // tag 8, high byte 8, used, journal (above)
  uint32_t lo[kSlots];
  uint64_t hi;         // high bytes of positions 0..7
};
static_assert(sizeof(Bucket) == 64);
static_assert(alignof(Bucket) == 64);
static_assert(std::is_standard_layout_v<Bucket>);
static_assert(offsetof(Bucket, seq) == 0);
static_assert(offsetof(Bucket, lock) == 4);
static_assert(offsetof(Bucket, tags_lo) == 8);
static_assert(offsetof(Bucket, ctl) == 16);
static_assert(offsetof(Bucket, lo) == 20);
static_assert(offsetof(Bucket, hi) == 56);
static_assert(kLive <= kSlots && kSlots <= 15);

inline uint32_t Used(uint32_t ctl) { return (ctl >> 16) & 0xFu; }
inline uint32_t JournalDst(uint32_t ctl) { return (ctl >> 24) & 0xFu; }  // destination + 1
inline uint32_t JournalSrc(uint32_t ctl) { return (ctl >> 20) & 0xFu; }

// Bit i set = position i (< used) carries `tag`. May include false positives
// (the has-zero-byte borrow) but never misses; the key compare filters.
inline uint32_t TagMatch(uint64_t lo, uint32_t ctl, uint8_t tag) {
  constexpr uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
  uint64_t x = lo ^ (k01 * tag);
  uint64_t z = (x - k01) & ~x & k80;
  uint32_t m = static_cast<uint8_t>(ctl) == tag ? 1u << 8 : 0u;
  while (z) {
    m |= 1u << (__builtin_ctzll(z) >> 3);
    z &= z - 1;
  }
  uint32_t used = Used(ctl);
  if (used > kLive) used = kLive;
  return m & ((1u << used) - 1);
}

// Relaxed loads of the bucket's words.
inline uint64_t TagsLo(const Bucket& b) { return mem::LoadRelaxed64(&b.tags_lo); }
inline uint32_t TagsHi(const Bucket& b) { return mem::LoadRelaxed32(&b.ctl); }
inline uint32_t UsedOf(const Bucket& b) {
  uint32_t u = Used(TagsHi(b));
  return u > kLive ? kLive : u;
}
inline uint8_t HighOf(const Bucket& b, int i) {
  return i < 8 ? static_cast<uint8_t>(mem::LoadRelaxed64(&b.hi) >> (8 * i))
               : static_cast<uint8_t>(TagsHi(b) >> 8);
}
inline mem::Off SlotAt(const Bucket& b, int i) {
  return mem::Off{mem::LoadRelaxed32(&b.lo[i])} | (mem::Off{HighOf(b, i)} << 32);
}

// Writer-side helpers (bucket lock held, inside the odd bracket).
inline void SetCtl(Bucket& b, uint32_t ctl) { mem::StoreRelaxed32(&b.ctl, ctl); }
inline void SetTag(Bucket& b, int i, uint8_t tag) {
  if (i < 8) {
    uint64_t lo = TagsLo(b);
    lo = (lo & ~(0xFFull << (8 * i))) | (uint64_t{tag} << (8 * i));
    mem::StoreRelaxed64(&b.tags_lo, lo);
  } else {
    SetCtl(b, (TagsHi(b) & ~0xFFu) | tag);
  }
}
inline uint8_t GetTag(const Bucket& b, int i) {
  return i < 8 ? static_cast<uint8_t>(TagsLo(b) >> (8 * i)) : static_cast<uint8_t>(TagsHi(b));
}
inline void SetUsed(Bucket& b, uint32_t used) {
  SetCtl(b, (TagsHi(b) & ~(0xFu << 16)) | ((used & 0xFu) << 16));
}
inline void SetHigh(Bucket& b, int i, uint8_t h) {
  if (HighOf(b, i) == h) return;
  if (i < 8) {
    uint64_t w = mem::LoadRelaxed64(&b.hi);
    mem::StoreRelaxed64(&b.hi, (w & ~(0xFFull << (8 * i))) | (uint64_t{h} << (8 * i)));
  } else {
    SetCtl(b, (TagsHi(b) & ~0xFF00u) | (uint32_t{h} << 8));
  }
}
// Write position i whole. Only for a position that is not live (>= used),
// or whose high byte does not change (then it is one 32-bit store).
inline void SetSlot(Bucket& b, int i, mem::Off off) {
  mem::StoreRelaxed32(&b.lo[i], static_cast<uint32_t>(off));
  SetHigh(b, i, static_cast<uint8_t>(off >> 32));
}
// Copy position src into position dst, safe against a kill at any point:
// src must not be written until this returns.
inline void CopySlot(Bucket& b, int dst, int src) {
  mem::Off off = SlotAt(b, src);
  if (HighOf(b, dst) == static_cast<uint8_t>(off >> 32)) {
    mem::StoreRelaxed32(&b.lo[dst], static_cast<uint32_t>(off));
    return;
  }
  uint32_t ctl = TagsHi(b) & ~(0xFFu << 20);
  SetCtl(b, ctl | (uint32_t(dst + 1) << 24) | (uint32_t(src) << 20));
  SetSlot(b, dst, off);
  SetCtl(b, TagsHi(b) & ~(0xFFu << 20));
}
// Whether ReplaceSlot can put `off` into live position i: always when the
// high byte stays (every arena up to 32 GiB), else when a position is free
// to serve as scratch.
inline bool CanReplaceSlot(const Bucket& b, int i, mem::Off off) {
  return HighOf(b, i) == static_cast<uint8_t>(off >> 32) || UsedOf(b) < static_cast<uint32_t>(kSlots);
}
// Put `off` (a record not in the bucket) into live position i (CanReplaceSlot
// must hold): one store, or written to the scratch position first and copied.
inline void ReplaceSlot(Bucket& b, int i, mem::Off off) {
  if (HighOf(b, i) == static_cast<uint8_t>(off >> 32)) {
    mem::StoreRelaxed32(&b.lo[i], static_cast<uint32_t>(off));
    return;
  }
  int scratch = static_cast<int>(UsedOf(b));
  SetSlot(b, scratch, off);
  CopySlot(b, i, scratch);
  SetSlot(b, scratch, 0);
}
// Take live position i out: the last live position moves into it.
inline void RemoveSlot(Bucket& b, int i) {
  int last = static_cast<int>(UsedOf(b)) - 1;
  if (i != last) {
    CopySlot(b, i, last);  // a kill meanwhile leaves a duplicate the repair drops
    SetTag(b, i, GetTag(b, last));
  }
  SetUsed(b, static_cast<uint32_t>(last));
  SetSlot(b, last, 0);
}
// A repair's first step: finish a copy a killed holder left in flight.
inline void FinishJournal(Bucket& b) {
  uint32_t ctl = TagsHi(b), dst = JournalDst(ctl), src = JournalSrc(ctl);
  if (dst == 0 || PC_CANARY(18)) return;
  if (dst <= static_cast<uint32_t>(kSlots) && src < static_cast<uint32_t>(kSlots)) SetSlot(b, int(dst) - 1, SlotAt(b, int(src)));
  SetCtl(b, TagsHi(b) & ~(0xFFu << 20));
}

inline void WriteBegin(Bucket& b PC_LOC_PARAM) {
  PC_LOC_POINT();
  b.seq.fetch_add(1, std::memory_order_acq_rel);
}
inline void WriteEnd(Bucket& b PC_LOC_PARAM) {
  PC_LOC_POINT();
  b.seq.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace cache
