// perfcached — unit tests for the key hash and the SWAR tag match.
// Copyright (c) 2026 the perfcached authors.
#include <random>
#include <vector>

#include "cache/bucket.h"
#include "cache/hash.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

namespace {

double ChiSquaredPerDf(const std::vector<uint64_t>& bins, uint64_t n) {
  double expect = static_cast<double>(n) / bins.size(), chi = 0;
  for (uint64_t b : bins) chi += (b - expect) * (b - expect) / expect;
  return chi / (bins.size() - 1);
}

}  // namespace

TEST_GROUP(Hash){};

TEST(Hash, LowBitsAndTagAreUniform) {
  constexpr uint64_t n = 1 << 20;
  std::vector<uint64_t> low(4096), tag(256), mid(4096);
  for (uint64_t i = 0; i < n; ++i) {
    std::string k = "sess-" + std::to_string(i);  // sequential ids: the hard case
    uint64_t h = cache::HashKey(k, 42);
    ++low[h & 4095];
    ++tag[h >> 56];
    ++mid[(h >> 20) & 4095];
  }
  // For a uniform hash chi^2/df is ~1 +- 0.03; a bad one is far off.
  double l = ChiSquaredPerDf(low, n), t = ChiSquaredPerDf(tag, n), m = ChiSquaredPerDf(mid, n);
  CHECK(l > 0.85 && l < 1.15);
  CHECK(t > 0.75 && t < 1.25);
  CHECK(m > 0.85 && m < 1.15);
}

TEST(Hash, SeedAndLengthMatter) {
  CHECK(cache::HashKey("abc", 1) != cache::HashKey("abc", 2));
  CHECK(cache::HashKey(std::string_view("a\0", 2), 1) != cache::HashKey("a", 1));
  CHECK(cache::HashKey("", 1) != cache::HashKey(std::string_view("\0", 1), 1));
  CHECK_EQUAL(cache::HashKey("0123456789abcdefXYZ", 7), cache::HashKey("0123456789abcdefXYZ", 7));
}

TEST_GROUP(TagMatch){};

TEST(TagMatch, NeverMissesAndStaysBelowUsed) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 200000; ++iter) {
    uint8_t tags[cache::kLive];
    // used up to 15 (the ctl field's width): TagMatch clamps it to kLive.
    uint32_t used = static_cast<uint32_t>(rng() % (iter % 8 == 0 ? 16 : cache::kLive + 1));
    uint8_t want = static_cast<uint8_t>(rng());
    for (int i = 0; i < cache::kLive; ++i) {
      tags[i] = rng() % 4 == 0 ? want : static_cast<uint8_t>(rng());
    }
    uint64_t lo = 0;
    // ctl: tag 8 in byte 0; byte 1 (a high byte) and the journal bits must
    // not change the answer.
    uint32_t ctl = static_cast<uint32_t>(rng() & 0xFF00FF00u) | tags[8] | (used << 16);
    for (int i = 0; i < 8; ++i) lo |= uint64_t{tags[i]} << (8 * i);
    uint32_t m = cache::TagMatch(lo, ctl, want);
    CHECK_EQUAL(0u, m >> cache::kLive);
    for (uint32_t i = 0; i < static_cast<uint32_t>(cache::kLive); ++i) {
      bool match = i < used && tags[i] == want;
      if (match) CHECK(m & (1u << i));   // no false negative
      if (i >= used) CHECK(!(m & (1u << i)));
    }
  }
}
