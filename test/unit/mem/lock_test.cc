// perfcached — unit tests for mem/lock: ShmLock across processes, dead holders, TidIsDead.
// Copyright (c) 2026 the perfcached authors.
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "mem/arena.h"
#include "mem/lock.h"
#include "test/unit/mem/mem_fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::LockResult;
using mem::ShmLock;

namespace {

// Shared state of the cross-process tests, in an arena region.
struct Shared {
  ShmLock lock;
  std::atomic<uint32_t> go;
  std::atomic<uint32_t> holding;   // set by a child once it holds the lock
  std::atomic<uint32_t> release;   // set to let that child unlock
  std::atomic<uint32_t> errors;
  std::atomic<uint32_t> took_dead;
  uint32_t in_cs;                  // plain: only touched under the lock
  uint32_t last;                   // plain: tid of the previous holder
  uint64_t counter;                // a load and a separate store, under the lock
  uint64_t handovers;              // plain: holder changed between processes
};

inline void CpuPause(int n) {
  for (int i = 0; i < n; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    asm volatile("" ::: "memory");
#endif
  }
}

void SpinUntil(const std::atomic<uint32_t>& f, uint32_t v = 1) {
  while (f.load(std::memory_order_acquire) != v) {
  }
}

}  // namespace

TEST_GROUP(ShmLock) {
  mem::Arena* a = nullptr;
  Shared* sh = nullptr;
  void setup() override {
    a = memtest::MakeArena(6);
    sh = reinterpret_cast<Shared*>(a->At(a->RegionAlloc(sizeof(Shared))));
  }
  void teardown() override { mem::Arena::Destroy(a); }
};

TEST(ShmLock, SelfTidIsGettid) {
  CHECK(mem::SelfTid() != 0);
  CHECK_EQUAL(static_cast<uint32_t>(syscall(SYS_gettid)), mem::SelfTid());
  CHECK_EQUAL(mem::SelfTid(), mem::SelfTid());  // cached, stable
  // After fork the child sees its own tid, not the parent's cached one.
  uint32_t parent = mem::SelfTid();
  pid_t p = memtest::ForkChild([&] {
    uint32_t t = mem::SelfTid();
    return t == static_cast<uint32_t>(getpid()) && t != parent ? 0 : 1;
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
}

TEST(ShmLock, LockUnlockTryLock) {
  ShmLock& l = sh->lock;
  uint32_t self = mem::SelfTid();
  CHECK_EQUAL(0u, mem::LockHolder(l));
  CHECK(mem::Lock(l) == LockResult::kAcquired);
  CHECK_EQUAL(self, mem::LockHolder(l));
  CHECK_EQUAL(self, l.word.load());  // uncontended: no waiters bit
  CHECK_FALSE(mem::TryLock(l));      // not recursive
  CHECK_FALSE(mem::TryLock(l, 12345));
  CHECK_EQUAL(self, mem::LockHolder(l));
  mem::Unlock(l);
  CHECK_EQUAL(0u, mem::LockHolder(l));
  CHECK_EQUAL(0u, l.word.load());
  CHECK(mem::TryLock(l));
  CHECK_EQUAL(self, mem::LockHolder(l));
  mem::Unlock(l);
  CHECK(mem::TryLock(l, 4242));  // an explicit holder id
  CHECK_EQUAL(4242u, mem::LockHolder(l));
  mem::Unlock(l);
  CHECK_EQUAL(0u, l.word.load());
}

TEST(ShmLock, WaitersBitIsNotPartOfTheHolder) {
  ShmLock& l = sh->lock;
  l.word.store(777u | mem::kLockWaiters);
  CHECK_EQUAL(777u, mem::LockHolder(l));
  CHECK_FALSE(mem::TryLock(l));
  mem::Unlock(l);  // clears the bit and wakes (nobody)
  CHECK_EQUAL(0u, l.word.load());
}

TEST(ShmLock, TakeFromDeadNamesTheHolder) {
  ShmLock& l = sh->lock;
  uint32_t self = mem::SelfTid();
  l.word.store(12345u | mem::kLockWaiters);
  CHECK_FALSE(mem::TakeFromDead(l, 999));  // not the holder: refused
  CHECK_EQUAL(12345u | mem::kLockWaiters, l.word.load());
  CHECK(mem::TakeFromDead(l, 12345));
  CHECK_EQUAL(self, mem::LockHolder(l));
  CHECK(l.word.load() & mem::kLockWaiters);  // kept, so Unlock wakes sleepers
  CHECK_FALSE(mem::TakeFromDead(l, 12345));  // the word moved on
  mem::Unlock(l);
  CHECK_EQUAL(0u, l.word.load());
  CHECK_FALSE(mem::TakeFromDead(l, 12345));  // free lock: nothing to take
  CHECK_EQUAL(0u, l.word.load());
}

// Two processes, 200,000 increments each, under the lock.
TEST(ShmLock, MutualExclusionAcrossProcesses) {
  constexpr int kIters = 200000;
  constexpr int kPhases = 20;
  auto worker = [&] {
    uint32_t self = mem::SelfTid();
    double give_up = memtest::NowSec() + 20;  // the other child died: do not hang
    for (int i = 0; i < kIters; ++i) {
      if (i % (kIters / kPhases) == 0) {
        // A barrier between the two children every 10,000 rounds, so that
        // they really overlap even when the scheduler runs one of them
        // alone for a while (the parent sleeps in waitpid meanwhile).
        uint32_t want = 2 * (static_cast<uint32_t>(i / (kIters / kPhases)) + 1);
        sh->go.fetch_add(1);
        while (sh->go.load(std::memory_order_acquire) < want) {
          sched_yield();
          if (memtest::NowSec() > give_up) return 3;
        }
      }
      if (mem::Lock(sh->lock) != LockResult::kAcquired) sh->took_dead.fetch_add(1);
      if (mem::LockHolder(sh->lock) != self || sh->in_cs != 0) sh->errors.fetch_add(1);
      sh->in_cs = 1;
      // A read-modify-write stretched over a short pause: without mutual
      // exclusion the two processes lose increments here.
      uint64_t v = __atomic_load_n(&sh->counter, __ATOMIC_RELAXED);
      CpuPause(16);
      __atomic_store_n(&sh->counter, v + 1, __ATOMIC_RELAXED);
      if (sh->last != self) ++sh->handovers;
      sh->last = self;
      sh->in_cs = 0;
      mem::Unlock(sh->lock);
    }
    return 0;
  };
  pid_t c1 = memtest::ForkChild(worker);
  pid_t c2 = memtest::ForkChild(worker);
  double t0 = memtest::NowSec();
  CHECK_EQUAL(0, memtest::WaitExit(c1));
  CHECK_EQUAL(0, memtest::WaitExit(c2));
  double dt = memtest::NowSec() - t0;
  CHECK_EQUAL(2ul * kIters, static_cast<unsigned long>(sh->counter));
  CHECK_EQUAL(0u, sh->errors.load());
  CHECK_EQUAL(0u, sh->took_dead.load());
  CHECK_EQUAL(0u, mem::LockHolder(sh->lock));
  CHECK_TEXT(dt < 3.0, "400,000 contended lock/unlock pairs took over 3 s");
  // The two really ran interleaved (else the test proved nothing).
  CHECK_TEXT(sh->handovers >= 3, ("handovers " + std::to_string(sh->handovers)).c_str());
}

// A live holder that keeps the lock past several liveness checks is waited
// for, never taken over.
TEST(ShmLock, LiveHolderIsWaitedFor) {
  pid_t p = memtest::ForkChild([&] {
    (void)mem::Lock(sh->lock);
    sh->holding.store(1, std::memory_order_release);
    for (int i = 0; i < 5000 && sh->release.load(std::memory_order_acquire) == 0; ++i) usleep(1000);
    usleep(20000);
    mem::Unlock(sh->lock);
    return 0;
  });
  SpinUntil(sh->holding);
  CHECK_EQUAL(static_cast<uint32_t>(p), mem::LockHolder(sh->lock));
  CHECK_FALSE(mem::TryLock(sh->lock));
  CHECK(!mem::TidIsDead(static_cast<uint32_t>(p)));
  // Let the child go only after we had time to sleep in the futex a few times.
  pid_t releaser = memtest::ForkChild([&] {
    usleep(80000);
    sh->release.store(1, std::memory_order_release);
    return 0;
  });
  double t0 = memtest::NowSec();
  LockResult r = mem::Lock(sh->lock);
  double dt = memtest::NowSec() - t0;
  CHECK(r == LockResult::kAcquired);
  CHECK_EQUAL(mem::SelfTid(), mem::LockHolder(sh->lock));
  CHECK(dt > 0.05);  // it really waited (80 ms + 20 ms in the holder)
  mem::Unlock(sh->lock);
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK_EQUAL(0, memtest::WaitExit(releaser));
}

// The holder exits while holding the lock; it is reaped before we ask.
TEST(ShmLock, DeadHolderIsTakenOver) {
  pid_t p = memtest::ForkChild([&] {
    if (mem::Lock(sh->lock) != LockResult::kAcquired) return 2;
    return 0;  // exits holding it
  });
  CHECK_EQUAL(0, memtest::WaitExit(p));
  CHECK_EQUAL(static_cast<uint32_t>(p), mem::LockHolder(sh->lock));
  double t0 = memtest::NowSec();
  LockResult r = mem::Lock(sh->lock);
  double dt = memtest::NowSec() - t0;
  CHECK(r == LockResult::kTookFromDead);
  CHECK_TEXT(dt < 1.0, "dead-holder takeover took over 1 s");
  CHECK_EQUAL(mem::SelfTid(), mem::LockHolder(sh->lock));
  mem::Unlock(sh->lock);
  CHECK_EQUAL(0u, sh->lock.word.load());
  CHECK(mem::Lock(sh->lock) == LockResult::kAcquired);  // an ordinary lock again
  mem::Unlock(sh->lock);
}

// The holder dies while we already wait; nobody reaps it (we are blocked in
// Lock), so it is a zombie when the liveness check runs.
TEST(ShmLock, HolderDyingWhileWeWaitIsTakenOver) {
  pid_t p = memtest::ForkChild([&] {
    (void)mem::Lock(sh->lock);
    sh->holding.store(1, std::memory_order_release);
    usleep(30000);
    return 0;
  });
  SpinUntil(sh->holding);
  double t0 = memtest::NowSec();
  LockResult r = mem::Lock(sh->lock);
  double dt = memtest::NowSec() - t0;
  CHECK(r == LockResult::kTookFromDead);
  CHECK(dt < 1.0);
  CHECK_EQUAL(mem::SelfTid(), mem::LockHolder(sh->lock));
  mem::Unlock(sh->lock);
  CHECK_EQUAL(0, memtest::WaitExit(p));
}

// Two waiters, one dead holder: exactly one takes it over, the other then
// acquires normally.
TEST(ShmLock, OneTakeoverForTwoWaiters) {
  pid_t holder = memtest::ForkChild([&] {
    (void)mem::Lock(sh->lock);
    return 0;
  });
  CHECK_EQUAL(0, memtest::WaitExit(holder));
  auto waiter = [&] {
    SpinUntil(sh->go);
    LockResult r = mem::Lock(sh->lock);
    if (r == LockResult::kTookFromDead) sh->took_dead.fetch_add(1);
    if (mem::LockHolder(sh->lock) != mem::SelfTid() || sh->in_cs != 0) sh->errors.fetch_add(1);
    sh->in_cs = 1;
    usleep(2000);
    ++sh->counter;
    sh->in_cs = 0;
    mem::Unlock(sh->lock);
    return 0;
  };
  pid_t w1 = memtest::ForkChild(waiter);
  pid_t w2 = memtest::ForkChild(waiter);
  sh->go.store(1, std::memory_order_release);
  CHECK_EQUAL(0, memtest::WaitExit(w1));
  CHECK_EQUAL(0, memtest::WaitExit(w2));
  CHECK_EQUAL(1u, sh->took_dead.load());
  CHECK_EQUAL(0u, sh->errors.load());
  CHECK_EQUAL(2ul, static_cast<unsigned long>(sh->counter));
  CHECK_EQUAL(0u, mem::LockHolder(sh->lock));
}

TEST(ShmLock, TidIsDead) {
  CHECK_FALSE(mem::TidIsDead(static_cast<uint32_t>(getpid())));
  CHECK_FALSE(mem::TidIsDead(mem::SelfTid()));
  CHECK_FALSE(mem::TidIsDead(0));  // 0 names nobody: "free", not "dead"
  CHECK_FALSE(mem::TidIsDead(1));  // init (of this pid namespace) is alive
  CHECK(mem::TidIsDead(0x3FFFFFF0u));  // above any pid_max: no such task (bit 30 = token)

  // A live child (blocked in a pipe read) is alive.
  int fds[2];
  CHECK_EQUAL(0, pipe(fds));
  pid_t live = memtest::ForkChild([&] {
    close(fds[1]);
    char c;
    return read(fds[0], &c, 1) == 0 ? 0 : 1;
  });
  close(fds[0]);
  bool dead_while_alive = mem::TidIsDead(static_cast<uint32_t>(live));
  close(fds[1]);  // EOF: it exits
  CHECK_FALSE(dead_while_alive);
  // Exited but not reaped: a zombie counts as dead.
  siginfo_t si{};
  CHECK_EQUAL(0, waitid(P_PID, static_cast<id_t>(live), &si, WEXITED | WNOWAIT));
  CHECK_EQUAL(live, si.si_pid);
  CHECK(mem::TidIsDead(static_cast<uint32_t>(live)));
  // Reaped: gone.
  CHECK_EQUAL(0, memtest::WaitExit(live));
  CHECK(mem::TidIsDead(static_cast<uint32_t>(live)));
}
