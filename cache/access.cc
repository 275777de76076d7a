// perfcached — per-record access information (cache/access.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/access.h"

#include <algorithm>
#include <ctime>
#include <vector>

#include "cache/evict.h"
#include "cache/internal.h"
#include "cache/record.h"
#include "mem/canary.h"
#include "mem/crash_point.h"

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

bool AccessAge(const AccessParams& p, uint16_t acc, uint16_t* out) {
  if (PC_CANARY(13)) return false;
  if (!p.lfu) {
    if (AccessIdleSeconds(p, acc) < kAgeLruSeconds) return false;
    *out = static_cast<uint16_t>((p.clock_s - kAgeLruSeconds) & kAccessClockMask);
    return true;
  }
  uint32_t idle_min = (MinuteOf(p.clock_s) - (acc >> 8)) & kLfuMinuteMask;
  if (idle_min < kAgeLfuMinutes) return false;
  // The decay so far, and the minute it was reckoned at: the next decay
  // counts from here (the fraction of a period already idle is dropped).
  *out = LfuField(Decayed(p, acc), MinuteOf(p.clock_s));
  return true;
}

uint64_t AgeAccessStep(Ctx& c, uint64_t* cursor, uint32_t budget) {
  using namespace detail;
  const mem::Arena& a = c.arena;
  AccessParams p = LoadAccessParams(*c.catalog);
  std::vector<CollectionInfo> cols = ListCollections(c);
  if (cols.empty()) return 0;
  uint64_t col = *cursor >> 40, idx = *cursor & ((uint64_t{1} << 40) - 1), aged = 0;
  if (col >= cols.size()) col = 0, idx = 0;
  uint32_t walked = 0;
  for (size_t turns = 0; turns <= cols.size() && walked < budget; ++turns) {
    TableRef t;
    if (OpenCollection(c, cols[col].name, &t) == Status::kOk) {
      TableHeader& h = *t.h;
      uint64_t nb = RouteBuckets(h.route.load(std::memory_order_acquire));
      auto age = [&](Off rec) {
        RecView v{a.At(rec)};
        uint16_t now;
        if (AccessAge(p, v.access(), &now)) {
          v.set_access(now);
          ++aged;
        }
      };
      for (; idx < nb && walked < budget; ++idx, ++walked) {
        Bucket* b = BucketAt(a, h, idx);
        if (!b || Used(TagsHi(*b)) == 0) continue;
        LockBucket(c, h, idx, *b);
        uint32_t used = UsedOf(*b);
        for (uint32_t i = 0; i < used; ++i) age(SlotAt(*b, static_cast<int>(i)));
        PC_CRASH_POINT();
        mem::Unlock(b->lock);
      }
      if (idx < nb) break;  // budget spent inside this collection
      if (h.ovf.count.load(std::memory_order_acquire) != 0) {
        LockOverflow(c, h);
        Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
        for (uint32_t i = 0; i < kOvfHeads; ++i) {
          uint32_t guard = 1u << 16;
          for (Off node = mem::LoadOff(&heads[i]); node != 0 && guard-- > 0;
               node = mem::LoadOff(a.At(node) + kNodeNext)) {
            age(mem::LoadOff(a.At(node) + kNodeRec));
          }
        }
        mem::Unlock(h.ovf.lock);
      }
    }
    col = (col + 1) % cols.size();
    idx = 0;
  }
  *cursor = col << 40 | idx;
  return aged;
}

void AccessClockTick(Ctx& c) {
  c.catalog->access_clock.store(static_cast<uint32_t>(NowMs(c) / 1000), std::memory_order_relaxed);
}

void SetLfuParams(Ctx& c, uint32_t log_factor, uint32_t decay_min) {
  c.catalog->lfu_log_factor.store(log_factor, std::memory_order_relaxed);
  c.catalog->lfu_decay_time.store(decay_min, std::memory_order_relaxed);
}

}  // namespace cache
