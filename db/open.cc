// perfcached — SQL persistence: the backend a url names (db/backend.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/backend.h"

namespace db {

std::unique_ptr<Backend> Open(std::string_view url, std::string_view table, std::string* err) {
  Url u;
  if (!ParseUrl(url, &u, err) || !ValidTableName(table, err)) return nullptr;
  if (u.kind == "sqlite") return OpenSqlite(u.target, std::string(table), err);
  return OpenPostgres(u.target, std::string(table), err);
}

}  // namespace db
