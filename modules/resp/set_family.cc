// perfcached — RESP set commands (SADD ... SSCAN): parse, one Op
// (cache/set_ops.h), reply as Redis does.
// Copyright (c) 2026 the perfcached authors.
#include <climits>

#include "modules/resp/command.h"

namespace modules::resp {

namespace {

using mem::Status;

std::vector<std::string_view> Rest(CmdCtx& c, size_t from, size_t end = SIZE_MAX) {
  if (end > c.argc()) end = c.argc();
  return std::vector<std::string_view>(c.argv.begin() + static_cast<ptrdiff_t>(from),
                                       c.argv.begin() + static_cast<ptrdiff_t>(end));
}

void ReplyMembers(CmdCtx& c, const std::vector<std::string>& ms) {
  c.r.Array(ms.size());
  for (const auto& m : ms) c.r.Bulk(m);
}

void ReplyCount(CmdCtx& c, Status s, uint64_t n) {
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Int(static_cast<long long>(n));
}

void CmdSAdd(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::SAdd(*c.env.ctx, t, c.arg(1), Rest(c, 2), &n);
  ReplyCount(c, s, n);
}

void CmdSRem(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::SRem(*c.env.ctx, t, c.arg(1), Rest(c, 2), &n);
  ReplyCount(c, s, n);
}

void CmdSMembers(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::string> ms;
  Status s = cache::SMembers(*c.env.ctx, t, c.arg(1), &ms);
  if (s != Status::kOk) return ReplyStatus(c, s);
  ReplyMembers(c, ms);
}

void CmdSIsMember(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool in = false;
  Status s = cache::SIsMember(*c.env.ctx, t, c.arg(1), c.arg(2), &in);
  if (s == Status::kNotFound) s = Status::kOk;
  ReplyCount(c, s, in ? 1 : 0);
}

void CmdSMIsMember(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<bool> in;
  Status s = cache::SMIsMember(*c.env.ctx, t, c.arg(1), Rest(c, 2), &in);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Array(in.size());
  for (bool b : in) c.r.Int(b ? 1 : 0);
}

void CmdSCard(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::SCard(*c.env.ctx, t, c.arg(1), &n);
  ReplyCount(c, s, n);
}

void CmdSPop(CmdCtx& c) {
  if (c.argc() > 3) return c.r.Error(kErrSyntax);
  uint64_t count = 1;
  if (c.argc() == 3) {
    long long n;  // Redis's getPositiveLong: one message for both failures
    if (!ParseLL(c.arg(2), &n) || n < 0) {
      return c.r.Error("ERR value is out of range, must be positive");
    }
    count = static_cast<uint64_t>(n);
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::string> ms;
  Status s = count == 0 && c.argc() == 3 ? Status::kOk : cache::SPop(*c.env.ctx, t, c.arg(1), count, &ms);
  if (s == Status::kNotFound) return c.argc() == 3 ? c.r.Array(0) : c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  if (c.argc() == 3) return ReplyMembers(c, ms);
  if (ms.empty()) return c.r.Null();
  c.r.Bulk(ms[0]);
}

static_assert(cache::kMaxRandomRepeats == 16777216, "kErrRandomRepeats names the bound");

void CmdSRandMember(CmdCtx& c) {
  if (c.argc() > 3) return c.r.Error(kErrSyntax);
  long long count = 1;
  if (c.argc() == 3) {
    if (!ParseLLOrReply(c, c.arg(2), &count)) return;
    if (count < -LLONG_MAX) return c.r.Error(kErrRandomRange);
    if (count < 0 && static_cast<uint64_t>(-count) > cache::kMaxRandomRepeats) {
      return c.r.Error(kErrRandomRepeats);
    }
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::string> ms;
  Status s = cache::SRandMember(*c.env.ctx, t, c.arg(1), count, &ms);
  if (s == Status::kNotFound) return c.argc() == 3 ? c.r.Array(0) : c.r.Null();
  if (s != Status::kOk) return ReplyStatus(c, s);
  if (c.argc() == 3) return ReplyMembers(c, ms);
  if (ms.empty()) return c.r.Null();
  c.r.Bulk(ms[0]);
}

void CmdSMove(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  bool moved = false;
  Status s = cache::SMove(*c.env.ctx, t, c.arg(1), c.arg(2), c.arg(3), &moved);
  ReplyCount(c, s, moved ? 1 : 0);
}

void Combine(CmdCtx& c, cache::SetAlgebra op) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  std::vector<std::string> ms;
  Status s = cache::SCombine(*c.env.ctx, t, op, Rest(c, 1), &ms);
  if (s != Status::kOk) return ReplyStatus(c, s);
  ReplyMembers(c, ms);
}
void CmdSInter(CmdCtx& c) { Combine(c, cache::SetAlgebra::kInter); }
void CmdSUnion(CmdCtx& c) { Combine(c, cache::SetAlgebra::kUnion); }
void CmdSDiff(CmdCtx& c) { Combine(c, cache::SetAlgebra::kDiff); }

void Store(CmdCtx& c, cache::SetAlgebra op) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::SCombineStore(*c.env.ctx, t, op, c.arg(1), Rest(c, 2), &n);
  ReplyCount(c, s, n);
}
void CmdSInterStore(CmdCtx& c) { Store(c, cache::SetAlgebra::kInter); }
void CmdSUnionStore(CmdCtx& c) { Store(c, cache::SetAlgebra::kUnion); }
void CmdSDiffStore(CmdCtx& c) { Store(c, cache::SetAlgebra::kDiff); }

void CmdSInterCard(CmdCtx& c) {
  long long numkeys;
  if (!ParseLLOrReply(c, c.arg(1), &numkeys)) return;
  if (numkeys < 1) return c.r.Error("ERR numkeys should be greater than 0");
  if (static_cast<unsigned long long>(numkeys) > c.argc() - 2) {
    return c.r.Error("ERR Number of keys can't be greater than number of args");
  }
  uint64_t limit = 0;
  for (size_t i = 2 + static_cast<size_t>(numkeys); i < c.argc(); i += 2) {
    if (EqNoCase(c.arg(i), "LIMIT") && i + 1 < c.argc()) {
      long long l;
      if (!ParseLLOrReply(c, c.arg(i + 1), &l)) return;
      if (l < 0) return c.r.Error("ERR LIMIT can't be negative");
      limit = static_cast<uint64_t>(l);
    } else {
      return c.r.Error(kErrSyntax);
    }
  }
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t n = 0;
  Status s = cache::SInterCard(*c.env.ctx, t, Rest(c, 2, 2 + static_cast<size_t>(numkeys)), limit, &n);
  ReplyCount(c, s, n);
}

void CmdSScan(CmdCtx& c) {
  cache::TableRef t;
  if (!CurrentTable(c, &t)) return;
  uint64_t cursor, count;
  std::string_view glob;
  if (!ParseScanArgs(c, t, "set", &cursor, &glob, &count)) return;
  std::vector<std::string> ms;
  uint64_t next = 0;
  Status s = cache::SScan(*c.env.ctx, t, c.arg(1), cursor, count, glob, &ms, &next);
  if (s != Status::kOk) return ReplyStatus(c, s);
  c.r.Array(2);
  c.r.Bulk(std::to_string(next));
  ReplyMembers(c, ms);
}

constexpr CommandSpec kSetCommands[] = {
    {"sadd", -3, kWrite | kFast | kDenyOom, &CmdSAdd, 1, 1, 1},
    {"srem", -3, kWrite | kFast, &CmdSRem, 1, 1, 1},
    {"smembers", 2, kRead, &CmdSMembers, 1, 1, 1},
    {"sismember", 3, kRead | kFast, &CmdSIsMember, 1, 1, 1},
    {"smismember", -3, kRead | kFast, &CmdSMIsMember, 1, 1, 1},
    {"scard", 2, kRead | kFast, &CmdSCard, 1, 1, 1},
    {"spop", -2, kWrite | kFast, &CmdSPop, 1, 1, 1},
    {"srandmember", -2, kRead, &CmdSRandMember, 1, 1, 1},
    {"smove", 4, kWrite | kFast, &CmdSMove, 1, 2, 1},
    {"sinter", -2, kRead, &CmdSInter, 1, -1, 1},
    {"sintercard", -3, kRead, &CmdSInterCard, 0, 0, 0},
    {"sinterstore", -3, kWrite | kDenyOom, &CmdSInterStore, 1, -1, 1},
    {"sunion", -2, kRead, &CmdSUnion, 1, -1, 1},
    {"sunionstore", -3, kWrite | kDenyOom, &CmdSUnionStore, 1, -1, 1},
    {"sdiff", -2, kRead, &CmdSDiff, 1, -1, 1},
    {"sdiffstore", -3, kWrite | kDenyOom, &CmdSDiffStore, 1, -1, 1},
    {"sscan", -3, kRead, &CmdSScan, 1, 1, 1},
};

}  // namespace

void RegisterSetFamily(Env& e) { Register(e, kSetCommands); }

}  // namespace modules::resp
