// perfcached — DUMP / RESTORE payloads in Redis's serialization format (see rdb.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/rdb.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "cache/number.h"

namespace db {

namespace {

// ---- CRC-64/Jones, one table, reflected ------------------------------------
constexpr uint64_t kPolyReflected = 0x95ac9329ac4bc9b5ULL;  // 0xad93d23594c935a9 bit-reversed

constexpr std::array<uint64_t, 256> MakeCrc64Table() {
  std::array<uint64_t, 256> t{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint64_t, 256> kCrc64Table = MakeCrc64Table();

// ---- object types and string encodings --------------------------------------
enum : uint8_t {
  kRdbString = 0,
  kRdbList = 1,
  kRdbSet = 2,
  kRdbZset = 3,
  kRdbHash = 4,
  kRdbSetIntset = 11,
  kRdbHashZiplist = 13,
  kRdbHashListpack = 16,
  kRdbSetListpack = 20,
};
enum : uint8_t { kEncInt8 = 0, kEncInt16 = 1, kEncInt32 = 2, kEncLzf = 3 };

// Largest string, set or hash a payload may make: Redis's default
// proto-max-bulk-len, which no single value here can exceed anyway.
constexpr uint64_t kMaxLen = 512ull << 20;

void PutLen(std::string* o, uint64_t n) {
  if (n < 64) {
    o->push_back(static_cast<char>(n));
  } else if (n < 16384) {
    o->push_back(static_cast<char>(0x40 | (n >> 8)));
    o->push_back(static_cast<char>(n & 0xff));
  } else if (n <= UINT32_MAX) {
    o->push_back(static_cast<char>(0x80));
    for (int s = 24; s >= 0; s -= 8) o->push_back(static_cast<char>((n >> s) & 0xff));
  } else {
    o->push_back(static_cast<char>(0x81));
    for (int s = 56; s >= 0; s -= 8) o->push_back(static_cast<char>((n >> s) & 0xff));
  }
}

void PutString(std::string* o, std::string_view s) {
  PutLen(o, s.size());
  o->append(s);
}

// A number as the integer encodings Redis uses for short numbers: only
// canonical decimal text ("10", not "010", "+1" or "-0"), which Redis
// also writes this way for a string, so a DUMP here is Redis's bytes.
void PutNumber(std::string* o, std::string_view text) {
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  bool whole = text.size() <= 11 && ec == std::errc() && end == text.data() + text.size() &&
               std::to_string(v) == text;
  if (whole && v >= INT8_MIN && v <= INT8_MAX) {
    o->push_back(static_cast<char>(0xC0 | kEncInt8));
    o->push_back(static_cast<char>(static_cast<int8_t>(v)));
  } else if (whole && v >= INT16_MIN && v <= INT16_MAX) {
    o->push_back(static_cast<char>(0xC0 | kEncInt16));
    uint16_t u = static_cast<uint16_t>(static_cast<int16_t>(v));
    o->push_back(static_cast<char>(u & 0xff));
    o->push_back(static_cast<char>(u >> 8));
  } else if (whole && v >= INT32_MIN && v <= INT32_MAX) {
    o->push_back(static_cast<char>(0xC0 | kEncInt32));
    uint32_t u = static_cast<uint32_t>(static_cast<int32_t>(v));
    for (int s = 0; s < 32; s += 8) o->push_back(static_cast<char>((u >> s) & 0xff));
  } else {
    PutString(o, text);  // not a number, or a wider one: its text
  }
}

// ---- the bounded reader -----------------------------------------------------
struct Reader {
  std::string_view s;
  size_t pos = 0;
  std::string* why;

  bool Fail(const std::string& w) {
    if (why->empty()) *why = w + " at byte " + std::to_string(pos);
    return false;
  }
  size_t Left() const { return s.size() - pos; }
  bool Byte(uint8_t* b) {
    if (Left() < 1) return Fail("truncated");
    *b = static_cast<uint8_t>(s[pos++]);
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (Left() < n) return Fail("a length past the end");
    *out = s.substr(pos, n);
    pos += n;
    return true;
  }
  uint64_t BigEndian(std::string_view b) {
    uint64_t v = 0;
    for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
    return v;
  }
  int64_t LittleSigned(std::string_view b) {
    uint64_t v = 0;
    for (size_t i = b.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[i]);
    unsigned bits = static_cast<unsigned>(b.size() * 8);
    if (bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t{0} << bits;  // sign-extend
    return static_cast<int64_t>(v);
  }

  // An RDB length; *special = true (and *n the encoding) for 11xxxxxx.
  bool Len(uint64_t* n, bool* special) {
    uint8_t b = 0;
    if (!Byte(&b)) return false;
    *special = false;
    std::string_view more;
    switch (b >> 6) {
      case 0:
        *n = b & 0x3f;
        return true;
      case 1:
        if (!Bytes(1, &more)) return false;
        *n = (uint64_t{b & 0x3fu} << 8) | static_cast<uint8_t>(more[0]);
        return true;
      case 2:
        if (b == 0x80 && Bytes(4, &more)) {
          *n = BigEndian(more);
          return true;
        }
        if (b == 0x81 && Bytes(8, &more)) {
          *n = BigEndian(more);
          return true;
        }
        return Fail("an unknown length byte");
      default:
        *special = true;
        *n = b & 0x3f;
        return true;
    }
  }
  // A count of items each at least `min_bytes` long: bounded by the bytes left.
  bool Count(uint64_t* n, size_t min_bytes) {
    bool special;
    if (!Len(n, &special)) return false;
    if (special) return Fail("an encoded length where a count belongs");
    if (*n == 0) return Fail("an empty aggregate");
    if (*n > Left() / min_bytes) return Fail("a count larger than the payload");
    return true;
  }

  // An RDB string into *out; *was_int when it was integer-encoded.
  bool String(std::string* out, bool* was_int = nullptr) {
    uint64_t n;
    bool special;
    if (!Len(&n, &special)) return false;
    if (was_int) *was_int = false;
    std::string_view b;
    if (!special) {
      if (n > kMaxLen) return Fail("a string over 512 MiB");
      if (!Bytes(static_cast<size_t>(n), &b)) return false;
      out->assign(b);
      return true;
    }
    if (n <= kEncInt32) {
      if (!Bytes(size_t{1} << n, &b)) return false;
      *out = std::to_string(LittleSigned(b));
      if (was_int) *was_int = true;
      return true;
    }
    if (n != kEncLzf) return Fail("an unknown string encoding");
    uint64_t clen, ulen;
    if (!Len(&clen, &special) || special) return Fail("a bad LZF length");
    if (!Len(&ulen, &special) || special) return Fail("a bad LZF length");
    if (clen > Left()) return Fail("an LZF length past the end");
    (void)Bytes(static_cast<size_t>(clen), &b);
    // A back-reference of at most 264 bytes costs 2 or 3: no honest
    // stream expands more than ~132 times.
    if (ulen > kMaxLen || ulen > clen * 132 + 64) return Fail("an LZF length the data cannot fill");
    return Lzf(b, static_cast<size_t>(ulen), out);
  }

  // LZF (liblzf's format): a control byte below 32 starts a literal run
  // of ctrl+1 bytes; otherwise a back-reference of (ctrl >> 5) + 2 bytes
  // (7 means one more length byte follows) at distance
  // ((ctrl & 31) << 8) + next byte + 1 into what was decoded so far.
  bool Lzf(std::string_view in, size_t ulen, std::string* out) {
    out->clear();
    out->reserve(std::min(ulen, in.size() * 4));  // grows as the data proves it
    size_t i = 0;
    while (i < in.size()) {
      unsigned ctrl = static_cast<uint8_t>(in[i++]);
      if (ctrl < 32) {
        size_t run = ctrl + 1;
        if (run > in.size() - i || out->size() + run > ulen) return Fail("an LZF literal past the end");
        out->append(in.substr(i, run));
        i += run;
        continue;
      }
      size_t len = ctrl >> 5;
      if (len == 7) {
        if (i >= in.size()) return Fail("a truncated LZF reference");
        len += static_cast<uint8_t>(in[i++]);
      }
      len += 2;
      if (i >= in.size()) return Fail("a truncated LZF reference");
      size_t back = ((ctrl & 31u) << 8) + static_cast<uint8_t>(in[i++]) + 1;
      if (back > out->size() || out->size() + len > ulen) return Fail("an LZF reference out of range");
      size_t from = out->size() - back;
      for (size_t k = 0; k < len; ++k) out->push_back((*out)[from + k]);  // may overlap
    }
    if (out->size() != ulen) return Fail("an LZF stream shorter than its length");
    return true;
  }
};

// ---- the compact encodings (each an RDB string holding a blob) -------------
void AddItem(std::string* value, std::string_view item) { cache::AppendItem(value, item); }

bool ReadIntset(std::string_view blob, std::string* value, uint64_t* items, std::string* why) {
  Reader r{blob, 0, why};
  std::string_view h;
  if (!r.Bytes(8, &h)) return false;
  uint32_t width = static_cast<uint32_t>(r.LittleSigned(h.substr(0, 4)));
  uint32_t n = static_cast<uint32_t>(r.LittleSigned(h.substr(4, 4)));
  if (width != 2 && width != 4 && width != 8) return r.Fail("an intset of width " + std::to_string(width));
  if (n == 0 || r.Left() != uint64_t{n} * width) return r.Fail("an intset whose size is not its count");
  for (uint32_t k = 0; k < n; ++k) {
    std::string_view b;
    (void)r.Bytes(width, &b);
    AddItem(value, std::to_string(r.LittleSigned(b)));
  }
  *items = n;
  return true;
}

// A listpack: total bytes u32, count u16 (65535: count them), entries, 0xFF.
// An entry is its encoding and data, then a back-length (1-5 bytes) we skip.
bool ReadListpack(std::string_view blob, std::string* value, uint64_t* items, std::string* why) {
  Reader r{blob, 0, why};
  std::string_view h;
  if (!r.Bytes(6, &h)) return false;
  if (static_cast<uint64_t>(static_cast<uint32_t>(r.LittleSigned(h.substr(0, 4)))) != blob.size())
    return r.Fail("a listpack whose size is not its blob's");
  uint64_t n = 0;
  for (;;) {
    uint8_t b = 0;
    if (!r.Byte(&b)) return false;
    if (b == 0xFF) break;
    size_t start = r.pos - 1;
    std::string_view d;
    std::string item;
    if ((b & 0x80) == 0) {
      item = std::to_string(b & 0x7f);
    } else if ((b & 0xC0) == 0x80) {
      if (!r.Bytes(b & 0x3f, &d)) return false;
      item.assign(d);
    } else if ((b & 0xE0) == 0xC0) {
      if (!r.Bytes(1, &d)) return false;
      int v = ((b & 0x1f) << 8) | static_cast<uint8_t>(d[0]);
      item = std::to_string(v >= 4096 ? v - 8192 : v);  // 13-bit two's complement
    } else if ((b & 0xF0) == 0xE0) {
      std::string_view l;
      if (!r.Bytes(1, &l)) return false;
      if (!r.Bytes(((b & 0x0fu) << 8) | static_cast<uint8_t>(l[0]), &d)) return false;
      item.assign(d);
    } else if (b == 0xF0) {
      std::string_view l;
      if (!r.Bytes(4, &l)) return false;
      uint64_t len = static_cast<uint32_t>(r.LittleSigned(l));
      if (!r.Bytes(static_cast<size_t>(len), &d)) return false;
      item.assign(d);
    } else if (b >= 0xF1 && b <= 0xF4) {
      static constexpr size_t kWidth[] = {2, 3, 4, 8};
      if (!r.Bytes(kWidth[b - 0xF1], &d)) return false;
      item = std::to_string(r.LittleSigned(d));
    } else {
      return r.Fail("an unknown listpack encoding");
    }
    size_t len = r.pos - start;
    // Redis's lpEncodeBacklen: 7 bits a byte, but the limits are one
    // below the powers (16383 takes 3 bytes, not 2).
    size_t backlen = len <= 127 ? 1 : len < 16383 ? 2 : len < 2097151 ? 3 : len < 268435455 ? 4 : 5;
    if (!r.Bytes(backlen, &d)) return false;
    AddItem(value, item);
    ++n;
  }
  if (r.Left() != 0) return r.Fail("bytes after the listpack's end");
  if (n == 0) return r.Fail("an empty listpack");
  *items = n;
  return true;
}

// A ziplist (Redis <= 6.2): zlbytes u32, zltail u32, zllen u16, entries,
// 0xFF. An entry: prevlen (1 byte, or 0xFE + 4), an encoding, its data.
bool ReadZiplist(std::string_view blob, std::string* value, uint64_t* items, std::string* why) {
  Reader r{blob, 0, why};
  std::string_view h;
  if (!r.Bytes(10, &h)) return false;
  if (static_cast<uint64_t>(static_cast<uint32_t>(r.LittleSigned(h.substr(0, 4)))) != blob.size())
    return r.Fail("a ziplist whose size is not its blob's");
  uint64_t n = 0;
  for (;;) {
    uint8_t b = 0;
    if (!r.Byte(&b)) return false;
    if (b == 0xFF) break;
    std::string_view d;
    if (b == 0xFE && !r.Bytes(4, &d)) return false;
    if (!r.Byte(&b)) return false;
    std::string item;
    switch (b >> 6) {
      case 0:
        if (!r.Bytes(b & 0x3f, &d)) return false;
        item.assign(d);
        break;
      case 1: {
        std::string_view l;
        if (!r.Bytes(1, &l)) return false;
        if (!r.Bytes(((b & 0x3fu) << 8) | static_cast<uint8_t>(l[0]), &d)) return false;
        item.assign(d);
        break;
      }
      case 2: {
        std::string_view l;
        if (b != 0x80 || !r.Bytes(4, &l)) return r.Fail("a bad ziplist string length");
        if (!r.Bytes(static_cast<size_t>(r.BigEndian(l)), &d)) return false;
        item.assign(d);
        break;
      }
      default: {
        size_t w = b == 0xC0 ? 2 : b == 0xD0 ? 4 : b == 0xE0 ? 8 : b == 0xF0 ? 3 : b == 0xFE ? 1 : 0;
        if (w != 0) {
          if (!r.Bytes(w, &d)) return false;
          item = std::to_string(r.LittleSigned(d));
        } else if (b >= 0xF1 && b <= 0xFD) {
          item = std::to_string((b & 0x0f) - 1);
        } else {
          return r.Fail("an unknown ziplist encoding");
        }
      }
    }
    AddItem(value, item);
    ++n;
  }
  if (r.Left() != 0) return r.Fail("bytes after the ziplist's end");
  if (n == 0) return r.Fail("an empty ziplist");
  *items = n;
  return true;
}

}  // namespace

uint64_t Crc64Jones(const void* data, size_t n, uint64_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) crc = kCrc64Table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

bool RdbDump(const cache::Entry& e, std::string* out, std::string* err) {
  out->clear();
  std::string why;
  switch (e.type) {
    case cache::kTypeString:
    case cache::kTypeInt:
      out->push_back(static_cast<char>(kRdbString));
      PutNumber(out, e.value);
      break;
    case cache::kTypeSet:
    case cache::kTypeHash: {
      bool pairs = e.type == cache::kTypeHash;
      std::string body;
      uint64_t n = 0;
      if (!cache::DecodeItems(e.value, pairs, [&](std::string_view a, std::string_view b) {
            PutString(&body, a);
            if (pairs) PutString(&body, b);
            ++n;
          }, &why)) {
        *err = "the value does not decode: " + why;
        return false;
      }
      out->push_back(static_cast<char>(pairs ? kRdbHash : kRdbSet));
      PutLen(out, n);
      out->append(body);
      break;
    }
    default:
      *err = "type " + std::to_string(e.type) + " has no DUMP form";
      return false;
  }
  out->push_back(static_cast<char>(kRdbDumpVersion & 0xff));
  out->push_back(static_cast<char>(kRdbDumpVersion >> 8));
  uint64_t crc = Crc64Jones(out->data(), out->size());
  for (int s = 0; s < 64; s += 8) out->push_back(static_cast<char>((crc >> s) & 0xff));
  return true;
}

bool RdbRestore(std::string_view payload, cache::Entry* e, std::string* err, std::string* why) {
  why->clear();
  if (payload.size() < 11) {
    *err = kRdbBadChecksum;
    *why = "shorter than a payload's trailer";
    return false;
  }
  size_t body = payload.size() - 10;
  uint16_t version = static_cast<uint16_t>(static_cast<uint8_t>(payload[body]) |
                                           (static_cast<uint8_t>(payload[body + 1]) << 8));
  uint64_t crc = 0;
  for (int k = 7; k >= 0; --k) crc = (crc << 8) | static_cast<uint8_t>(payload[body + 2 + k]);
  if (version > kRdbMaxVersion || Crc64Jones(payload.data(), body + 2) != crc) {
    *err = kRdbBadChecksum;
    *why = version > kRdbMaxVersion ? "RDB version " + std::to_string(version) + " is newer than we read"
                                    : "the CRC-64 does not match";
    return false;
  }
  Reader r{payload.substr(0, body), 0, why};
  uint8_t type = 0;
  bool ok = r.Byte(&type);
  e->value.clear();
  uint64_t n = 0;
  std::string blob;
  if (ok) switch (type) {
    case kRdbString: {
      bool was_int = false;
      ok = r.String(&e->value, &was_int);
      // RDB encodes integers up to 32 bits: a wider counter arrives as its
      // digits. Redis keeps any canonical integer string as an integer
      // (tryObjectEncoding), and so do we: a counter comes back a counter.
      int64_t v;
      if (ok && !was_int && e->value.size() <= 20 && cache::ParseInt64(e->value, &v)) was_int = true;
      e->type = was_int ? cache::kTypeInt : cache::kTypeString;
      break;
    }
    case kRdbSet:
      e->type = cache::kTypeSet;
      ok = r.Count(&n, 1);
      for (uint64_t k = 0; ok && k < n; ++k) {
        ok = r.String(&blob);
        if (ok) AddItem(&e->value, blob);
      }
      break;
    case kRdbHash:
      e->type = cache::kTypeHash;
      ok = r.Count(&n, 2);
      for (uint64_t k = 0; ok && k < 2 * n; ++k) {
        ok = r.String(&blob);
        if (ok) AddItem(&e->value, blob);
      }
      break;
    case kRdbSetIntset:
    case kRdbSetListpack:
    case kRdbHashListpack:
    case kRdbHashZiplist: {
      bool hash = type == kRdbHashListpack || type == kRdbHashZiplist;
      e->type = hash ? cache::kTypeHash : cache::kTypeSet;
      ok = r.String(&blob);
      if (ok) {
        ok = type == kRdbSetIntset     ? ReadIntset(blob, &e->value, &n, why)
             : type == kRdbHashZiplist ? ReadZiplist(blob, &e->value, &n, why)
                                       : ReadListpack(blob, &e->value, &n, why);
      }
      if (ok && hash && n % 2 != 0) ok = r.Fail("a hash with an odd number of items");
      break;
    }
    default:
      // 1, 3, 5-7, 9, 10, 12, 14, 15, 17-19, 21: lists, sorted sets,
      // modules and streams in their encodings.
      ok = r.Fail("object type " + std::to_string(type) +
                  (type <= 21 ? " (a list, sorted set, stream or module value: not served yet)" : " is unknown"));
  }
  if (ok && r.Left() != 0) ok = r.Fail("bytes after the object");
  if (!ok) {
    *err = kRdbBadFormat;
    return false;
  }
  return true;
}

}  // namespace db
