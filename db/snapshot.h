// perfcached — snapshot files: every collection, zstd-compressed, checksummed, renamed into place.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A snapshot is written by walking the tables lock-free (cache::ExportStep:
// no fork), into `.snapshot-<seq>-<pid>.tmp` (seq in decimal), fsynced, then
// renamed to `snapshot-<seq>.pcs` and the directory fsynced: a reader sees
// a whole file or none. seq is 16 hex digits; a newer snapshot has a
// larger seq.
//
// The file (integers little-endian):
//
//   header, 64 bytes
//     0 magic "PCSNAP\0\1" | 8 format u32 = 1 | 12 flags u32 = 0 | 16 seq u64
//     24 started_ms i64 (wall clock, when the walk began)
//     32 wal_pos u64 (the WAL position written when the walk began: recovery
//        replays the WAL from there, db/wal.h) | 40 reserved, 0
//     60 crc32c of bytes 0..59
//   blocks, each: 0 kind u32 | 4 raw_len u32 | 8 stored_len u32
//                 12 crc32c of the stored bytes u32 | 16 stored bytes
//     kind 1 collection  raw: [varint len][name][varint floor]; the records that
//                        follow are its; floor = the table's version floor
//                        when its walk began (absent in older files: 0)
//     kind 2 records     zstd frame of records:
//                          [type u8][varint klen][key][varint vlen][value]
//                          [expire_ms i64][version u64]
//                        (value in cache/export.h's logical encoding)
//     kind 3 end         raw: records u64 | collections u64 | finished_ms i64
//
// A file is valid when its header checks, every block's checksum and
// contents check, the end block's counts match and nothing follows it.
// A record block holds about 1 MiB of records before compression.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/export.h"
#include "cache/table.h"

namespace db {

struct SnapshotInfo {
  std::string path;
  uint64_t seq = 0;
  int64_t started_ms = 0, finished_ms = 0;
  uint64_t records = 0, collections = 0;
  uint64_t file_bytes = 0, raw_bytes = 0;
  uint64_t wal_pos = 0;
  std::vector<std::pair<std::string, uint64_t>> floors;  // (collection, version floor), read back
};

// Write a snapshot of every collection in `names` into dir (which must
// exist). False and *err on any failure; the temp file is removed and no
// snapshot-* file is touched. *info describes the file written.
// `progress` (may be empty) is called between steps of the walk. A record
// above kMaxSnapshotRecord fails the snapshot with a message naming it
// (the reader would refuse the block: never write what cannot be read).
inline constexpr uint64_t kMaxSnapshotRecord = uint64_t{1} << 30;
bool WriteSnapshot(cache::Ctx& c, const std::string& dir, uint64_t seq, const std::vector<std::string>& names,
                   uint64_t wal_pos, SnapshotInfo* info, std::string* err,
                   const std::function<void()>& progress = {});

// Read and verify `path`; fn (may be empty: verify only) gets each record
// with its collection's name and returns false to stop (ReadSnapshot then
// answers false, *err untouched). False and *err, saying where, on the
// first defect.
bool ReadSnapshot(const std::string& path,
                  const std::function<bool(std::string_view collection, const cache::Entry& e)>& fn,
                  SnapshotInfo* info, std::string* err);

// The header only (seq, started_ms, wal_pos), checked; false if it does not check.
bool ReadSnapshotHeader(const std::string& path, SnapshotInfo* info);

// The snapshot files in dir, newest first: (seq, path). Temp files and
// other names are ignored.
std::vector<std::pair<uint64_t, std::string>> ListSnapshots(const std::string& dir);

// Remove all but the newest `keep` snapshots, and temp files a dead writer
// left. Returns how many files went.
int PruneSnapshots(const std::string& dir, int keep);

}  // namespace db
