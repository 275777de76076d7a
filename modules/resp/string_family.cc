// perfcached — RESP string commands (GET SET ... INCRBYFLOAT), as Redis answers them.
// Copyright (c) 2026 the perfcached authors.
#include "modules/resp/command.h"

namespace modules::resp {
namespace {

using mem::Status;

size_t MaxValue(const CmdCtx& c) { return static_cast<size_t>(c.env.cfg->max_value_mb) << 20; }

// Reply a bulk string, nil for kNotFound, else the status's error.
void ReplyValue(CmdCtx& c, Status s, std::string_view v) {
  if (s == Status::kOk) {
    c.r.Bulk(v);
  } else if (s == Status::kNotFound) {
    c.r.Null();
  } else {
    ReplyStatus(c, s);
  }
}

void ReplyInt(CmdCtx& c, Status s, long long n) {
  if (s == Status::kOk) {
    c.r.Int(n);
  } else {
    ReplyStatus(c, s);
  }
}

void ReplyOk(CmdCtx& c, Status s) {
  if (s == Status::kOk) {
    c.r.Simple("OK");
  } else {
    ReplyStatus(c, s);
  }
}

// SET / GETEX options, parsed as Redis 7.0 parses them: every option
// first (a bad combination is a syntax error whatever the numbers), the
// expiry's number only later (cache::ResolveExpire). Options repeat freely
// (EX 1 EX 2: the last wins); an option word is read up to its first NUL
// byte, as Redis compares C strings.
struct ExpireOpt {
  bool nx = false, xx = false, get = false, keepttl = false;
  cache::ExpireArg expire;
};

bool ParseExpireOpts(CmdCtx& c, size_t from, bool is_set, ExpireOpt* o) {
  using K = cache::ExpireKind;
  for (size_t i = from; i < c.argc(); ++i) {
    std::string_view a = c.arg(i);
    a = a.substr(0, a.find('\0'));
    bool has_next = i + 1 < c.argc();
    K k = o->expire.kind;
    // The one expiry kind already given (or none): another kind conflicts.
    auto other_expiry = [&](K mine) { return k != K::kNone && k != K::kPersist && k != mine; };
    K want = EqNoCase(a, "EX")     ? K::kEx
             : EqNoCase(a, "PX")   ? K::kPx
             : EqNoCase(a, "EXAT") ? K::kExAt
             : EqNoCase(a, "PXAT") ? K::kPxAt
                                   : K::kNone;
    if (is_set && EqNoCase(a, "NX") && !o->xx) {
      o->nx = true;
    } else if (is_set && EqNoCase(a, "XX") && !o->nx) {
      o->xx = true;
    } else if (is_set && EqNoCase(a, "GET")) {
      o->get = true;
    } else if (is_set && EqNoCase(a, "KEEPTTL") && k == K::kNone) {
      o->keepttl = true;
    } else if (!is_set && EqNoCase(a, "PERSIST") && (k == K::kNone || k == K::kPersist)) {
      o->expire.kind = K::kPersist;
    } else if (want != K::kNone && !o->keepttl && k != K::kPersist && !other_expiry(want) &&
               has_next) {
      o->expire = {want, c.arg(i + 1)};
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
  // general path (the GET Op).
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
  Status st = cache::StrGet(*c.env.ctx, t, c.arg(1), &v);
  ReplyValue(c, st, v);
}

void CmdSet(CmdCtx& c) {
  cache::TableRef t;
  ExpireOpt o;
  if (!ParseExpireOpts(c, 3, true, &o)) return;
  cache::StrSetArgs a;
  // SET reads the expiry's number after every option, before the key.
  if (Status es = cache::ResolveExpire(NowMs(c.env), o.expire, &a.expire_ms); es != Status::kOk) {
    ReplyStatus(c, es);
    return;
  }
  if (!CurrentTable(c, &t)) return;
  a.keep_ttl = o.keepttl;
  a.cond = o.nx ? cache::Cond::kNx : o.xx ? cache::Cond::kXx : cache::Cond::kAlways;
  a.get = o.get;
  cache::StrSetResult r;
  Status s = cache::StrSet(*c.env.ctx, t, c.arg(1), c.arg(2), a, &r);
  if (s == Status::kOk && !o.get) {
    c.r.Simple("OK");
  } else if (s == Status::kOk || s == Status::kExists || s == Status::kNotExists) {
    if (r.had_old) {
      c.r.Bulk(r.old);
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
  cache::StrSetArgs a;
  a.cond = cache::Cond::kNx;
  cache::StrSetResult r;
  Status s = cache::StrSet(*c.env.ctx, t, c.arg(1), c.arg(2), a, &r);
  ReplyInt(c, s == Status::kExists ? Status::kOk : s, s == Status::kOk ? 1 : 0);
}

void SetWithTtl(CmdCtx& c, bool ms) {
  long long v;
  if (!ParseLLOrReply(c, c.arg(2), &v)) return;
  cache::StrSetArgs a;
  Status s = cache::AbsoluteExpire(NowMs(c.env), v, ms ? 1 : 1000, true, true, &a.expire_ms);
  if (s != Status::kOk) {
    ReplyStatus(c, s);
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::StrSetResult r;
  ReplyOk(c, cache::StrSet(*c.env.ctx, t, c.arg(1), c.arg(3), a, &r));
}
void CmdSetEx(CmdCtx& c) { SetWithTtl(c, false); }
void CmdPSetEx(CmdCtx& c) { SetWithTtl(c, true); }

void CmdGetSet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string old;
  bool had = false;
  Status s = cache::GetSet(*c.env.ctx, t, c.arg(1), c.arg(2), &old, &had);
  ReplyValue(c, s == Status::kOk && !had ? Status::kNotFound : s, old);
}

void CmdGetDel(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string& v = c.env.scratch;
  Status st = cache::GetDel(*c.env.ctx, t, c.arg(1), &v);
  ReplyValue(c, st, v);
}

void CmdGetEx(CmdCtx& c) {
  cache::TableRef t;
  ExpireOpt o;
  if (!ParseExpireOpts(c, 2, false, &o) || !CurrentTable(c, &t)) return;
  std::string& v = c.env.scratch;
  Status s = cache::GetEx(*c.env.ctx, t, c.arg(1), o.expire, &v);  // reads the number
  ReplyValue(c, s, v);
}

void CmdMGet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  c.r.Array(c.argc() - 1);
  cache::MGet(*c.env.ctx, t, c.argv.subspan(1), [&](size_t, const std::string* v) {
    if (v) {
      c.r.Bulk(*v);
    } else {
      c.r.Null();
    }
  });
}

void CmdMSet(CmdCtx& c) {
  if (c.argc() % 2 != 1) {
    WrongArity(c, c.arg(0));
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  ReplyOk(c, cache::MSet(*c.env.ctx, t, c.argv.subspan(1)));
}

void CmdMSetNx(CmdCtx& c) {
  if (c.argc() % 2 != 1) {
    WrongArity(c, c.arg(0));
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool all_set = false;
  Status s = cache::MSetNx(*c.env.ctx, t, c.argv.subspan(1), &all_set);
  ReplyInt(c, s, all_set ? 1 : 0);
}

void CmdAppend(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t len = 0;
  Status st = cache::Append(*c.env.ctx, t, c.arg(1), c.arg(2), MaxValue(c), &len);
  ReplyInt(c, st, len);
}

void CmdStrLen(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t len = 0;
  Status st = cache::StrLen(*c.env.ctx, t, c.arg(1), &len);
  ReplyInt(c, st, len);
}

void CmdGetRange(CmdCtx& c) {
  long long start, end;
  if (!ParseLLOrReply(c, c.arg(2), &start) || !ParseLLOrReply(c, c.arg(3), &end)) return;
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string out;
  Status st = cache::GetRange(*c.env.ctx, t, c.arg(1), start, end, &out);
  ReplyValue(c, st, out);
}

void CmdSetRange(CmdCtx& c) {
  long long off;
  if (!ParseLLOrReply(c, c.arg(2), &off)) return;
  if (off < 0) {
    ReplyStatus(c, Status::kOutOfRange);  // before the table: as Redis
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t len = 0;
  Status st = cache::SetRange(*c.env.ctx, t, c.arg(1), off, c.arg(3), MaxValue(c), &len);
  ReplyInt(c, st, len);
}

void IncrDecr(CmdCtx& c, long long delta, bool decr) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t r = 0;
  Status s = decr ? cache::DecrBy(*c.env.ctx, t, c.arg(1), delta, &r)
                  : cache::IncrBy(*c.env.ctx, t, c.arg(1), delta, &r);
  ReplyInt(c, s, r);
}
void CmdIncr(CmdCtx& c) { IncrDecr(c, 1, false); }
void CmdDecr(CmdCtx& c) { IncrDecr(c, 1, true); }
void CmdIncrBy(CmdCtx& c) {
  long long d;
  if (ParseLLOrReply(c, c.arg(2), &d)) IncrDecr(c, d, false);
}
void CmdDecrBy(CmdCtx& c) {
  long long d;
  if (ParseLLOrReply(c, c.arg(2), &d)) IncrDecr(c, d, true);
}

void CmdIncrByFloat(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  long double incr;
  if (!cache::ParseLongDouble(c.arg(2), &incr)) {
    // Redis looks at the key's type before it parses the increment.
    cache::ReadInfo ri;
    bool other = cache::Probe(*c.env.ctx, t, c.arg(1), &ri) == Status::kOk &&
                 ri.type != cache::kTypeString && ri.type != cache::kTypeInt;
    ReplyStatus(c, other ? Status::kWrongType : Status::kNotFloat);
    return;
  }
  std::string nv;
  Status st = cache::IncrByFloat(*c.env.ctx, t, c.arg(1), incr, &nv);
  ReplyValue(c, st, nv);
}

constexpr CommandSpec kStringCommands[] = {
    {"get", 2, kRead | kFast, &CmdGet, 1, 1, 1},
    {"set", -3, kWrite | kDenyOom, &CmdSet, 1, 1, 1},
    {"setnx", 3, kWrite | kFast | kDenyOom, &CmdSetNx, 1, 1, 1},
    {"setex", 4, kWrite | kDenyOom, &CmdSetEx, 1, 1, 1},
    {"psetex", 4, kWrite | kDenyOom, &CmdPSetEx, 1, 1, 1},
    {"getset", 3, kWrite | kFast | kDenyOom, &CmdGetSet, 1, 1, 1},
    {"getdel", 2, kWrite | kFast, &CmdGetDel, 1, 1, 1},
    {"getex", -2, kWrite | kFast, &CmdGetEx, 1, 1, 1},
    {"mget", -2, kRead | kFast, &CmdMGet, 1, -1, 1},
    {"mset", -3, kWrite | kDenyOom, &CmdMSet, 1, -1, 2},
    {"msetnx", -3, kWrite | kDenyOom, &CmdMSetNx, 1, -1, 2},
    {"append", 3, kWrite | kFast | kDenyOom, &CmdAppend, 1, 1, 1},
    {"strlen", 2, kRead | kFast, &CmdStrLen, 1, 1, 1},
    {"getrange", 4, kRead, &CmdGetRange, 1, 1, 1},
    {"substr", 4, kRead, &CmdGetRange, 1, 1, 1},
    {"setrange", 4, kWrite | kDenyOom, &CmdSetRange, 1, 1, 1},
    {"incr", 2, kWrite | kFast | kDenyOom, &CmdIncr, 1, 1, 1},
    {"decr", 2, kWrite | kFast | kDenyOom, &CmdDecr, 1, 1, 1},
    {"incrby", 3, kWrite | kFast | kDenyOom, &CmdIncrBy, 1, 1, 1},
    {"decrby", 3, kWrite | kFast | kDenyOom, &CmdDecrBy, 1, 1, 1},
    {"incrbyfloat", 3, kWrite | kFast | kDenyOom, &CmdIncrByFloat, 1, 1, 1},
};

}  // namespace

void RegisterStringFamily(Env& e) { Register(e, kStringCommands); }

}  // namespace modules::resp
