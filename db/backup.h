// perfcached — the files of a logical backup (`perfcached --dump DIR` / `--restore DIR`).
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A backup directory holds chunk files and one manifest:
//
//   DIR/manifest                    text, rewritten atomically after every
//                                   chunk (temp file, fdatasync, rename,
//                                   directory fsync): it lists only whole,
//                                   synced chunks, so a dump killed at any
//                                   moment leaves a manifest that is true
//   DIR/db<N>-p<P>-<S>.chunk        chunk S of part P of database N
//
// A chunk file:
//
//   +---------------------------------------------------------------+
//   | magic "PCBACKUP" (8) | format u32 = 1 | db u32                 |
//   | records u64          | raw bytes u64  | body bytes u64         |
//   | body CRC-32C u32     | header CRC-32C u32 (of the 44 bytes before) |
//   +---------------------------------------------------------------+  48 bytes
//   | body: one zstd frame of `raw bytes` bytes of records             |
//   +---------------------------------------------------------------+
//
// A record (little-endian; [len] an LEB128 varint, db/codec.h):
//
//   [len] key | expire_ms u64 (absolute unix ms, 0 = none) | [len] payload
//
// where payload is the key's DUMP payload (db/rdb.h: Redis's format, its
// own version and CRC-64), so a backup of redis-server restores here and
// one of perfcached restores into redis-server.
//
// The manifest (every field on its own line, `key value...`):
//
//   perfcached-backup 1
//   source HOST:PORT (perfcached|redis) VERSION
//   started_ms N
//   chunk NAME db=N records=N raw=N bytes=N crc=HEX     one per chunk
//   state running | complete | failed
//   finished_ms N                                       when complete or failed
//   totals keys=N raw=N bytes=N

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace db {

inline constexpr size_t kBackupHeader = 48;
inline constexpr uint32_t kBackupFormat = 1;
// A chunk holds at most this many record bytes before zstd (a reader
// refuses a header claiming more, before allocating).
inline constexpr uint64_t kBackupMaxRaw = uint64_t{1} << 30;

struct BackupRecord {
  std::string key;
  int64_t expire_ms = 0;
  std::string payload;
};

// Appends one record to a chunk's raw bytes.
void AppendBackupRecord(std::string* raw, std::string_view key, int64_t expire_ms, std::string_view payload);

struct BackupChunkInfo {
  uint32_t db = 0;
  uint64_t records = 0, raw = 0, bytes = 0;
  uint32_t crc = 0;  // the body's CRC-32C
};

// A whole chunk file from its raw records; *info describes it.
std::string EncodeBackupChunk(uint32_t db, uint64_t records, std::string_view raw, BackupChunkInfo* info,
                              int zstd_level = 3);

// Checks a chunk file (header, both CRCs, the frame's size) and reads its
// records. false with *err on any damage (*out is then empty).
bool DecodeBackupChunk(std::string_view file, BackupChunkInfo* info, std::vector<BackupRecord>* out,
                       std::string* err);

struct BackupManifest {
  std::string source;
  int64_t started_ms = 0, finished_ms = 0;
  bool complete = false;
  bool failed = false;  // the dump stopped on an error (its chunks are whole)
  struct Chunk {
    std::string name;
    BackupChunkInfo info;
  };
  std::vector<Chunk> chunks;
  uint64_t keys = 0, raw = 0, bytes = 0;
};

std::string FormatBackupManifest(const BackupManifest& m);
// false with *err (naming the line) for anything that is not a manifest
// this version writes, or a chunk name that is not a plain file name.
bool ParseBackupManifest(std::string_view text, BackupManifest* m, std::string* err);

// Writes path atomically: path.tmp, fdatasync, rename, fsync of the directory.
bool WriteFileAtomically(const std::string& dir, const std::string& name, std::string_view data, std::string* err);

}  // namespace db
