// perfcached — snapshot files (db/snapshot.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "db/codec.h"
#include "db/crc32c.h"
#include "db/fileio.h"

namespace db {
namespace {

constexpr char kMagic[8] = {'P', 'C', 'S', 'N', 'A', 'P', 0, 1};
constexpr uint32_t kFormat = 1;
constexpr size_t kHeader = 64, kBlockHeader = 16;
constexpr uint32_t kCollection = 1, kRecords = 2, kEnd = 3;
constexpr size_t kBlockRaw = size_t{1} << 20;
constexpr uint64_t kMaxBlockRaw = uint64_t{2} << 30;  // one record of a 512 MiB value fits, a lie does not

int64_t WallMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

using codec::Cursor;
using codec::GetU32;
using codec::GetU64;
using codec::PutU32;
using codec::PutU64;
using codec::PutVarint;

std::string SnapName(uint64_t seq) {
  char b[64];
  std::snprintf(b, sizeof b, "snapshot-%016llx.pcs", static_cast<unsigned long long>(seq));
  return b;
}

bool WriteAll(int fd, const std::string& data, std::string* err, const std::string& path) {
  errno = 0;
  if (fileio::WriteAll(fd, data.data(), data.size())) return true;
  *err = path + ": write: " + std::strerror(errno ? errno : ENOSPC);
  return false;
}

class Writer {
 public:
  ~Writer() {
    if (fd_ >= 0) {
      close(fd_);
      unlink(tmp_.c_str());
    }
  }
  bool Open(const std::string& dir, uint64_t seq, uint64_t wal_pos, std::string* err) {
    dir_ = dir;
    seq_ = seq;
    tmp_ = dir + "/.snapshot-" + std::to_string(seq) + "-" + std::to_string(getpid()) + ".tmp";
    fd_ = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      *err = tmp_ + ": " + std::strerror(errno);
      return false;
    }
    started_ = WallMs();
    std::string h(kMagic, 8);
    PutU32(&h, kFormat);
    PutU32(&h, 0);
    PutU64(&h, seq);
    PutU64(&h, static_cast<uint64_t>(started_));
    PutU64(&h, wal_pos);
    wal_pos_ = wal_pos;
    h.resize(60, '\0');
    PutU32(&h, Crc32c(h.data(), 60));
    bytes_ += h.size();
    return WriteAll(fd_, h, err, tmp_);
  }
  bool Collection(std::string_view name, uint64_t floor, std::string* err) {
    if (!FlushRecords(err)) return false;
    std::string raw;
    PutVarint(&raw, name.size());
    raw.append(name);
    PutVarint(&raw, floor);
    ++collections_;
    return Block(kCollection, raw, raw, err);
  }
  bool Add(const cache::Entry& e, std::string* err) {
    if (e.key.size() + e.value.size() + 32 > kMaxSnapshotRecord) {
      *err = "key '" + e.key.substr(0, 64) + "': a value of " + std::to_string(e.value.size()) +
             " bytes is above a snapshot record's " + std::to_string(kMaxSnapshotRecord >> 20) +
             " MiB (lower [memory] max_value_mb, or delete the key)";
      return false;
    }
    buf_.push_back(static_cast<char>(e.type));
    PutVarint(&buf_, e.key.size());
    buf_.append(e.key);
    PutVarint(&buf_, e.value.size());
    buf_.append(e.value);
    PutU64(&buf_, static_cast<uint64_t>(e.expire_ms));
    PutU64(&buf_, e.version);
    ++records_;
    return buf_.size() < kBlockRaw || FlushRecords(err);
  }
  bool Finish(SnapshotInfo* info, std::string* err) {
    if (!FlushRecords(err)) return false;
    std::string end;
    int64_t finished = WallMs();
    PutU64(&end, records_);
    PutU64(&end, collections_);
    PutU64(&end, static_cast<uint64_t>(finished));
    if (!Block(kEnd, end, end, err)) return false;
    if (fdatasync(fd_) != 0) {
      *err = tmp_ + ": fdatasync: " + std::strerror(errno);
      return false;
    }
    close(fd_);
    fd_ = -1;
    std::string final_path = dir_ + "/" + SnapName(seq_);
    if (rename(tmp_.c_str(), final_path.c_str()) != 0) {
      *err = final_path + ": rename: " + std::strerror(errno);
      unlink(tmp_.c_str());
      return false;
    }
    // The rename is durable only once the directory is.
    fileio::FsyncDir(dir_);
    *info = SnapshotInfo{final_path, seq_, started_, finished, records_, collections_, bytes_, raw_, wal_pos_, {}};
    return true;
  }

 private:
  bool FlushRecords(std::string* err) {
    if (buf_.empty()) return true;
    std::string z(ZSTD_compressBound(buf_.size()), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), buf_.data(), buf_.size(), 1);
    if (ZSTD_isError(n)) {
      *err = std::string("zstd: ") + ZSTD_getErrorName(n);
      return false;
    }
    z.resize(n);
    bool ok = Block(kRecords, buf_, z, err);
    buf_.clear();
    return ok;
  }
  bool Block(uint32_t kind, const std::string& raw, const std::string& stored, std::string* err) {
    std::string b;
    PutU32(&b, kind);
    PutU32(&b, static_cast<uint32_t>(raw.size()));
    PutU32(&b, static_cast<uint32_t>(stored.size()));
    PutU32(&b, Crc32c(stored.data(), stored.size()));
    b.append(stored);
    raw_ += raw.size();
    bytes_ += b.size();
    return WriteAll(fd_, b, err, tmp_);
  }

  std::string dir_, tmp_, buf_;
  uint64_t seq_ = 0, records_ = 0, collections_ = 0, bytes_ = 0, raw_ = 0, wal_pos_ = 0;
  int64_t started_ = 0;
  int fd_ = -1;
};

}  // namespace

bool WriteSnapshot(cache::Ctx& c, const std::string& dir, uint64_t seq, const std::vector<std::string>& names,
                   uint64_t wal_pos, SnapshotInfo* info, std::string* err,
                   const std::function<void()>& progress) {
  Writer w;
  if (!w.Open(dir, seq, wal_pos, err)) return false;
  for (const std::string& name : names) {
    cache::TableRef t;
    if (cache::OpenCollection(c, name, &t) != mem::Status::kOk) continue;  // dropped meanwhile
    // The floor as the walk begins: at least every version removed before
    // it, so replay after a restart outranks the log (RaiseVersionFloor).
    if (!w.Collection(name, cache::VersionFloor(t), err)) return false;
    uint64_t cursor = 0;
    bool ok = true;
    do {
      mem::Status s = cache::ExportStep(c, t, cursor, 256, [&](const cache::Entry& e) {
        if (ok) ok = w.Add(e, err);
      }, &cursor);
      if (s == mem::Status::kStale) break;  // dropped or renamed while walked: what was read stays
      if (s != mem::Status::kOk) {
        *err = "collection '" + name + "': " + std::string(mem::StatusName(s));
        return false;
      }
      if (!ok) return false;
      if (progress) progress();
    } while (cursor != 0);
  }
  return w.Finish(info, err);
}

bool ReadSnapshot(const std::string& path,
                  const std::function<bool(std::string_view collection, const cache::Entry& e)>& fn,
                  SnapshotInfo* info, std::string* err) {
  FILE* f = std::fopen(path.c_str(), "rbe");
  if (!f) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  struct Closer {
    FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  struct stat st {};
  (void)fstat(fileno(f), &st);
  *info = SnapshotInfo{};
  info->path = path;
  info->file_bytes = static_cast<uint64_t>(st.st_size);
  auto fail = [&](uint64_t at, const std::string& why) {
    *err = path + ": at byte " + std::to_string(at) + ": " + why;
    return false;
  };
  char h[kHeader];
  if (std::fread(h, 1, kHeader, f) != kHeader) return fail(0, "shorter than a header");
  if (std::memcmp(h, kMagic, 8) != 0) return fail(0, "not a perfcached snapshot (bad magic)");
  if (GetU32(h + 60) != Crc32c(h, 60)) return fail(60, "header checksum mismatch");
  if (GetU32(h + 8) != kFormat) return fail(8, "format " + std::to_string(GetU32(h + 8)) + " (this build reads 1)");
  info->seq = GetU64(h + 16);
  info->started_ms = static_cast<int64_t>(GetU64(h + 24));
  info->wal_pos = GetU64(h + 32);
  uint64_t at = kHeader;
  std::string stored, raw, coll;
  bool have_coll = false, ended = false;
  cache::Entry e;
  for (;;) {
    char bh[kBlockHeader];
    size_t got = std::fread(bh, 1, kBlockHeader, f);
    if (got == 0 && std::feof(f)) break;
    if (ended) return fail(at, "data after the end block");
    if (got != kBlockHeader) return fail(at, "truncated block header");
    uint32_t kind = GetU32(bh), raw_len = GetU32(bh + 4), stored_len = GetU32(bh + 8), crc = GetU32(bh + 12);
    if (raw_len > kMaxBlockRaw || stored_len > info->file_bytes) return fail(at, "implausible block length");
    stored.resize(stored_len);
    if (std::fread(stored.data(), 1, stored_len, f) != stored_len) return fail(at, "truncated block");
    if (Crc32c(stored.data(), stored.size()) != crc) return fail(at, "block checksum mismatch");
    std::string_view body = stored;
    if (kind == kRecords) {
      // The frame must declare the block's raw length before anything is
      // allocated for it: a damaged length does not get gigabytes.
      if (ZSTD_getFrameContentSize(stored.data(), stored.size()) != raw_len) {
        return fail(at, "records block's zstd frame does not declare its length");
      }
      raw.resize(raw_len);
      size_t n = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
      if (ZSTD_isError(n) || n != raw_len) return fail(at, "records block does not decompress");
      body = raw;
    } else if (raw_len != stored_len) {
      return fail(at, "raw block with two lengths");
    }
    Cursor cur{body};
    if (kind == kCollection) {
      uint64_t n;
      std::string_view name;
      uint64_t floor = 0;
      if (!cur.Varint(&n) || !cur.Bytes(n, &name) || (cur.pos < body.size() && !cur.Varint(&floor)) ||
          cur.pos != body.size()) {
        return fail(at, "bad collection block");
      }
      coll.assign(name);
      info->floors.emplace_back(coll, floor);
      have_coll = true;
      ++info->collections;
    } else if (kind == kRecords) {
      if (!have_coll) return fail(at, "records before any collection");
      while (cur.pos < body.size()) {
        uint64_t klen, vlen, exp, ver;
        std::string_view key, value;
        uint8_t type = static_cast<uint8_t>(body[cur.pos++]);
        if (!cur.Varint(&klen) || !cur.Bytes(klen, &key) || !cur.Varint(&vlen) || !cur.Bytes(vlen, &value) ||
            !cur.U64(&exp) || !cur.U64(&ver)) {
          return fail(at, "truncated record " + std::to_string(info->records));
        }
        ++info->records;
        if (fn) {
          e.key.assign(key);
          e.type = type;
          e.value.assign(value);
          e.expire_ms = static_cast<int64_t>(exp);
          e.version = ver;
          if (!fn(coll, e)) return false;
        }
      }
    } else if (kind == kEnd) {
      if (body.size() != 24) return fail(at, "bad end block");
      if (GetU64(body.data()) != info->records || GetU64(body.data() + 8) != info->collections) {
        return fail(at, "end block counts " + std::to_string(GetU64(body.data())) + " records, the file holds " +
                            std::to_string(info->records));
      }
      info->finished_ms = static_cast<int64_t>(GetU64(body.data() + 16));
      ended = true;
    } else {
      return fail(at, "unknown block kind " + std::to_string(kind));
    }
    info->raw_bytes += raw_len;
    at += kBlockHeader + stored_len;
  }
  if (!ended) return fail(at, "no end block (a snapshot cut short)");
  return true;
}

bool ReadSnapshotHeader(const std::string& path, SnapshotInfo* info) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char h[kHeader];
  bool ok = read(fd, h, kHeader) == static_cast<ssize_t>(kHeader) && std::memcmp(h, kMagic, 8) == 0 &&
            GetU32(h + 60) == Crc32c(h, 60);
  close(fd);
  if (!ok) return false;
  info->path = path;
  info->seq = GetU64(h + 16);
  info->started_ms = static_cast<int64_t>(GetU64(h + 24));
  info->wal_pos = GetU64(h + 32);
  return true;
}

std::vector<std::pair<uint64_t, std::string>> ListSnapshots(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* de = readdir(d)) {
    std::string_view n = de->d_name;
    if (n.size() != 9 + 16 + 4 || n.substr(0, 9) != "snapshot-" || n.substr(25) != ".pcs") continue;
    char* end = nullptr;
    std::string hex(n.substr(9, 16));
    uint64_t seq = std::strtoull(hex.c_str(), &end, 16);
    if (end != hex.c_str() + 16) continue;
    out.emplace_back(seq, dir + "/" + std::string(n));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

int PruneSnapshots(const std::string& dir, int keep) {
  int gone = 0;
  auto all = ListSnapshots(dir);
  for (size_t i = static_cast<size_t>(std::max(keep, 1)); i < all.size(); ++i) gone += unlink(all[i].second.c_str()) == 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* de = readdir(d)) {
      std::string_view n = de->d_name;
      if (n.substr(0, 10) != ".snapshot-" || n.size() < 14 || n.substr(n.size() - 4) != ".tmp") continue;
      // ".snapshot-SEQ-PID.tmp": only a dead writer's.
      size_t dash = n.rfind('-');
      int pid = std::atoi(std::string(n.substr(dash + 1, n.size() - dash - 5)).c_str());
      if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) continue;
      gone += unlink((dir + "/" + std::string(n)).c_str()) == 0;
    }
    closedir(d);
  }
  return gone;
}

}  // namespace db
