// perfcached — the write-ahead log on disk: records, segments, reading them back.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A record is a key's state AFTER a write, not the command that made it
// (docs/persistence.md "The WAL"): replaying a state twice changes nothing,
// and per-key versions decide between records (newer wins), so the rings
// of several workers can be merged in any order.
//
// A record (integers little-endian):
//
//   0 len u32   bytes of the body that follows the 8-byte head
//   4 crc u32   crc32c of the body
//   8 body      kind u8 | [varint len][collection] | [varint len][key]
//               | type u8 | expire_ms i64 | version u64 | [varint len][value]
//
//   kind 1 put        the key's state (cache::Entry: type, logical value,
//                     absolute expiry, version)
//   kind 2 tombstone  the key is absent; version = the table's version
//                     floor read after the write (type, expiry, value unused)
//   kind 3 flush      every key of the collection with a version at or
//                     below `version` is gone (FLUSHDB, FLUSHALL, a drop);
//                     key empty
//   kind 4 drop       the collection itself is gone (perf_drop, the old
//                     name of perf_rename), after its keys' tombstones:
//                     replay removes it, so it does not come back empty;
//                     a later put (a perf_create of the name) makes it
//                     again. Key empty, version 0. A reader older than
//                     this kind refuses such a record as damage.
//   kind 5 fields     some entries of a hash or set at `version` (a write
//                     to a large aggregate that neither made nor removed
//                     the key: cache/journal.h DictChange). type, expire_ms
//                     = the key's at that version; value = the changes:
//                       count varint, then per change
//                       op u8 (1 put, 2 remove) | [varint len][field]
//                       | for a put of a hash: [varint len][value]
//                     Replay merges them newest-wins per entry
//                     (db/wal_apply.h). A reader older than this kind
//                     refuses such a record as damage.
//   kind 6 expire     the expiry of a large hash or set at `version`
//                     (EXPIRE, PERSIST and their kin on a tree-encoded
//                     aggregate: cache/journal.h DictChange::expire_only);
//                     type hash or set, expire_ms the new expiry (0 =
//                     never), value empty. Its entries are unchanged.
//                     Replay sets the expiry where the record is the
//                     newest statement of it (db/wal_apply.h). A reader
//                     older than this kind skips it as one damaged record
//                     (the key comes back with its older TTL).
//   kind 7 part       one piece of a record too large for its ring (more
//                     than a quarter of [wal] ring_mb: a 3 MB SET, an
//                     HSET of many fields): the whole record's bytes (head
//                     + body) cut into pieces that one writer appends one
//                     after another. collection, version = the whole
//                     record's; key = its first 256 bytes at most (for
//                     reports); type 0; expire_ms = the piece's offset in
//                     the whole; value = varint writer (its ring index) |
//                     varint the whole's length | the piece. The reader
//                     joins a writer's pieces and hands out the whole
//                     record, at the position of its last piece (ReadWal);
//                     pieces whose last one never came (the writer died
//                     mid-record: the write was not acknowledged) are
//                     dropped and reported. A part written twice (a WAL
//                     process killed between writing a batch and moving the
//                     ring's tail: the next one writes it again) is joined
//                     from its offset again. A reader older than this kind
//                     takes a part as damage, and parts come in runs: it
//                     cuts the segment at the first (docs/persistence.md
//                     "Going back to an older version").
//
// A segment is a file `wal-<start, 16 hex digits>.log` in [wal] dir: a
// 32-byte header, then records. Positions count record bytes across
// segments: a segment holds [start, start + its record bytes). A snapshot
// records the position written when it began (db/snapshot.h): recovery
// replays from there.
//
//   segment header: 0 magic "PCWAL\0\0\1" | 8 format u32 = 1 | 12 flags u32
//                   16 start u64 | 24 crc32c of bytes 0..23 u32 | 28 pad
//
//   flags bit 0 (kWalSegmentZeroFilled): the file is zero-filled ahead of
//   its records (fsync = always: records are written over zeros already on
//   disk, so an fdatasync carries no size change: docs/persistence.md
//   "Zero-filled segments"). The records end at the first all-zero record
//   head; a nonzero byte after it is a torn write (cut like a torn tail).
//   Without the flag the records end at the end of the file. A reader
//   older than the flag takes the zeros for one torn tail and cuts them.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/export.h"
#include "cache/journal.h"

namespace db {

enum WalKind : uint8_t { kWalPut = 1, kWalTombstone = 2, kWalFlush = 3, kWalDrop = 4, kWalFields = 5,
                      kWalExpire = 6, kWalPart = 7 };

inline constexpr size_t kWalRecordHead = 8;
inline constexpr size_t kWalSegmentHeader = 32;
inline constexpr uint32_t kWalSegmentZeroFilled = 1;
// A body above this is refused by the reader (a length that lies).
inline constexpr uint64_t kWalMaxBody = uint64_t{1} << 31;

struct WalRecord {
  WalKind kind = kWalPut;
  std::string collection;
  cache::Entry entry;  // key; for a put also type, value, expire_ms; version always
};

// Append one encoded record (head + body) to *out.
void EncodeWalRecord(WalKind kind, std::string_view collection, std::string_view key, uint8_t type,
                     std::string_view value, int64_t expire_ms, uint64_t version, std::string* out);
inline void EncodeWalPut(std::string_view collection, const cache::Entry& e, std::string* out) {
  EncodeWalRecord(kWalPut, collection, e.key, e.type, e.value, e.expire_ms, e.version, out);
}
// A fields record (kind 5) of one committed aggregate write.
using WalFieldChanges = cache::FieldChanges;
void EncodeWalFields(std::string_view collection, std::string_view key, uint8_t type, int64_t expire_ms,
                     uint64_t version, const WalFieldChanges& changes, std::string* out);
// A record longer than `piece` bytes cut into part records (kind 7) of at
// most `piece` bytes each: fn(part) receives each encoded part in order,
// and returns false to stop. writer: the ring index.
// False when the record cannot be read back whole (longer than
// kWalMaxBody) or piece leaves no room for the data.
bool EncodeWalParts(std::string_view whole, uint64_t writer, std::string_view collection, std::string_view key,
                    uint64_t version, size_t piece, const std::function<bool(std::string_view part)>& fn);
// The fields of a part record's value; false when they do not parse.
struct WalPart {
  uint64_t writer = 0, total = 0, offset = 0;
  std::string_view piece;
};
bool DecodeWalPart(const WalRecord& r, WalPart* out);
// The changes a fields record's value holds (type: a set's puts carry no
// value). False when they do not parse (DecodeWalRecord checks this).
bool DecodeWalFields(std::string_view value, uint8_t type, WalFieldChanges* out);
// Decode one record at the start of `bytes`. kOk: *used bytes consumed.
// kShort: the record is not whole (a torn tail). kBad: a checksum or a
// field does not check (*err says which).
enum class WalDecode { kOk, kShort, kBad };
WalDecode DecodeWalRecord(std::string_view bytes, WalRecord* out, size_t* used, std::string* err);

std::string WalSegmentName(uint64_t start);
std::string WalSegmentHeader(uint64_t start, uint32_t flags = 0);
// The segments in dir, oldest first: (start, path).
std::vector<std::pair<uint64_t, std::string>> ListWalSegments(const std::string& dir);

struct WalReadReport {
  uint64_t segments = 0, records = 0, bytes = 0;
  uint64_t end = 0;              // the position after the last good record
  // The position after the newest segment's records (and after a torn
  // tail's last nonzero byte, unless repair cut it): where the next
  // segment starts, so no record's position lies in two segments.
  uint64_t written_end = 0;
  uint64_t torn_bytes = 0;       // cut off (a torn or damaged tail)
  std::vector<std::string> problems;  // one line each: segment, offset, what
  uint64_t parts = 0;            // part records read (kind 7; `records` counts what they joined into)
  uint64_t joined = 0;           // records handed out joined from parts
  uint64_t unfinished = 0;       // records whose last part never came: dropped, reported
};
// Read every record at position >= from, oldest first; fn (may be empty:
// verify only) returns false to stop. Part records are joined and never
// handed out: the whole record comes at the position of its last part
// (parts of it before `from` in the same segment are read for this; one
// whose first parts lie in a segment wholly before `from` is skipped —
// the snapshot that starts there holds its write, made before its first
// part was logged). A segment whose tail is torn or
// damaged is read up to the last good record; with `repair` the file is
// cut there (ftruncate): nothing but good records stays. A
// damaged segment header skips that segment. False (and *err) only when
// the directory cannot be read or fn stopped.
bool ReadWal(const std::string& dir, uint64_t from, bool repair,
             const std::function<bool(uint64_t pos, const WalRecord& r)>& fn, WalReadReport* rep,
             std::string* err);

// Delete the segments that lie wholly below `pos` (a later segment starts
// at or below it); the newest segment always stays. Returns how many went.
int DropWalSegmentsBelow(const std::string& dir, uint64_t pos);

// The position after the newest segment's bytes (where the next segment
// starts); 0 for an empty directory.
uint64_t WalEndPosition(const std::string& dir);

}  // namespace db
