// perfcached — libFuzzer target for the Redis-compatible glob matcher (cache/glob.h).
// Copyright (c) 2026 the perfcached authors.
//
// Input: pattern and subject, split at the first 0xFF byte (or half/half when there is none).
// Checks, for both case modes, and abort()s on the first violation:
//   * GlobMatch agrees with an independent dynamic-programming reference matcher (small inputs);
//   * a literal pattern (GlobIsLiteral) matches exactly GlobUnescape(pattern);
//   * "*" matches every subject;
//   * the fully backslash-escaped subject is literal, unescapes to the subject and matches it.

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/glob.h"

namespace {

constexpr std::size_t kMaxOraclePattern = 96;
constexpr std::size_t kMaxOracleSubject = 256;

unsigned char Fold(unsigned char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + ('a' - 'A')) : c;
}

// The set of bytes a single-byte token accepts.
using ByteSet = std::bitset<256>;

ByteSet LiteralSet(unsigned char b, bool nocase) {
  ByteSet set;
  for (int c = 0; c < 256; ++c) {
    const auto u = static_cast<unsigned char>(c);
    if (nocase ? Fold(u) == Fold(b) : u == b) set.set(c);
  }
  return set;
}

// One pattern element: a star, or a byte set consuming exactly one subject byte.
struct Token {
  bool star = false;
  ByteSet accepts;
};

// Reference tokenizer, written independently of cache/glob.cc from the documented Redis rules.
std::vector<Token> Tokenize(std::string_view pat, bool nocase) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  const std::size_t n = pat.size();
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(pat[k]); };
  while (i < n) {
    Token t;
    const unsigned char b = byte(i);
    if (b == '*') {
      t.star = true;
      ++i;
    } else if (b == '?') {
      t.accepts.set();
      ++i;
    } else if (b == '\\' && i + 1 < n) {
      t.accepts = LiteralSet(byte(i + 1), nocase);
      i += 2;
    } else if (b == '[') {
      ++i;
      bool negate = false;
      if (i < n && pat[i] == '^') {
        negate = true;
        ++i;
      }
      ByteSet set;
      for (;;) {
        if (i >= n) break;
        if (pat[i] == '\\' && i + 1 < n) {
          set.set(byte(i + 1));  // Exact even under nocase.
          i += 2;
          continue;
        }
        if (pat[i] == ']') {
          ++i;
          break;
        }
        if (n - i >= 3 && pat[i + 1] == '-') {
          unsigned lo = byte(i);
          unsigned hi = byte(i + 2);
          if (hi < lo) std::swap(lo, hi);
          for (unsigned c = 0; c < 256; ++c) {
            unsigned x = c;
            unsigned l = lo;
            unsigned h = hi;
            if (nocase) {
              x = Fold(static_cast<unsigned char>(c));
              l = Fold(static_cast<unsigned char>(lo));
              h = Fold(static_cast<unsigned char>(hi));
            }
            if (l <= x && x <= h) set.set(c);
          }
          i += 3;
          continue;
        }
        set |= LiteralSet(byte(i), nocase);
        ++i;
      }
      t.accepts = negate ? ~set : set;
    } else {
      t.accepts = LiteralSet(b, nocase);
      ++i;
    }
    tokens.push_back(t);
  }
  return tokens;
}

// match[i][j]: tokens[i..] match subject[j..].
bool OracleMatch(std::string_view pat, std::string_view subj, bool nocase) {
  const std::vector<Token> tokens = Tokenize(pat, nocase);
  const std::size_t t = tokens.size();
  const std::size_t n = subj.size();
  std::vector<char> match((t + 1) * (n + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> char& { return match[i * (n + 1) + j]; };
  at(t, n) = 1;
  for (std::size_t i = t; i-- > 0;) {
    for (std::size_t j = n + 1; j-- > 0;) {
      if (tokens[i].star) {
        at(i, j) = at(i + 1, j) || (j < n && at(i, j + 1));
      } else {
        at(i, j) = j < n && tokens[i].accepts.test(static_cast<unsigned char>(subj[j])) &&
                   at(i + 1, j + 1);
      }
    }
  }
  return at(0, 0) != 0;
}

std::string EscapeAll(std::string_view s) {
  std::string out;
  out.reserve(2 * s.size());
  for (char c : s) {
    out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

bool EqualsFolded(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Fold(static_cast<unsigned char>(a[i])) != Fold(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

[[noreturn]] void Fail(const char* what, std::string_view pat, std::string_view subj, bool nocase) {
  std::fprintf(stderr, "glob_fuzz: %s (nocase=%d, pattern %zu bytes, subject %zu bytes)\n", what,
               nocase ? 1 : 0, pat.size(), subj.size());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t cut = input.find('\xff');
  std::string_view pat;
  std::string_view subj;
  if (cut == std::string_view::npos) {
    cut = size / 2;
    pat = input.substr(0, cut);
    subj = input.substr(cut);
  } else {
    pat = input.substr(0, cut);
    subj = input.substr(cut + 1);
  }

  const bool literal = cache::GlobIsLiteral(pat);
  const std::string unescaped = literal ? cache::GlobUnescape(pat) : std::string();
  const std::string escaped = EscapeAll(subj);

  for (const bool nocase : {false, true}) {
    const bool got = cache::GlobMatch(pat, subj, nocase);

    if (pat.size() <= kMaxOraclePattern && subj.size() <= kMaxOracleSubject &&
        got != OracleMatch(pat, subj, nocase)) {
      Fail("GlobMatch disagrees with the reference matcher", pat, subj, nocase);
    }
    if (literal) {
      const bool want = nocase ? EqualsFolded(unescaped, subj) : unescaped == subj;
      if (got != want) Fail("literal pattern mismatch", pat, subj, nocase);
    }
    if (!cache::GlobMatch("*", subj, nocase)) Fail("\"*\" did not match", pat, subj, nocase);
    if (!cache::GlobMatch(escaped, subj, nocase)) {
      Fail("escaped subject did not match itself", escaped, subj, nocase);
    }
  }
  if (!cache::GlobIsLiteral(escaped) || cache::GlobUnescape(escaped) != subj) {
    Fail("escaped subject is not a literal for itself", escaped, subj, false);
  }
  return 0;
}
