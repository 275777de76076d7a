// perfcached — per-record access information (cache/access.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/access.h"

#include <ctime>

#include "cache/evict.h"

namespace cache {
namespace {

inline uint32_t MinuteOf(uint32_t clock_s) { return (clock_s / 60) & kLfuMinuteMask; }
inline uint8_t CounterOf(uint16_t acc) { return static_cast<uint8_t>(acc & 0xFF); }
inline uint16_t LfuField(uint8_t counter, uint32_t minute) {
  return static_cast<uint16_t>(counter | (minute & kLfuMinuteMask) << 8);
}

uint8_t Decayed(const AccessParams& p, uint16_t acc) {
  uint8_t counter = CounterOf(acc);
  if (p.decay_min == 0) return counter;
  uint32_t idle_min = (MinuteOf(p.clock_s) - (acc >> 8)) & kLfuMinuteMask;
  uint32_t periods = idle_min / p.decay_min;
  return periods >= counter ? 0 : static_cast<uint8_t>(counter - periods);
}

// A cheap per-thread generator for the increment's coin (xorshift64*).
uint64_t Coin() {
  thread_local uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(time(nullptr)) ^
                            reinterpret_cast<uintptr_t>(&x);
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545F4914F6CDD1Dull;
}

// One access: up by one with probability 1 / ((counter - init) * factor + 1).
uint8_t LogIncrement(const AccessParams& p, uint8_t counter) {
  if (counter == 255) return counter;
  uint32_t base = counter > kLfuInitVal ? counter - kLfuInitVal : 0;
  uint64_t odds = uint64_t{base} * p.log_factor + 1;
  if (odds == 1 || (Coin() >> 11) % odds == 0) return static_cast<uint8_t>(counter + 1);
  return counter;
}

}  // namespace

bool AccessOnRead(const AccessParams& p, uint16_t old, uint16_t* out) {
  if (!p.lfu) {
    *out = static_cast<uint16_t>(p.clock_s & kAccessClockMask);
    return AccessIdleSeconds(p, old) >= p.lru_step;
  }
  uint16_t want = LfuField(LogIncrement(p, Decayed(p, old)), MinuteOf(p.clock_s));
  *out = want;
  return want != (old & kAccessMask);
}

uint16_t AccessOnWrite(const AccessParams& p, uint16_t old) {
  if (!p.lfu) return AccessFresh(p);
  return LfuField(LogIncrement(p, Decayed(p, old)), MinuteOf(p.clock_s));
}

uint32_t AccessIdleSeconds(const AccessParams& p, uint16_t acc) {
  return (p.clock_s - acc) & kAccessClockMask;
}

uint8_t AccessFrequency(const AccessParams& p, uint16_t acc) { return Decayed(p, acc); }

uint32_t AccessEvictRank(const AccessParams& p, uint16_t acc) {
  return p.lfu ? 255u - Decayed(p, acc) : AccessIdleSeconds(p, acc);
}

void AccessClockTick(Ctx& c) {
  c.catalog->access_clock.store(static_cast<uint32_t>(NowMs(c) / 1000), std::memory_order_relaxed);
}

void SetLfuParams(Ctx& c, uint32_t log_factor, uint32_t decay_min) {
  c.catalog->lfu_log_factor.store(log_factor, std::memory_order_relaxed);
  c.catalog->lfu_decay_time.store(decay_min, std::memory_order_relaxed);
}

}  // namespace cache
