// perfcached — the generic key commands as Ops (DEL EXISTS TYPE TTL RENAME COPY ...).
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Connection-free, like cache/string_ops.h (see there for what an Op is and
// which statuses it returns). Times are absolute milliseconds on the Ctx's
// clock (NowMs).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "cache/ops.h"

namespace cache {

// TYPE's answer for a record type ("string" for counters too; "none").
const char* TypeName(uint8_t type);
// SCAN ... TYPE name -> record type; an unknown name matches nothing (99).
int TypeFromName(std::string_view name);

// An expiry argument `when` in `unit_ms` (1000 for seconds, 1 for ms),
// relative to now or absolute, as an absolute time in ms. kInvalidExpire
// when it overflows (and, with `positive`, when when <= 0: SET EX, SETEX).
[[nodiscard]] Status AbsoluteExpire(int64_t now_ms, int64_t when, int64_t unit_ms, bool relative,
                                    bool positive, int64_t* abs_ms);

// DEL / UNLINK: *n = how many existed.
[[nodiscard]] Status DelKeys(Ctx& c, const TableRef& t, std::span<const std::string_view> keys,
                             int64_t* n);
// EXISTS: *n = how many exist (a key given twice counts twice).
[[nodiscard]] Status CountExisting(Ctx& c, const TableRef& t,
                                   std::span<const std::string_view> keys, int64_t* n);
// TOUCH: the same count, and each existing key's access is recorded
// (cache/access.h; EXISTS does not record one).
[[nodiscard]] Status TouchKeys(Ctx& c, const TableRef& t, std::span<const std::string_view> keys,
                               int64_t* n);
// TYPE: the type name ("none" when absent).
const char* KeyType(Ctx& c, const TableRef& t, std::string_view key);
// OBJECT ENCODING as Redis names it: strings "int" / "embstr" (<= 44
// bytes) / "raw"; hashes "listpack" / "hashtable"; sets "intset" /
// "listpack" / "hashtable". kNotFound when absent.
[[nodiscard]] Status ObjectEncoding(Ctx& c, const TableRef& t, std::string_view key,
                                    std::string* name);
// MEMORY USAGE: the bytes a key takes: its share of a bucket, its record's
// cell and, for a tree-encoded hash or set, its node and entry cells —
// estimated from `samples` random entries (Redis's SAMPLES; 0 = all of
// them, a walk of the whole tree checked against the key's version).
// kNotFound when absent.
[[nodiscard]] Status MemoryUsage(Ctx& c, const TableRef& t, std::string_view key, uint64_t samples,
                                 uint64_t* bytes);
// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT with an absolute time: an
// expiry at or before 0 is "already expired" (deletes). *changed = applied.
[[nodiscard]] Status Expire(Ctx& c, const TableRef& t, std::string_view key, int64_t abs_ms,
                            ExpireCond cond, bool* changed);
// PERSIST: *changed = an expiry was removed.
[[nodiscard]] Status Persist(Ctx& c, const TableRef& t, std::string_view key, bool* changed);
// TTL family: -2 absent, -1 no expiry, else the value in the unit asked.
enum class TtlUnit : uint8_t { kTtl, kPTtl, kExpireTime, kPExpireTime };
int64_t Ttl(Ctx& c, const TableRef& t, std::string_view key, TtlUnit unit);

// RENAME / RENAMENX / COPY: src (in table st) to dst (in table dt, may be
// st). The value, its expiry and its type move together; a counter arrives
// as a string. RENAME onto itself is a no-op answering kOk / *done true;
// RENAMENX and COPY onto itself answer *done false.
// kOk (*done: whether it moved / copied), kNotFound (no source), kBusy.
enum class MoveMode : uint8_t { kRename, kRenameNx, kCopy };
[[nodiscard]] Status MoveKey(Ctx& c, const TableRef& st, const TableRef& dt, std::string_view src,
                             std::string_view dst, MoveMode mode, bool replace, bool* done);

// RANDOMKEY: kOk (*key), kNotFound when the table is empty.
[[nodiscard]] Status RandomKey(Ctx& c, const TableRef& t, std::string* key);
// DBSIZE: the entries less those whose expiry has passed and that the
// timer's sweep has not removed yet (cache/maint.h CountExpired: O(buckets)
// hint loads, no lock unless something is due), so a key is counted
// exactly while a read would find it. Redis counts such a key until it is
// read or its active expiry (~100 ms) collects it.
uint64_t DbSize(Ctx& c, const TableRef& t);
// FLUSHDB: clear the table (it keeps its size).
[[nodiscard]] Status FlushDb(Ctx& c, const TableRef& t, uint64_t* removed = nullptr);

}  // namespace cache
