// perfcached — set Ops: the meaning of SADD ... SSCAN, without a socket.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Same transaction and Status rules as cache/hash_ops.h. Encodings: intset
// (integers only, <= set-max-intset-entries), listpack (<=
// set-max-listpack-entries members of <= set-max-listpack-value bytes),
// hashtable (the trie of cache/dict.h).
// Multi-key Ops (SINTER, SUNION, SDIFF, their STORE forms, SMOVE) read each
// key atomically; they are not one snapshot of several keys. SMOVE adds to
// the destination before it removes from the source, so a process killed
// between the two leaves the member in both, never in neither.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/catalog.h"

namespace cache {

[[nodiscard]] Status SAdd(Ctx& c, const TableRef& t, std::string_view key,
                          std::span<const std::string_view> members, uint64_t* added);
[[nodiscard]] Status SRem(Ctx& c, const TableRef& t, std::string_view key,
                          std::span<const std::string_view> members, uint64_t* removed);
[[nodiscard]] Status SMembers(Ctx& c, const TableRef& t, std::string_view key,
                              std::vector<std::string>* out);
[[nodiscard]] Status SIsMember(Ctx& c, const TableRef& t, std::string_view key,
                               std::string_view member, bool* in);
[[nodiscard]] Status SMIsMember(Ctx& c, const TableRef& t, std::string_view key,
                                std::span<const std::string_view> members, std::vector<bool>* in);
[[nodiscard]] Status SCard(Ctx& c, const TableRef& t, std::string_view key, uint64_t* n);
// SPOP key [count]: up to `count` distinct members removed and returned.
[[nodiscard]] Status SPop(Ctx& c, const TableRef& t, std::string_view key, uint64_t count,
                          std::vector<std::string>* out);
// SRANDMEMBER: count > 0 distinct, count < 0 with repeats (at most
// kMaxRandomRepeats, else kOutOfRange).
[[nodiscard]] Status SRandMember(Ctx& c, const TableRef& t, std::string_view key, int64_t count,
                                 std::vector<std::string>* out);
// *moved: the member was in src (and is now in dst).
[[nodiscard]] Status SMove(Ctx& c, const TableRef& t, std::string_view src, std::string_view dst,
                           std::string_view member, bool* moved);
enum class SetAlgebra : uint8_t { kInter, kUnion, kDiff };
[[nodiscard]] Status SCombine(Ctx& c, const TableRef& t, SetAlgebra op,
                              std::span<const std::string_view> keys, std::vector<std::string>* out);
// SINTERCARD: limit 0 = no limit.
[[nodiscard]] Status SInterCard(Ctx& c, const TableRef& t, std::span<const std::string_view> keys,
                                uint64_t limit, uint64_t* n);
// S*STORE: dst becomes the result (any old value of any type is replaced;
// an empty result deletes dst). *n = its size.
[[nodiscard]] Status SCombineStore(Ctx& c, const TableRef& t, SetAlgebra op, std::string_view dst,
                                   std::span<const std::string_view> keys, uint64_t* n);
[[nodiscard]] Status SScan(Ctx& c, const TableRef& t, std::string_view key, uint64_t cursor,
                           uint64_t count, std::string_view glob, std::vector<std::string>* out,
                           uint64_t* next);

}  // namespace cache
