// perfcached — per-record access information: LRU clock / LFU counter.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Every record carries a 13-bit access field (cache/record.h: byte 0 and
// the top five bits of byte 1). What it holds depends on the policy, as in
// Redis (switching policy reinterprets what is there; it settles as keys
// are touched):
//
//   LRU mode (every policy but the two LFU ones)
//     the access clock, in seconds, of the record's last read or write,
//     modulo 2^13 (2 h 16 min 32 s). Idle time = clock - stamp, modulo the
//     same; so that a key idle longer than that never looks young again,
//     the timer's aging pass (AgeAccessStep) moves every stamp older than
//     kAgeLruSeconds (68 min) up to exactly that age at least every 30 min:
//     idle times up to 68 min are exact, longer ones read 68-98 min. Under an
//     LRU policy a read stores a new stamp when the second has changed;
//     under a policy that does not evict by it (noeviction, *-random,
//     volatile-ttl) only when the key has been idle a minute or more, so
//     that OBJECT IDLETIME stays right to the minute while reads of a
//     cache that does not need the order cost (almost) no stores.
//   LFU mode (allkeys-lfu, volatile-lfu)
//     bits 0..7  a logarithmic access counter (Redis's: a new key starts at
//                5, an access adds one with probability
//                1 / ((counter - 5) * lfu-log-factor + 1), 255 at most)
//     bits 8..12 the minute of its last access, modulo 32; the counter
//                loses one per lfu-decay-time minutes without access. The
//                aging pass applies the decay of a key idle 16 minutes or
//                more and stamps the current minute, so the 5-bit minute
//                never wraps (the pass comes at least every 10 min).
//
// Cost on the read path: the field is loaded with the record header (same
// cache line, no extra miss) and compared with what this access would make
// it; only a *change* is stored: in LRU mode at most once a second per
// key, in LFU mode when the counter moves (rarely, for a hot key: the
// increment is logarithmic) or the minute turns. A change is stored under
// a try-lock of the key's bucket (a record is never freed while linked, so
// the store cannot land in a cell that was freed and reused meanwhile); a
// busy bucket skips the update. Writes stamp the new record before it is
// published. Neither the clock nor the stamp is read by the seqlock.
//
// The clock lives in the catalog (one line shared with maxmemory): the
// timer process advances it every tick (AccessClockTick); a process with
// no timer (tests, benchmarks) advances it itself.

#include <cstdint>

#include "cache/catalog.h"
#include "cache/evict.h"

namespace cache {

inline constexpr uint8_t kLfuInitVal = 5;
inline constexpr uint32_t kAccessClockMask = kAccessMask;  // 13 bits
inline constexpr uint32_t kLfuMinuteMask = 31;
inline constexpr uint32_t kCoarseLruStep = 60;  // see "LRU mode" above

// A snapshot of what the access rules need (relaxed loads of the catalog).
struct AccessParams {
  bool lfu = false;           // LFU mode (the policy is an LFU one)
  uint32_t lru_step = 1;      // LRU mode: a read stores when the key is this idle (s)
  uint32_t clock_s = 0;       // access clock, seconds
  uint32_t log_factor = 10;   // lfu-log-factor
  uint32_t decay_min = 1;     // lfu-decay-time (0 = the counter never decays)
};
inline AccessParams LoadAccessParams(const Catalog& cat) {
  AccessParams p;
  uint32_t policy = cat.maxmemory_policy.load(std::memory_order_relaxed);
  p.lfu = policy == static_cast<uint32_t>(EvictPolicy::kAllKeysLfu) ||
          policy == static_cast<uint32_t>(EvictPolicy::kVolatileLfu);
  bool lru = policy == static_cast<uint32_t>(EvictPolicy::kAllKeysLru) ||
             policy == static_cast<uint32_t>(EvictPolicy::kVolatileLru);
  p.lru_step = lru ? 1 : kCoarseLruStep;
  p.clock_s = cat.access_clock.load(std::memory_order_relaxed);
  p.log_factor = cat.lfu_log_factor.load(std::memory_order_relaxed);
  p.decay_min = cat.lfu_decay_time.load(std::memory_order_relaxed);
  return p;
}

// The field of a record built now.
inline uint16_t AccessFresh(const AccessParams& p) {
  if (p.lfu) return static_cast<uint16_t>(kLfuInitVal | ((p.clock_s / 60) & kLfuMinuteMask) << 8);
  return static_cast<uint16_t>(p.clock_s & kAccessClockMask);
}
// After a read of a record whose field is `old`: the new field; false when
// it is unchanged (nothing to store).
bool AccessOnRead(const AccessParams& p, uint16_t old, uint16_t* out);
// A write that replaces a live record whose field is `old`: LFU carries the
// counter over (and counts the access), LRU stamps the clock.
uint16_t AccessOnWrite(const AccessParams& p, uint16_t old);

// The read path's first test, inline: false when a read of a record whose
// field is `acc` certainly changes nothing (LRU mode, not idle long enough),
// so the common read does two loads of a shared line and a compare.
inline bool AccessReadMayStore(const Catalog& cat, uint16_t acc) {
  uint32_t policy = cat.maxmemory_policy.load(std::memory_order_relaxed);
  if (policy == static_cast<uint32_t>(EvictPolicy::kAllKeysLfu) ||
      policy == static_cast<uint32_t>(EvictPolicy::kVolatileLfu)) {
    return true;
  }
  bool lru = policy == static_cast<uint32_t>(EvictPolicy::kAllKeysLru) ||
             policy == static_cast<uint32_t>(EvictPolicy::kVolatileLru);
  uint32_t idle = (cat.access_clock.load(std::memory_order_relaxed) - acc) & kAccessClockMask;
  return idle >= (lru ? 1u : kCoarseLruStep);
}

// LRU mode: seconds since the last access (modulo 2^13).
uint32_t AccessIdleSeconds(const AccessParams& p, uint16_t acc);
// LFU mode: the counter after decay (what OBJECT FREQ answers).
uint8_t AccessFrequency(const AccessParams& p, uint16_t acc);
// Eviction rank, larger = evict first: idle seconds, or 255 - frequency.
uint32_t AccessEvictRank(const AccessParams& p, uint16_t acc);

// The aging pass (timer): a stamp too old to be kept exact without wrapping
// (LRU: idle kAgeLruSeconds or more; LFU: kAgeLfuMinutes or more) gets its
// replacement in *out; false when it is young enough.
inline constexpr uint32_t kAgeLruSeconds = 4096;
inline constexpr uint32_t kAgeLfuMinutes = 16;
inline constexpr int64_t kAgePeriodMs = 10 * 60 * 1000;  // a whole round at most this long
bool AccessAge(const AccessParams& p, uint16_t acc, uint16_t* out);
// One step of the round: `budget` buckets from *cursor on, round robin over
// every collection (cursor: collection index << 40 | bucket). Old stamps
// are rewritten under the bucket (or overflow) lock, outside any seqlock
// bracket (readers never validate the field). Returns records rewritten.
uint64_t AgeAccessStep(Ctx& c, uint64_t* cursor, uint32_t budget);

// The clock: set it from the wall clock (NowMs(c), so a test's clock skew
// counts). The timer calls it every tick; InitCatalog once.
void AccessClockTick(Ctx& c);
// LFU tuning (CONFIG SET lfu-log-factor / lfu-decay-time).
void SetLfuParams(Ctx& c, uint32_t log_factor, uint32_t decay_min);

}  // namespace cache
