// perfcached — numbers as Redis reads and writes them.
// Copyright (c) 2026 the perfcached authors.
#include "cache/number.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cache {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || s[i] < '1' || s[i] > '9') return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseLongDouble(std::string_view s, long double* out) {
  if (s.empty() || s.size() > 5000) return false;
  if (std::isspace(static_cast<unsigned char>(s[0]))) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  long double v = std::strtold(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size() || std::isnan(v) || errno == ERANGE) return false;
  *out = v;
  return true;
}

std::string FormatLongDouble(long double v) {
  char buf[5000];
  int n = std::snprintf(buf, sizeof buf, "%.17Lf", v);
  if (n > 0 && std::strchr(buf, '.')) {
    while (n > 0 && buf[n - 1] == '0') --n;
    if (n > 0 && buf[n - 1] == '.') --n;
  }
  std::string s(buf, static_cast<size_t>(n));
  if (s == "-0") s = "0";
  return s;
}

}  // namespace cache
