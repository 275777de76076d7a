// perfcached — shared helpers for mem/ unit tests: small arenas and forked children.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mem/arena.h"

namespace memtest {

// A small arena on 4 KiB pages (fast to create); aborts on failure, since
// every test that uses it needs it.
inline mem::Arena* MakeArena(size_t mb = 16, size_t cap_mb = 0, uint32_t procs = 8,
                             size_t max_value = 4u << 20, bool prefault = true) {
  mem::ArenaOptions o;
  o.arena_mb = mb;
  o.arena_cap_mb = cap_mb;
  o.best_tier = mem::Tier::kSmall;
  o.max_procs = procs;
  o.max_value = max_value;
  o.prefault = prefault;
  std::string err;
  mem::Arena* a = mem::Arena::Create(o, &err);
  if (!a) {
    std::fprintf(stderr, "arena: %s\n", err.c_str());
    std::abort();
  }
  return a;
}

// Run `fn` in a forked child and _exit() with its int result: the child never
// returns into the test runner (a CHECK there would run the rest of the suite
// twice), so `fn` must report through its exit code or shared memory only.
// quiet: stderr to /dev/null and no core file (for children meant to abort).
template <typename Fn>
pid_t ForkChild(Fn fn, bool quiet = false) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t p = fork();
  if (p == 0) {
    if (quiet) {
      int fd = open("/dev/null", O_WRONLY);
      if (fd >= 0) dup2(fd, 2);
      rlimit rl{0, 0};
      setrlimit(RLIMIT_CORE, &rl);
    }
    int rc = fn();
    _exit(rc);
  }
  return p;
}

// waitpid() that survives EINTR; returns the raw status (-1 on error).
inline int WaitStatus(pid_t p) {
  int st = 0;
  for (;;) {
    pid_t r = waitpid(p, &st, 0);
    if (r == p) return st;
    if (r < 0 && errno != EINTR) return -1;
  }
}

// Exit code of a child that exited normally, or 1000 + signal, or -1.
inline int WaitExit(pid_t p) {
  int st = WaitStatus(p);
  if (st == -1) return -1;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 1000 + WTERMSIG(st);
  return -1;
}

inline double NowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace memtest
