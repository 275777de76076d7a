// perfcached — RESP generic key commands (DEL EXPIRE TTL KEYS SCAN RENAME ...).
// Copyright (c) 2026 the perfcached authors.
#include <memory>

#include "cache/access.h"
#include "cache/export.h"
#include "cache/glob.h"
#include "db/rdb.h"
#include "modules/resp/command.h"

namespace modules::resp {
namespace {

using mem::Status;

void ReplyInt(CmdCtx& c, Status s, long long n) {
  if (s == Status::kOk) {
    c.r.Int(n);
  } else {
    ReplyStatus(c, s);
  }
}

void CmdDel(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t n = 0;
  Status st = cache::DelKeys(*c.env.ctx, t, c.argv.subspan(1), &n);
  ReplyInt(c, st, n);
}

void CmdExists(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t n = 0;
  Status st = cache::CountExisting(*c.env.ctx, t, c.argv.subspan(1), &n);
  ReplyInt(c, st, n);
}

void CmdType(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  c.r.Simple(cache::KeyType(*c.env.ctx, t, c.arg(1)));
}

// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ | HELP.
void CmdObject(CmdCtx& c) {
  std::string_view sub = c.arg(1);
  if (EqNoCase(sub, "HELP") && c.argc() == 2) {
    static constexpr const char* kHelp[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>", "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>", "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>", "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>", "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP", "    Prints this help."};
    c.r.Array(std::size(kHelp));
    for (const char* l : kHelp) c.r.Simple(l);
    return;
  }
  bool known = EqNoCase(sub, "ENCODING") || EqNoCase(sub, "REFCOUNT") ||
               EqNoCase(sub, "IDLETIME") || EqNoCase(sub, "FREQ");
  if (!known || c.argc() != 3) {
    if (known || EqNoCase(sub, "HELP")) {
      std::string n(sub);
      for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      c.r.Error("ERR wrong number of arguments for 'object|" + n + "' command");
    } else {
      c.r.Error("ERR unknown subcommand '" + std::string(sub) + "'. Try OBJECT HELP.");
    }
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string enc;
  Status s = cache::ObjectEncoding(*c.env.ctx, t, c.arg(2), &enc);
  if (s == Status::kNotFound) return c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  if (EqNoCase(sub, "ENCODING")) return c.r.Bulk(enc);
  if (EqNoCase(sub, "REFCOUNT")) return c.r.Int(1);
  // IDLETIME / FREQ: the record's access field (cache/access.h); a Probe
  // does not count as an access.
  cache::ReadInfo ri;
  {
    cache::NoStats quiet(*c.env.ctx);  // ObjectEncoding's read counted the look-up
    s = cache::Probe(*c.env.ctx, t, c.arg(2), &ri);
  }
  if (s == Status::kNotFound) return c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  cache::AccessParams p = cache::LoadAccessParams(*c.env.ctx->catalog);
  if (EqNoCase(sub, "IDLETIME")) {
    if (!p.lfu) return c.r.Int(cache::AccessIdleSeconds(p, ri.access));
    return c.r.Error("ERR An LFU maxmemory policy is selected, idle time not tracked. "
                     "Please note that when switching between policies at runtime LRU and LFU data "
                     "will take some time to adjust.");
  }
  if (p.lfu) return c.r.Int(cache::AccessFrequency(p, ri.access));
  c.r.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
            "Please note that when switching between policies at runtime LRU and LFU data "
            "will take some time to adjust.");
}

// EXPIRE family: unit_ms = 1000 for seconds; relative = basetime now.
void ExpireGeneric(CmdCtx& c, long long unit_ms, bool relative) {
  long long when;
  if (!ParseLLOrReply(c, c.arg(2), &when)) return;
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t i = 3; i < c.argc(); ++i) {
    std::string_view o = c.arg(i);
    if (EqNoCase(o, "NX")) nx = true;
    else if (EqNoCase(o, "XX")) xx = true;
    else if (EqNoCase(o, "GT")) gt = true;
    else if (EqNoCase(o, "LT")) lt = true;
    else {
      c.r.Error("ERR Unsupported option " + std::string(o));
      return;
    }
  }
  if (nx && (xx || gt || lt)) {
    c.r.Error("ERR NX and XX, GT or LT options at the same time are not compatible");
    return;
  }
  if (gt && lt) {
    c.r.Error("ERR GT and LT options at the same time are not compatible");
    return;
  }
  int64_t ms;
  Status s = cache::AbsoluteExpire(NowMs(c.env), when, unit_ms, relative, false, &ms);
  if (s != Status::kOk) {
    ReplyStatus(c, s);
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::ExpireCond cond = nx ? cache::ExpireCond::kNx
                           : xx ? cache::ExpireCond::kXx
                           : gt ? cache::ExpireCond::kGt
                           : lt ? cache::ExpireCond::kLt
                                : cache::ExpireCond::kAlways;
  bool changed = false;
  s = cache::Expire(*c.env.ctx, t, c.arg(1), ms, cond, &changed);
  ReplyInt(c, s, changed ? 1 : 0);
}
void CmdExpire(CmdCtx& c) { ExpireGeneric(c, 1000, true); }
void CmdPExpire(CmdCtx& c) { ExpireGeneric(c, 1, true); }
void CmdExpireAt(CmdCtx& c) { ExpireGeneric(c, 1000, false); }
void CmdPExpireAt(CmdCtx& c) { ExpireGeneric(c, 1, false); }

void TtlGeneric(CmdCtx& c, cache::TtlUnit unit) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  c.r.Int(cache::Ttl(*c.env.ctx, t, c.arg(1), unit));
}
void CmdTtl(CmdCtx& c) { TtlGeneric(c, cache::TtlUnit::kTtl); }
void CmdPTtl(CmdCtx& c) { TtlGeneric(c, cache::TtlUnit::kPTtl); }
void CmdExpireTime(CmdCtx& c) { TtlGeneric(c, cache::TtlUnit::kExpireTime); }
void CmdPExpireTime(CmdCtx& c) { TtlGeneric(c, cache::TtlUnit::kPExpireTime); }

void CmdPersist(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool changed = false;
  Status st = cache::Persist(*c.env.ctx, t, c.arg(1), &changed);
  ReplyInt(c, st, changed ? 1 : 0);
}

// KEYS runs in slices of kKeysSlice residues so that a big table does not
// stall the worker's other connections (see net::Conn::cont).
constexpr uint32_t kKeysSlice = 512;

void CmdKeys(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string pattern(c.arg(1));
  if (cache::GlobIsLiteral(pattern)) {
    std::string key = cache::GlobUnescape(pattern);
    cache::ReadInfo ri;
    if (cache::Probe(*c.env.ctx, t, key, &ri) == Status::kOk) {
      c.r.Array(1);
      c.r.Bulk(key);
    } else {
      c.r.Array(0);
    }
    return;
  }
  struct State {
    std::string pattern;
    uint64_t cursor = 0;
    std::vector<std::string> keys;
    size_t bytes = 0;
    bool started = false;
  };
  auto st = std::make_shared<State>();
  st->pattern = std::move(pattern);
  Env* env = &c.env;
  cache::TableRef table = t;
  c.conn.cont = [st, env, table](net::Conn& conn) {
    cache::ScanFilter f;
    if (st->pattern != "*") f.glob = st->pattern;
    uint64_t next = 0;
    Status s = cache::ScanStep(*env->ctx, table, st->cursor, kKeysSlice, f,
                               [&](const cache::ScanItem& it) {
                                 st->keys.emplace_back(it.key);
                                 st->bytes += it.key.size() + 16;
                               },
                               &next);
    net::Reply r(&conn.out, conn.out_cap);
    if (s != Status::kOk) {
      r.Error("ERR the selected collection changed during KEYS");
      return true;
    }
    // The reply being collected counts against client-output-buffer-limit
    // while it is collected: over it, stop and let the server close.
    if (conn.out_cap != SIZE_MAX && conn.out.size() + st->bytes > conn.out_cap) {
      conn.out_over = true;
      return true;
    }
    st->cursor = next;
    if (next != 0) return false;
    r.Array(st->keys.size());
    for (const auto& k : st->keys) r.Bulk(k);
    if (r.over()) conn.out_over = true;
    return true;
  };
}

void CmdScan(CmdCtx& c) {
  uint64_t cursor;
  if (!ParseScanCursor(c.arg(1), &cursor)) {
    c.r.Error("ERR invalid cursor");
    return;
  }
  cache::ScanFilter f;
  long long count = 10;
  for (size_t i = 2; i < c.argc(); i += 2) {
    std::string_view o = c.arg(i);
    if (i + 1 >= c.argc()) {
      c.r.Error(kErrSyntax);
      return;
    }
    if (EqNoCase(o, "MATCH")) {
      f.glob = c.arg(i + 1);
      if (f.glob == "*") f.glob = {};
    } else if (EqNoCase(o, "COUNT")) {
      if (!ParseLLOrReply(c, c.arg(i + 1), &count)) return;
      if (count < 1) {
        c.r.Error(kErrSyntax);
        return;
      }
    } else if (EqNoCase(o, "TYPE")) {
      f.type = cache::TypeFromName(c.arg(i + 1));
    } else {
      c.r.Error(kErrSyntax);
      return;
    }
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::string> keys;
  uint64_t next = 0;
  // COUNT is a hint about work, as in Redis: about COUNT/4 residues (our
  // buckets hold ~4 keys at the target load). `perfcached --dump` relies
  // on COUNT/4 + 1 residues exactly (modules/db/backup_tool.cc DumpPart)
  // to keep its parts from overlapping: change both together.
  uint32_t residues = static_cast<uint32_t>(count / 4 + 1);
  if (residues > 1u << 20) residues = 1u << 20;
  Status s = cache::ScanStep(*c.env.ctx, t, cursor, residues, f,
                             [&](const cache::ScanItem& it) { keys.emplace_back(it.key); }, &next);
  if (s == Status::kInvalid) {
    // A number perfcached never issued as a cursor (SCAN -1 ...): Redis
    // accepts any cursor and never errors here; the iteration is over.
    next = 0;
    keys.clear();
  } else if (s != Status::kOk) {
    ReplyStatus(c, s);
    return;
  }
  c.r.Array(2);
  c.r.Bulk(std::to_string(next));
  c.r.Array(keys.size());
  for (const auto& k : keys) c.r.Bulk(k);
}

void CmdDbSize(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  c.r.Int(static_cast<long long>(cache::DbSize(*c.env.ctx, t)));
}

bool FlushArgsOk(CmdCtx& c) {
  if (c.argc() > 2 || (c.argc() == 2 && !EqNoCase(c.arg(1), "ASYNC") && !EqNoCase(c.arg(1), "SYNC"))) {
    c.r.Error(kErrSyntax);
    return false;
  }
  return true;
}

void CmdFlushDb(CmdCtx& c) {
  if (!FlushArgsOk(c)) return;
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  (void)cache::FlushDb(*c.env.ctx, t);
  c.r.Simple("OK");
}

void CmdFlushAll(CmdCtx& c) {
  if (!FlushArgsOk(c)) return;
  for (size_t db = 0; db < c.env.db_names.size(); ++db) {
    cache::TableRef t;
    if (TableForDb(c.env, static_cast<int>(db), &t)) (void)cache::FlushDb(*c.env.ctx, t);
  }
  c.r.Simple("OK");
}

// RENAME / RENAMENX / COPY: one Op, three replies.
void MoveKey(CmdCtx& c, const cache::TableRef& st, const cache::TableRef& dt,
             cache::MoveMode mode, bool replace) {
  bool done = false;
  Status s = cache::MoveKey(*c.env.ctx, st, dt, c.arg(1), c.arg(2), mode, replace, &done);
  if (s == Status::kNotFound && mode == cache::MoveMode::kCopy) {
    c.r.Int(0);
  } else if (s != Status::kOk) {
    ReplyStatus(c, s);  // kNotFound: "ERR no such key"
  } else if (mode == cache::MoveMode::kRename) {
    c.r.Simple("OK");
  } else {
    c.r.Int(done ? 1 : 0);
  }
}

void CmdRename(CmdCtx& c) {
  cache::TableRef t;
  if (CurrentTable(c, &t)) MoveKey(c, t, t, cache::MoveMode::kRename, false);
}
void CmdRenameNx(CmdCtx& c) {
  cache::TableRef t;
  if (CurrentTable(c, &t)) MoveKey(c, t, t, cache::MoveMode::kRenameNx, false);
}

void CmdCopy(CmdCtx& c) {
  cache::TableRef t, dt;
  if (!CurrentTable(c, &t)) return;
  dt = t;
  bool replace = false;
  for (size_t i = 3; i < c.argc(); ++i) {
    if (EqNoCase(c.arg(i), "REPLACE")) {
      replace = true;
    } else if (EqNoCase(c.arg(i), "DB") && i + 1 < c.argc()) {
      int db;
      if (!ParseIntOrReply(c, c.arg(++i), &db)) return;
      if (db < 0 || !TableForDb(c.env, db, &dt)) {
        c.r.Error("ERR DB index is out of range");
        return;
      }
    } else {
      c.r.Error(kErrSyntax);
      return;
    }
  }
  // Redis checks this after the options and before the lookup: an error
  // even when the key does not exist.
  if (dt.h == t.h && c.arg(1) == c.arg(2)) {
    c.r.Error("ERR source and destination objects are the same");
    return;
  }
  MoveKey(c, t, dt, cache::MoveMode::kCopy, replace);
}

// DUMP key: the value in Redis's payload format (db/rdb.h), nil if absent.
void CmdDump(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::Entry e;
  Status s = cache::ExportKey(*c.env.ctx, t, c.arg(1), &e);
  if (s == Status::kNotFound) return c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  std::string payload, err;
  if (!db::RdbDump(e, &payload, &err)) return c.r.Error("ERR " + err);
  c.r.Bulk(payload);
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]: Redis's
// checks in Redis's order (options, BUSYKEY, ttl, payload); a ttl
// already past stores nothing (and with REPLACE removes the old value).
// IDLETIME and FREQ are checked and not kept: access data starts afresh.
void CmdRestore(CmdCtx& c) {
  bool replace = false, absttl = false, idle = false, freq = false;
  for (size_t i = 4; i < c.argc(); ++i) {
    std::string_view o = c.arg(i);
    long long v;
    if (EqNoCase(o, "REPLACE")) {
      replace = true;
    } else if (EqNoCase(o, "ABSTTL")) {
      absttl = true;
    } else if (EqNoCase(o, "IDLETIME") && i + 1 < c.argc() && !freq) {
      if (!ParseLLOrReply(c, c.arg(++i), &v)) return;
      if (v < 0) return c.r.Error("ERR Invalid IDLETIME value, must be >= 0");
      idle = true;
    } else if (EqNoCase(o, "FREQ") && i + 1 < c.argc() && !idle) {
      if (!ParseLLOrReply(c, c.arg(++i), &v)) return;
      if (v < 0 || v > 255) return c.r.Error("ERR Invalid FREQ value, must be >= 0 and <= 255");
      freq = true;
    } else {
      return c.r.Error(kErrSyntax);
    }
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::Ctx& ctx = *c.env.ctx;
  cache::ReadInfo ri;
  if (!replace && cache::Probe(ctx, t, c.arg(1), &ri) == Status::kOk) {
    return c.r.Error("BUSYKEY Target key name already exists.");
  }
  long long ttl;
  if (!ParseLLOrReply(c, c.arg(2), &ttl)) return;
  if (ttl < 0) return c.r.Error("ERR Invalid TTL value, must be >= 0");
  cache::Entry e;
  std::string err, why;
  if (!db::RdbRestore(c.arg(3), &e, &err, &why)) return c.r.Error("ERR " + err);
  e.key = c.arg(1);
  int64_t now = NowMs(c.env);
  if (ttl != 0) e.expire_ms = absttl ? ttl : (ttl > INT64_MAX - now ? INT64_MAX : now + ttl);
  if (e.expire_ms != 0 && e.expire_ms <= now) {
    if (replace) {
      Status d = cache::Del(ctx, t, e.key);
      if (d != Status::kOk && d != Status::kNotFound) return ReplyStatus(c, d);
    }
    return c.r.Simple("OK");
  }
  Status s = cache::ImportEntry(ctx, t, e, &err, !replace);
  if (s == Status::kNotFound && replace) {
    // The expiry passed between our clock read and ImportEntry's: as
    // above, the old value goes (Redis deletes it).
    Status d = cache::Del(ctx, t, e.key);
    if (d != Status::kOk && d != Status::kNotFound) return ReplyStatus(c, d);
  }
  if (s == Status::kExists) return c.r.Error("BUSYKEY Target key name already exists.");
  if (s == Status::kInvalid) return c.r.Error(std::string("ERR ") + db::kRdbBadFormat);
  if (s != Status::kOk && s != Status::kNotFound) return ReplyStatus(c, s);
  c.r.Simple("OK");
}

// MOVE key db: 1 if moved, 0 if the key is absent here or present there.
void CmdMove(CmdCtx& c) {
  long long db;
  if (!ParseLLOrReply(c, c.arg(2), &db)) return;
  cache::TableRef t, dt;
  if (!CurrentTable(c, &t)) return;
  if (db < 0 || db > INT32_MAX || !TableForDb(c.env, static_cast<int>(db), &dt)) {
    return c.r.Error("ERR DB index is out of range");
  }
  if (dt.h == t.h) return c.r.Error("ERR source and destination objects are the same");
  bool done = false;
  Status s = cache::MoveKey(*c.env.ctx, t, dt, c.arg(1), c.arg(1), cache::MoveMode::kRenameNx,
                            false, &done);
  if (s == Status::kNotFound) s = Status::kOk;
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(done ? 1 : 0);
}

void CmdTouch(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t n = 0;
  Status st = cache::TouchKeys(*c.env.ctx, t, c.argv.subspan(1), &n);
  ReplyInt(c, st, n);
}

void CmdRandomKey(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string key;
  if (cache::RandomKey(*c.env.ctx, t, &key) == Status::kOk) {
    c.r.Bulk(key);
  } else {
    c.r.Null();
  }
}

constexpr const char* kObjectSubs[] = {"object|encoding", "object|refcount", "object|idletime",
                                       "object|freq", "object|help", nullptr};

constexpr CommandSpec kKeysCommands[] = {
    {"del", -2, kWrite, &CmdDel, 1, -1, 1},
    {"unlink", -2, kWrite | kFast, &CmdDel, 1, -1, 1},
    {"exists", -2, kRead | kFast, &CmdExists, 1, -1, 1},
    {"type", 2, kRead | kFast, &CmdType, 1, 1, 1},
    {"move", 3, kWrite | kFast, &CmdMove, 1, 1, 1},
    {"object", -2, 0, &CmdObject, 0, 0, 0, "generic", kObjectSubs},
    {"expire", -3, kWrite | kFast, &CmdExpire, 1, 1, 1},
    {"pexpire", -3, kWrite | kFast, &CmdPExpire, 1, 1, 1},
    {"expireat", -3, kWrite | kFast, &CmdExpireAt, 1, 1, 1},
    {"pexpireat", -3, kWrite | kFast, &CmdPExpireAt, 1, 1, 1},
    {"ttl", 2, kRead | kFast, &CmdTtl, 1, 1, 1},
    {"pttl", 2, kRead | kFast, &CmdPTtl, 1, 1, 1},
    {"expiretime", 2, kRead | kFast, &CmdExpireTime, 1, 1, 1},
    {"pexpiretime", 2, kRead | kFast, &CmdPExpireTime, 1, 1, 1},
    {"persist", 2, kWrite | kFast, &CmdPersist, 1, 1, 1},
    {"keys", 2, kRead, &CmdKeys, 0, 0, 0},
    {"scan", -2, kRead, &CmdScan, 0, 0, 0},
    {"dbsize", 1, kRead | kFast, &CmdDbSize, 0, 0, 0, "server"},
    {"flushdb", -1, kWrite, &CmdFlushDb, 0, 0, 0, "server"},
    {"flushall", -1, kWrite, &CmdFlushAll, 0, 0, 0, "server"},
    {"rename", 3, kWrite, &CmdRename, 1, 2, 1},
    {"renamenx", 3, kWrite | kFast, &CmdRenameNx, 1, 2, 1},
    {"randomkey", 1, kRead, &CmdRandomKey, 0, 0, 0},
    {"touch", -2, kRead | kFast, &CmdTouch, 1, -1, 1},
    {"copy", -3, kWrite | kDenyOom, &CmdCopy, 1, 2, 1},
    {"dump", 2, kRead, &CmdDump, 1, 1, 1},
    {"restore", -4, kWrite | kDenyOom, &CmdRestore, 1, 1, 1},
};

}  // namespace

void RegisterKeysFamily(Env& e) { Register(e, kKeysCommands); }

}  // namespace modules::resp
