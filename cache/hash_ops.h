// perfcached — hash Ops: the meaning of HSET ... HRANDFIELD, without a socket.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Every Op runs the optimistic Dict transaction of cache/dict.h (read, stage,
// publish by a version-checked swap; again when another writer got in
// first), so it is atomic against every other Op on the key: a reader sees
// the hash before or after a write, never half of it.
// Status: kOk; kNotFound (key absent, or field absent where it says);
// kWrongType (the key holds another type); kNotInteger / kNotFloat (the
// stored value is not a number); kOverflow; kNaN; kNoMem; kTooBig; kStale;
// kBusy (lost the race kDictRetries times: a storm of writers on one key).
//
// Cost (n = fields of the hash; docs/types.md): listpack encoding (n <=
// hash-max-listpack-entries) O(n) per write and per lookup, one record copy;
// hashtable encoding O(log32 n) per field read or written (about 4 cells at
// a million fields), O(n) for HGETALL / HKEYS / HVALS / RENAME / COPY.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/catalog.h"

namespace cache {

using FieldValues = std::vector<std::pair<std::string, std::string>>;

// HSET / HMSET: fv = field, value, field, value ...; *added = new fields.
[[nodiscard]] Status HSet(Ctx& c, const TableRef& t, std::string_view key,
                          std::span<const std::string_view> fv, uint64_t* added);
[[nodiscard]] Status HSetNx(Ctx& c, const TableRef& t, std::string_view key,
                            std::string_view field, std::string_view value, bool* set);
// kNotFound when the key or the field is absent.
[[nodiscard]] Status HGet(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
                          std::string* value);
// One optional per field (nullopt = absent); an absent key gives all nullopt.
[[nodiscard]] Status HMGet(Ctx& c, const TableRef& t, std::string_view key,
                           std::span<const std::string_view> fields,
                           std::vector<std::optional<std::string>>* out);
enum class HPart : uint8_t { kBoth, kFields, kValues };
// HGETALL / HKEYS / HVALS: pairs (kFields: .second empty; kValues: .first empty).
[[nodiscard]] Status HGetAll(Ctx& c, const TableRef& t, std::string_view key, HPart part,
                             FieldValues* out);
[[nodiscard]] Status HDel(Ctx& c, const TableRef& t, std::string_view key,
                          std::span<const std::string_view> fields, uint64_t* removed);
[[nodiscard]] Status HLen(Ctx& c, const TableRef& t, std::string_view key, uint64_t* n);
[[nodiscard]] Status HExists(Ctx& c, const TableRef& t, std::string_view key,
                             std::string_view field, bool* exists);
[[nodiscard]] Status HStrLen(Ctx& c, const TableRef& t, std::string_view key,
                             std::string_view field, uint64_t* len);
[[nodiscard]] Status HIncrBy(Ctx& c, const TableRef& t, std::string_view key,
                             std::string_view field, int64_t delta, int64_t* result);
[[nodiscard]] Status HIncrByFloat(Ctx& c, const TableRef& t, std::string_view key,
                                  std::string_view field, long double delta, std::string* result);
// HSCAN: fields (and values) from `cursor`, about `count` of them, those
// matching `glob` (empty = all). *next = 0 when done.
[[nodiscard]] Status HScan(Ctx& c, const TableRef& t, std::string_view key, uint64_t cursor,
                           uint64_t count, std::string_view glob, FieldValues* out,
                           uint64_t* next);
// HRANDFIELD: count > 0 distinct fields (at most the hash), count < 0
// |count| fields with repeats (at most kMaxRandomRepeats, else kOutOfRange).
// kNotFound for an absent key.
[[nodiscard]] Status HRandField(Ctx& c, const TableRef& t, std::string_view key, int64_t count,
                                FieldValues* out);

// OBJECT ENCODING of an aggregate key ("listpack", "hashtable", "intset").
[[nodiscard]] Status AggregateEncoding(Ctx& c, const TableRef& t, std::string_view key,
                                       std::string* name);

}  // namespace cache
