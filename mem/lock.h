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
// Lock identity: a thread bound to an allocator slot (mem/slab.h) holds
// locks under a *token* (kTokenBit | slot << 22 | slot generation); any
// other thread under its raw tid. A token is judged dead when the slot's
// generation moved on (the slot was reclaimed) or when the slot's owner
// process is dead, which compares the process start time recorded at claim
// time with /proc/<tid>/stat: a reused process id never makes a dead holder
// look alive (issue 7, defect 7). A raw tid is judged by kill(tid, 0) and
// the zombie state alone (only the supervisor before fork holds locks so).
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
inline constexpr uint32_t kTokenBit = 1u << 30;
inline constexpr uint32_t kTokenGenMask = (1u << 22) - 1;

// The calling thread's id, cached (gettid()).
uint32_t SelfTid();
// The calling thread's lock identity: its token when bound, else its tid.
uint32_t SelfLockId();
// Bind (token != 0) or unbind (0) the calling thread's token.
void BindLockToken(uint32_t token);
// The judge of tokens: true when the token's holder is dead. Installed by
// mem/slab.cc for the arena whose slots issued the tokens.
using TokenDeadFn = bool (*)(uint32_t token);
void SetTokenJudge(TokenDeadFn fn);

// Process start time in clock ticks since boot (/proc/<tid>/stat field 22),
// 0 when the task is gone or unreadable.
uint64_t TidStartTime(uint32_t tid);
// True when `id` (a tid or a token) no longer runs (gone, or a zombie).
bool TidIsDead(uint32_t id);
// True when `tid` is dead or is not the process that started at `start`
// (its id was reused). start == 0: judged by tid alone.
bool TidIsDead(uint32_t tid, uint64_t start);

// Acquire. Fast path: one CAS. See the file comment for dead holders.
[[nodiscard]] LockResult LockSlow(ShmLock& l, uint32_t self);
[[nodiscard]] inline LockResult Lock(ShmLock& l, uint32_t self = SelfLockId()) {
  uint32_t expected = 0;
  if (l.word.compare_exchange_strong(expected, self, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
    return LockResult::kAcquired;
  }
  return LockSlow(l, self);
}

[[nodiscard]] inline bool TryLock(ShmLock& l, uint32_t self = SelfLockId()) {
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
[[nodiscard]] bool TakeFromDead(ShmLock& l, uint32_t dead_tid, uint32_t self = SelfLockId());

}  // namespace mem
