// perfcached — the key hash: 64-bit multiply-fold, seeded per arena.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// How it works: the key is consumed 16 bytes at a time; each block is folded
// into the state with a 64x64->128 multiply whose halves are XORed (every
// output bit depends on every input bit of both factors). The length and a
// per-arena random seed enter first, so an attacker who does not know the
// seed cannot aim keys at one bucket. The low bits pick the bucket, the top
// byte is the slot tag; test/unit/cache/hash_test.cc checks both for
// uniformity with a chi-squared test. Not a cryptographic hash.

#include <cstdint>
#include <cstring>
#include <string_view>

namespace cache {

inline uint64_t Fold(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline constexpr uint64_t kH1 = 0x9E3779B97F4A7C15ull;
inline constexpr uint64_t kH2 = 0xD1B54A32D192ED03ull;
inline constexpr uint64_t kH3 = 0x8CB92BA72F3D8DD7ull;
inline constexpr uint64_t kH4 = 0xA0761D6478BD642Full;

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline uint64_t HashKey(std::string_view key, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  size_t n = key.size();
  uint64_t h = Fold(seed ^ kH1, (n + 1) * kH2);
  while (n >= 16) {
    h = Fold(Load64(p) ^ h ^ kH3, Load64(p + 8) ^ kH4);
    p += 16;
    n -= 16;
  }
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = Load64(p);
    std::memcpy(&b, p + 8, n - 8);
  } else {
    std::memcpy(&a, p, n);
  }
  h = Fold(a ^ h ^ kH3, b ^ kH4 ^ n);
  return Fold(h ^ kH1, kH2 ^ (h >> 29));
}

}  // namespace cache
