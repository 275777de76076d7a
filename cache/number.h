// perfcached — numbers as Redis reads and writes them (strict int64, long double).
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cache {

// Strict Redis integer parse (string2ll): no spaces, no '+', no leading zeros.
bool ParseInt64(std::string_view s, int64_t* out);
// Redis's strtold rules (INCRBYFLOAT): no leading space, no trailing bytes,
// no NaN, no overflow to HUGE_VAL.
bool ParseLongDouble(std::string_view s, long double* out);
// Format like Redis's INCRBYFLOAT (humanfriendly long double: %.17Lf with the
// trailing zeros and point removed, "-0" as "0").
std::string FormatLongDouble(long double v);

}  // namespace cache
