// perfcached — WAL records and segments (see wal.h for the format).
// Copyright (c) 2026 the perfcached authors.
#include "db/wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "db/codec.h"
#include "db/crc32c.h"

namespace db {
namespace {

constexpr char kMagic[8] = {'P', 'C', 'W', 'A', 'L', 0, 0, 1};
constexpr uint32_t kFormat = 1;

using codec::Cursor;
using codec::GetU32;
using codec::GetU64;
using codec::PutU32;
using codec::PutU64;
using codec::PutVarint;

bool ReadFile(const std::string& path, std::string* out, std::string* err) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  out->clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = path + ": read: " + std::strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// Part records (kind 7) back into the records they were cut from: one
// record in the making per writer (a writer appends a record's parts one
// after another, and nothing else in between).
class Joiner {
 public:
  explicit Joiner(uint64_t from) : from_(from) {}
  // The record `r` (a part read at `pos`) completes, or nullptr. avail:
  // the bytes of the log after this part (bounds what is reserved).
  const WalRecord* Add(uint64_t pos, const WalRecord& r, const std::string& path, size_t off, uint64_t avail,
                       WalReadReport* rep) {
    WalPart p;
    if (!DecodeWalPart(r, &p)) return nullptr;  // DecodeWalRecord checked it
    auto it = open_.find(p.writer);
    bool same = it != open_.end() && it->second.total == p.total && it->second.version == r.entry.version &&
                it->second.collection == r.collection;
    if (p.offset == 0 && !same) {
      if (it != open_.end()) Unfinished(it->second, rep);
      it = open_.insert_or_assign(p.writer, Open{}).first;
      Open& o = it->second;
      o.total = p.total;
      o.version = r.entry.version;
      o.first_pos = pos;
      o.collection = r.collection;
      o.key = r.entry.key;
      o.bytes.reserve(static_cast<size_t>(std::min<uint64_t>(p.total, p.piece.size() + avail)));
    } else if (it == open_.end()) {
      return nullptr;  // its first parts lie before the segments read (or were lost, reported)
    } else if (!same || p.offset > it->second.bytes.size()) {
      Unfinished(it->second, rep);  // a part missing (lost to damage, reported), or another record's
      open_.erase(it);
      return nullptr;
    }
    Open& o = it->second;
    // A part at an offset already joined was written again: a WAL process
    // killed after writing a batch and before moving the rings' tails, and
    // the next one wrote the batch again. Join from there on again (the
    // whole record's checksum still checks the result).
    o.bytes.resize(static_cast<size_t>(p.offset));
    o.bytes.append(p.piece);
    o.last_pos = pos;
    if (o.bytes.size() < o.total) return nullptr;
    size_t used = 0;
    std::string why;
    WalDecode d = DecodeWalRecord(o.bytes, &whole_, &used, &why);
    bool ok = d == WalDecode::kOk && used == o.bytes.size() && whole_.kind != kWalPart;
    if (!ok) {
      rep->problems.push_back(path + " offset " + std::to_string(off) + ": the record joined from the parts of " +
                              Name(o) + " does not check (" + (why.empty() ? "its length" : why) +
                              "): skipped (one record lost)");
    }
    open_.erase(it);
    return ok ? &whole_ : nullptr;
  }
  // What is still open at the end never got its last part.
  void Finish(WalReadReport* rep) {
    for (auto& [w, o] : open_) Unfinished(o, rep);
    open_.clear();
  }

 private:
  struct Open {
    uint64_t total = 0, version = 0, first_pos = 0, last_pos = 0;
    std::string bytes, collection, key;
  };
  static std::string Name(const Open& o) {
    std::string k;
    for (char ch : o.key.substr(0, 64)) k += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    return "collection " + o.collection + " key " + k + (o.key.size() > 64 ? "..." : "");
  }
  // Reported only when a part of it lies at or after `from`: one wholly
  // before (a write refused part-way before the snapshot) is old news.
  void Unfinished(const Open& o, WalReadReport* rep) const {
    if (o.last_pos < from_) return;
    ++rep->unfinished;
    rep->problems.push_back("a record of " + Name(o) + " in parts from position " + std::to_string(o.first_pos) +
                            " never got its last part (" + std::to_string(o.bytes.size()) + " of " +
                            std::to_string(o.total) +
                            " bytes: the log ends or its writer stopped mid-record; under fsync = always "
                            "its write was not acknowledged): dropped");
  }
  uint64_t from_;
  std::map<uint64_t, Open> open_;
  WalRecord whole_;
};

// A zero-filled segment's records end at an all-zero record head (or at
// fewer than a head's bytes, all zero, before the end of the file).
bool ZeroHead(const std::string& data, size_t off) {
  size_t n = std::min(data.size() - off, kWalRecordHead);
  for (size_t i = 0; i < n; ++i) {
    if (data[off + i] != 0) return false;
  }
  return true;
}

// The offset after the last nonzero byte at or after `from` (`from` when
// every byte there is zero).
size_t NonZeroEnd(const std::string& data, size_t from) {
  size_t end = data.size();
  while (end > from && data[end - 1] == 0) --end;
  return end;
}

}  // namespace

void EncodeWalRecord(WalKind kind, std::string_view collection, std::string_view key, uint8_t type,
                     std::string_view value, int64_t expire_ms, uint64_t version, std::string* out) {
  size_t head = out->size();
  out->append(kWalRecordHead, '\0');
  out->push_back(static_cast<char>(kind));
  PutVarint(out, collection.size());
  out->append(collection);
  PutVarint(out, key.size());
  out->append(key);
  out->push_back(static_cast<char>(type));
  PutU64(out, static_cast<uint64_t>(expire_ms));
  PutU64(out, version);
  PutVarint(out, value.size());
  out->append(value);
  uint32_t len = static_cast<uint32_t>(out->size() - head - kWalRecordHead);
  uint32_t crc = Crc32c(out->data() + head + kWalRecordHead, len);
  std::memcpy(out->data() + head, &len, 4);
  std::memcpy(out->data() + head + 4, &crc, 4);
}

void EncodeWalFields(std::string_view collection, std::string_view key, uint8_t type, int64_t expire_ms,
                     uint64_t version, const WalFieldChanges& changes, std::string* out) {
  std::string v;
  PutVarint(&v, changes.size());
  for (const auto& [f, val] : changes) {
    v.push_back(static_cast<char>(val ? 1 : 2));
    PutVarint(&v, f.size());
    v.append(f);
    if (val && type == cache::kTypeHash) {
      PutVarint(&v, val->size());
      v.append(*val);
    }
  }
  EncodeWalRecord(kWalFields, collection, key, type, v, expire_ms, version, out);
}

bool EncodeWalParts(std::string_view whole, uint64_t writer, std::string_view collection, std::string_view key,
                    uint64_t version, size_t piece, const std::function<bool(std::string_view part)>& fn) {
  if (whole.size() < kWalRecordHead || whole.size() - kWalRecordHead > kWalMaxBody) return false;
  key = key.substr(0, std::min<size_t>(key.size(), 256));
  // What a part adds around its data: head, kind, collection, key, type,
  // expire, version, the value's length and its two varints (10 B each at most).
  size_t around = kWalRecordHead + 1 + 10 + collection.size() + 10 + key.size() + 1 + 8 + 8 + 10 + 10 + 10;
  if (piece <= around) return false;
  size_t room = piece - around;
  std::string part, v;
  for (size_t off = 0; off < whole.size(); off += room) {
    size_t n = std::min(room, whole.size() - off);
    v.clear();
    PutVarint(&v, writer);
    PutVarint(&v, whole.size());
    v.append(whole.substr(off, n));
    part.clear();
    EncodeWalRecord(kWalPart, collection, key, 0, v, static_cast<int64_t>(off), version, &part);
    if (!fn(part)) return false;
  }
  return true;
}

bool DecodeWalPart(const WalRecord& r, WalPart* out) {
  if (r.kind != kWalPart || r.entry.type != 0 || r.entry.expire_ms < 0) return false;
  Cursor c{r.entry.value};
  if (!c.Varint(&out->writer) || !c.Varint(&out->total)) return false;
  out->offset = static_cast<uint64_t>(r.entry.expire_ms);
  out->piece = std::string_view(r.entry.value).substr(c.pos);
  return out->total >= kWalRecordHead && out->total - kWalRecordHead <= kWalMaxBody && !out->piece.empty() &&
         out->offset < out->total && out->piece.size() <= out->total - out->offset;
}

bool DecodeWalFields(std::string_view value, uint8_t type, WalFieldChanges* out) {
  out->clear();
  Cursor c{value};
  uint64_t n = 0;
  if (!c.Varint(&n) || n > value.size()) return false;
  out->reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t op = 0;
    std::string_view f, v;
    if (!c.U8(&op) || (op != 1 && op != 2) || !c.LenBytes(&f)) return false;
    if (op == 1 && type == cache::kTypeHash && !c.LenBytes(&v)) return false;
    out->emplace_back(std::string(f), op == 1 ? std::optional<std::string>(std::string(v)) : std::nullopt);
  }
  return c.pos == value.size();
}

WalDecode DecodeWalRecord(std::string_view bytes, WalRecord* out, size_t* used, std::string* err) {
  if (bytes.size() < kWalRecordHead) return WalDecode::kShort;
  uint32_t len = GetU32(bytes.data()), crc = GetU32(bytes.data() + 4);
  if (len > kWalMaxBody) {
    *err = "record length " + std::to_string(len) + " is not believable";
    return WalDecode::kBad;
  }
  if (bytes.size() - kWalRecordHead < len) return WalDecode::kShort;
  std::string_view body = bytes.substr(kWalRecordHead, len);
  if (Crc32c(body.data(), body.size()) != crc) {
    *err = "record checksum does not match";
    return WalDecode::kBad;
  }
  Cursor c{body};
  uint8_t kind = 0, type = 0;
  std::string_view coll, key, value;
  uint64_t exp = 0, ver = 0;
  if (!c.U8(&kind) || !c.LenBytes(&coll) || !c.LenBytes(&key) || !c.U8(&type) || !c.U64(&exp) || !c.U64(&ver) ||
      !c.LenBytes(&value) || c.pos != body.size()) {
    *err = "record fields do not add up to its length";
    return WalDecode::kBad;
  }
  if (kind < kWalPut || kind > kWalPart) {
    *err = "unknown record kind " + std::to_string(kind);
    return WalDecode::kBad;
  }
  if (kind == kWalFields) {
    WalFieldChanges ch;
    if ((type != cache::kTypeHash && type != cache::kTypeSet) || !DecodeWalFields(value, type, &ch)) {
      *err = "a fields record whose type or changes do not parse";
      return WalDecode::kBad;
    }
  }
  if (kind == kWalExpire && ((type != cache::kTypeHash && type != cache::kTypeSet) || !value.empty() ||
                              key.empty() || static_cast<int64_t>(exp) < 0)) {
    *err = "an expire record that is not a hash's or a set's, or carries a value";
    return WalDecode::kBad;
  }
  if (kind == kWalPut && !cache::ExportTypeName(type)) {
    *err = "unknown value type " + std::to_string(type);
    return WalDecode::kBad;
  }
  out->kind = static_cast<WalKind>(kind);
  out->collection.assign(coll);
  out->entry.key.assign(key);
  out->entry.type = type;
  out->entry.value.assign(value);
  out->entry.expire_ms = static_cast<int64_t>(exp);
  out->entry.version = ver;
  WalPart part;
  if (kind == kWalPart && !DecodeWalPart(*out, &part)) {
    *err = "a part record whose writer, length or offset do not add up";
    return WalDecode::kBad;
  }
  *used = kWalRecordHead + len;
  return WalDecode::kOk;
}

std::string WalSegmentName(uint64_t start) {
  char b[64];
  std::snprintf(b, sizeof b, "wal-%016llx.log", static_cast<unsigned long long>(start));
  return b;
}

std::string WalSegmentHeader(uint64_t start, uint32_t flags) {
  std::string h(kMagic, 8);
  PutU32(&h, kFormat);
  PutU32(&h, flags);
  PutU64(&h, start);
  PutU32(&h, Crc32c(h.data(), 24));
  PutU32(&h, 0);
  return h;
}

std::vector<std::pair<uint64_t, std::string>> ListWalSegments(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* de = readdir(d)) {
    unsigned long long start = 0;
    char tail[8] = {};
    if (std::strlen(de->d_name) == 24 && std::sscanf(de->d_name, "wal-%16llx.%3s", &start, tail) == 2 &&
        std::strcmp(tail, "log") == 0) {
      out.emplace_back(start, dir + "/" + de->d_name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool ReadWal(const std::string& dir, uint64_t from, bool repair,
             const std::function<bool(uint64_t pos, const WalRecord& r)>& fn, WalReadReport* rep,
             std::string* err) {
  auto segs = ListWalSegments(dir);
  std::string data;
  WalRecord r;
  Joiner join(from);
  // later[i]: the bytes of the segments after segment i (what a record in
  // parts can still find: Joiner reserves no more).
  std::vector<uint64_t> later(segs.size() + 1, 0);
  for (size_t i = segs.size(); i-- > 0;) {
    struct stat st {};
    later[i] = later[i + 1] + (stat(segs[i].second.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0);
  }
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& [start, path] = segs[i];
    if (i + 1 < segs.size() && segs[i + 1].first <= from) continue;  // wholly before `from`
    if (!ReadFile(path, &data, err)) return false;
    ++rep->segments;
    if (data.size() < kWalSegmentHeader || std::memcmp(data.data(), kMagic, 8) != 0 ||
        GetU32(data.data() + 24) != Crc32c(data.data(), 24) || GetU64(data.data() + 16) != start) {
      rep->problems.push_back(path + ": the segment header does not check: segment skipped (" +
                              std::to_string(data.size()) + " bytes)");
      rep->torn_bytes += data.size();
      rep->written_end = start + (data.size() > kWalSegmentHeader ? data.size() - kWalSegmentHeader : 0);
      continue;
    }
    const bool zero_filled = (GetU32(data.data() + 12) & kWalSegmentZeroFilled) != 0;
    const char* newest = i + 1 < segs.size() ? " (not the newest segment)" : "";
    size_t off = kWalSegmentHeader, written = data.size();
    while (off < data.size()) {
      if (zero_filled && ZeroHead(data, off)) {
        // The end of the records: zeros laid down ahead of them. A nonzero
        // byte further on reached the disk past a hole (a torn write whose
        // first sectors were lost, or damage): cut like a torn tail.
        size_t nz = NonZeroEnd(data, off);
        written = off;
        if (nz > off) {
          rep->torn_bytes += nz - off;
          rep->problems.push_back(path + " offset " + std::to_string(off) + ": a torn record (" +
                                  std::to_string(nz - off) + " byte(s) after the end of the records): cut off" +
                                  newest);
          if (!repair) {
            written = nz;
          } else if (truncate(path.c_str(), static_cast<off_t>(off)) != 0) {
            rep->problems.push_back(path + ": truncate: " + std::strerror(errno));
            written = nz;
          }
        }
        break;
      }
      size_t used = 0;
      std::string why;
      WalDecode d = DecodeWalRecord(std::string_view(data).substr(off), &r, &used, &why);
      if (d == WalDecode::kBad && data.size() - off >= kWalRecordHead) {
        // A damaged record whose length still leads to a good record (or
        // to the end of the file): skip just this one, reported, rather
        // than cut every good record after it.
        uint64_t len = GetU32(data.data() + off);
        uint64_t next = off + kWalRecordHead + len;
        WalRecord probe;
        size_t pused = 0;
        std::string pwhy;
        // (The end of a zero-filled file is no evidence: zeros where the
        // body should be are a torn write, cut below.)
        if (len <= kWalMaxBody && next <= data.size() &&
            ((next == data.size() && !zero_filled) ||
             DecodeWalRecord(std::string_view(data).substr(next), &probe, &pused, &pwhy) == WalDecode::kOk)) {
          rep->problems.push_back(path + " offset " + std::to_string(off) + ": " + why + ": " +
                                  std::to_string(next - off) + " byte(s) skipped (one record lost)");
          rep->torn_bytes += next - off;
          off = next;
          continue;
        }
      }
      if (d != WalDecode::kOk) {
        // In a zero-filled segment the zeros after the torn bytes are
        // room laid down ahead, not part of the damage.
        size_t nz = zero_filled ? std::max(NonZeroEnd(data, off), off + 1) : data.size();
        uint64_t cut = nz - off;
        rep->torn_bytes += cut;
        // (Zeros follow the last bad record of a zero-filled segment: a
        // write cut short, whatever the check that caught it.)
        std::string what = d == WalDecode::kShort ? "a torn record"
                           : zero_filled          ? "a torn record (" + why + ")"
                                                  : why;
        rep->problems.push_back(path + " offset " + std::to_string(off) + ": " + what + ": " + std::to_string(cut) +
                                " byte(s) cut off" + newest);
        written = nz;
        if (repair) {
          if (truncate(path.c_str(), static_cast<off_t>(off)) != 0) {
            rep->problems.push_back(path + ": truncate: " + std::strerror(errno));
          } else {
            written = off;
          }
        }
        break;
      }
      uint64_t pos = start + (off - kWalSegmentHeader);
      off += used;
      const WalRecord* out = &r;
      if (r.kind == kWalPart) {
        if (pos >= from) ++rep->parts;
        out = join.Add(pos, r, path, off - used, data.size() - off + later[i + 1], rep);
      }
      if (pos < from) continue;
      rep->bytes += used;
      rep->end = start + (off - kWalSegmentHeader);
      if (!out) continue;
      if (out != &r) ++rep->joined;
      ++rep->records;
      if (fn && !fn(pos, *out)) {
        *err = "stopped";
        return false;
      }
    }
    if (rep->end < start) rep->end = start;
    rep->written_end = start + (written - kWalSegmentHeader);
  }
  join.Finish(rep);
  return true;
}

int DropWalSegmentsBelow(const std::string& dir, uint64_t pos) {
  auto segs = ListWalSegments(dir);
  int n = 0;
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    if (segs[i + 1].first > pos) break;
    if (unlink(segs[i].second.c_str()) == 0) ++n;
  }
  return n;
}

uint64_t WalEndPosition(const std::string& dir) {
  auto segs = ListWalSegments(dir);
  if (segs.empty()) return 0;
  // A zero-filled segment's size says nothing of its records: read it.
  char head[kWalSegmentHeader];
  int fd = open(segs.back().second.c_str(), O_RDONLY | O_CLOEXEC);
  bool zero_filled = false;
  if (fd >= 0) {
    zero_filled = pread(fd, head, sizeof head, 0) == static_cast<ssize_t>(sizeof head) &&
                  std::memcmp(head, kMagic, 8) == 0 && GetU32(head + 24) == Crc32c(head, 24) &&
                  (GetU32(head + 12) & kWalSegmentZeroFilled) != 0;
    close(fd);
  }
  if (zero_filled) {
    WalReadReport rep;
    std::string err;
    if (ReadWal(dir, segs.back().first, false, {}, &rep, &err)) return std::max(rep.written_end, segs.back().first);
  }
  struct stat st {};
  if (stat(segs.back().second.c_str(), &st) != 0) return segs.back().first;
  uint64_t size = static_cast<uint64_t>(st.st_size);
  return segs.back().first + (size > kWalSegmentHeader ? size - kWalSegmentHeader : 0);
}

}  // namespace db
