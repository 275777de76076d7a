// perfcached — the record: header + key + value in one slab cell.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Record layout (little-endian, at the start of its cell):
//
//   0      1          2        4          8              14       16         20
//   +------+----------+--------+----------+--------------+--------+----------+-----+-------+
//   | acc  | acc|type | klen   | vlen     | expire_ms    | ver_hi | ver_lo   | key | value |
//   | lo 8 | hi5| 3b  | u16    | u32      | 48 bits      | 16 bits| u32      |     |       |
//   +------+----------+--------+----------+--------------+--------+----------+-----+-------+
//   <- one u16 -->                        <-- one u64 (atomic) -->
//
// access   13 bits: byte 0 and bits 3..7 of byte 1 (cache/access.h: the
//          LRU clock of the last access, or an LFU counter and its minute).
//          Set when the record is built; after that changed only under the
//          bucket lock, and not part of what the seqlock validates (a reader
//          may see either value). The cell's class is not in the cell
//          (mem/slab.h CellClass).
// type     bits 0..2 of byte 1: kTypeString, kTypeInt (value = 8-byte int64
//          at an 8-aligned offset), and the aggregate encodings
// expire   absolute unix time in ms, 0 = never; 48 bits (up to year 10889,
//          larger expiries are clamped to kMaxExpireMs)
// version  48 bits (ver_hi:ver_lo), never 0 for a stored record. Every change
//          of a record (value, TTL-only, counter) gives it a new version that
//          is larger than every version the key had before, also across DEL
//          and re-create: a table keeps a floor (TableHeader::ver_floor) that
//          every removal raises to the removed version *before* unlinking, and
//          a create starts at floor + 1 (a create over the key's expired,
//          not yet swept record: above both). Version checks (GETDEL, RENAME, RMW
//          commands) therefore never mistake a re-created key for the one they
//          read (no ABA). 2^48 changes of one table's keys would wrap: at one
//          million writes a second, in nine years.
//
// There is no stored hash: the bucket's tag byte does the fast reject, and
// the only reader of a full hash (a split) recomputes it from the key. That
// keeps the header at 20 bytes (see docs/engine.md: bytes per key).
//
// A record is immutable once published, except expire and version (above,
// changed together inside the bucket's seqlock bracket), and the int64 of a
// kTypeInt record (INCR, under the bucket lock, inside the bracket).
// Replacing a value builds a new record.

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

static_assert(kTypeMax < 8, "the type has 3 bits of byte 1; the access field has the rest");

inline constexpr size_t kRecHdr = 20;
inline constexpr size_t kOffAccess = 0;  // u16: access lo 8 | (access hi 5 << 11) | (type << 8)
inline constexpr uint16_t kAccessMask = 0x1FFF;
inline constexpr size_t kOffType = 1;
inline constexpr size_t kOffKlen = 2;
inline constexpr size_t kOffVlen = 4;
inline constexpr size_t kOffExpire = 8;
inline constexpr size_t kOffVersion = 16;
inline constexpr size_t kMaxKey = 65535;
inline constexpr uint64_t kMetaMask = (uint64_t{1} << 48) - 1;
inline constexpr int64_t kMaxExpireMs = static_cast<int64_t>(kMetaMask);
inline constexpr uint64_t kMaxVersion = kMetaMask;

// The version after `v` (48 bits, skipping 0).
inline constexpr uint64_t NextVersion(uint64_t v) {
  uint64_t n = (v + 1) & kMaxVersion;
  return n == 0 ? 1 : n;
}
inline constexpr int64_t ClampExpire(int64_t ms) {
  return ms < 0 ? 0 : (ms > kMaxExpireMs ? kMaxExpireMs : ms);
}

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
  uint8_t type() const { return mem::LoadRelaxed8(p + kOffType) & 7; }
  uint16_t access() const {
    uint16_t w = mem::LoadRelaxed16(p + kOffAccess);
    return static_cast<uint16_t>((w & 0xFF) | (w >> 11) << 8);
  }
  // Before the record is published, or under its bucket lock (the type bits
  // are written back as they are: a published record's type never changes).
  void set_access(uint16_t acc) const {
    uint16_t type_bits = mem::LoadRelaxed16(p + kOffAccess) & 0x0700;
    mem::StoreRelaxed16(p + kOffAccess,
                        static_cast<uint16_t>((acc & 0xFF) | type_bits | ((acc >> 8) & 0x1F) << 11));
  }
  uint16_t klen() const { return mem::LoadRelaxed16(p + kOffKlen); }
  uint32_t vlen() const { return mem::LoadRelaxed32(p + kOffVlen); }
  int64_t expire() const {
    return static_cast<int64_t>(mem::LoadRelaxed64(p + kOffExpire) & kMetaMask);
  }
  uint64_t version() const {
    return (mem::LoadRelaxed64(p + kOffExpire) >> 48) << 32 | mem::LoadRelaxed32(p + kOffVersion);
  }
  char* key() const { return p + kRecHdr; }
  char* value(uint8_t t, size_t kl) const { return p + ValueOffset(t, kl); }
  // Expiry and version together (two stores: a published record changes
  // only inside its bucket's seqlock bracket, so readers never mix them).
  void set_meta(int64_t expire_ms, uint64_t version) const {
    mem::StoreRelaxed32(p + kOffVersion, static_cast<uint32_t>(version));
    mem::StoreRelaxed64(p + kOffExpire, (static_cast<uint64_t>(ClampExpire(expire_ms)) & kMetaMask) |
                                            ((version >> 32) & 0xFFFF) << 48);
  }
};

// Is version a newer than b? (48-bit versions do not wrap in practice.)
inline bool VersionNewer(uint64_t a, uint64_t b) { return a > b; }

}  // namespace cache
