// perfcached — the arena's hugepage tier note in words (see tier_words.h).
// Copyright (c) 2026 the perfcached authors.
#include "proc/tier_words.h"


namespace proc {
namespace {

// One step of mem/hugepage.cc MapShared's note: `step` with its errno text
// in parentheses (paren) or after the colon, and what it means.
struct Words {
  std::string_view step;   // the step as mem/ writes it, up to the errno text
  std::string_view err;    // the errno text; "" = any (then "%s" in words takes it)
  std::string_view words;
};

constexpr std::string_view kPool =
    "hugetlb: the pool had no free 2 MiB page (vm.nr_hugepages and vm.nr_overcommit_hugepages are used up or 0)";

constexpr Words kWords[] = {
    {"hugetlb: no free huge page (", "Bad address", kPool},
    {"hugetlb: no free huge page (", "Cannot allocate memory", kPool},
    {"hugetlb: no free huge page (", "Invalid argument",
     "hugetlb: this kernel cannot pre-fault hugetlb pages (MADV_POPULATE_WRITE came in Linux 5.14; a touch could "
     "SIGBUS)"},
    {"hugetlb: no free huge page (", "", "hugetlb: the first 2 MiB page could not be faulted in (the kernel said: %s)"},
    {"hugetlb: mmap refused (", "Cannot allocate memory",
     "hugetlb: no 2 MiB pages can be had (vm.nr_hugepages = vm.nr_overcommit_hugepages = 0, or memory is short)"},
    {"hugetlb: mmap refused (", "Invalid argument",
     "hugetlb: this kernel maps no 2 MiB hugetlb pages (no hugetlbfs, or another default huge page size)"},
    {"hugetlb: mmap refused (", "", "hugetlb: the kernel refused a hugetlb mapping (it said: %s)"},
    {"thp: shmem_enabled does not allow it", "",
     "thp: /sys/kernel/mm/transparent_hugepage/shmem_enabled is not 'advise' or 'always'"},
    {"collapse: no huge page formed", "", "collapse: MADV_COLLAPSE formed no 2 MiB page (memory too fragmented)"},
    {"collapse: ", "Invalid argument", "collapse: this kernel has no MADV_COLLAPSE (Linux 6.1 and later have it)"},
    {"collapse: ", "Resource temporarily unavailable",
     "collapse: MADV_COLLAPSE could not form a 2 MiB page now (memory busy or fragmented)"},
    {"collapse: ", "Cannot allocate memory", "collapse: no free 2 MiB block to collapse into (memory fragmented or short)"},
};

// The errno text of `part` after `step`: inside the parentheses when the
// step opens one, else the rest. False when `part` is not this step.
bool ErrOf(std::string_view part, std::string_view step, std::string_view* err) {
  if (part.substr(0, step.size()) != step) return false;
  std::string_view rest = part.substr(step.size());
  if (!step.empty() && step.back() == '(') {
    if (rest.empty() || rest.back() != ')') return false;
    rest.remove_suffix(1);
  }
  *err = rest;
  return true;
}

std::string Explain(std::string_view part) {
  for (const Words& w : kWords) {
    std::string_view err;
    if (!ErrOf(part, w.step, &err)) continue;
    bool whole = w.step.back() != '(' && w.step.back() != ' ';  // a step with no errno text
    if (whole ? !err.empty() : (!w.err.empty() && err != w.err)) continue;
    std::string out(w.words);
    if (size_t at = out.find("%s"); at != std::string::npos) out.replace(at, 2, err);
    return out;
  }
  // "collapse: <errno text>" that no row names (the tier's own "collapse:
  // MADV_COLLAPSE after faulting" is words already).
  if (part.substr(0, 10) == "collapse: " && part.find("MADV_COLLAPSE") == std::string_view::npos) {
    return "collapse: MADV_COLLAPSE failed (the kernel said: " + std::string(part.substr(10)) + ")";
  }
  return std::string(part);
}

}  // namespace

std::string ExplainTierNote(std::string_view note) {
  std::string out;
  while (!note.empty()) {
    size_t end = note.find("; ");
    std::string_view part = note.substr(0, end);
    if (!out.empty()) out += "; ";
    out += Explain(part);
    if (end == std::string_view::npos) break;
    note.remove_prefix(end + 2);
  }
  return out;
}

}  // namespace proc
