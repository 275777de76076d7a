// perfcached — the record: header + key + value in one slab cell.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Record layout (little-endian, at the start of its cell):
//
//   0      1      2        4          8                  16         20
//   +------+------+--------+----------+------------------+----------+-----+-------+
//   | cls  | type | klen   | vlen     | expire_ms        | version  | key | value |
//   | u8   | u8   | u16    | u32      | u64 (atomic)     | u32      |     |       |
//   +------+------+--------+----------+------------------+----------+-----+-------+
//
// cls      the cell's class byte: written when the chunk is carved, never here
// type     kTypeString, kTypeInt (value = 8-byte int64 at an 8-aligned
//          offset), and room for the aggregate encodings
// expire   absolute unix time in ms, 0 = never. The versionless TTL bump and
//          EXPIRE store it with one relaxed atomic store under the bucket lock
// version  per-key write counter (1 on create, +1 per write); "newer wins"
//          for loaders and replication compares it as serial numbers
//          (RFC 1982), so wrap-around after 2^32 writes of one key is benign
//
// There is no stored hash: the bucket's tag byte does the fast reject, and
// the only reader of a full hash (a split) recomputes it from the key. That
// keeps the header at 20 bytes (see docs/engine.md: bytes per key).
//
// A record is immutable once published, except expire (above), version
// alongside it, and the int64 of a kTypeInt record (INCR, under the bucket
// lock, inside a seqlock bracket). Replacing a value builds a new record.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mem/atomic_copy.h"

namespace cache {

enum RecordType : uint8_t {
  kTypeString = 0,
  kTypeInt = 1,
  kTypeHash = 2,
  kTypeList = 3,
  kTypeSet = 4,
  kTypeZset = 5,
  kTypeJson = 6,
  kTypeMax = 6,
};

inline constexpr size_t kRecHdr = 20;
inline constexpr size_t kOffType = 1;
inline constexpr size_t kOffKlen = 2;
inline constexpr size_t kOffVlen = 4;
inline constexpr size_t kOffExpire = 8;
inline constexpr size_t kOffVersion = 16;
inline constexpr size_t kMaxKey = 65535;

inline constexpr size_t ValueOffset(uint8_t type, size_t klen) {
  size_t o = kRecHdr + klen;
  return type == kTypeInt ? (o + 7) & ~size_t{7} : o;
}
inline constexpr size_t RecordBytes(uint8_t type, size_t klen, size_t vlen) {
  return ValueOffset(type, klen) + vlen;
}

// Accessors over a record in shared memory. All loads are relaxed atomics:
// a lock-free reader validates them with the seqlock afterwards.
struct RecView {
  char* p;
  uint8_t type() const { return mem::LoadRelaxed8(p + kOffType); }
  uint16_t klen() const { return mem::LoadRelaxed16(p + kOffKlen); }
  uint32_t vlen() const { return mem::LoadRelaxed32(p + kOffVlen); }
  int64_t expire() const { return static_cast<int64_t>(mem::LoadRelaxed64(p + kOffExpire)); }
  uint32_t version() const { return mem::LoadRelaxed32(p + kOffVersion); }
  char* key() const { return p + kRecHdr; }
  char* value(uint8_t t, size_t kl) const { return p + ValueOffset(t, kl); }
  void set_expire(int64_t ms) const {
    mem::StoreRelaxed64(p + kOffExpire, static_cast<uint64_t>(ms));
  }
  void set_version(uint32_t v) const { mem::StoreRelaxed32(p + kOffVersion, v); }
};

// Serial-number comparison: is a newer than b?
inline bool VersionNewer(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) > 0;
}

}  // namespace cache
