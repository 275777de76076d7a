// perfcached — whole collections to and from an SQL backend (db/persist.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/persist.h"

#include <time.h>

#include "cache/export.h"

namespace db {
namespace {

int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

std::string Named(std::string_view collection, std::string_view what) {
  return "collection '" + std::string(collection) + "': " + std::string(what);
}

}  // namespace

bool SaveCollection(cache::Ctx& c, Backend& b, std::string_view collection, Result* r, std::string* err) {
  int64_t t0 = MonoMs();
  *r = Result{};
  cache::TableRef t;
  if (cache::OpenCollection(c, collection, &t) != mem::Status::kOk) {
    *err = Named(collection, "no such collection");
    return false;
  }
  if (!b.BeginSave(collection, err)) {
    b.Rollback();
    return false;
  }
  uint64_t cursor = 0;
  bool ok = true;
  do {
    uint64_t next = 0;
    mem::Status s = cache::ExportStep(c, t, cursor, 256, [&](const cache::Entry& e) {
      if (!ok) return;
      Row row{e.key, cache::ExportTypeName(e.type), e.value, e.expire_ms};
      ok = b.Put(row, err);
      r->rows += ok;
    }, &next);
    if (s != mem::Status::kOk) {
      *err = Named(collection, s == mem::Status::kStale ? "dropped or renamed during the save"
                                                        : std::string(mem::StatusName(s)));
      ok = false;
    }
    cursor = next;
  } while (ok && cursor != 0);
  if (ok) ok = b.Commit(err);
  if (!ok) b.Rollback();
  r->ms = MonoMs() - t0;
  return ok;
}

bool LoadCollection(cache::Ctx& c, Backend& b, std::string_view collection, Result* r, std::string* err,
                    const ImportedFn& imported) {
  int64_t t0 = MonoMs();
  *r = Result{};
  cache::TableRef t;
  if (cache::OpenCollection(c, collection, &t) != mem::Status::kOk) {
    *err = Named(collection, "no such collection");
    return false;
  }
  // Rows whose time has passed are deleted, not merely skipped: after a
  // stop that did not save, they would pile up in the table for ever.
  if (!b.DeleteExpired(collection, cache::NowMs(c), &r->expired, err)) return false;
  bool full = false;
  cache::Entry e;
  bool ok = b.Load(collection, [&](const Row& row) {
    int type = cache::ExportTypeFromName(row.type);
    if (type < 0) {
      if (r->bad++ == 0) r->first_error = "key '" + std::string(row.key.substr(0, 64)) + "': unknown type '" +
                                          std::string(row.type.substr(0, 32)) + "'";
      return true;
    }
    e.key.assign(row.key);
    e.type = static_cast<uint8_t>(type);
    e.value.assign(row.value);
    e.expire_ms = row.expires_ms;
    std::string why;
    mem::Status s = cache::ImportEntry(c, t, e, &why);
    if (s == mem::Status::kOk) {
      ++r->rows;
      if (imported && !imported(t, e.key, err)) {
        *err = Named(collection, *err);
        full = true;
        return false;
      }
    } else if (s == mem::Status::kNotFound) {
      ++r->expired;  // expired between the delete and now
    } else if (s == mem::Status::kNoMem) {
      *err = Named(collection, "the arena is full after " + std::to_string(r->rows) +
                                   " rows (raise [memory] arena_mb / arena_cap_mb)");
      full = true;
      return false;
    } else if (s == mem::Status::kStale) {
      *err = Named(collection, "dropped or renamed during the load");
      full = true;
      return false;
    } else {
      if (why.empty()) why = std::string(mem::StatusName(s));
      if (r->bad++ == 0) r->first_error = "key '" + std::string(row.key.substr(0, 64)) + "': " + why;
    }
    return true;
  }, err);
  r->ms = MonoMs() - t0;
  return ok && !full;
}

}  // namespace db
