// perfcached — records in a portable form: what persistence writes and reads back.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// An Entry is one key with everything needed to make it again elsewhere
// (an SQL row, a snapshot, a WAL record, a dump): its type, its value in
// the logical encoding below, its absolute expiry and its version. It
// names no arena offset, so it outlives the arena that produced it.
//
// The logical encoding of Entry::value, by type (the `type` names are what
// an SQL table's `type` column holds, ExportTypeName):
//
//   string   "string"   the bytes
//   int      "counter"  decimal text, "-42" (an INCR counter)
//   hash     "hash"     [len][field][len][value] ... one pair per field
//   set      "set"      [len][member] ...
//
// where [len] is an unsigned LEB128 varint (7 bits a byte, low bits
// first, at most 5 bytes, no more than 2^32 - 1). Items come in the
// aggregate's own order; a decoder must not rely on any order. The
// encoding is stable: a change of it is a new type name.
//
// Lists, sorted sets and JSON get their names and encodings here when the
// engine serves them.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "cache/journal.h"
#include "cache/ops.h"

namespace cache {

struct Entry {
  std::string key;
  uint8_t type = kTypeString;  // kTypeString, kTypeInt, kTypeHash, kTypeSet
  std::string value;           // the logical encoding above
  int64_t expire_ms = 0;       // absolute wall-clock ms, 0 = never
  uint64_t version = 0;        // the record's version when read; to import: kept (0: the next)
};

// "string", "counter", "hash", "set"; nullptr for a type without an
// exported form. ExportTypeFromName: the type, or -1.
const char* ExportTypeName(uint8_t type);
int ExportTypeFromName(std::string_view name);

// The aggregate encoding. AppendItem adds one [len][bytes]. DecodeItems
// calls fn for each item (a hash: field, then value, alternately) and
// answers false, with *err saying where, for a truncated or overlong
// length, or for a hash with an odd number of items.
void AppendItem(std::string* out, std::string_view item);
bool DecodeItems(std::string_view enc, bool pairs,
                 const std::function<void(std::string_view a, std::string_view b)>& fn, std::string* err);

// Read one key into *out, consistently (strings with Get's seqlock proof,
// aggregates with the Dict's version proof). kOk; kNotFound (absent or
// expired); kBusy (written non-stop); kStale (the collection went away).
[[nodiscard]] Status ExportKey(Ctx& c, const TableRef& t, std::string_view key, Entry* out);

// One step of a walk over every live key of a table, lock-free for the
// table's writers: ScanStep's guarantee (a key present for the whole walk
// is emitted at least once; a key may be emitted twice across a split or a
// merge — a consumer keeps the last). `count` about buckets per step;
// *next == 0 when done. kOk, kStale.
[[nodiscard]] Status ExportStep(Ctx& c, const TableRef& t, uint64_t cursor, uint32_t count,
                                const std::function<void(const Entry&)>& emit, uint64_t* next);

// Store an Entry as `key` with its type, value and expiry, replacing
// whatever the key held (any type), in one swap (an aggregate is built
// privately and published whole, with its expiry). An entry whose expiry
// has passed is not stored: kNotFound. kInvalid: the value does not
// decode for its type (*err says why; nothing was changed). kNoMem,
// kTooBig as Set. An Entry with a version (a snapshot's, a WAL record's)
// is stored with that version, and only over an older one: kVersion when
// the key already holds this version or a newer one (replay is
// idempotent). The caller raises the table's floor after a load
// (RaiseVersionFloor). Version 0 (an SQL row) takes the next version.
// if_absent (RESTORE without REPLACE): kExists when the key holds a live
// value of any type, decided atomically with the store.
[[nodiscard]] Status ImportEntry(Ctx& c, const TableRef& t, const Entry& e, std::string* err,
                                 bool if_absent = false);

// WAL replay of fields records (db/wal_apply.h), not for a live table:
// apply `changes` to the aggregate `key` of `type` (replacing what it
// holds when `replace`, or when it holds another type), set its expiry
// (absolute ms, 0 = never) and publish at version max(at_least, the
// current version + 1) (*published). An empty result removes the key.
// kOk, kNoMem, kTooBig, kStale.
[[nodiscard]] Status MergeFields(Ctx& c, const TableRef& t, std::string_view key, uint8_t type,
                                 const FieldChanges& changes, bool replace, int64_t expire_ms, uint64_t at_least,
                                 uint64_t* published);
// The values of `fields` in the aggregate `key` of `type` (nullopt:
// absent). kOk; kNotFound (absent key); kWrongType.
[[nodiscard]] Status ReadFields(Ctx& c, const TableRef& t, std::string_view key, uint8_t type,
                                const std::vector<std::string>& fields, std::vector<std::optional<std::string>>* out);

}  // namespace cache
