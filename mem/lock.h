// perfcached — a 4-byte cross-process lock whose word names its holder.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// ShmLock lives in MAP_SHARED memory and is taken by several processes.
//
//   word == 0                 free
//   word == tid | kWaiters?   held by thread id `tid` (== pid for a
//                             single-threaded process); kWaiters set when
//                             somebody sleeps in FUTEX_WAIT on the word
//
// We chose "the lock word holds the holder's tid" over a separate owner field
// and over the kernel's robust-futex list: the word alone tells any process
// who holds the lock, so a waiter (or the timer's repair pass) can test the
// holder for death without a process table, and the library stays free of
// process roles. The robust list would need the glibc pthread layout and
// would wake exactly one waiter; we want the repair to be done by the code
// that knows the structure behind the lock (see cache/ repair).
//
// The futex calls are the SHARED kind (no FUTEX_PRIVATE_FLAG): a private
// futex keys on the process's mm, so a wake from another process would never
// reach the sleeper.
//
// Dead holders: Lock() sleeps with a timeout; after kDeadCheckAfter of
// waiting it asks the kernel whether the holder is alive. If the holder is
// dead (or a zombie), Lock() takes the lock over with a CAS and returns
// LockResult::kTookFromDead: the caller then repairs whatever the lock
// protects before using it. Lock() never silently inherits a dead holder's
// half-done work.

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace mem {

enum class LockResult : uint8_t { kAcquired, kTookFromDead };

struct ShmLock {
  std::atomic<uint32_t> word;
};
static_assert(sizeof(ShmLock) == 4);
static_assert(std::is_standard_layout_v<ShmLock>);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

inline constexpr uint32_t kLockWaiters = 1u << 31;
inline constexpr uint32_t kLockTidMask = kLockWaiters - 1;

// The calling thread's id, cached (gettid()).
uint32_t SelfTid();

// True when `tid` no longer runs (gone, or a zombie waiting to be reaped).
bool TidIsDead(uint32_t tid);

// Acquire. Fast path: one CAS. See the file comment for dead holders.
[[nodiscard]] LockResult LockSlow(ShmLock& l, uint32_t self);
[[nodiscard]] inline LockResult Lock(ShmLock& l, uint32_t self = SelfTid()) {
  uint32_t expected = 0;
  if (l.word.compare_exchange_strong(expected, self, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
    return LockResult::kAcquired;
  }
  return LockSlow(l, self);
}

[[nodiscard]] inline bool TryLock(ShmLock& l, uint32_t self = SelfTid()) {
  uint32_t expected = 0;
  return l.word.compare_exchange_strong(expected, self, std::memory_order_acquire,
                                        std::memory_order_relaxed);
}

void WakeWaiters(ShmLock& l);

inline void Unlock(ShmLock& l) {
  if (l.word.exchange(0, std::memory_order_release) & kLockWaiters) WakeWaiters(l);
}

// Holder tid, 0 when free.
inline uint32_t LockHolder(const ShmLock& l) {
  return l.word.load(std::memory_order_relaxed) & kLockTidMask;
}

// Take the lock over from `dead_tid` (which must be dead). Returns false if
// the word no longer names dead_tid (someone else took it over first).
[[nodiscard]] bool TakeFromDead(ShmLock& l, uint32_t dead_tid, uint32_t self = SelfTid());

}  // namespace mem
