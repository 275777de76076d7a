// perfcached — the engine's key operations (cache/ops.cc): Get, Set, Del, IncrBy, SetExpire, Restamp, MSetNx.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cache/catalog.h"

namespace cache {

// ---- operations (cache/ops.cc) ---------------------------------------------
struct ReadInfo {
  uint8_t type = 0;
  uint32_t vlen = 0;         // value bytes (for kTypeInt: 8)
  int64_t expire_ms = 0;     // 0 = never
  uint64_t version = 0;      // 48 bits, never 0 for a stored record (record.h)
  uint16_t access = 0;       // the access field (cache/access.h), not seqlock-checked
};

// Copy the value of `key` into buf. kOk: info->vlen bytes copied.
// kBufferTooSmall: nothing trustworthy copied, info->vlen is the size needed.
// kNotFound: absent or expired. A kTypeInt value is its 8-byte int64.
[[nodiscard]] Status Get(Ctx& c, const TableRef& t, std::string_view key, std::span<char> buf,
                         ReadInfo* info);
// Get into a std::string, growing it as needed; kTypeInt values are
// formatted as decimal text (what a client reads).
[[nodiscard]] Status GetString(Ctx& c, const TableRef& t, std::string_view key, std::string* out,
                               ReadInfo* info = nullptr);
// Metadata only (TTL, TYPE, EXISTS).
[[nodiscard]] Status Probe(Ctx& c, const TableRef& t, std::string_view key, ReadInfo* info);
// Probe that counts as an access (TOUCH; cache/access.h). Probe does not.
[[nodiscard]] Status TouchKey(Ctx& c, const TableRef& t, std::string_view key);

enum class Cond : uint8_t { kAlways, kNx, kXx };

// HRANDFIELD / SRANDMEMBER with a negative count repeat elements, so the
// reply does not shrink to the aggregate's size. Redis builds whatever it
// is asked for until the client's output limit (or the allocator) stops it;
// perfcached refuses a repeat count above this with kOutOfRange.
inline constexpr uint64_t kMaxRandomRepeats = uint64_t{1} << 24;
struct StoreOpts {
  int64_t expire_ms = 0;       // absolute ms, 0 = never
  Cond cond = Cond::kAlways;
  bool keep_ttl = false;       // keep the old record's expiry
  uint8_t type = kTypeString;
  bool check_version = false;  // store only if the current version == expect_version
  uint64_t expect_version = 0; // (0 = "absent")
  bool if_newer = false;       // loaders: apply only if `version` is newer
  uint64_t version = 0;        // with if_newer: the version to store
  std::string* old_value = nullptr;  // SET .. GET: receives the previous value
  bool* had_old = nullptr;           // set when there was a previous value
  uint64_t* stored_version = nullptr;  // receives the version now stored
  // The old record's value is carried over by the new one (an aggregate
  // write that swapped its root, cache/dict.h): free only the old record's
  // own cell. Otherwise the old value is freed whole (FreeValue).
  bool shallow_old = false;
};
// kOk, kExists (NX), kNotExists (XX), kVersion, kNoMem, kTooBig, kStale.
[[nodiscard]] Status Set(Ctx& c, const TableRef& t, std::string_view key, std::string_view value,
                         const StoreOpts& o = {});
[[nodiscard]] Status Del(Ctx& c, const TableRef& t, std::string_view key);
// Delete only if the record's version is still `version` (kVersion if not):
// the second half of a read-then-delete (RENAME, GETDEL) without a lost write.
[[nodiscard]] Status DelIfVersion(Ctx& c, const TableRef& t, std::string_view key,
                                  uint64_t version);
// DelIfVersion by the eviction policy: counted as evicted, not removed
// (the two statistics never overlap).
[[nodiscard]] Status EvictKey(Ctx& c, const TableRef& t, std::string_view key, uint64_t version);
// MSETNX: set every key (kv = key, value, key, value ...) only if none of
// them exists; a key given twice takes its last value, as in Redis.
// *all_set says which happened. Not atomic against a concurrent writer of
// the same keys: a key that appears meanwhile makes it undo what it set
// (with version-checked deletes) and answer "none set".
[[nodiscard]] Status MSetNx(Ctx& c, const TableRef& t, std::span<const std::string_view> kv,
                            bool* all_set);
// INCRBY semantics of Redis: absent = 0; a string value must parse as int64.
[[nodiscard]] Status IncrBy(Ctx& c, const TableRef& t, std::string_view key, int64_t delta,
                            int64_t* result);
enum class ExpireCond : uint8_t { kAlways, kNx, kXx, kGt, kLt };
// Set the absolute expiry (0 = persist). *changed says whether it applied.
// An expiry in the past deletes the key. kNotFound when absent.
[[nodiscard]] Status SetExpire(Ctx& c, const TableRef& t, std::string_view key, int64_t expire_ms,
                               ExpireCond cond, bool* changed);
// Give a live key a new version above `above` (and above its own), its
// value and expiry unchanged; *version = the new one. A renamed
// collection's keys (MI perf_rename with the WAL): the log names keys by
// collection, and their states under the new name must outrank every
// record logged under that name before. kNotFound when absent.
[[nodiscard]] Status Restamp(Ctx& c, const TableRef& t, std::string_view key, uint64_t above,
                             uint64_t* version);

}  // namespace cache
