// perfcached — unit tests for proc/tier_words: the arena's tier note in words.
// Copyright (c) 2026 the perfcached authors.
#include "proc/tier_words.h"

#include <cstring>
#include <string>

#include "mem/arena.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using proc::ExplainTierNote;

TEST_GROUP(TierWords){};

// The note this machine's ladder writes with no hugetlb pool and shmem
// THP off (mem/hugepage.cc MapShared), step by step.
TEST(TierWords, EveryErrnoTextOfTheLadderInWords) {
  STRCMP_EQUAL(
      "hugetlb: the pool had no free 2 MiB page (vm.nr_hugepages and vm.nr_overcommit_hugepages are used up or 0); "
      "thp: /sys/kernel/mm/transparent_hugepage/shmem_enabled is not 'advise' or 'always'; "
      "collapse: MADV_COLLAPSE after faulting; for 2 MiB pages: sysctl vm.nr_overcommit_hugepages=32",
      ExplainTierNote("hugetlb: no free huge page (Bad address); thp: shmem_enabled does not allow it; "
                      "collapse: MADV_COLLAPSE after faulting; for 2 MiB pages: sysctl vm.nr_overcommit_hugepages=32")
          .c_str());
  STRCMP_EQUAL(
      "hugetlb: the pool had no free 2 MiB page (vm.nr_hugepages and vm.nr_overcommit_hugepages are used up or 0)",
      ExplainTierNote("hugetlb: no free huge page (Cannot allocate memory)").c_str());
  STRCMP_EQUAL("hugetlb: no 2 MiB pages can be had (vm.nr_hugepages = vm.nr_overcommit_hugepages = 0, or memory is "
               "short); small: 4 KiB pages",
               ExplainTierNote("hugetlb: mmap refused (Cannot allocate memory); small: 4 KiB pages").c_str());
  STRCMP_EQUAL("hugetlb: this kernel cannot pre-fault hugetlb pages (MADV_POPULATE_WRITE came in Linux 5.14; a "
               "touch could SIGBUS)",
               ExplainTierNote("hugetlb: no free huge page (Invalid argument)").c_str());
  STRCMP_EQUAL("hugetlb: this kernel maps no 2 MiB hugetlb pages (no hugetlbfs, or another default huge page size)",
               ExplainTierNote("hugetlb: mmap refused (Invalid argument)").c_str());
  STRCMP_EQUAL("collapse: this kernel has no MADV_COLLAPSE (Linux 6.1 and later have it)",
               ExplainTierNote("collapse: Invalid argument").c_str());
  STRCMP_EQUAL("collapse: MADV_COLLAPSE formed no 2 MiB page (memory too fragmented)",
               ExplainTierNote("collapse: no huge page formed").c_str());
  STRCMP_EQUAL("collapse: MADV_COLLAPSE could not form a 2 MiB page now (memory busy or fragmented)",
               ExplainTierNote("collapse: Resource temporarily unavailable").c_str());
}

// An errno nobody wrote words for is still said as the kernel's, marked
// as such; words already (the tier reached, advice, mlock) pass unchanged.
TEST(TierWords, UnknownErrnoAndPlainWords) {
  STRCMP_EQUAL("hugetlb: the first 2 MiB page could not be faulted in (the kernel said: Operation not permitted)",
               ExplainTierNote("hugetlb: no free huge page (Operation not permitted)").c_str());
  STRCMP_EQUAL("hugetlb: the kernel refused a hugetlb mapping (it said: Permission denied)",
               ExplainTierNote("hugetlb: mmap refused (Permission denied)").c_str());
  STRCMP_EQUAL("collapse: MADV_COLLAPSE failed (the kernel said: Operation not permitted)",
               ExplainTierNote("collapse: Operation not permitted").c_str());
  const char* plain =
      "hugetlb: 2 MiB pages from the hugetlb pool; mlock refused (raise LimitMEMLOCK / ulimit -l): memory may swap";
  STRCMP_EQUAL(plain, ExplainTierNote(plain).c_str());
  STRCMP_EQUAL("thp: shmem transparent huge pages", ExplainTierNote("thp: shmem transparent huge pages").c_str());
  STRCMP_EQUAL("", ExplainTierNote("").c_str());
  // A step that only starts like a known one is not taken for it.
  STRCMP_EQUAL("thp: shmem_enabled does not allow it now",
               ExplainTierNote("thp: shmem_enabled does not allow it now").c_str());
  STRCMP_EQUAL("hugetlb: no free huge page (Bad address",  // no closing parenthesis
               ExplainTierNote("hugetlb: no free huge page (Bad address").c_str());
}

// The note a real arena gets on this machine, whatever its ladder meets:
// no errno text the ladder can produce is left raw.
TEST(TierWords, ARealLadderNoteHasNoRawErrno) {
  mem::ArenaOptions o;
  o.arena_mb = 8;
  o.best_tier = mem::Tier::kHugetlb;
  o.max_procs = 4;
  std::string err;
  mem::Arena* a = mem::Arena::Create(o, &err);
  CHECK_TEXT(a != nullptr, err.c_str());
  std::string words = ExplainTierNote(a->tier_note());
  mem::Arena::Destroy(a);
  for (const char* raw : {"Bad address", "Cannot allocate memory", "Invalid argument", "(Resource temporarily"}) {
    CHECK_TEXT(words.find(raw) == std::string::npos, words.c_str());
  }
  CHECK(!words.empty());
}
