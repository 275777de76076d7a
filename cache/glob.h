// perfcached — Redis-compatible glob matching for KEYS / SCAN MATCH style patterns.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <string>
#include <string_view>

namespace cache {

// Matches `subject` against the Redis glob `pattern` (as in KEYS, SCAN MATCH and PSUBSCRIBE).
// Both strings are arbitrary byte strings and may contain NUL.
//
//   *        any run of bytes, including the empty run
//   ?        exactly one byte
//   [abc]    one byte from the set; [^abc] one byte NOT in the set ('!' is not a negation)
//   [a-z]    inclusive byte range; a reversed range [z-a] means the same as [a-z]
//   \x       the byte x literally, outside and inside brackets; a trailing '\' is a literal '\'
//
// Bracket corner cases follow Redis exactly: a ']' right after '[' or '[^' closes the class
// (so "[]" matches nothing and "[^]" matches any byte); a range end may be any byte, even ']'
// ("[a-]" is the range ']'..'a' and leaves the class unclosed); an unclosed class runs to the
// end of the pattern.
//
// nocase folds ASCII letters only. As in Redis, it does NOT apply to an escaped byte inside
// brackets, and a range is ordered before its ends are folded (nocase "[Z-a]" matches nothing).
//
// Deliberate differences from Redis's stringmatchlen():
//   * Range ends compare as unsigned bytes. Redis compares plain `char`, which is signed on x86,
//     so there "[a-\xff]" is the range -1..'a' and matches '0' but not '\x80'.
//   * A pattern of only '*' matches the empty subject. Redis's matcher says no, but KEYS and SCAN
//     special-case the pattern "*", so only e.g. "**" against the key "" differs.
//   * There is no limit on the number of '*'. Redis gives up (no match) past 1000 nested stars.
//
// Runs in O(|pattern| * |subject|) time and O(1) space; see glob.cc.
[[nodiscard]] bool GlobMatch(std::string_view pattern, std::string_view subject,
                             bool nocase = false) noexcept;

// True when the pattern contains no unescaped '*', '?' or '[', i.e. it matches exactly one
// subject, GlobUnescape(pattern), when nocase is false. Callers can then do a point lookup
// instead of a scan. The empty pattern is literal (it matches only the empty subject).
[[nodiscard]] bool GlobIsLiteral(std::string_view pattern) noexcept;

// For a literal pattern (see GlobIsLiteral): the subject it matches, with escapes removed
// ("a\\*b" -> "a*b"). A trailing lone backslash stays a backslash. On a non-literal pattern it
// just drops the escaping backslashes.
std::string GlobUnescape(std::string_view pattern);

}  // namespace cache
