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

// HSCAN / SSCAN key cursor [MATCH glob] [COUNT n]. Redis's order: the
// cursor (strtoul rules, as SCAN), then the key (absent: an empty scan;
// another type: WRONGTYPE), then the options.
bool ParseScanArgs(CmdCtx& c, const cache::TableRef& t, std::string_view type,
                   uint64_t* cursor, std::string_view* glob, uint64_t* count) {
  if (!ParseScanCursor(c.arg(2), cursor)) {
    c.r.Error("ERR invalid cursor");
    return false;
  }
  *count = 10;
  *glob = {};
  const char* err = nullptr;
  for (size_t i = 3; i < c.argc() && !err; i += 2) {
    if (i + 1 >= c.argc()) {
      err = kErrSyntax;
    } else if (EqNoCase(c.arg(i), "COUNT")) {
      long long n;
      if (!ParseLL(c.arg(i + 1), &n)) {
        err = kErrNotInt;
      } else if (n < 1) {
        err = kErrSyntax;
      } else {
        *count = static_cast<uint64_t>(n);
      }
    } else if (EqNoCase(c.arg(i), "MATCH")) {
      *glob = c.arg(i + 1);
      if (*glob == "*") *glob = {};
    } else {
      err = kErrSyntax;
    }
  }
  if (!err) return true;
  std::string_view kind = cache::KeyType(*c.env.ctx, t, c.arg(1));
  if (kind == "none") {
    c.r.Array(2);
    c.r.Bulk("0");
    c.r.Array(0);
  } else if (kind != type) {
    ReplyStatus(c, Status::kWrongType);
  } else {
    c.r.Error(err);
  }
  return false;
}

namespace {

void CmdHScan(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t cursor, count;
  std::string_view glob;
  if (!ParseScanArgs(c, t, "hash", &cursor, &glob, &count)) return;
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
    // Redis's order: the count, the syntax, the WITHVALUES range.
    if (!ParseLLOrReply(c, c.arg(2), &count)) return;
    if (count < -LLONG_MAX) return c.r.Error(kErrRandomRange);
    if (c.argc() > 4 || (c.argc() == 4 && !EqNoCase(c.arg(3), "WITHVALUES"))) {
      return c.r.Error(kErrSyntax);
    }
    withvalues = c.argc() == 4;
    if (withvalues && (count < -LLONG_MAX / 2 || count > LLONG_MAX / 2)) {
      return c.r.Error("ERR value is out of range");
    }
    if (count < 0 && static_cast<uint64_t>(-count) > cache::kMaxRandomRepeats) {
      return c.r.Error(kErrRandomRepeats);
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
    {"hset", -4, kWrite | kFast | kDenyOom, &CmdHSet, 1, 1, 1},
    {"hmset", -4, kWrite | kFast | kDenyOom, &CmdHSet, 1, 1, 1},
    {"hsetnx", 4, kWrite | kFast | kDenyOom, &CmdHSetNx, 1, 1, 1},
    {"hget", 3, kRead | kFast, &CmdHGet, 1, 1, 1},
    {"hmget", -3, kRead | kFast, &CmdHMGet, 1, 1, 1},
    {"hgetall", 2, kRead, &CmdHGetAll, 1, 1, 1},
    {"hkeys", 2, kRead, &CmdHKeys, 1, 1, 1},
    {"hvals", 2, kRead, &CmdHVals, 1, 1, 1},
    {"hdel", -3, kWrite | kFast, &CmdHDel, 1, 1, 1},
    {"hlen", 2, kRead | kFast, &CmdHLen, 1, 1, 1},
    {"hexists", 3, kRead | kFast, &CmdHExists, 1, 1, 1},
    {"hstrlen", 3, kRead | kFast, &CmdHStrLen, 1, 1, 1},
    {"hincrby", 4, kWrite | kFast | kDenyOom, &CmdHIncrBy, 1, 1, 1},
    {"hincrbyfloat", 4, kWrite | kFast | kDenyOom, &CmdHIncrByFloat, 1, 1, 1},
    {"hscan", -3, kRead, &CmdHScan, 1, 1, 1},
    {"hrandfield", -2, kRead, &CmdHRandField, 1, 1, 1},
};

}  // namespace

void RegisterHashFamily(Env& e) { Register(e, kHashCommands); }

}  // namespace modules::resp
