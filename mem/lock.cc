// perfcached — ShmLock slow path: spin, futex sleep, dead-holder takeover.
// Copyright (c) 2026 the perfcached authors.
#include "mem/lock.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mem {
namespace {

constexpr int kSpins = 200;
constexpr long kSleepNs = 5'000'000;     // one futex wait: 5 ms
constexpr int kDeadCheckEvery = 4;       // check holder liveness every 20 ms

long Futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  // Shared futex on purpose: no FUTEX_PRIVATE_FLAG (see lock.h).
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

thread_local uint32_t tls_tid = 0;
thread_local uint32_t tls_token = 0;
std::atomic<TokenDeadFn> g_token_judge{nullptr};

// State letter and start time of a task from /proc/<tid>/stat. False when
// the task is gone.
bool ReadStat(uint32_t tid, char* state, uint64_t* start) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/stat", tid);
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* rp = std::strrchr(buf, ')');  // comm may contain spaces or ')'
  if (!rp || rp[1] != ' ') {
    *state = '?';
    *start = 0;
    return true;
  }
  *state = rp[2];
  // Fields after ")": 3 state, 4 ppid, ... 22 starttime (index 19 from state).
  const char* p = rp + 2;
  for (int field = 3; field < 22 && *p; ++field) {
    p = std::strchr(p, ' ');
    if (!p) break;
    ++p;
  }
  *start = p ? std::strtoull(p, nullptr, 10) : 0;
  return true;
}

}  // namespace

uint32_t SelfTid() {
  if (tls_tid == 0) tls_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tls_tid;
}

uint32_t SelfLockId() { return tls_token != 0 ? tls_token : SelfTid(); }

void BindLockToken(uint32_t token) { tls_token = token; }

void SetTokenJudge(TokenDeadFn fn) { g_token_judge.store(fn); }

// After fork() the child's thread has a new tid but inherits the TLS copies.
// Reset them in every child (registered once, first use).
namespace {
struct TidForkReset {
  TidForkReset() {
    pthread_atfork(nullptr, nullptr, [] {
      tls_tid = 0;
      tls_token = 0;
    });
  }
} tid_fork_reset;
}  // namespace

uint64_t TidStartTime(uint32_t tid) {
  char state;
  uint64_t start;
  return ReadStat(tid, &state, &start) ? start : 0;
}

bool TidIsDead(uint32_t tid, uint64_t start) {
  if (tid == 0) return false;
  if (kill(static_cast<pid_t>(tid), 0) == -1 && errno == ESRCH) return true;
  // Alive or a zombie: a zombie holds no lock any more. Threads are
  // reachable as /proc/<tid> too.
  char state;
  uint64_t now_start;
  if (!ReadStat(tid, &state, &now_start)) return errno == ENOENT;
  if (state == 'Z' || state == 'X' || state == 'x') return true;
  return start != 0 && now_start != 0 && now_start != start;  // id reused
}

bool TidIsDead(uint32_t id) {
  if (id & kTokenBit) {
    TokenDeadFn judge = g_token_judge.load();
    return judge != nullptr && judge(id);
  }
  return TidIsDead(id, 0);
}

LockResult LockSlow(ShmLock& l, uint32_t self) {
  for (int i = 0; i < kSpins; ++i) {
    uint32_t w = l.word.load(std::memory_order_relaxed);
    if (w == 0 && l.word.compare_exchange_weak(w, self, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
      return LockResult::kAcquired;
    }
    CpuRelax();
  }
  int waits = 0;
  for (;;) {
    uint32_t w = l.word.load(std::memory_order_relaxed);
    if (w == 0) {
      // Keep the waiters bit: others may still sleep on the word.
      if (l.word.compare_exchange_weak(w, self | kLockWaiters, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return LockResult::kAcquired;
      }
      continue;
    }
    if (!(w & kLockWaiters)) {
      if (!l.word.compare_exchange_weak(w, w | kLockWaiters, std::memory_order_relaxed)) continue;
      w |= kLockWaiters;
    }
    timespec ts{0, kSleepNs};
    Futex(&l.word, FUTEX_WAIT, w, &ts);
    if (++waits % kDeadCheckEvery == 0) {
      uint32_t holder = l.word.load(std::memory_order_relaxed) & kLockTidMask;
      if (holder != 0 && holder != self && TidIsDead(holder) && TakeFromDead(l, holder, self)) {
        return LockResult::kTookFromDead;
      }
    }
  }
}

void WakeWaiters(ShmLock& l) { Futex(&l.word, FUTEX_WAKE, 1, nullptr); }

bool TakeFromDead(ShmLock& l, uint32_t dead_tid, uint32_t self) {
  for (;;) {
    uint32_t w = l.word.load(std::memory_order_relaxed);
    if ((w & kLockTidMask) != dead_tid) return false;
    // Keep the waiters bit so that our Unlock wakes the others.
    if (l.word.compare_exchange_weak(w, self | (w & kLockWaiters), std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      return true;
    }
  }
}

}  // namespace mem
