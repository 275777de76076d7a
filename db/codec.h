// perfcached — little-endian integers, LEB128 varints and a bounded reader: the file formats' bytes.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Shared by the snapshot (db/snapshot.h) and WAL (db/wal.h) formats. Every
// read is bounded by the view it reads: a damaged length answers false,
// never a read past the end.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace db::codec {

inline void PutU32(std::string* o, uint32_t v) { o->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutU64(std::string* o, uint64_t v) { o->append(reinterpret_cast<const char*>(&v), 8); }
inline void PutVarint(std::string* o, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    o->push_back(static_cast<char>(b | (v ? 0x80 : 0)));
  } while (v);
}
inline uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A bounded reader over one block's or record's bytes.
struct Cursor {
  std::string_view s;
  size_t pos = 0;
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= s.size()) return false;
      uint8_t b = static_cast<uint8_t>(s[pos++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool Bytes(uint64_t n, std::string_view* out) {
    if (n > s.size() - pos) return false;
    *out = s.substr(pos, n);
    pos += n;
    return true;
  }
  // [varint length][bytes]
  bool LenBytes(std::string_view* out) {
    uint64_t n;
    return Varint(&n) && Bytes(n, out);
  }
  bool U8(uint8_t* v) {
    if (pos >= s.size()) return false;
    *v = static_cast<uint8_t>(s[pos++]);
    return true;
  }
  bool U64(uint64_t* v) {
    if (s.size() - pos < 8) return false;
    *v = GetU64(s.data() + pos);
    pos += 8;
    return true;
  }
};

}  // namespace db::codec
