// perfcached — RESP string commands (GET SET ... INCRBYFLOAT), as Redis answers them.
// Copyright (c) 2026 the perfcached authors.
#include <cmath>
#include <cstring>
#include <limits>

#include "modules/resp/command.h"

namespace modules::resp {
namespace {

using mem::Status;

bool IsStringType(uint8_t t) { return t == cache::kTypeString || t == cache::kTypeInt; }

// The string value of key: kOk, kNotFound, kWrongType.
Status ReadString(CmdCtx& c, const cache::TableRef& t, std::string_view key, std::string* out,
                  cache::ReadInfo* ri) {
  cache::ReadInfo tmp;
  if (!ri) ri = &tmp;
  Status s = cache::GetString(*c.env.ctx, t, key, out, ri);
  if (s == Status::kOk && !IsStringType(ri->type)) return Status::kWrongType;
  return s;
}

// ReadString, replying nil (absent) or the error itself: false means the
// reply is already written (Redis's ...OrReply convention).
bool ReadStringOrReply(CmdCtx& c, const cache::TableRef& t, std::string_view key, std::string* out,
                       cache::ReadInfo* ri) {
  Status s = ReadString(c, t, key, out, ri);
  if (s == Status::kOk) return true;
  if (s == Status::kNotFound) {
    c.r.Null();
  } else {
    ReplyStatus(c, s);
  }
  return false;
}

size_t MaxValue(const CmdCtx& c) { return static_cast<size_t>(c.env.cfg->max_value_mb) << 20; }

// SET / GETEX expiry options. Returns false after replying.
struct ExpireOpt {
  bool nx = false, xx = false, get = false, keepttl = false, persist = false;
  bool has_expire = false;
  int64_t expire_ms = 0;  // absolute
};

bool ParseExpireOpts(CmdCtx& c, size_t from, bool is_set, const char* cmd, ExpireOpt* o) {
  int64_t now = NowMs(c.env);
  for (size_t i = from; i < c.argc(); ++i) {
    std::string_view a = c.arg(i);
    bool has_next = i + 1 < c.argc();
    if (is_set && EqNoCase(a, "NX") && !o->xx) {
      o->nx = true;
    } else if (is_set && EqNoCase(a, "XX") && !o->nx) {
      o->xx = true;
    } else if (is_set && EqNoCase(a, "GET")) {
      o->get = true;
    } else if (is_set && EqNoCase(a, "KEEPTTL") && !o->has_expire) {
      o->keepttl = true;
    } else if (!is_set && EqNoCase(a, "PERSIST") && !o->has_expire) {
      o->persist = true;
    } else if ((EqNoCase(a, "EX") || EqNoCase(a, "PX") || EqNoCase(a, "EXAT") ||
                EqNoCase(a, "PXAT")) &&
               !o->keepttl && !o->persist && !o->has_expire && has_next) {
      long long v;
      if (!ParseLL(c.arg(i + 1), &v)) {
        c.r.Error(kErrNotInt);
        return false;
      }
      bool secs = EqNoCase(a, "EX") || EqNoCase(a, "EXAT");
      bool rel = EqNoCase(a, "EX") || EqNoCase(a, "PX");
      long long ms = v;
      if (v <= 0 || (secs && __builtin_mul_overflow(v, 1000LL, &ms)) ||
          (rel && __builtin_add_overflow(ms, now, &ms))) {
        c.r.Error(std::string("ERR invalid expire time in '") + cmd + "' command");
        return false;
      }
      o->has_expire = true;
      o->expire_ms = ms;
      ++i;
    } else {
      c.r.Error(kErrSyntax);
      return false;
    }
  }
  return true;
}

void CmdGet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  // Fast path: copy the value straight into a reused buffer (no resize,
  // no memset), then into the reply. Large values and counters take the
  // general path.
  cache::ReadInfo ri;
  std::vector<char>& buf = c.env.value_buf;
  Status s = cache::Get(*c.env.ctx, t, c.arg(1), std::span<char>(buf.data(), buf.size()), &ri);
  if (s == Status::kOk && ri.type == cache::kTypeString) {
    c.r.Bulk(std::string_view(buf.data(), ri.vlen));
    return;
  }
  if (s == Status::kNotFound) {
    c.r.Null();
    return;
  }
  std::string& v = c.env.scratch;
  if (ReadStringOrReply(c, t, c.arg(1), &v, nullptr)) c.r.Bulk(v);
}

void CmdSet(CmdCtx& c) {
  cache::TableRef t;
  ExpireOpt o;
  if (!ParseExpireOpts(c, 3, true, "set", &o) || !CurrentTable(c, &t)) return;
  std::string old;
  bool had_old = false;
  if (o.get) {
    Status s = ReadString(c, t, c.arg(1), &old, nullptr);
    if (s == Status::kWrongType) {
      c.r.Error(kErrWrongType);
      return;
    }
    had_old = s == Status::kOk;
  }
  cache::StoreOpts so;
  so.expire_ms = o.has_expire ? o.expire_ms : 0;
  so.keep_ttl = o.keepttl;
  so.cond = o.nx ? cache::Cond::kNx : o.xx ? cache::Cond::kXx : cache::Cond::kAlways;
  bool had = false;
  if (o.get) {
    so.old_value = &old;
    so.had_old = &had;
  }
  Status s = cache::Set(*c.env.ctx, t, c.arg(1), c.arg(2), so);
  if (s == Status::kOk) {
    if (!o.get) {
      c.r.Simple("OK");
    } else if (had) {
      c.r.Bulk(old);
    } else {
      c.r.Null();
    }
  } else if (s == Status::kExists || s == Status::kNotExists) {
    if (o.get && had_old) {
      c.r.Bulk(old);
    } else {
      c.r.Null();
    }
  } else {
    ReplyStatus(c, s);
  }
}

void CmdSetNx(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::StoreOpts so;
  so.cond = cache::Cond::kNx;
  Status s = cache::Set(*c.env.ctx, t, c.arg(1), c.arg(2), so);
  if (s == Status::kOk || s == Status::kExists) {
    c.r.Int(s == Status::kOk ? 1 : 0);
  } else {
    ReplyStatus(c, s);
  }
}

void SetWithTtl(CmdCtx& c, bool ms, const char* cmd) {
  cache::TableRef t;
  long long v;
  if (!ParseLLOrReply(c, c.arg(2), &v)) return;
  long long mul = ms ? 1 : 1000, abs_ms;
  if (v <= 0 || __builtin_mul_overflow(v, mul, &abs_ms) ||
      __builtin_add_overflow(abs_ms, NowMs(c.env), &abs_ms)) {
    c.r.Error(std::string("ERR invalid expire time in '") + cmd + "' command");
    return;
  }
  if (!CurrentTable(c, &t)) return;
  cache::StoreOpts so;
  so.expire_ms = abs_ms;
  Status s = cache::Set(*c.env.ctx, t, c.arg(1), c.arg(3), so);
  if (s == Status::kOk) {
    c.r.Simple("OK");
  } else {
    ReplyStatus(c, s);
  }
}
void CmdSetEx(CmdCtx& c) { SetWithTtl(c, false, "setex"); }
void CmdPSetEx(CmdCtx& c) { SetWithTtl(c, true, "psetex"); }

void CmdGetSet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string old;
  Status s = ReadString(c, t, c.arg(1), &old, nullptr);
  if (s == Status::kWrongType) {
    c.r.Error(kErrWrongType);
    return;
  }
  bool had = false;
  cache::StoreOpts so;
  so.old_value = &old;
  so.had_old = &had;
  s = cache::Set(*c.env.ctx, t, c.arg(1), c.arg(2), so);
  if (s != Status::kOk) {
    ReplyStatus(c, s);
  } else if (had) {
    c.r.Bulk(old);
  } else {
    c.r.Null();
  }
}

void CmdGetDel(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  for (int tries = 0; tries < 100; ++tries) {
    std::string v;
    cache::ReadInfo ri;
    if (!ReadStringOrReply(c, t, c.arg(1), &v, &ri)) return;
    Status s = cache::DelIfVersion(*c.env.ctx, t, c.arg(1), ri.version);
    if (s == Status::kOk) {
      c.r.Bulk(v);
      return;
    }
    if (s == Status::kNotFound) {
      c.r.Null();
      return;
    }
    // kVersion: changed between the read and the delete; read again.
  }
  c.r.Error("ERR busy key, try again");
}

void CmdGetEx(CmdCtx& c) {
  cache::TableRef t;
  ExpireOpt o;
  if (!ParseExpireOpts(c, 2, false, "getex", &o) || !CurrentTable(c, &t)) return;
  std::string v;
  if (!ReadStringOrReply(c, t, c.arg(1), &v, nullptr)) return;
  if (o.has_expire || o.persist) {
    bool changed;
    (void)cache::SetExpire(*c.env.ctx, t, c.arg(1), o.persist ? 0 : o.expire_ms,
                           cache::ExpireCond::kAlways, &changed);
  }
  c.r.Bulk(v);
}

void CmdMGet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  c.r.Array(c.argc() - 1);
  std::string& v = c.env.scratch;
  for (size_t i = 1; i < c.argc(); ++i) {
    if (ReadString(c, t, c.arg(i), &v, nullptr) == Status::kOk) {
      c.r.Bulk(v);
    } else {
      c.r.Null();
    }
  }
}

void CmdMSet(CmdCtx& c) {
  if (c.argc() % 2 != 1) {
    WrongArity(c, c.arg(0));
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  for (size_t i = 1; i < c.argc(); i += 2) {
    Status s = cache::Set(*c.env.ctx, t, c.arg(i), c.arg(i + 1));
    if (s != Status::kOk) {
      ReplyStatus(c, s);
      return;
    }
  }
  c.r.Simple("OK");
}

void CmdMSetNx(CmdCtx& c) {
  if (c.argc() % 2 != 1) {
    WrongArity(c, c.arg(0));
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::string_view> kv;
  kv.reserve(c.argc() - 1);
  for (size_t i = 1; i < c.argc(); ++i) kv.push_back(c.arg(i));
  bool all_set = false;
  Status s = cache::MSetNx(*c.env.ctx, t, kv, &all_set);
  if (s == Status::kOk) {
    c.r.Int(all_set ? 1 : 0);
  } else {
    ReplyStatus(c, s);
  }
}

// Read-modify-write with a version check: `fn` turns the old value (absent
// = empty, *exists false) into the new one; the store only lands if nobody
// wrote the key meanwhile, else it runs again.
template <typename Fn>
Status Rmw(CmdCtx& c, const cache::TableRef& t, std::string_view key, Fn fn, bool keep_ttl,
           std::string* result) {
  for (int tries = 0; tries < 1000; ++tries) {
    std::string old;
    cache::ReadInfo ri;
    Status s = ReadString(c, t, key, &old, &ri);
    if (s != Status::kOk && s != Status::kNotFound) return s;
    bool exists = s == Status::kOk;
    Status fs = fn(exists, old, result);
    if (fs != Status::kOk) return fs;
    cache::StoreOpts so;
    so.check_version = true;
    so.expect_version = exists ? ri.version : 0;
    so.keep_ttl = keep_ttl;
    s = cache::Set(*c.env.ctx, t, key, *result, so);
    if (s != Status::kVersion) return s;
  }
  return Status::kBusy;
}

void CmdAppend(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string_view tail = c.arg(2);
  size_t maxv = MaxValue(c);
  std::string nv;
  Status s = Rmw(
      c, t, c.arg(1),
      [&](bool, const std::string& old, std::string* out) {
        if (old.size() + tail.size() > maxv) return Status::kTooBig;
        out->assign(old);
        out->append(tail);
        return Status::kOk;
      },
      true, &nv);
  if (s == Status::kOk) {
    c.r.Int(static_cast<long long>(nv.size()));
  } else {
    ReplyStatus(c, s);
  }
}

void CmdStrLen(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string& v = c.env.scratch;
  Status s = ReadString(c, t, c.arg(1), &v, nullptr);
  if (s == Status::kOk || s == Status::kNotFound) {
    c.r.Int(s == Status::kOk ? static_cast<long long>(v.size()) : 0);
  } else {
    ReplyStatus(c, s);
  }
}

void CmdGetRange(CmdCtx& c) {
  long long start, end;
  if (!ParseLLOrReply(c, c.arg(2), &start) || !ParseLLOrReply(c, c.arg(3), &end)) return;
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string& v = c.env.scratch;
  Status s = ReadString(c, t, c.arg(1), &v, nullptr);
  if (s == Status::kNotFound) {
    c.r.Bulk("");
    return;
  }
  if (s != Status::kOk) {
    ReplyStatus(c, s);
    return;
  }
  long long len = static_cast<long long>(v.size());
  if (start < 0 && end < 0 && start > end) {
    c.r.Bulk("");
    return;
  }
  if (start < 0) start = len + start;
  if (end < 0) end = len + end;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (len == 0 || start > end) {
    c.r.Bulk("");
    return;
  }
  c.r.Bulk(std::string_view(v).substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

void CmdSetRange(CmdCtx& c) {
  long long off;
  if (!ParseLLOrReply(c, c.arg(2), &off)) return;
  if (off < 0) {
    c.r.Error("ERR offset is out of range");
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string_view val = c.arg(3);
  if (val.empty()) {
    std::string& v = c.env.scratch;
    Status s = ReadString(c, t, c.arg(1), &v, nullptr);
    if (s == Status::kOk || s == Status::kNotFound) {
      c.r.Int(s == Status::kOk ? static_cast<long long>(v.size()) : 0);
    } else {
      ReplyStatus(c, s);
    }
    return;
  }
  if (static_cast<unsigned long long>(off) + val.size() > MaxValue(c)) {
    c.r.Error(kErrTooBig);
    return;
  }
  std::string nv;
  Status s = Rmw(
      c, t, c.arg(1),
      [&](bool, const std::string& old, std::string* out) {
        out->assign(old);
        size_t need = static_cast<size_t>(off) + val.size();
        if (out->size() < need) out->resize(need, '\0');
        std::memcpy(out->data() + off, val.data(), val.size());
        return Status::kOk;
      },
      true, &nv);
  if (s == Status::kOk) {
    c.r.Int(static_cast<long long>(nv.size()));
  } else {
    ReplyStatus(c, s);
  }
}

void IncrDecr(CmdCtx& c, long long delta) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t r;
  Status s = cache::IncrBy(*c.env.ctx, t, c.arg(1), delta, &r);
  if (s == Status::kOk) {
    c.r.Int(r);
  } else {
    ReplyStatus(c, s);
  }
}
void CmdIncr(CmdCtx& c) { IncrDecr(c, 1); }
void CmdDecr(CmdCtx& c) { IncrDecr(c, -1); }
void CmdIncrBy(CmdCtx& c) {
  long long d;
  if (ParseLLOrReply(c, c.arg(2), &d)) IncrDecr(c, d);
}
void CmdDecrBy(CmdCtx& c) {
  long long d;
  if (!ParseLLOrReply(c, c.arg(2), &d)) return;
  if (d == std::numeric_limits<long long>::min()) {
    c.r.Error("ERR decrement would overflow");
    return;
  }
  IncrDecr(c, -d);
}

void CmdIncrByFloat(CmdCtx& c) {
  long double incr;
  if (!ParseLongDouble(c.arg(2), &incr)) {
    c.r.Error(kErrNotFloat);
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool bad_old = false, nan = false;
  std::string nv;
  Status s = Rmw(
      c, t, c.arg(1),
      [&](bool exists, const std::string& old, std::string* out) {
        long double cur = 0;
        if (exists && !ParseLongDouble(old, &cur)) {
          bad_old = true;
          return Status::kInvalid;
        }
        long double r = cur + incr;
        if (std::isnan(r) || std::isinf(r)) {
          nan = true;
          return Status::kInvalid;
        }
        *out = FormatLongDouble(r);
        return Status::kOk;
      },
      true, &nv);
  if (s == Status::kOk) {
    c.r.Bulk(nv);
  } else if (bad_old) {
    c.r.Error(kErrNotFloat);
  } else if (nan) {
    c.r.Error("ERR increment would produce NaN or Infinity");
  } else {
    ReplyStatus(c, s);
  }
}

constexpr CommandSpec kStringCommands[] = {
    {"get", 2, kRead | kFast, &CmdGet, 1, 1, 1},
    {"set", -3, kWrite, &CmdSet, 1, 1, 1},
    {"setnx", 3, kWrite | kFast, &CmdSetNx, 1, 1, 1},
    {"setex", 4, kWrite, &CmdSetEx, 1, 1, 1},
    {"psetex", 4, kWrite, &CmdPSetEx, 1, 1, 1},
    {"getset", 3, kWrite | kFast, &CmdGetSet, 1, 1, 1},
    {"getdel", 2, kWrite | kFast, &CmdGetDel, 1, 1, 1},
    {"getex", -2, kWrite | kFast, &CmdGetEx, 1, 1, 1},
    {"mget", -2, kRead | kFast, &CmdMGet, 1, -1, 1},
    {"mset", -3, kWrite, &CmdMSet, 1, -1, 2},
    {"msetnx", -3, kWrite, &CmdMSetNx, 1, -1, 2},
    {"append", 3, kWrite | kFast, &CmdAppend, 1, 1, 1},
    {"strlen", 2, kRead | kFast, &CmdStrLen, 1, 1, 1},
    {"getrange", 4, kRead, &CmdGetRange, 1, 1, 1},
    {"substr", 4, kRead, &CmdGetRange, 1, 1, 1},
    {"setrange", 4, kWrite, &CmdSetRange, 1, 1, 1},
    {"incr", 2, kWrite | kFast, &CmdIncr, 1, 1, 1},
    {"decr", 2, kWrite | kFast, &CmdDecr, 1, 1, 1},
    {"incrby", 3, kWrite | kFast, &CmdIncrBy, 1, 1, 1},
    {"decrby", 3, kWrite | kFast, &CmdDecrBy, 1, 1, 1},
    {"incrbyfloat", 3, kWrite | kFast, &CmdIncrByFloat, 1, 1, 1},
};

}  // namespace

void RegisterStringFamily(Env& e) { Register(e, kStringCommands); }

}  // namespace modules::resp
