// perfcached — encoding thresholds of aggregate values (Redis's
// hash-max-listpack-entries ...), shared by every process.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>

#include "cache/catalog.h"

namespace cache {

// Encoding thresholds of aggregates (Redis's config names), shared by every
// process: the catalog's copy (Catalog::dict_limits, in field order) starts
// at the defaults (InitDictLimits, pre-fork); CONFIG SET changes it for all.
struct DictLimits {
  uint32_t hash_pack_entries = 512;  // hash-max-listpack-entries (Redis 7.0's default)
  uint32_t hash_pack_value = 64;     // hash-max-listpack-value
  uint32_t set_intset_entries = 512; // set-max-intset-entries
  uint32_t set_pack_entries = 128;   // set-max-listpack-entries
  uint32_t set_pack_value = 64;      // set-max-listpack-value
  int32_t list_pack_size = -2;       // list-max-listpack-size (kept for lists)
  uint32_t zset_pack_entries = 128;  // zset-max-listpack-entries (kept for zsets)
  uint32_t zset_pack_value = 64;     // zset-max-listpack-value (kept for zsets)
};
void InitDictLimits(Catalog* cat);
DictLimits GetDictLimits(const Ctx& c);
void SetDictLimits(Ctx& c, const DictLimits& l);

}  // namespace cache
