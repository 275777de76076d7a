// perfcached — the 64-byte bucket, its seqlock protocol and the SWAR tag scan.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// One bucket is exactly one cache line:
//
//   0        4        8                      16            20                          64
//   +--------+--------+----------------------+-------------+---------------------------+
//   | seq    | lock   | tags 0..7            | tags 8..10, | slot[11]: Off of a record |
//   | u32    | u32    | u64                  | used (u32)  | (u32 each, 8-byte units)  |
//   +--------+--------+----------------------+-------------+---------------------------+
//
// Protocol (the seqlock):
//   writer: Lock(lock) -> seq += 1 (odd, acq_rel) -> change slots/tags/used
//           -> seq += 1 (even, acq_rel) -> Unlock. Allocation happens before
//           the lock is taken; cells die (are freed) after it is released.
//   reader: s1 = seq (acquire); odd -> retry. Read tags, follow slots, copy
//           key/value out (relaxed atomics only; every Off is bounds-checked
//           and every length clamped before use); acquire fence; s2 = seq;
//           s1 == s2 -> the copy is a consistent snapshot. Bounded retries,
//           then the lock as fallback.
// The bumps are acq_rel, not release: a release RMW lets the payload stores
// after it become visible before the odd count on ARM/POWER.
//
// Slots 0..used-1 are live and packed; a removal moves the last slot into
// the hole. The tag of a slot is the top byte of the key's hash.
// lock holds the holder's tid (mem/lock.h); a bucket whose holder died is
// repaired by the next process that takes the lock over (cache/maint.cc).

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "mem/arena.h"
#include "mem/atomic_copy.h"
#include "mem/lock.h"

namespace cache {

inline constexpr int kSlots = 11;

struct alignas(64) Bucket {
  std::atomic<uint32_t> seq;
  mem::ShmLock lock;
  uint64_t tags_lo;    // tags 0..7   (relaxed atomic access only)
  uint32_t tags_hi;    // tags 8..10 in bytes 0..2, used count in byte 3
  mem::Off slot[kSlots];
};
static_assert(sizeof(Bucket) == 64);
static_assert(alignof(Bucket) == 64);
static_assert(std::is_standard_layout_v<Bucket>);
static_assert(offsetof(Bucket, seq) == 0);
static_assert(offsetof(Bucket, lock) == 4);
static_assert(offsetof(Bucket, tags_lo) == 8);
static_assert(offsetof(Bucket, tags_hi) == 16);
static_assert(offsetof(Bucket, slot) == 20);

inline uint32_t Used(uint32_t tags_hi) { return tags_hi >> 24; }

// Bit i set = slot i (< used) carries `tag`. May include false positives
// (the has-zero-byte borrow) but never misses; the key compare filters.
inline uint32_t TagMatch(uint64_t lo, uint32_t hi, uint8_t tag) {
  constexpr uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
  uint64_t x = lo ^ (k01 * tag);
  uint64_t z = (x - k01) & ~x & k80;
  uint32_t y = (hi & 0xFFFFFFu) ^ (0x010101u * tag);
  uint32_t zy = (y - 0x010101u) & ~y & 0x808080u;
  uint32_t m = 0;
  while (z) {
    m |= 1u << (__builtin_ctzll(z) >> 3);
    z &= z - 1;
  }
  while (zy) {
    m |= 1u << (8 + (__builtin_ctz(zy) >> 3));
    zy &= zy - 1;
  }
  uint32_t used = Used(hi);
  if (used > kSlots) used = kSlots;
  return m & ((1u << used) - 1);
}

// Relaxed loads of the bucket's words.
inline uint64_t TagsLo(const Bucket& b) { return mem::LoadRelaxed64(&b.tags_lo); }
inline uint32_t TagsHi(const Bucket& b) { return mem::LoadRelaxed32(&b.tags_hi); }
inline mem::Off SlotAt(const Bucket& b, int i) { return mem::LoadRelaxed32(&b.slot[i]); }

// Writer-side helpers (bucket lock held, inside the odd bracket).
inline void SetTag(Bucket& b, int i, uint8_t tag) {
  if (i < 8) {
    uint64_t lo = TagsLo(b);
    lo = (lo & ~(0xFFull << (8 * i))) | (uint64_t{tag} << (8 * i));
    mem::StoreRelaxed64(&b.tags_lo, lo);
  } else {
    uint32_t hi = TagsHi(b);
    hi = (hi & ~(0xFFu << (8 * (i - 8)))) | (uint32_t{tag} << (8 * (i - 8)));
    mem::StoreRelaxed32(&b.tags_hi, hi);
  }
}
inline uint8_t GetTag(const Bucket& b, int i) {
  return i < 8 ? static_cast<uint8_t>(TagsLo(b) >> (8 * i))
               : static_cast<uint8_t>(TagsHi(b) >> (8 * (i - 8)));
}
inline void SetUsed(Bucket& b, uint32_t used) {
  uint32_t hi = TagsHi(b);
  mem::StoreRelaxed32(&b.tags_hi, (hi & 0xFFFFFFu) | (used << 24));
}
inline void SetSlot(Bucket& b, int i, mem::Off off) { mem::StoreRelaxed32(&b.slot[i], off); }

inline void WriteBegin(Bucket& b PC_LOC_PARAM) {
  PC_LOC_POINT();
  b.seq.fetch_add(1, std::memory_order_acq_rel);
}
inline void WriteEnd(Bucket& b PC_LOC_PARAM) {
  PC_LOC_POINT();
  b.seq.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace cache
