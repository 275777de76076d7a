// perfcached — RESP dispatch: lookup, arity, auth; shared helpers.
// Copyright (c) 2026 the perfcached authors.
#include "modules/resp/command.h"

#include "cache/journal.h"
#include "cache/evict.h"
#include "mem/slab.h"
#include "modules/exports.h"
#include "proc/events.h"
#include "proc/log.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace modules::resp {

bool EqNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (static_cast<unsigned>(x - 'A') < 26u) x = static_cast<unsigned char>(x | 0x20);  // ASCII
    if (static_cast<unsigned>(y - 'A') < 26u) y = static_cast<unsigned char>(y | 0x20);
    if (x != y) return false;
  }
  return true;
}

bool ParseLL(std::string_view s, long long* out) {
  int64_t v;
  if (!cache::ParseInt64(s, &v)) return false;
  *out = v;
  return true;
}

bool ParseLLOrReply(CmdCtx& c, std::string_view s, long long* out) {
  if (ParseLL(s, out)) return true;
  c.r.Error(kErrNotInt);
  return false;
}

bool ParseIntOrReply(CmdCtx& c, std::string_view s, int* out) {
  long long v;
  if (!ParseLLOrReply(c, s, &v)) return false;
  if (v < INT32_MIN || v > INT32_MAX) {
    c.r.Error("ERR value is out of range, value must between -2147483648 and 2147483647");
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

bool ParseScanCursor(std::string_view s, uint64_t* out) {
  s = s.substr(0, s.find('\0'));  // strtoul reads a C string
  if (s.empty()) {
    *out = 0;  // no digits, and the end pointer is at the NUL: accepted
    return true;
  }
  auto space = [](char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); };
  if (space(s[0])) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    ++i;
  }
  if (i == s.size()) return false;  // a sign alone: the end pointer is at the sign
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(s[i] - '0'), &v)) {
      return false;  // ERANGE
    }
  }
  *out = neg ? 0 - v : v;
  return true;
}

bool ParseLongDouble(std::string_view s, long double* out) { return cache::ParseLongDouble(s, out); }

std::string FormatLongDouble(long double v) { return cache::FormatLongDouble(v); }

int64_t NowMs(const Env& e) { return cache::NowMs(*e.ctx); }

void WrongArity(CmdCtx& c, std::string_view name) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  c.r.Error("ERR wrong number of arguments for '" + n + "' command");
}

void ReplyStatus(CmdCtx& c, mem::Status s) {
  switch (s) {
    case mem::Status::kWrongType: c.r.Error(kErrWrongType); break;
    case mem::Status::kNotInteger: c.r.Error(kErrNotInt); break;
    case mem::Status::kOverflow: c.r.Error(kErrOverflow); break;
    case mem::Status::kNoMem: c.r.Error(kErrOom); break;
    case mem::Status::kTooBig: c.r.Error(kErrTooBig); break;
    case mem::Status::kStale: c.r.Error("ERR the selected collection was dropped"); break;
    case mem::Status::kNotFound: c.r.Error(kErrNoKey); break;
    case mem::Status::kBusy: c.r.Error("ERR busy key, try again"); break;
    case mem::Status::kNotFloat: c.r.Error(kErrNotFloat); break;
    case mem::Status::kNanOrInf: c.r.Error("ERR increment would produce NaN or Infinity"); break;
    case mem::Status::kDecrOverflow: c.r.Error("ERR decrement would overflow"); break;
    case mem::Status::kOutOfRange: c.r.Error("ERR offset is out of range"); break;
    case mem::Status::kInvalidExpire: {
      std::string n(c.arg(0));
      for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      c.r.Error("ERR invalid expire time in '" + n + "' command");
      break;
    }
    default:
      c.r.Error(std::string("ERR ") + std::string(mem::StatusName(s)));
      break;
  }
}

bool TableForDb(Env& e, int db, cache::TableRef* t) {
  if (db < 0 || static_cast<size_t>(db) >= e.db_names.size() || e.db_names[db].empty()) return false;
  cache::TableRef& ref = e.db_refs[db];
  if (ref && ref.h->gen.load(std::memory_order_acquire) == ref.gen &&
      ref.h->state.load(std::memory_order_relaxed) == cache::kTableLive) {
    *t = ref;
    return true;
  }
  if (cache::OpenCollection(*e.ctx, e.db_names[db], &ref) != mem::Status::kOk) {
    ref = cache::TableRef{};
    return false;
  }
  *t = ref;
  return true;
}

bool CurrentTable(CmdCtx& c, cache::TableRef* t) {
  if (TableForDb(c.env, c.conn.db, t)) return true;
  c.r.Error("ERR the collection of DB " + std::to_string(c.conn.db) + " ('" +
            (static_cast<size_t>(c.conn.db) < c.env.db_names.size() ? c.env.db_names[c.conn.db]
                                                                     : std::string()) +
            "') does not exist");
  return false;
}

namespace {
size_t Shape(std::string_view name) {
  return (name.size() & 15) * 32 + (static_cast<unsigned char>(name[0]) & 31);
}
}  // namespace

void Register(Env& e, std::span<const CommandSpec> rows) {
  for (const CommandSpec& s : rows) {
    e.table[s.name] = &s;
    e.ordered.push_back(&s);
    e.by_shape[Shape(s.name)].push_back(&s);
  }
}

// Every module's RESP families (modules/exports.h), each row with its group.
void RegisterAll(Env& e) {
  for (const modules::ModuleExports* m : modules::AllModules()) {
    for (const modules::RespFamily& f : m->resp_families) {
      size_t before = e.ordered.size();
      f.reg(e);
      for (size_t i = before; i < e.ordered.size(); ++i) {
        e.groups.push_back(e.ordered[i]->group ? e.ordered[i]->group : f.group);
      }
    }
  }
}

std::string ListCommands() {
  Env e;
  RegisterAll(e);
  std::string o;
  for (size_t i = 0; i < e.ordered.size(); ++i) {
    const CommandSpec& s = *e.ordered[i];
    std::string flags;
    for (const FlagName& f : kFlagNames) {
      if (s.flags & f.bit) flags += (flags.empty() ? "" : ",") + std::string(f.name);
    }
    o += std::string(s.name) + " " + std::to_string(s.arity) + " " + (flags.empty() ? "-" : flags) +
         " " + std::to_string(s.first_key) + " " + std::to_string(s.last_key) + " " +
         std::to_string(s.key_step) + " " + e.groups[i] + "\n";
  }
  return o;
}

void InitEnv(Env& e) {
  RegisterAll(e);
  // SELECT n: the collection named by resp_collections, else the one named n.
  const proc::Config& cfg = *e.cfg;
  int ndb = cfg.databases;
  for (const auto& m : cfg.resp_collections) {
    int db = std::atoi(m.substr(0, m.find(':')).c_str());
    if (db + 1 > ndb) ndb = db + 1;
  }
  e.db_names.assign(static_cast<size_t>(ndb), std::string());
  for (int i = 0; i < ndb; ++i) {
    for (const auto& cc : cfg.collections) {
      if (cc.name == std::to_string(i)) e.db_names[i] = cc.name;
    }
  }
  for (const auto& m : cfg.resp_collections) {
    size_t colon = m.find(':');
    e.db_names[std::atoi(m.substr(0, colon).c_str())] = m.substr(colon + 1);
  }
  e.db_refs.assign(e.db_names.size(), cache::TableRef{});
  e.timeout_s = cfg.timeout;
}

namespace {
// Redis prints names in errors with %s: a NUL byte ends them.
std::string_view CString(std::string_view s) { return s.substr(0, s.find('\0')); }

// Cross-protocol scripting (a browser POSTing to the RESP port): HTTP's
// "POST" request line or a "Host:" header read as a command. As redis-server
// does: log (at most once a minute), reply nothing, close, run nothing that
// follows on this connection.
bool SecurityWarning(net::Conn& c, std::string_view name) {
  if (!EqNoCase(name, "post") && !EqNoCase(name, "host:")) return false;
  static int64_t last_logged = 0;
  int64_t now = net::WallMs();
  if (now - last_logged > 60000) {
    last_logged = now;
    LOG_WARN("Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: "
             "commands to perfcached (from %s). This is likely an attempt at cross-protocol "
             "scripting. Connection aborted.",
             c.addr.c_str());
  }
  c.close_after_write = true;
  return true;
}

// What each eviction tells: E_PERF_EVICTED (and the keyspace channels) for
// subscribers, and a tombstone in the WAL so a restart does not bring the
// key back.
cache::EvictedFn EvictionReporter(Env& e, bool events) {
  return [&e, events](std::string_view coll, std::string_view key, uint64_t version) {
    if (events) {
      proc::RaiseEvent(e.procs->events, proc::kEvEvicted, {proc::P("collection", coll), proc::P("key", key)},
                       NowMs(e));
    }
    if (e.wal.active()) WalLogRemoved(e, coll, key, version);
  };
}
// Evictions that log tombstones: each key's must fit in the WAL ring first,
// and none may have failed (a key evicted without its tombstone comes back
// at a restart).
cache::EvictBounds TombstoneBounds(Env& e) {
  cache::EvictBounds b;
  if (e.wal.active()) b.may_evict = [&e] { return e.wal_error.empty() && e.wal.HasRoom(64 * 1024); };
  return b;
}
}  // namespace

void EvictInBackground(Env& e) {
  constexpr int kTickEvictions = 128;
  const cache::Catalog& cat = *e.ctx->catalog;
  uint64_t limit = cat.maxmemory.load(std::memory_order_relaxed);
  if (limit == 0 || cat.maxmemory_policy.load(std::memory_order_relaxed) ==
                        static_cast<uint32_t>(cache::EvictPolicy::kNoEviction)) {
    return;
  }
  int64_t now = NowMs(e);
  if (now < e.evict_idle_until_ms || mem::UsedMemory(e.ctx->arena) <= limit) return;
  cache::EvictedFn report = EvictionReporter(e, proc::HasSubscribers(e.procs->events, proc::kEvEvicted));
  e.wal_error.clear();
  // Each key with room for its tombstone in the ring first (a push that
  // waits would hold the loop, up to 10 s), none after a tombstone failed.
  cache::EvictBounds b = TombstoneBounds(e);
  b.max_keys = kTickEvictions;
  b.time_limit_us = cache::kNoTimeLimit;
  uint64_t evicted = 0;
  if (cache::EnsureMemory(*e.ctx, &evicted, report, b) != mem::Status::kOk) {
    // The policy finds nothing to evict (volatile-* with no key with a
    // TTL): a second before the next try, not 16 failed samples a tick.
    e.evict_idle_until_ms = now + 1000;
  }
  if (!e.wal_error.empty()) {
    LOG_ERR("WAL: a tombstone of a background eviction could not be logged (%s): the key may come back at "
            "a restart", e.wal_error.c_str());
    e.wal_error.clear();
  }
}

void Dispatch(Env& e, net::Conn& c) {
  std::string_view name = c.argv[0];
  if (SecurityWarning(c, name)) return;
  const CommandSpec* spec = nullptr;
  if (!name.empty()) {
    for (const CommandSpec* s : e.by_shape[Shape(name)]) {
      if (EqNoCase(name, s->name)) {
        spec = s;
        break;
      }
    }
  }
  CmdCtx ctx{e, c, std::span<const std::string_view>(c.argv), net::Reply(&c.out, c.out_cap)};
  c.last_cmd = spec ? spec->name : "NULL";
  if (!spec) {
    // Exactly redis-server's text: the name and up to 128 bytes of arguments.
    std::string args;
    for (size_t i = 1; i < c.argv.size() && args.size() < 128; ++i) {
      size_t room = 128 - args.size();
      std::string_view a = CString(c.argv[i]).substr(0, room);
      args += "'" + std::string(a) + "' ";
    }
    ctx.r.Error("ERR unknown command '" + std::string(CString(name).substr(0, 128)) +
                "', with args beginning with: " + args);
    return;
  }
  // Redis's order: unknown command or subcommand, arity, auth, subscribed mode.
  const char* full = spec->name;
  if (spec->subcommands && c.argv.size() >= 2) {
    full = nullptr;
    for (const char* const* sub = spec->subcommands; *sub; ++sub) {
      if (EqNoCase(c.argv[1], std::strchr(*sub, '|') + 1)) full = *sub;
    }
    if (!full) {
      std::string up(spec->name);
      for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      ctx.r.Error("ERR unknown subcommand '" + std::string(CString(c.argv[1]).substr(0, 128)) +
                  "'. Try " + up + " HELP.");
      return;
    }
    c.last_cmd = full;
  }
  int argc = static_cast<int>(c.argv.size());
  if ((spec->arity > 0 && argc != spec->arity) || (spec->arity < 0 && argc < -spec->arity)) {
    WrongArity(ctx, spec->name);
    return;
  }
  if (!c.authed && !(spec->flags & kNoAuth)) {
    ctx.r.Error(kErrNoAuth);
    return;
  }
  if (c.subscribed() && !(spec->flags & kPubSub)) {
    ctx.r.Error(std::string("ERR Can't execute '") + full +
                "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
                "this context");
    return;
  }
  // The WAL (db/wal_ring.h): a write is refused before it is applied when
  // its record could not be logged (the WAL cannot be written, its ring
  // stays full). Nothing changed: the refusal is safe to retry.
  bool logged = (spec->flags & kWrite) && e.wal.active();
  e.wal_error.clear();  // a refused or thrown command before may have left one
  if (logged) {
    if (const char* why = e.wal.Admit()) {
      ctx.r.Error(why);
      return;
    }
  }
  // Evictions a command causes: E_PERF_EVICTED for subscribers, and a
  // tombstone in the WAL so a restart does not bring the key back.
  bool evict_events = (spec->flags & kDenyOom) && proc::HasSubscribers(e.procs->events, proc::kEvEvicted);
  cache::EvictedFn on_evict;
  // Any logged write may evict (RENAME, SMOVE ... store records too).
  if (evict_events || logged) on_evict = EvictionReporter(e, evict_events);
  // maxmemory (cache/evict.h): a command that may grow memory makes room
  // first, by the policy, or is refused with nothing changed.
  if ((spec->flags & kDenyOom) && e.ctx->catalog->maxmemory.load(std::memory_order_relaxed) != 0) {
    uint64_t evicted = 0;
    cache::EvictBounds b = TombstoneBounds(e);
    b.time_limit_us = cache::EvictionTimeLimitUs(e.procs->live_tenacity.load(std::memory_order_relaxed));
    mem::Status ms = cache::EnsureMemory(*e.ctx, &evicted, on_evict, b);
    if (ms != mem::Status::kOk) {
      ctx.r.Error("OOM command not allowed when used memory > 'maxmemory'.");
      return;
    }
  }
  size_t before = c.out.size();
  // A full arena makes a write evict (cache/evict.h MakeRoomFor) too.
  if (on_evict) e.ctx->on_evict = on_evict;
  e.journal.clear();
  {
    // Taken off again even when the handler throws (bad_alloc).
    struct Journal {
      cache::Ctx& c;
      Journal(cache::Ctx& x, std::vector<cache::DictChange>* j) : c(x) { c.dict_journal = j; }
      ~Journal() { c.dict_journal = nullptr; }
    } journal(*e.ctx, logged ? &e.journal : nullptr);
    spec->handler(ctx);
  }
  if (on_evict) e.ctx->on_evict = nullptr;
  // A command that answered an error may still have changed an aggregate
  // first (SMOVE: the add committed, the remove failed): logged too, or
  // its later fields records would build on a state the log never had.
  bool changed = false;
  for (const cache::DictChange& ch : e.journal) changed |= ch.whole || ch.version != 0;
  if (logged && !c.cont &&
      (!e.wal_error.empty() || changed || !(c.out.size() > before && c.out[before] == '-'))) {
    std::string err = std::move(e.wal_error);
    e.wal_error.clear();
    if (!err.empty() || !WalLogWrite(e, c, *spec, &err)) {
      // Applied but not logged: it must not be acknowledged. The reply is
      // withdrawn and the connection closed; the client sees no answer.
      LOG_ERR("WAL: %s (client %s, %s): the write is not acknowledged, the connection is closed", err.c_str(),
              c.addr.c_str(), spec->name);
      c.out.resize(before);
      c.close_after_write = true;
      return;
    }
    if (e.wal.policy() == db::WalPolicy::kAlways) c.hold_until = e.wal.position();
  }
  if (ctx.r.over()) c.out_over = true;  // the server closes it (client-output-buffer-limit)
  // E_PERF_NOMEM: a write refused because the arena is full (subscribers only).
  if (proc::HasSubscribers(e.procs->events, proc::kEvNomem) && c.out.size() > before + 4 &&
      c.out.compare(before, 4, "-OOM") == 0 && c.argv.size() >= 2) {
    std::string coll = static_cast<size_t>(c.db) < e.db_names.size() ? e.db_names[c.db] : "";
    proc::RaiseEvent(e.procs->events, proc::kEvNomem,
                     {proc::P("collection", coll), proc::P("key", c.argv[1]),
                      proc::P("size", static_cast<int64_t>(c.argv.size() > 2 ? c.argv[2].size() : 0))},
                     NowMs(e));
  }
}

}  // namespace modules::resp
