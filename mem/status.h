// perfcached — the one status enum of the engine (mem/ and cache/).
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>
#include <string_view>

namespace mem {

// Every engine call returns one of these. Doors map them to protocol errors
// (net/ keeps the client-visible texts); StatusName() is for logs and tests.
enum class Status : uint16_t {
  kOk = 0,
  kNotFound,        // key or collection absent (expired counts as absent)
  kExists,          // NX condition failed
  kNotExists,       // XX condition failed
  kWrongType,       // operation against a record of another type
  kNotInteger,      // value is not an integer / out of range
  kOverflow,        // increment or decrement would overflow int64
  kNoMem,           // arena full: nothing was changed
  kTooBig,          // value/key above the configured maximum
  kBufferTooSmall,  // copy-out buffer too small; the needed size is reported
  kVersion,         // conditional store lost: the record changed meanwhile
  kStale,           // collection dropped or recreated under the caller
  kBusy,            // retry later (e.g. admin operation in progress)
  kInvalid,         // bad argument
  kFull,            // a fixed table (catalog, process slots) is full
  // Command-level outcomes of the Op layer (cache/string_ops.h, key_ops.h):
  kNotFloat,        // value or argument is not a valid float
  kNanOrInf,        // INCRBYFLOAT would produce NaN or Infinity
  kDecrOverflow,    // DECRBY of INT64_MIN (its negation overflows)
  kOutOfRange,      // offset out of range (SETRANGE < 0)
  kInvalidExpire,   // expire time overflows or is not positive
};

constexpr std::string_view StatusName(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kNotFound: return "not found";
    case Status::kExists: return "exists";
    case Status::kNotExists: return "not exists";
    case Status::kWrongType: return "wrong type";
    case Status::kNotInteger: return "not an integer";
    case Status::kOverflow: return "overflow";
    case Status::kNoMem: return "out of memory";
    case Status::kTooBig: return "too big";
    case Status::kBufferTooSmall: return "buffer too small";
    case Status::kVersion: return "version mismatch";
    case Status::kStale: return "stale collection";
    case Status::kBusy: return "busy";
    case Status::kInvalid: return "invalid argument";
    case Status::kFull: return "table full";
    case Status::kNotFloat: return "not a float";
    case Status::kNanOrInf: return "NaN or Infinity";
    case Status::kDecrOverflow: return "decrement would overflow";
    case Status::kOutOfRange: return "offset out of range";
    case Status::kInvalidExpire: return "invalid expire time";
  }
  return "?";
}

}  // namespace mem
