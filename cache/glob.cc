// perfcached — Redis-compatible glob matching (implementation).
// Copyright (c) 2026 the perfcached authors.
#include "cache/glob.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace cache {
namespace {

constexpr std::size_t kNoStar = std::string_view::npos;

// ASCII-only case folding: Redis runs with the "C" LC_CTYPE, so tolower() never touches bytes
// >= 0x80, and we must not either.
constexpr unsigned char FoldAscii(unsigned char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c - 'A' + 'a') : c;
}

constexpr bool SameByte(unsigned char a, unsigned char b, bool nocase) noexcept {
  return nocase ? FoldAscii(a) == FoldAscii(b) : a == b;
}

inline unsigned char ByteAt(std::string_view s, std::size_t i) noexcept {
  return static_cast<unsigned char>(s[i]);
}

// Matches the bracket class that starts at pattern[pos] == '[' against the byte c and stores in
// *next the index just past the class (pattern.size() when the class is never closed).
bool MatchClass(std::string_view pattern, std::size_t pos, unsigned char c, bool nocase,
                std::size_t* next) noexcept {
  const std::size_t n = pattern.size();
  std::size_t i = pos + 1;
  const bool negate = i < n && pattern[i] == '^';
  if (negate) ++i;
  bool hit = false;
  while (i < n) {
    const unsigned char b = ByteAt(pattern, i);
    if (b == '\\' && i + 1 < n) {
      // Escaped member. Redis compares it exactly, even when nocase is set.
      hit |= ByteAt(pattern, i + 1) == c;
      i += 2;
    } else if (b == ']') {
      // Checked before ranges, so ']' can never start a range and "[]" is an empty class.
      ++i;
      break;
    } else if (i + 2 < n && pattern[i + 1] == '-') {
      // Range. The end byte is taken as is: no escape processing, and it may be ']'.
      unsigned char lo = b;
      unsigned char hi = ByteAt(pattern, i + 2);
      if (lo > hi) std::swap(lo, hi);
      unsigned char x = c;
      if (nocase) {  // Order first, fold second, exactly like Redis.
        lo = FoldAscii(lo);
        hi = FoldAscii(hi);
        x = FoldAscii(x);
      }
      hit |= lo <= x && x <= hi;
      i += 3;
    } else {
      // Plain member; also covers a lone trailing '\' inside an unclosed class.
      hit |= SameByte(b, c, nocase);
      ++i;
    }
  }
  *next = i;
  return hit != negate;
}

// Matches the single-byte token at pattern[pos] (anything but '*') against c and stores in *next
// the index of the following token.
bool MatchToken(std::string_view pattern, std::size_t pos, unsigned char c, bool nocase,
                std::size_t* next) noexcept {
  switch (pattern[pos]) {
    case '?':
      *next = pos + 1;
      return true;
    case '[':
      return MatchClass(pattern, pos, c, nocase, next);
    case '\\':
      if (pos + 1 < pattern.size()) {
        *next = pos + 2;
        return SameByte(ByteAt(pattern, pos + 1), c, nocase);
      }
      break;  // A trailing '\' is an ordinary byte.
    default:
      break;
  }
  *next = pos + 1;
  return SameByte(ByteAt(pattern, pos), c, nocase);
}

}  // namespace

// How it works: apart from '*', every token ('?', a literal, an escape, a bracket class) consumes
// exactly one subject byte. So the pattern is a list of one-byte tokens separated by stars, and
// a greedy scan with backtracking to the most recent star is complete: if the text before the
// last star seen so far matched some prefix of the subject, any alternative way of matching it
// that used a longer prefix can be imitated by letting the last star absorb the difference.
// Hence we only remember (position after the last star, subject position that star was tried
// at) and, on a mismatch, let that star swallow one more byte and resume. Earlier stars are never
// revisited.
//
// Cost: every retry moves the remembered subject position forward, and between retries the scan
// inspects each pattern byte at most once, so the worst case is O(|pattern| * |subject|) byte
// comparisons (e.g. "a*a*a*...*b" against a run of 'a's) with no recursion and no allocation.
// Limits: no early exit for patterns that cannot match, and bracket classes are re-parsed each
// time they are tried, which is still within the bound above.
bool GlobMatch(std::string_view pattern, std::string_view subject, bool nocase) noexcept {
  const std::size_t m = pattern.size();
  const std::size_t n = subject.size();
  std::size_t p = 0;             // Next pattern token.
  std::size_t s = 0;             // Next subject byte.
  std::size_t star_p = kNoStar;  // Token after the most recent '*'.
  std::size_t star_s = 0;        // Subject position where that '*' stopped absorbing.

  while (s < n) {
    if (p < m && pattern[p] == '*') {
      while (p < m && pattern[p] == '*') ++p;  // "**" means the same as "*".
      if (p == m) return true;                 // A trailing star absorbs the rest.
      star_p = p;
      star_s = s;
      continue;
    }
    std::size_t next = 0;
    if (p < m && MatchToken(pattern, p, ByteAt(subject, s), nocase, &next)) {
      p = next;
      ++s;
      continue;
    }
    if (star_p == kNoStar) return false;
    p = star_p;
    s = ++star_s;
  }
  // Subject exhausted: only stars may remain (each matching the empty run).
  while (p < m && pattern[p] == '*') ++p;
  return p == m;
}

bool GlobIsLiteral(std::string_view pattern) noexcept {
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    switch (pattern[i]) {
      case '\\':
        ++i;  // Skip the escaped byte; a trailing '\' is a literal backslash.
        break;
      case '*':
      case '?':
      case '[':
        return false;
      default:
        break;
    }
  }
  return true;
}

std::string GlobUnescape(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) ++i;
    out.push_back(pattern[i]);
  }
  return out;
}

}  // namespace cache
