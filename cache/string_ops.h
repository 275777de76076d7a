// perfcached — the string commands as Ops: connection-free, unit-testable.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// An Op is one command's meaning: it takes the caller's Ctx, the TableRef
// and parsed arguments, and returns a Status plus the result. It knows no
// socket and no protocol; a door (modules/resp, modules/mi) parses, calls
// one Op and maps the Status to its reply. Statuses an Op may return beyond
// the engine's own (kStale, kNoMem, kTooBig, ...):
//   kWrongType    the key holds another type
//   kNotInteger   the value / argument is not an integer
//   kOverflow     the increment would overflow int64
//   kNotFloat     the value / argument is not a valid float
//   kNanOrInf     INCRBYFLOAT would produce NaN or Infinity
//   kDecrOverflow DECRBY INT64_MIN
//   kOutOfRange   SETRANGE with a negative offset
//   kBusy         a read-modify-write lost its version check too often
//
// Read-modify-write Ops (APPEND, SETRANGE, INCRBYFLOAT, GETDEL) read the
// value and its version, compute, and store (or delete) only if the version
// is unchanged (StoreOpts::check_version, DelIfVersion); a concurrent writer
// makes them read again, so no write is ever lost.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "cache/ops.h"

namespace cache {

bool IsStringType(uint8_t type);

// GET: kOk (value in *out; a counter as decimal text), kNotFound, kWrongType.
[[nodiscard]] Status StrGet(Ctx& c, const TableRef& t, std::string_view key, std::string* out,
                            ReadInfo* info = nullptr);

// SET with its options. With `get`, the old string value is returned (and a
// non-string old value fails with kWrongType before anything is stored).
struct StrSetArgs {
  Cond cond = Cond::kAlways;
  int64_t expire_ms = 0;   // absolute, 0 = none
  bool keep_ttl = false;
  bool get = false;
};
struct StrSetResult {
  bool had_old = false;    // with `get`: an old value existed
  std::string old;         // with `get`: that value
};
// kOk (stored), kExists (NX failed), kNotExists (XX failed), kWrongType
// (get on a non-string), kNoMem, kTooBig, kStale.
[[nodiscard]] Status StrSet(Ctx& c, const TableRef& t, std::string_view key,
                            std::string_view value, const StrSetArgs& a, StrSetResult* r);
// GETSET: StrSet with get; kOk, *had_old and *old.
[[nodiscard]] Status GetSet(Ctx& c, const TableRef& t, std::string_view key,
                            std::string_view value, std::string* old, bool* had_old);
// GETDEL: the value, then delete it if still the same version.
// kOk (*out), kNotFound, kWrongType, kBusy.
[[nodiscard]] Status GetDel(Ctx& c, const TableRef& t, std::string_view key, std::string* out);
// An expiry option of SET / GETEX as the client wrote it: its kind and the
// number's text, not yet read. Redis reads the number at a given point of
// each command (SET: after every option, before the key; GETEX: after the
// key lookup and its type check), and so do the Ops and doors.
enum class ExpireKind : uint8_t { kNone, kPersist, kEx, kPx, kExAt, kPxAt };
struct ExpireArg {
  ExpireKind kind = ExpireKind::kNone;
  std::string_view text;  // EX / PX / EXAT / PXAT: the number
};
// The absolute expiry in ms (0 for kNone and kPersist). kNotInteger when
// the text is not an int64, kInvalidExpire when it is <= 0 or the time
// overflows (Redis: "invalid expire time in '<cmd>' command").
[[nodiscard]] Status ResolveExpire(int64_t now_ms, const ExpireArg& e, int64_t* abs_ms);
// GETEX: the value, then its new expiry (kPersist removes it, kNone keeps
// it). In Redis's order: an absent key is kNotFound and another type
// kWrongType whatever the expiry; only then is the expiry read
// (kNotInteger, kInvalidExpire, nothing changed). An EXAT / PXAT in the
// past deletes the key (the value is still returned).
[[nodiscard]] Status GetEx(Ctx& c, const TableRef& t, std::string_view key, const ExpireArg& e,
                           std::string* out);
// MGET: emit(i, value or nullptr) for each key in order (a non-string or
// absent key is nullptr).
void MGet(Ctx& c, const TableRef& t, std::span<const std::string_view> keys,
          const std::function<void(size_t, const std::string*)>& emit);
// MSET: kv = key, value, key, value ...; stops at the first failure.
[[nodiscard]] Status MSet(Ctx& c, const TableRef& t, std::span<const std::string_view> kv);
// APPEND: *len = the new length; kTooBig above max_value bytes. An absent
// key is created; a counter is appended to as its decimal text.
[[nodiscard]] Status Append(Ctx& c, const TableRef& t, std::string_view key,
                            std::string_view tail, size_t max_value, int64_t* len);
// STRLEN: 0 when absent.
[[nodiscard]] Status StrLen(Ctx& c, const TableRef& t, std::string_view key, int64_t* len);
// GETRANGE / SUBSTR with Redis's index rules ("" when absent or empty).
[[nodiscard]] Status GetRange(Ctx& c, const TableRef& t, std::string_view key, int64_t start,
                              int64_t end, std::string* out);
// SETRANGE: overwrite from `offset`, zero-padding a shorter value; *len =
// the new length. An empty `value` changes nothing (and creates nothing).
// kOutOfRange for offset < 0, kTooBig when offset + size > max_value.
[[nodiscard]] Status SetRange(Ctx& c, const TableRef& t, std::string_view key, int64_t offset,
                              std::string_view value, size_t max_value, int64_t* len);
// INCR / DECR / INCRBY are IncrBy (cache/ops.h); DECRBY checks INT64_MIN.
[[nodiscard]] Status DecrBy(Ctx& c, const TableRef& t, std::string_view key, int64_t delta,
                            int64_t* result);
// INCRBYFLOAT: *out = the new value as Redis formats it. kNotFloat when the
// stored value is not a float, kNanOrInf when the sum is not finite.
[[nodiscard]] Status IncrByFloat(Ctx& c, const TableRef& t, std::string_view key,
                                 long double incr, std::string* out);

}  // namespace cache
