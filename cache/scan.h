// perfcached — iteration over a collection (cache/scan.cc): SCAN steps.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "cache/ops.h"

namespace cache {

// ---- iteration (cache/scan.cc) ----------------------------------------------
struct ScanItem {
  std::string_view key;
  std::string_view value;   // only with ScanFilter::values
  ReadInfo info;
};
struct ScanFilter {
  std::string_view glob;    // empty = all
  bool nocase = false;
  int type = -1;            // RecordType or -1
  bool values = false;      // copy values too
  // With values: only values up to this many bytes are copied (inside
  // the bucket's seqlock bracket, or under its lock after retries); a
  // larger one comes with an empty value and is read by its key instead
  // (Get copies big values outside any lock: cache/ops.cc).
  uint32_t value_cap = UINT32_MAX;
};
// One SCAN step. cursor 0 starts; *next == 0 when done. `count` residues
// (about `count` buckets) per call. Guarantee (Redis SCAN): a key present
// for the whole scan is returned at least once, across splits and merges.
[[nodiscard]] Status ScanStep(Ctx& c, const TableRef& t, uint64_t cursor, uint32_t count,
                              const ScanFilter& f, const std::function<void(const ScanItem&)>& emit,
                              uint64_t* next);

}  // namespace cache
