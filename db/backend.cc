// perfcached — SQL persistence: url and table name parsing (db/backend.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/backend.h"

#include <cctype>

namespace db {

bool ParseUrl(std::string_view url, Url* out, std::string* err) {
  auto starts = [&](std::string_view p) { return url.substr(0, p.size()) == p; };
  if (starts("sqlite://")) {
    std::string_view path = url.substr(9);
    if (path.empty()) {
      *err = "sqlite url without a file: write sqlite:///var/lib/perfcached/cache.db";
      return false;
    }
    if (path.find('\0') != std::string_view::npos || path.find('?') != std::string_view::npos) {
      *err = "sqlite url: the file path may not hold '?' or NUL";
      return false;
    }
    out->kind = "sqlite";
    out->target.assign(path);
    return true;
  }
  if (starts("postgres://") || starts("postgresql://")) {
    out->kind = "postgres";
    out->target.assign(url);
    return true;
  }
  std::string_view scheme = url.substr(0, url.find(':'));
  *err = "unknown database url scheme '" + std::string(scheme.substr(0, 32)) +
         "' (sqlite:///path/file.db or postgres://user@host/db)";
  return false;
}

bool ValidTableName(std::string_view name, std::string* err) {
  bool ok = !name.empty() && name.size() <= 63 && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char ch : name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (!ok) *err = "table '" + std::string(name.substr(0, 64)) + "' is not a plain SQL name (letters, digits, _)";
  return ok;
}

}  // namespace db
