// perfcached — what an aggregate write changed: the journal the WAL's fields records come from.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Public (a door or the WAL uses it; cache/dict.h, the engine that fills
// it, is internal). cache::Ctx::dict_journal points at a vector of these.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cache {

// Entries written, in first-write order, each with its last value;
// nullopt = removed (a set member's value is empty).
using FieldChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;

// What one committed Dict write changed (Ctx::dict_journal): the WAL's
// field records (db/wal.h kind 5, docs/persistence.md). Every statement
// holds at `version`: a record of it replays idempotently, newest wins
// per field.
struct DictChange {
  uint32_t table_index = 0, table_gen = 0;  // the TableRef
  std::string key;
  uint8_t type = 0;
  // The key was created, replaced (LoadForReplace) or removed (its last
  // entry went): its whole state must be logged, not `fields`.
  bool whole = false;
  bool tree = false;        // tree-encoded after the write (a large aggregate)
  // Only the expiry changed (EXPIRE, PERSIST, ... on a tree-encoded hash or
  // set: cache::SetExpire): `expire_ms` at `version`, no fields. The WAL
  // logs it as an expire record (db/wal.h kind 6).
  bool expire_only = false;
  uint64_t version = 0;     // the version published (0: nothing changed)
  int64_t expire_ms = 0;    // the key's expiry at that version
  // Each entry written, in first-write order, its last value; nullopt =
  // removed (a set member's value is empty). Empty and !whole: the Commit
  // changed nothing (nothing was staged).
  FieldChanges fields;
};

}  // namespace cache
