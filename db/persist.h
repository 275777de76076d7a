// perfcached — whole collections to and from an SQL backend (perf_save / perf_load).
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The engine side of db/: a save walks a collection lock-free
// (cache::ExportStep — writers never wait for it) inside one backend
// transaction; a load deletes the collection's expired rows, then stores
// every row (cache::ImportEntry: type, value and expiry in one swap),
// replacing a key the collection already holds and keeping the others.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "cache/table.h"
#include "db/backend.h"

namespace db {

struct Result {
  uint64_t rows = 0;      // saved / loaded
  uint64_t expired = 0;   // load: expired rows deleted from the table (and not loaded)
  uint64_t bad = 0;       // load: rows that could not be stored (first_error says why)
  std::string first_error;
  int64_t ms = 0;         // wall time taken
};

// Save `collection` (every live key) as one transaction. False and *err
// when the collection is missing or the backend fails; the table then
// still holds the previous save.
bool SaveCollection(cache::Ctx& c, Backend& b, std::string_view collection, Result* r, std::string* err);
// Load `collection` from the table. A row that does not decode, or whose
// type this build does not know, is skipped and counted (r->bad); an arena
// that fills up stops the load: false and *err (the rows before it stay).
// `imported` (may be empty) is told of each key stored (the WAL logs it);
// false stops the load with *err.
using ImportedFn = std::function<bool(const cache::TableRef& t, std::string_view key, std::string* err)>;
bool LoadCollection(cache::Ctx& c, Backend& b, std::string_view collection, Result* r, std::string* err,
                    const ImportedFn& imported = {});

}  // namespace db
