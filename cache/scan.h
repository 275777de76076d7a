// perfcached — iteration over a collection (cache/scan.cc): SCAN steps.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

// Eviction sampling (cache/evict.cc): the key and header of the live
// records of whole buckets from bucket `start` on (wrapping at the
// table's size) and of the overflow chains that route to them, until at
// least `want` are found or `max_buckets` buckets are visited (*visited:
// how many). Each bucket is read seqlock-consistently; no key is re-hashed
// and nothing but the header and key is copied. No SCAN guarantee: a key
// moved by a concurrent split may be missed or come twice; the evictor
// checks every victim again under the bucket lock (EvictKey by version).
// ttl_only: records with an expiry only.
struct SampledRecord {
  std::string key;
  ReadInfo info;
};
[[nodiscard]] Status SampleStep(Ctx& c, const TableRef& t, uint64_t start, uint32_t want, uint32_t max_buckets,
                                bool ttl_only, std::vector<SampledRecord>* out, uint64_t* visited);

// Eviction sampling without bias (cache/evict.cc): `want` live keys,
// each drawn uniformly over the table's live keys (rejection sampling): a
// draw is a position of the table — one of the kLive positions of a
// bucket, or one of `cap` positions of an overflow chain (cap: 4 + twice
// the mean chain rounded up, or the longest chain this process has seen
// in the table lately; none without overflow) — and an empty position is
// drawn again, at most `max_draws` draws in all (*draws: how many). A
// draw reads one bucket or one chain (an empty chain: its head) and
// copies the drawn record's key and header. A chain longer than cap is
// drawn over its whole length (its keys cap / length as often until cap
// learns its length). Whole-bucket samples (SampleStep) are not uniform:
// a key of a crowded bucket is picked with probability 1 / its crowd, so
// crowded buckets and overflow chains were evicted less and grew (a
// fifth of the keys in overflow after 3,000,000 requests of
// bench/eviction under allkeys-random, which lost 2 points of hit rate).
// rnd: the random source (DictRandom in the daemon).
[[nodiscard]] Status SampleUniform(Ctx& c, const TableRef& t, uint32_t want, uint32_t max_draws, bool ttl_only,
                                   uint64_t (*rnd)(), std::vector<SampledRecord>* out, uint32_t* draws);
// Draws for `want` keys at the table's current size: 16 a key, times
// (all positions / bucket positions) — a small table with overflow spends
// most draws on empty chains — at most max(1,024, 16 x want) in all, 256
// for keys with a TTL only (few of them among many: the walk is cheaper).
uint32_t SampleDraws(const TableRef& t, uint32_t want, bool ttl_only);

}  // namespace cache
