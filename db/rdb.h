// perfcached — DUMP / RESTORE payloads in Redis's serialization format.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A DUMP payload is one value in the RDB object format, followed by the
// RDB version that wrote it and a CRC-64 of everything before:
//
//   +------+--------------------------+-------------+------------------+
//   | type | object (by type, below)  | version u16 | CRC-64/Jones u64 |
//   | u8   |                          | little-end. | little-endian    |
//   +------+--------------------------+-------------+------------------+
//
// It carries neither the key nor the expiry (RESTORE names both). We
// write the plain encodings, which every Redis since 2.6 reads:
//
//   string   type 0: an RDB string; canonical decimal text that fits 32
//            bits (a counter, or a string such as "10") integer-encoded
//            (0xC0/0xC1/0xC2 + int8/16/32), as Redis writes it; a RESTORE
//            here makes those counters (Redis's "int" encoding)
//   set      type 2: length, then each member as an RDB string
//   hash     type 4: length, then field, value, field, value ...
//
// and stamp version 10 (Redis 7.0's, the oldest that has every encoding
// we read), so Debian 12's redis-server takes our payloads. We read those
// plus what Redis 6 and 7 write for the same types: LZF-compressed and
// integer-encoded strings, intsets (11), ziplist hashes (13), listpack
// hashes (16) and listpack sets (20), versions up to 12 (Redis 7.4).
// Lists, sorted sets and streams are refused until the engine serves them.
//
// Every read is bounded by the payload: a damaged length, count or LZF
// stream answers false with a reason, never a read past the end or an
// allocation the payload's size does not justify.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/export.h"

namespace db {

// Redis's CRC-64 (Jones polynomial 0xad93d23594c935a9, reflected, no
// final xor). Crc64Jones("123456789") == 0xe9c6d914c4b8d9ca.
uint64_t Crc64Jones(const void* data, size_t n, uint64_t crc = 0);

// The RDB version our payloads carry, and the newest we read.
inline constexpr uint16_t kRdbDumpVersion = 10;
inline constexpr uint16_t kRdbMaxVersion = 12;

// The payload of e's type and value (e.key, expiry and version unused).
// false for a type with no RDB form (*err says which).
bool RdbDump(const cache::Entry& e, std::string* out, std::string* err);

// The two ways a payload is refused, in Redis's words (RESTORE replies
// "ERR " + these).
inline constexpr const char* kRdbBadChecksum = "DUMP payload version or checksum are wrong";
inline constexpr const char* kRdbBadFormat = "Bad data format";

// Reads a payload into e->type and e->value (the logical encoding of
// cache/export.h). false with *err = kRdbBadChecksum when the version is
// newer than we read or the CRC does not match, or kRdbBadFormat when
// the object does not parse; *why then says where, for the log.
bool RdbRestore(std::string_view payload, cache::Entry* e, std::string* err, std::string* why);

}  // namespace db
