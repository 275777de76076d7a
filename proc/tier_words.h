// perfcached — the arena's hugepage tier note in words, for every surface that shows it.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// mem/ records why the arena got the page tier it got (mem::Arena::
// tier_note(), in the arena header): the ladder's steps, separated by
// "; ", with the kernel's errno texts — "hugetlb: no free huge page (Bad
// address)" is MADV_POPULATE_WRITE's EFAULT when the hugetlb pool has no
// page to give. That says nothing to an operator. Every surface that shows
// the note (the start-up log, MI mem_shm_dump and perf_stats, MEMORY
// DOCTOR, the E_PERF_MEM_DEGRADED event) shows ExplainTierNote's words
// instead; the wording lives here alone, outside mem/ (mem/ knows no
// operator).

#include <string>
#include <string_view>

namespace proc {

// Each step of the note in words: the errno texts the ladder can meet are
// said as what they mean here (which sysctl, which kernel); a step it does
// not know passes unchanged, an unknown errno as "the kernel said: ...".
// Steps that are already words (the tier reached, the sysctl advice, a
// refused mlock) pass unchanged.
std::string ExplainTierNote(std::string_view note);

}  // namespace proc
