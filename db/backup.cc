// perfcached — the files of a logical backup (see backup.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/backup.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "db/codec.h"
#include "db/crc32c.h"
#include "db/fileio.h"

namespace db {

using codec::Cursor;
using codec::GetU32;
using codec::GetU64;
using codec::PutU32;
using codec::PutU64;
using codec::PutVarint;
using fileio::FsyncDir;
using fileio::WriteAll;

namespace {

constexpr char kMagic[8] = {'P', 'C', 'B', 'A', 'C', 'K', 'U', 'P'};

// "key=123" -> 123 (the key must match).
bool Field(std::string_view word, std::string_view key, uint64_t* v, int base = 10) {
  if (word.size() <= key.size() + 1 || word.substr(0, key.size()) != key || word[key.size()] != '=') return false;
  std::string_view num = word.substr(key.size() + 1);
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), *v, base);
  return ec == std::errc() && p == num.data() + num.size();
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) w.push_back(line.substr(i, j - i));
    i = j;
  }
  return w;
}

bool PlainName(std::string_view n) {
  if (n.empty() || n.size() > 128 || n == "." || n == "..") return false;
  for (char c : n) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void AppendBackupRecord(std::string* raw, std::string_view key, int64_t expire_ms, std::string_view payload) {
  PutVarint(raw, key.size());
  raw->append(key);
  PutU64(raw, static_cast<uint64_t>(expire_ms));
  PutVarint(raw, payload.size());
  raw->append(payload);
}

std::string EncodeBackupChunk(uint32_t db, uint64_t records, std::string_view raw, BackupChunkInfo* info,
                              int zstd_level) {
  std::string body(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(body.data(), body.size(), raw.data(), raw.size(), zstd_level);
  body.resize(ZSTD_isError(n) ? 0 : n);  // cannot fail with a bound-sized buffer
  std::string f(kMagic, sizeof kMagic);
  PutU32(&f, kBackupFormat);
  PutU32(&f, db);
  PutU64(&f, records);
  PutU64(&f, raw.size());
  PutU64(&f, body.size());
  info->db = db;
  info->records = records;
  info->raw = raw.size();
  info->bytes = body.size();
  info->crc = Crc32c(body.data(), body.size());
  PutU32(&f, info->crc);
  PutU32(&f, Crc32c(f.data(), f.size()));
  f += body;
  return f;
}

bool DecodeBackupChunk(std::string_view file, BackupChunkInfo* info, std::vector<BackupRecord>* out,
                       std::string* err) {
  out->clear();
  if (file.size() < kBackupHeader || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    *err = "not a backup chunk (no PCBACKUP header)";
    return false;
  }
  const char* h = file.data();
  if (Crc32c(h, 44) != GetU32(h + 44)) {
    *err = "the chunk header's checksum does not match";
    return false;
  }
  if (GetU32(h + 8) != kBackupFormat) {
    *err = "chunk format " + std::to_string(GetU32(h + 8)) + " (this perfcached reads format 1)";
    return false;
  }
  info->db = GetU32(h + 12);
  info->records = GetU64(h + 16);
  info->raw = GetU64(h + 24);
  info->bytes = GetU64(h + 32);
  info->crc = GetU32(h + 40);
  std::string_view body = file.substr(kBackupHeader);
  if (info->bytes != body.size()) {
    *err = "the chunk is " + std::to_string(body.size()) + " bytes after its header, not " +
           std::to_string(info->bytes) + " (cut short?)";
    return false;
  }
  if (Crc32c(body.data(), body.size()) != info->crc) {
    *err = "the chunk's checksum does not match (damaged)";
    return false;
  }
  if (info->raw > kBackupMaxRaw || info->records > info->raw / 10 + 1) {
    *err = "the chunk header claims " + std::to_string(info->raw) + " bytes in " + std::to_string(info->records) +
           " records";
    return false;
  }
  unsigned long long framed = ZSTD_getFrameContentSize(body.data(), body.size());
  if (framed != info->raw) {
    *err = "the zstd frame does not hold the " + std::to_string(info->raw) + " bytes the header claims";
    return false;
  }
  std::string raw(info->raw, '\0');
  size_t n = ZSTD_decompress(raw.data(), raw.size(), body.data(), body.size());
  if (ZSTD_isError(n) || n != raw.size()) {
    *err = std::string("zstd: ") + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame");
    return false;
  }
  Cursor c{raw};
  out->reserve(info->records);
  while (c.pos < raw.size()) {
    BackupRecord r;
    std::string_view key, payload;
    uint64_t exp;
    if (!c.LenBytes(&key) || !c.U64(&exp) || !c.LenBytes(&payload)) {
      *err = "a damaged record at byte " + std::to_string(c.pos) + " of the chunk's records";
      out->clear();
      return false;
    }
    r.key.assign(key);
    r.expire_ms = static_cast<int64_t>(exp);
    r.payload.assign(payload);
    out->push_back(std::move(r));
  }
  if (out->size() != info->records) {
    *err = "the chunk holds " + std::to_string(out->size()) + " records, its header says " +
           std::to_string(info->records);
    out->clear();
    return false;
  }
  return true;
}

std::string FormatBackupManifest(const BackupManifest& m) {
  std::string s = "perfcached-backup 1\n";
  s += "source " + m.source + "\n";
  s += "started_ms " + std::to_string(m.started_ms) + "\n";
  char crc[16];
  for (const auto& c : m.chunks) {
    std::snprintf(crc, sizeof crc, "%08x", c.info.crc);
    s += "chunk " + c.name + " db=" + std::to_string(c.info.db) + " records=" + std::to_string(c.info.records) +
         " raw=" + std::to_string(c.info.raw) + " bytes=" + std::to_string(c.info.bytes) + " crc=" + crc + "\n";
  }
  s += std::string("state ") + (m.complete ? "complete" : m.failed ? "failed" : "running") + "\n";
  if (m.complete || m.failed) s += "finished_ms " + std::to_string(m.finished_ms) + "\n";
  s += "totals keys=" + std::to_string(m.keys) + " raw=" + std::to_string(m.raw) + " bytes=" +
       std::to_string(m.bytes) + "\n";
  return s;
}

bool ParseBackupManifest(std::string_view text, BackupManifest* m, std::string* err) {
  *m = BackupManifest{};
  size_t lineno = 0, pos = 0;
  bool seen_state = false, seen_totals = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      *err = "line " + std::to_string(lineno + 1) + ": no newline at the end (cut short?)";
      return false;
    }
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    auto bad = [&](const std::string& why) {
      *err = "line " + std::to_string(lineno) + ": " + why;
      return false;
    };
    std::vector<std::string_view> w = Words(line);
    if (lineno == 1) {
      if (w.size() != 2 || w[0] != "perfcached-backup") return bad("not a perfcached backup manifest");
      if (w[1] != "1") return bad("manifest version " + std::string(w[1]) + " (this perfcached reads 1)");
      continue;
    }
    if (w.empty()) return bad("an empty line");
    uint64_t v = 0;
    if (w[0] == "source") {
      m->source.assign(line.substr(line.find(' ') + 1));
    } else if (w[0] == "started_ms" && w.size() == 2 && Field("x=" + std::string(w[1]), "x", &v) && v <= INT64_MAX) {
      m->started_ms = static_cast<int64_t>(v);
    } else if (w[0] == "finished_ms" && w.size() == 2 && Field("x=" + std::string(w[1]), "x", &v) &&
               v <= INT64_MAX) {
      m->finished_ms = static_cast<int64_t>(v);
    } else if (w[0] == "chunk") {
      BackupManifest::Chunk c;
      uint64_t db = 0, crc = 0;
      if (w.size() != 7 || !PlainName(w[1]) || !Field(w[2], "db", &db) || db > UINT32_MAX ||
          !Field(w[3], "records", &c.info.records) || !Field(w[4], "raw", &c.info.raw) ||
          !Field(w[5], "bytes", &c.info.bytes) || !Field(w[6], "crc", &crc, 16) || crc > UINT32_MAX) {
        return bad("a malformed chunk line");
      }
      c.name.assign(w[1]);
      c.info.db = static_cast<uint32_t>(db);
      c.info.crc = static_cast<uint32_t>(crc);
      m->chunks.push_back(std::move(c));
    } else if (w[0] == "state" && w.size() == 2 && (w[1] == "running" || w[1] == "complete" || w[1] == "failed")) {
      m->complete = w[1] == "complete";
      m->failed = w[1] == "failed";
      seen_state = true;
    } else if (w[0] == "totals" && w.size() == 4 && Field(w[1], "keys", &m->keys) && Field(w[2], "raw", &m->raw) &&
               Field(w[3], "bytes", &m->bytes)) {
      seen_totals = true;
    } else {
      return bad("an unknown or malformed line");
    }
  }
  if (lineno == 0) {
    *err = "an empty manifest";
    return false;
  }
  if (!seen_state || !seen_totals) {
    *err = "no state or totals line (cut short?)";
    return false;
  }
  return true;
}

bool WriteFileAtomically(const std::string& dir, const std::string& name, std::string_view data, std::string* err) {
  std::string path = dir + "/" + name, tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) {
    *err = tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = WriteAll(fd, data.data(), data.size()) && fdatasync(fd) == 0;
  int e = errno;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    *err = path + ": " + std::strerror(ok ? errno : (e ? e : ENOSPC));
    unlink(tmp.c_str());
    return false;
  }
  FsyncDir(dir);
  return true;
}

}  // namespace db
