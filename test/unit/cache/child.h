// perfcached — helpers for cache/ unit tests that kill a "process" mid-write.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "cache/internal.h"

#include "CppUTest/TestHarness.h"

namespace testing {

// Run `fn` in a forked child with its own Ctx on slot 1; the child dies
// with _exit(0) right after, whatever it holds.
template <typename Fn>
void DieInChild(mem::Arena& a, Fn fn) {
  pid_t p = fork();
  if (p == 0) {
    cache::Ctx c(a, 1);
    fn(c);
    _exit(0);
  }
  int st = 0;
  waitpid(p, &st, 0);
  // The child reports: a crash of the child itself (not the planned death
  // with a lock held) must fail the parent's test.
  CHECK_TEXT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child did not get to its planned death");
}

// A key that routes to bucket `idx` under the current route (the skip-th).
inline std::string KeyInBucket(cache::Ctx& c, const cache::TableRef& t, uint64_t idx, int skip = 0) {
  for (int i = 0;; ++i) {
    std::string k = "probe:" + std::to_string(i);
    if (cache::detail::RouteIdx(t.h->route.load(), cache::detail::HashOf(c, k)) == idx && skip-- == 0) return k;
  }
}

}  // namespace testing
