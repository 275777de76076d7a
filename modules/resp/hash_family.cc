// perfcached — RESP hash commands (HSET ... HRANDFIELD): parse, one Op
// (cache/hash_ops.h), reply as Redis does.
// Copyright (c) 2026 the perfcached authors.
#include <charconv>
#include <climits>

#include "modules/resp/command.h"

namespace modules::resp {
namespace {

using mem::Status;

// Hash-specific texts of Redis (the stored value, not the argument, is bad).
constexpr char kErrHashNotInt[] = "ERR hash value is not an integer";
constexpr char kErrHashNotFloat[] = "ERR hash value is not a float";

void ReplyPairs(CmdCtx& c, const cache::FieldValues& fv, bool fields, bool values) {
  c.r.Array(fv.size() * ((fields ? 1 : 0) + (values ? 1 : 0)));
  for (const auto& [f, v] : fv) {
    if (fields) c.r.Bulk(f);
    if (values) c.r.Bulk(v);
  }
}

std::vector<std::string_view> Rest(CmdCtx& c, size_t from) {
  return std::vector<std::string_view>(c.argv.begin() + static_cast<ptrdiff_t>(from), c.argv.end());
}

void CmdHSet(CmdCtx& c) {
  if (c.argc() % 2 != 0) {
    WrongArity(c, c.arg(0));
    return;
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t added = 0;
  Status s = cache::HSet(*c.env.ctx, t, c.arg(1), Rest(c, 2), &added);
  if (s != Status::kOk) return ReplyStatus(c, s);
  if (EqNoCase(c.arg(0), "hmset")) {
    c.r.Simple("OK");
  } else {
    c.r.Int(static_cast<long long>(added));
  }
}

void CmdHSetNx(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool set = false;
  Status s = cache::HSetNx(*c.env.ctx, t, c.arg(1), c.arg(2), c.arg(3), &set);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(set ? 1 : 0);
}

void CmdHGet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string v;
  Status s = cache::HGet(*c.env.ctx, t, c.arg(1), c.arg(2), &v);
  if (s == Status::kNotFound) return c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Bulk(v);
}

void CmdHMGet(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::optional<std::string>> out;
  Status s = cache::HMGet(*c.env.ctx, t, c.arg(1), Rest(c, 2), &out);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Array(out.size());
  for (const auto& v : out) {
    if (v) {
      c.r.Bulk(*v);
    } else {
      c.r.Null();
    }
  }
}

void GetAll(CmdCtx& c, cache::HPart part) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::FieldValues fv;
  Status s = cache::HGetAll(*c.env.ctx, t, c.arg(1), part, &fv);
  if (s != Status::kOk) return ReplyStatus(c, s);
  ReplyPairs(c, fv, part != cache::HPart::kValues, part != cache::HPart::kFields);
}
void CmdHGetAll(CmdCtx& c) { GetAll(c, cache::HPart::kBoth); }
void CmdHKeys(CmdCtx& c) { GetAll(c, cache::HPart::kFields); }
void CmdHVals(CmdCtx& c) { GetAll(c, cache::HPart::kValues); }

void CmdHDel(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::HDel(*c.env.ctx, t, c.arg(1), Rest(c, 2), &n);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(static_cast<long long>(n));
}

void CmdHLen(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::HLen(*c.env.ctx, t, c.arg(1), &n);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(static_cast<long long>(n));
}

void CmdHExists(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool e = false;
  Status s = cache::HExists(*c.env.ctx, t, c.arg(1), c.arg(2), &e);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(e ? 1 : 0);
}

void CmdHStrLen(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::HStrLen(*c.env.ctx, t, c.arg(1), c.arg(2), &n);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(static_cast<long long>(n));
}

void CmdHIncrBy(CmdCtx& c) {
  long long d;
  if (!ParseLLOrReply(c, c.arg(3), &d)) return;
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  int64_t r = 0;
  Status s = cache::HIncrBy(*c.env.ctx, t, c.arg(1), c.arg(2), d, &r);
  if (s == Status::kNotInteger) return c.r.Error(kErrHashNotInt);
  if (s == Status::kOverflow) return c.r.Error("ERR increment or decrement would overflow");
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(r);
}

void CmdHIncrByFloat(CmdCtx& c) {
  long double d;
  if (!ParseLongDouble(c.arg(3), &d)) return c.r.Error(kErrNotFloat);
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::string r;
  Status s = cache::HIncrByFloat(*c.env.ctx, t, c.arg(1), c.arg(2), d, &r);
  if (s == Status::kNotFloat) return c.r.Error(kErrHashNotFloat);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Bulk(r);
}

}  // namespace

// SCAN-family options after the cursor (HSCAN / SSCAN): MATCH, COUNT.
bool ParseScanArgs(CmdCtx& c, size_t cursor_arg, uint64_t* cursor, std::string_view* glob,
                   uint64_t* count) {
  std::string_view cs = c.arg(cursor_arg);
  auto res = std::from_chars(cs.data(), cs.data() + cs.size(), *cursor);
  if (cs.empty() || res.ec != std::errc() || res.ptr != cs.data() + cs.size()) {
    c.r.Error("ERR invalid cursor");
    return false;
  }
  *count = 10;
  *glob = {};
  for (size_t i = cursor_arg + 1; i < c.argc(); i += 2) {
    if (i + 1 >= c.argc()) {
      c.r.Error(kErrSyntax);
      return false;
    }
    if (EqNoCase(c.arg(i), "COUNT")) {
      long long n;
      if (!ParseLLOrReply(c, c.arg(i + 1), &n)) return false;
      if (n < 1) {
        c.r.Error(kErrSyntax);
        return false;
      }
      *count = static_cast<uint64_t>(n);
    } else if (EqNoCase(c.arg(i), "MATCH")) {
      *glob = c.arg(i + 1);
      if (*glob == "*") *glob = {};
    } else {
      c.r.Error(kErrSyntax);
      return false;
    }
  }
  return true;
}

namespace {

void CmdHScan(CmdCtx& c) {
  uint64_t cursor, count;
  std::string_view glob;
  if (!ParseScanArgs(c, 2, &cursor, &glob, &count)) return;
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  cache::FieldValues fv;
  uint64_t next = 0;
  Status s = cache::HScan(*c.env.ctx, t, c.arg(1), cursor, count, glob, &fv, &next);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Array(2);
  c.r.Bulk(std::to_string(next));
  ReplyPairs(c, fv, true, true);
}

void CmdHRandField(CmdCtx& c) {
  cache::TableRef t;
  bool withvalues = false;
  long long count = 1;
  if (c.argc() >= 3) {
    if (c.argc() == 4 && EqNoCase(c.arg(3), "WITHVALUES")) {
      withvalues = true;
    } else if (c.argc() >= 4) {
      return c.r.Error(kErrSyntax);
    }
    if (!ParseLLOrReply(c, c.arg(2), &count)) return;
    if (count < -LLONG_MAX || (withvalues && count < -LLONG_MAX / 2)) {
      return c.r.Error("ERR value is out of range");
    }
  }
  if (!CurrentTable(c, &t)) return;
  cache::FieldValues fv;
  Status s = cache::HRandField(*c.env.ctx, t, c.arg(1), count, &fv);
  if (s == Status::kNotFound) return c.argc() >= 3 ? c.r.Array(0) : c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  if (c.argc() < 3) return fv.empty() ? c.r.Null() : c.r.Bulk(fv[0].first);
  ReplyPairs(c, fv, true, withvalues);
}

constexpr CommandSpec kHashCommands[] = {
    {"hset", -4, kWrite | kFast, &CmdHSet, 1, 1, 1},
    {"hmset", -4, kWrite | kFast, &CmdHSet, 1, 1, 1},
    {"hsetnx", 4, kWrite | kFast, &CmdHSetNx, 1, 1, 1},
    {"hget", 3, kRead | kFast, &CmdHGet, 1, 1, 1},
    {"hmget", -3, kRead | kFast, &CmdHMGet, 1, 1, 1},
    {"hgetall", 2, kRead, &CmdHGetAll, 1, 1, 1},
    {"hkeys", 2, kRead, &CmdHKeys, 1, 1, 1},
    {"hvals", 2, kRead, &CmdHVals, 1, 1, 1},
    {"hdel", -3, kWrite | kFast, &CmdHDel, 1, 1, 1},
    {"hlen", 2, kRead | kFast, &CmdHLen, 1, 1, 1},
    {"hexists", 3, kRead | kFast, &CmdHExists, 1, 1, 1},
    {"hstrlen", 3, kRead | kFast, &CmdHStrLen, 1, 1, 1},
    {"hincrby", 4, kWrite | kFast, &CmdHIncrBy, 1, 1, 1},
    {"hincrbyfloat", 4, kWrite | kFast, &CmdHIncrByFloat, 1, 1, 1},
    {"hscan", -3, kRead, &CmdHScan, 1, 1, 1},
    {"hrandfield", -2, kRead, &CmdHRandField, 1, 1, 1},
};

}  // namespace

void RegisterHashFamily(Env& e) { Register(e, kHashCommands); }

}  // namespace modules::resp
