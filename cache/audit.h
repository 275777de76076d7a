// perfcached — the audit: a read-only walk that checks every engine invariant.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// What it checks (docs/engine.md "Audit"):
//   tables   every bucket below the route: seqlock even, no lock held by a
//            dead process, used <= 11, slots below `used` point at sane
//            records that route to this bucket with the right tag, slots at
//            and above `used` are 0, the expiry hint never above a record's;
//            buckets past the route are empty; overflow: count == nodes,
//            every node sane and in its hash head, never also in a bucket;
//            every key once per table (quiescent mode).
//   types    hashes and sets: a known encoding byte; a tree encoding's
//            nodes and entries sane, every entry on its hash path, every
//            node's count its subtree's, the record's count the total, and
//            (quiescent mode) every cell referenced once (cache/dict.h).
//   catalog  name seqlocks even, names sane, no rename pending, lock free
//            or held by the living.
//   memory   (quiescent mode) every slab cell live once or free once; the
//            rest counted as leaked (a crash may leak, never duplicate);
//            large-object runs well formed, each head live or leaked; pool
//            and slot locks not held by the dead.
// Live mode (MI perf_check on a running daemon): walks each table in steps
// of kAuditStep buckets under the table's admin lock (no split or merge
// moves keys across a step; readers and writers go on) and each bucket
// under its lock; it skips what only a quiescent arena can answer (cell
// accounting, key uniqueness across buckets).

#include <cstdint>
#include <string>
#include <vector>

#include "cache/table.h"

namespace cache {

inline constexpr uint32_t kAuditStep = 4096;

struct AuditOptions {
  bool live = false;          // see the file comment
  uint32_t max_errors = 32;   // errors kept (all are counted)
};

struct AuditReport {
  uint64_t tables = 0, buckets = 0, records = 0, overflow_nodes = 0;
  uint64_t aggregates = 0, aggregate_entries = 0;  // hashes / sets; entries of tree ones
  uint64_t cells_live = 0, cells_free = 0, cells_leaked = 0;
  uint64_t large_live = 0, large_leaked = 0;
  uint64_t dead_holders = 0;  // locks / slots still held by dead processes
  bool memory_checked = false;
  uint64_t error_count = 0;
  std::vector<std::string> errors;
  bool clean() const { return error_count == 0 && dead_holders == 0; }
  std::string Summary() const;
};

AuditReport Audit(Ctx& c, const AuditOptions& o = {});

}  // namespace cache
