// perfcached — the crash-point driver: kill a writer at every store of a
// bounded workload, then repair and audit (issue 7). Built with
// -DPERFCACHED_CRASH_POINTS (make crash-points / make crash-points-all).
// Copyright (c) 2026 the perfcached authors.
//
// 1. Record: run the workload once in a child that counts every crash site
//    (mem/crash_point.h) and its occurrences.
// 2. For each (site, occurrence) chosen (all of them with --all, a sample
//    otherwise), one trial:
//      runner R (a fresh process): maps a fresh arena, creates the tables,
//        seeds immortal keys, forks the victim V;
//      V arms (site, occurrence), runs the same workload and is SIGKILLed
//        at that store (or finishes if the occurrence is never reached);
//      R repairs with RepairDead (the code the daemon's supervisor runs
//        after reaping a child), then checks: the audit is clean (every
//        record reachable once, routed, no odd seqlock, no lock or slot
//        held by the dead, every cell live once or free once), every
//        immortal key holds its value, every present workload key holds a
//        well-formed value, every hash and set of the aggregate phase is
//        as it was before the step in flight or as it would be after it
//        (a model, below), and the engine still works: a fresh child runs
//        the workload again to completion within a deadline, then a final
//        audit, no cell leaked by that unkilled run, and the model's final
//        state.
//    The recording child also runs the workload a second time checking the
//    model after every aggregate step (the model is tested too).
// Prints "crash points: sites x occurrences: N checked, F failed" and exits
// non-zero when any trial failed.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/access.h"
#include "cache/automove.h"
#include "cache/audit.h"
#include "cache/evict.h"
#include "cache/encoding.h"
#include "cache/hash_ops.h"
#include "cache/table.h"
#include "mem/arena.h"
#include "mem/crash_point.h"

namespace {

using mem::Status;

constexpr int kImmortal = 64;
constexpr int kMortalO = 128;  // seeded into "o" (16 buckets, never grows)
constexpr uint64_t kTmpFloor = 1000000;  // the tmp collections' version floor (a WAL's, perf_create)

std::string Imm(int i) { return "imm:" + std::to_string(i); }
std::string ImmVal(int i) { return std::string(40 + i % 30, static_cast<char>('A' + i % 26)); }

// Values of the workload are one repeated letter: any other content is torn.
bool WellFormed(const std::string& v) {
  if (v.empty()) return true;
  if (v.find_first_not_of(v[0]) == std::string::npos) return true;
  // counters: decimal text
  return v.find_first_not_of("-0123456789") == std::string::npos;
}

// ---- Aggregates (hashes and sets): a scripted phase with a model ----------------
//
// Every hash and set write path, on small (listpack / intset) and trie
// encodings. The phase is a list of steps; the runner replays them on a
// model (std::map / std::set) to know each key's state before and after
// every step. The victim marks in a shared page which step it started and
// which it finished (and what SPOP returned), so after a kill the check is
// exact: every key holds its state before the step in flight or after it
// ("the key as it was or as it would be"), never anything else.

constexpr int kMaxSteps = 96;
constexpr int kMaxPop = 4;

struct Progress {
  std::atomic<int> started;   // steps begun
  std::atomic<int> finished;  // steps completed
  int npop[kMaxSteps];
  char pop[kMaxSteps][kMaxPop][24];
};

Progress* NewProgress() {
  void* p = mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0, sizeof(Progress));
  return static_cast<Progress*>(p);
}

struct KeyState {
  char kind = 0;  // 0 absent, 's' string, 'h' hash, 'S' set
  std::string str;
  std::map<std::string, std::string> h;
  std::set<std::string> s;
  bool operator==(const KeyState& o) const {
    return kind == o.kind && (kind != 's' || str == o.str) && (kind != 'h' || h == o.h) &&
           (kind != 'S' || s == o.s);
  }
};
using Model = std::map<std::string, KeyState>;

struct AggStep {
  std::string name;
  std::vector<std::string> keys;  // the keys it may change
  int pop_key = -1;               // SPOP: index into keys; pop_count members
  uint64_t pop_count = 0;
  std::function<Status(cache::Ctx&, const cache::TableRef&, std::vector<std::string>* popped)> run;
  std::function<void(Model&, const std::vector<std::string>& popped)> apply;
};

const std::vector<std::string> kAggKeys = {"h1", "h2", "h4", "hx", "s1", "s2", "s3", "s4", "dst"};

std::string Fld(int i) { return "f" + std::to_string(i); }
std::string FVal(int i, size_t n) { return std::string(n, static_cast<char>('a' + i % 26)); }

const std::vector<AggStep>& AggSteps() {
  static const std::vector<AggStep> steps = [] {
    std::vector<AggStep> v;
    using SV = std::string_view;
    // HSET key with fields [from, to) (value length len), as one command.
    auto hset = [&](std::string key, int from, int to, size_t len) {
      AggStep s;
      s.name = "HSET " + key + " " + std::to_string(to - from) + " field(s) " + std::to_string(len) + "B";
      s.keys = {key};
      s.run = [key, from, to, len](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        std::vector<std::string> store;
        for (int i = from; i < to; ++i) store.push_back(Fld(i)), store.push_back(FVal(i + int(len), len));
        std::vector<SV> fv(store.begin(), store.end());
        uint64_t added;
        return cache::HSet(c, t, key, fv, &added);
      };
      s.apply = [key, from, to, len](Model& m, const std::vector<std::string>&) {
        auto& k = m[key];
        k.kind = 'h';
        for (int i = from; i < to; ++i) k.h[Fld(i)] = FVal(i + int(len), len);
      };
      v.push_back(s);
    };
    auto hsetnx = [&](std::string key, int f, size_t len) {
      AggStep s;
      s.name = "HSETNX " + key + " " + Fld(f);
      s.keys = {key};
      s.run = [key, f, len](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        bool set;
        return cache::HSetNx(c, t, key, Fld(f), FVal(f + 7, len), &set);
      };
      s.apply = [key, f, len](Model& m, const std::vector<std::string>&) {
        auto& k = m[key];
        k.kind = 'h';
        k.h.emplace(Fld(f), FVal(f + 7, len));
      };
      v.push_back(s);
    };
    auto hdel = [&](std::string key, std::vector<std::string> fields) {
      AggStep s;
      s.name = "HDEL " + key + " " + std::to_string(fields.size()) + " field(s)";
      s.keys = {key};
      s.run = [key, fields](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        std::vector<SV> f(fields.begin(), fields.end());
        uint64_t n;
        Status st = cache::HDel(c, t, key, f, &n);
        return st == Status::kNotFound ? Status::kOk : st;
      };
      s.apply = [key, fields](Model& m, const std::vector<std::string>&) {
        auto& k = m[key];
        for (auto& f : fields) k.h.erase(f);
        if (k.h.empty()) k = KeyState{};
      };
      v.push_back(s);
    };
    auto hincr = [&](std::string key, std::string field, int64_t d, std::string result) {
      AggStep s;
      s.name = "HINCRBY " + key + " " + field;
      s.keys = {key};
      s.run = [key, field, d](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        int64_t r;
        return cache::HIncrBy(c, t, key, field, d, &r);
      };
      s.apply = [key, field, result](Model& m, const std::vector<std::string>&) {
        m[key].kind = 'h';
        m[key].h[field] = result;
      };
      v.push_back(s);
    };
    auto hincrf = [&](std::string key, std::string field, long double d, std::string result) {
      AggStep s;
      s.name = "HINCRBYFLOAT " + key + " " + field;
      s.keys = {key};
      s.run = [key, field, d](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        std::string r;
        return cache::HIncrByFloat(c, t, key, field, d, &r);
      };
      s.apply = [key, field, result](Model& m, const std::vector<std::string>&) {
        m[key].kind = 'h';
        m[key].h[field] = result;
      };
      v.push_back(s);
    };
    // SADD / SREM of members
    auto sadd = [&](std::string key, std::vector<std::string> mem, bool add) {
      AggStep s;
      s.name = std::string(add ? "SADD " : "SREM ") + key + " " + std::to_string(mem.size()) + " member(s)";
      s.keys = {key};
      s.run = [key, mem, add](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        std::vector<SV> ms(mem.begin(), mem.end());
        uint64_t n;
        Status st = add ? cache::SAdd(c, t, key, ms, &n) : cache::SRem(c, t, key, ms, &n);
        return st == Status::kNotFound ? Status::kOk : st;
      };
      s.apply = [key, mem, add](Model& m, const std::vector<std::string>&) {
        auto& k = m[key];
        if (add) {
          k.kind = 'S';
          k.s.insert(mem.begin(), mem.end());
        } else {
          for (auto& x : mem) k.s.erase(x);
          if (k.s.empty()) k = KeyState{};
        }
      };
      v.push_back(s);
    };
    auto ints = [](int from, int to) {
      std::vector<std::string> r;
      for (int i = from; i < to; ++i) r.push_back(std::to_string(i));
      return r;
    };
    auto names = [](const char* p, int from, int to) {
      std::vector<std::string> r;
      for (int i = from; i < to; ++i) r.push_back(p + std::to_string(i));
      return r;
    };
    auto spop = [&](std::string key, uint64_t count) {
      AggStep s;
      s.name = "SPOP " + key + " " + std::to_string(count);
      s.keys = {key};
      s.pop_key = 0;
      s.pop_count = count;
      s.run = [key, count](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>* popped) {
        Status st = cache::SPop(c, t, key, count, popped);
        return st == Status::kNotFound ? Status::kOk : st;
      };
      s.apply = [key](Model& m, const std::vector<std::string>& popped) {
        auto& k = m[key];
        for (auto& x : popped) k.s.erase(x);
        if (k.s.empty()) k = KeyState{};
      };
      v.push_back(s);
    };
    auto smove = [&](std::string src, std::string dst, std::string member) {
      AggStep s;
      s.name = "SMOVE " + src + " " + dst + " " + member;
      s.keys = {src, dst};
      s.run = [src, dst, member](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        bool moved;
        Status st = cache::SMove(c, t, src, dst, member, &moved);
        return st == Status::kNotFound ? Status::kOk : st;
      };
      s.apply = [src, dst, member](Model& m, const std::vector<std::string>&) {
        auto& a = m[src];
        if (!a.s.count(member)) return;
        a.s.erase(member);
        if (a.s.empty()) a = KeyState{};
        m[dst].kind = 'S';
        m[dst].s.insert(member);
      };
      v.push_back(s);
    };
    auto store = [&](cache::SetAlgebra op, std::string dst, std::vector<std::string> srcs) {
      AggStep s;
      s.name = std::string(op == cache::SetAlgebra::kInter ? "SINTERSTORE " : "SUNIONSTORE ") + dst;
      s.keys = {dst};
      s.run = [op, dst, srcs](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        std::vector<SV> ks(srcs.begin(), srcs.end());
        uint64_t n;
        return cache::SCombineStore(c, t, op, dst, ks, &n);
      };
      s.apply = [op, dst, srcs](Model& m, const std::vector<std::string>&) {
        std::set<std::string> r;
        bool first = true;
        for (auto& k : srcs) {
          const std::set<std::string>& x = m[k].s;
          if (op == cache::SetAlgebra::kUnion) {
            r.insert(x.begin(), x.end());
          } else if (first) {
            r = x;
          } else {
            std::set<std::string> i;
            for (auto& e : r) if (x.count(e)) i.insert(e);
            r = i;
          }
          first = false;
        }
        KeyState k;
        if (!r.empty()) k.kind = 'S', k.s = r;
        m[dst] = k;
      };
      v.push_back(s);
    };
    auto del = [&](std::string key) {
      AggStep s;
      s.name = "DEL " + key;
      s.keys = {key};
      s.run = [key](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
        Status st = cache::Del(c, t, key);
        return st == Status::kNotFound ? Status::kOk : st;
      };
      s.apply = [key](Model& m, const std::vector<std::string>&) { m[key] = KeyState{}; };
      v.push_back(s);
    };
    // Start from nothing whatever an earlier (killed) run left.
    for (auto& k : kAggKeys) del(k);
    // h1: listpack (one field, several), HSETNX, then 140 fields: a trie
    hset("h1", 0, 1, 10);
    hset("h1", 1, 10, 12);
    hsetnx("h1", 0, 9);   // exists: no change
    hsetnx("h1", 10, 9);  // new
    hset("h1", 11, 140, 20);  // > 128 fields: listpack -> trie
    hset("h1", 5, 6, 30);     // one field, in the trie
    hset("h1", 200, 203, 80); // several, values > 64 bytes
    hsetnx("h1", 300, 11);
    hdel("h1", {Fld(1), Fld(2), Fld(77)});
    hincr("h1", "cnt", 5, "5");
    hincr("h1", "cnt", -7, "-2");
    hincrf("h1", "fl", 1.5L, "1.5");
    hincrf("h1", "fl", 2.25L, "3.75");
    // h2: two fields, values > 64 bytes: a trie by value size; HDEL of the
    // last field of a trie deletes the key (and its cells)
    hset("h2", 0, 1, 100);
    hset("h2", 1, 2, 70);
    hdel("h2", {Fld(0)});
    hdel("h2", {Fld(1)});
    // hx: listpack counters, then HDEL of the last fields deletes the key
    hincr("hx", "c", 3, "3");
    hincrf("hx", "fl", 0.5L, "0.5");
    hset("hx", 0, 1, 4);
    hdel("hx", {"c", "fl"});
    hdel("hx", {Fld(0)});
    // s2: intset, then > 512 integers: intset -> trie; SREM, SPOP in the trie
    sadd("s2", ints(0, 10), true);
    sadd("s2", ints(10, 530), true);
    sadd("s2", ints(5, 8), false);
    spop("s2", 3);
    // s1: intset -> listpack (a non-integer) -> trie (> 128 members)
    sadd("s1", ints(1, 4), true);
    sadd("s1", {"x"}, true);
    sadd("s1", names("m", 0, 130), true);
    sadd("s1", {"m0", "2"}, false);
    // s3 (listpack), s4 (intset): SPOP one, SPOP all (deletes the key);
    // then a member > 64 bytes makes s3 a (small) trie
    sadd("s3", {"a", "b", "c", "m7"}, true);
    spop("s3", 1);
    sadd("s4", ints(7, 10), true);
    spop("s4", 1);
    spop("s4", 5);
    // SMOVE trie -> listpack, listpack -> trie
    smove("s1", "s3", "m5");
    smove("s3", "s1", "a");
    sadd("s3", {std::string(70, 'L')}, true);
    // S*STORE over a key of another type: a string, then a trie hash
    AggStep setstr;
    setstr.name = "SET dst";
    setstr.keys = {"dst"};
    setstr.run = [](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
      return cache::Set(c, t, "dst", "zzzz");
    };
    setstr.apply = [](Model& m, const std::vector<std::string>&) {
      m["dst"] = KeyState{};
      m["dst"].kind = 's';
      m["dst"].str = "zzzz";
    };
    v.push_back(setstr);
    store(cache::SetAlgebra::kInter, "dst", {"s1", "s3"});
    store(cache::SetAlgebra::kUnion, "h1", {"s3", "dst"});  // a trie hash becomes a trie set
    // h4: a trie hash (values > 64 bytes) that expires (sweep); s1 (a trie
    // set): expiry in the past (a delete)
    hset("h4", 0, 3, 90);
    AggStep exp;
    exp.name = "EXPIRE h4 (then sweep)";
    exp.keys = {"h4"};
    exp.run = [](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
      bool changed;
      Status st = cache::SetExpire(c, t, "h4", cache::NowMs(c) + 1000, cache::ExpireCond::kAlways, &changed);
      if (st != Status::kOk) return st;
      c.clock_skew_ms = 5000;
      (void)cache::SweepExpired(c, t, 1u << 20, {});
      c.clock_skew_ms = 0;
      return Status::kOk;
    };
    exp.apply = [](Model& m, const std::vector<std::string>&) { m["h4"] = KeyState{}; };
    v.push_back(exp);
    AggStep past;
    past.name = "EXPIRE s1 in the past";
    past.keys = {"s1"};
    past.run = [](cache::Ctx& c, const cache::TableRef& t, std::vector<std::string>*) {
      bool changed;
      return cache::SetExpire(c, t, "s1", cache::NowMs(c) - 1000, cache::ExpireCond::kAlways, &changed);
    };
    past.apply = [](Model& m, const std::vector<std::string>&) { m["s1"] = KeyState{}; };
    v.push_back(past);
    del("s2");  // DEL of a big trie
    return v;
  }();
  return steps;
}

std::string CheckAgg(cache::Ctx& c, const cache::TableRef& t, const Progress& pr);
// Set in a self-check run: RunAgg compares every key with the model after
// every step (the model itself is tested, not only its final state).
bool g_selfcheck = false;

// Run the phase, marking progress; 0, or 20 when a step failed, 21 when the
// self-check found the engine and the model apart.
int RunAgg(cache::Ctx& c, const cache::TableRef& t, Progress* pr) {
  const auto& steps = AggSteps();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (pr) pr->started.store(static_cast<int>(i + 1));
    std::vector<std::string> popped;
    Status st = steps[i].run(c, t, &popped);
    if (st != Status::kOk) {
      std::fprintf(stderr, "aggregate step %zu (%s): %s\n", i, steps[i].name.c_str(),
                   std::string(mem::StatusName(st)).c_str());
      return 20;
    }
    if (pr) {
      pr->npop[i] = static_cast<int>(std::min<size_t>(popped.size(), kMaxPop));
      for (int j = 0; j < pr->npop[i]; ++j) {
        std::snprintf(pr->pop[i][j], sizeof pr->pop[i][j], "%s", popped[j].c_str());
      }
      pr->finished.store(static_cast<int>(i + 1));
      if (g_selfcheck && i + 1 >= kAggKeys.size()) {  // (after the DELs: the model starts empty)
        if (std::string why = CheckAgg(c, t, *pr); !why.empty()) {
          std::fprintf(stderr, "crash_points: model self-check: %s\n", why.c_str());
          return 21;
        }
      }
    }
  }
  return 0;
}

std::vector<std::string> Popped(const Progress& pr, size_t i) {
  std::vector<std::string> r;
  for (int j = 0; j < pr.npop[i]; ++j) r.push_back(pr.pop[i][j]);
  return r;
}

bool ReadKey(cache::Ctx& c, const cache::TableRef& t, const std::string& key, KeyState* out,
             std::string* err) {
  *out = KeyState{};
  std::string tn = cache::KeyType(c, t, key);
  if (tn == "none") return true;
  if (tn == "string") {
    out->kind = 's';
    return cache::GetString(c, t, key, &out->str) == Status::kOk || (*err = "GET failed", false);
  }
  if (tn == "hash") {
    out->kind = 'h';
    cache::FieldValues fv;
    Status st = cache::HGetAll(c, t, key, cache::HPart::kBoth, &fv);
    if (st != Status::kOk) return *err = "HGETALL: " + std::string(mem::StatusName(st)), false;
    for (auto& [f, v] : fv) {
      if (!out->h.emplace(f, v).second) return *err = "HGETALL: field " + f + " twice", false;
    }
    return true;
  }
  if (tn == "set") {
    out->kind = 'S';
    std::vector<std::string> ms;
    Status st = cache::SMembers(c, t, key, &ms);
    if (st != Status::kOk) return *err = "SMEMBERS: " + std::string(mem::StatusName(st)), false;
    for (auto& x : ms) {
      if (!out->s.insert(x).second) return *err = "SMEMBERS: member " + x + " twice", false;
    }
    return true;
  }
  *err = "unexpected type " + tn;
  return false;
}

std::string Describe(const KeyState& k) {
  switch (k.kind) {
    case 0: return "absent";
    case 's': return "string '" + k.str + "'";
    case 'h': return "hash of " + std::to_string(k.h.size()) + " fields";
    default: return "set of " + std::to_string(k.s.size()) + " members";
  }
}

// The check: every aggregate key holds its state before the step in flight
// or after it (exactly the state after the last finished step when none is
// in flight). "" when all is well.
std::string CheckAgg(cache::Ctx& c, const cache::TableRef& t, const Progress& pr) {
  const auto& steps = AggSteps();
  int started = pr.started.load(), finished = pr.finished.load();
  if (finished > started || started > finished + 1 || started > static_cast<int>(steps.size())) {
    return "aggregate progress page inconsistent";
  }
  Model before;
  for (int i = 0; i < finished; ++i) steps[i].apply(before, Popped(pr, i));
  Model after = before;
  const AggStep* inflight = started > finished ? &steps[finished] : nullptr;
  if (inflight && inflight->pop_key < 0) inflight->apply(after, {});
  for (auto& key : kAggKeys) {
    KeyState got;
    std::string err;
    if (!ReadKey(c, t, key, &got, &err)) return "aggregate key " + key + ": " + err;
    const KeyState& b = before[key];
    const KeyState& a = after[key];
    if (got == b || got == a) continue;
    if (inflight && inflight->pop_key >= 0 && inflight->keys[0] == key && got.kind != 's' &&
        got.kind != 'h') {
      // SPOP in flight: before, or before less min(count, size) of its members.
      size_t want = b.s.size() - std::min<size_t>(inflight->pop_count, b.s.size());
      bool sub = got.s.size() == want;
      for (auto& x : got.s) sub = sub && b.s.count(x);
      if (sub) continue;
    }
    return "aggregate key " + key + " is " + Describe(got) + ", neither as it was (" + Describe(b) +
           ") nor as it would be (" + Describe(a) + ")" +
           (inflight ? " at step " + std::to_string(finished) + " " + inflight->name
                     : " after step " + std::to_string(finished));
  }
  return "";
}

// The bounded workload: every write path of the engine at least once; `pr`
// (may be null) receives the aggregate phase's progress.
int Workload(cache::Ctx& c, int round, Progress* pr) {
  cache::TableRef ta, to;
  if (cache::OpenCollection(c, "a", &ta) != Status::kOk ||
      cache::OpenCollection(c, "o", &to) != Status::kOk) {
    return 10;
  }
  int64_t now = cache::NowMs(c);
  auto val = [](int i, int n) { return std::string(n, static_cast<char>('a' + i % 26)); };
  // insert (splits follow from the load), overwrite, TTL bump, delete
  for (int i = 0; i < 120; ++i) (void)cache::Set(c, ta, "k:" + std::to_string(i), val(i, 8 + i % 90));
  (void)cache::GrowStep(c, ta, 64);  // split
  for (int i = 0; i < 40; ++i) (void)cache::Set(c, ta, "k:" + std::to_string(i), val(i + 1, 20));
  // "o"'s full buckets hold seeded keys; their new records (3000 bytes:
  // pages of an order no group below the skipped 32 GiB has) lie above
  // 32 GiB, so a rewrite spills the key to overflow (cache/ops.cc) or goes
  // through the scratch position (cache/bucket.h ReplaceSlot).
  for (int i = 0; i < kMortalO; i += 3) (void)cache::Set(c, to, "om:" + std::to_string(i), val(i, 3000 + round));
  cache::StoreOpts ttl;
  ttl.expire_ms = now + 100000;
  for (int i = 40; i < 50; ++i) {
    (void)cache::Set(c, ta, "k:" + std::to_string(i), val(i, 8 + i % 90), ttl);  // same value: TTL bump
  }
  for (int i = 50; i < 70; ++i) (void)cache::Del(c, ta, "k:" + std::to_string(i));
  // counters: native and from a string
  int64_t n;
  for (int i = 0; i < 10; ++i) (void)cache::IncrBy(c, ta, "ctr:" + std::to_string(i % 3), 1, &n);
  (void)cache::Set(c, ta, "sctr", "41");
  (void)cache::IncrBy(c, ta, "sctr", 1, &n);
  // the Ops (cache/string_ops.h, key_ops.h): their read-modify-write paths
  // are version-checked stores and deletes; values stay one repeated letter
  {
    int64_t len;
    std::string v;
    (void)cache::Set(c, ta, "ap", "pp");
    for (int i = 0; i < 4; ++i) (void)cache::Append(c, ta, "ap", "ppp", 1 << 20, &len);
    (void)cache::Append(c, ta, "ctr:0", "7", 1 << 20, &len);         // a counter becomes text
    (void)cache::SetRange(c, ta, "ap", 3, "pppppppppppppppp", 1 << 20, &len);  // grows it
    (void)cache::SetRange(c, ta, "sr", 0, "ssss", 1 << 20, &len);    // creates
    (void)cache::IncrByFloat(c, ta, "fl", 3, &v);
    (void)cache::GetDel(c, ta, "k:4", &v);
    bool done;
    (void)cache::MoveKey(c, ta, ta, "k:5", "mv", cache::MoveMode::kRename, false, &done);
    (void)cache::MoveKey(c, ta, ta, "k:6", "mv", cache::MoveMode::kRenameNx, false, &done);
    (void)cache::MoveKey(c, ta, to, "mv", "mv", cache::MoveMode::kCopy, true, &done);  // other table
    (void)cache::MoveKey(c, ta, ta, "sr", "ap", cache::MoveMode::kCopy, true, &done);
  }
  // hashes and sets, small and trie encodings (checked against the model)
  if (int rc = RunAgg(c, ta, pr); rc != 0) return rc;
  // expire: set a TTL, persist, and an expiry in the past (a delete)
  bool changed;
  (void)cache::SetExpire(c, ta, "k:1", now + 50000, cache::ExpireCond::kAlways, &changed);
  (void)cache::SetExpire(c, ta, "k:1", 0, cache::ExpireCond::kAlways, &changed);
  (void)cache::SetExpire(c, ta, "k:2", now - 1000, cache::ExpireCond::kAlways, &changed);
  // overflow table: inserts into full buckets, overwrite, removes
  for (int i = 0; i < 260; ++i) (void)cache::Set(c, to, "o:" + std::to_string(i), val(i, 12));
  for (int i = 0; i < 30; ++i) (void)cache::Set(c, to, "o:" + std::to_string(i), val(i + 3, 30));
  for (int i = 30; i < 80; ++i) (void)cache::Del(c, to, "o:" + std::to_string(i));
  // sweep: short TTLs, then a sweep that sees them expired
  cache::StoreOpts shortttl;
  shortttl.expire_ms = now + 5;
  for (int i = 0; i < 30; ++i) (void)cache::Set(c, ta, "e:" + std::to_string(i), val(i, 10), shortttl);
  for (int i = 80; i < 100; ++i) (void)cache::Set(c, to, "o:" + std::to_string(i), val(i, 10), shortttl);
  c.clock_skew_ms = 2000;
  (void)cache::SweepExpired(c, ta, 1u << 20, {});
  (void)cache::SweepExpired(c, to, 1u << 20, {});
  c.clock_skew_ms = 0;
  // merge: shrink the table back
  (void)cache::ResizeCollection(c, "a", 16);
  for (int i = 0; i < 90; ++i) (void)cache::Del(c, ta, "k:" + std::to_string(i));
  (void)cache::GrowStep(c, ta, 64);
  // large object: alloc, overwrite (free), delete (group release)
  (void)cache::Set(c, ta, "big", std::string(300 << 10, 'B'));
  (void)cache::Set(c, ta, "big", std::string(700 << 10, 'C'));
  {
    std::string v;
    (void)cache::GetString(c, ta, "big", &v);  // a big read (one copy, maybe pinned)
  }
  (void)cache::Del(c, ta, "big");
  // allocator: fill pages of one class and free them (pages given back),
  // claims again after; 2 MiB pages of big cells (their groups given back)
  {
    std::vector<mem::Off> cells(3000);
    for (auto& x : cells) (void)c.alloc.Alloc(48, &x);
    for (auto x : cells) c.alloc.Free(x);
    for (size_t i = 0; i < 300; ++i) (void)c.alloc.Alloc(48, &cells[i]);
    for (size_t i = 0; i < 300; ++i) c.alloc.Free(cells[i]);
    std::vector<mem::Off> big(40);
    for (auto& x : big) (void)c.alloc.Alloc(60000, &x);
    for (auto x : big) c.alloc.Free(x);
    c.alloc.FlushToGlobal();
    // large objects as runs of units (mem/large.h): several sharing a
    // group, one spanning groups, frees in the middle and the hole reused
    std::vector<mem::Off> runs(5, 0);
    const size_t sizes[] = {300u << 10, 700u << 10, (2u << 20) + 12345, 290u << 10, 1u << 20};
    for (size_t i = 0; i < runs.size(); ++i) (void)c.alloc.Alloc(sizes[i], &runs[i]);
    c.alloc.Free(runs[1]);
    (void)c.alloc.Alloc(400u << 10, &runs[1]);
    // a pinned object freed: the last reader's unpin frees it (zombie)
    if (mem::PinLarge(c.arena, runs[2])) {
      mem::FreeGlobal(c.arena, runs[2]);
      mem::UnpinLarge(c.arena, runs[2]);
      runs[2] = 0;
    }
    for (auto x : runs) c.alloc.Free(x);
  }
  // collections: create, fill, flush, rename, resize, drop
  cache::TableRef tt;
  cache::CollectionOptions co;
  co.buckets = 16;
  co.version_floor = kTmpFloor;  // in place before it is live (Verify)
  std::string tmp = "tmp" + std::to_string(round);
  if (cache::CreateCollection(c, tmp, co, &tt) == Status::kOk) {
    for (int i = 0; i < 40; ++i) (void)cache::Set(c, tt, "t:" + std::to_string(i), val(i, 9));
    // LRU reads store their access under the bucket lock; LRU / LFU
    // evictions (the pool, a re-check, a versioned delete) — volatile ones,
    // of keys with a TTL (the model-checked keys have none)
    {
      cache::StoreOpts vt;
      vt.expire_ms = now + 100000;
      for (int i = 0; i < 10; ++i) (void)cache::Set(c, tt, "v:" + std::to_string(i), val(i, 9), vt);
      cache::MemoryLimits ml;
      ml.policy = cache::EvictPolicy::kVolatileLru;
      cache::SetMemoryLimits(c, ml);
      c.clock_skew_ms = 5000;
      cache::AccessClockTick(c);
      std::string v;
      for (int i = 0; i < 20; ++i) (void)cache::GetString(c, tt, "t:" + std::to_string(i), &v);
      (void)cache::GetString(c, to, "o:90", &v);  // a key in the overflow table
      (void)cache::EvictOne(c, ml);
      ml.policy = cache::EvictPolicy::kVolatileLfu;
      cache::SetMemoryLimits(c, ml);
      for (int i = 0; i < 5; ++i) (void)cache::GetString(c, tt, "v:" + std::to_string(i), &v);
      (void)cache::EvictOne(c, ml);
      cache::ForgetEvictionPool();
      // the aging pass: two hours later every stamp is old (buckets and
      // the overflow table), rewritten under the locks
      c.clock_skew_ms = 7200 * 1000;
      cache::AccessClockTick(c);
      uint64_t age_cursor = 0;
      for (int i = 0; i < 4; ++i) (void)cache::AgeAccessStep(c, &age_cursor, 1u << 20);
      c.clock_skew_ms = 0;
      cache::AccessClockTick(c);
      cache::SetMemoryLimits(c, cache::MemoryLimits{});
    }
    // automove: n keys into the table that never grows (most land in the
    // overflow table), three in four deleted, then a pass moves the rest
    // out of the sparse pages (marks, copies, swaps in buckets and
    // overflow nodes, chains relinked through copies of their nodes,
    // frees, pages given back, marks cleared)
    // `held`: another process (slot 5) makes some of the deletes, keeps
    // their cells on its private stack, and gives back those in marked
    // pages when the pass asks (at each step here, at its tick in the
    // daemon); killed there, its adopter gives back the rest
    auto thin_and_move = [&](const std::string& prefix, int n, int vlen, bool held) {
      std::optional<cache::Ctx> other;
      if (held) other.emplace(c.arena, 5);
      for (int i = 0; i < n; ++i) (void)cache::Set(c, tt, prefix + std::to_string(i), val(i, vlen));
      for (int i = 0; i < n; ++i) {
        if (i % 4 != 0) (void)cache::Del(held && i % 8 == 1 ? *other : c, tt, prefix + std::to_string(i));
      }
      c.alloc.FlushToGlobal();
      cache::Automover mover;
      if (mover.Start(c, /*force=*/true)) {
        for (int i = 0; i < 100 && mover.active(); ++i) {
          (void)mover.Step(c, 1u << 20);
          if (other) (void)other->alloc.AnswerGiveBack();
        }
      }
      if (other) {
        other->alloc.Release();
        // locks are taken under slot 1's token again (Release unbound ours)
        mem::BindLockToken(mem::SlotToken(c.alloc.slot(), mem::SlotAt(c.arena, c.alloc.slot())->gen.load()));
      }
    };
    thin_and_move("am:", 600, 500, true);  // records of one size
    thin_and_move("an:", 9000, 1, false);  // enough nodes that their class has several pages
    // the tries of hashes: 4 hashes of 400 fields of 150 bytes, three
    // fields in four removed, then a pass copies each trie out of the
    // marked pages (the copy, the record naming it, the swap, the old
    // trie freed after the unlock); FLUSHDB below removes them
    {
      for (int h = 0; h < 4; ++h) {
        std::vector<std::string> st;
        for (int i = 0; i < 400; ++i) st.push_back(Fld(i)), st.push_back(FVal(i + h, 150));
        std::vector<std::string_view> fv(st.begin(), st.end());
        uint64_t n;
        (void)cache::HSet(c, tt, "tm:" + std::to_string(h), fv, &n);
      }
      for (int h = 0; h < 4; ++h) {
        std::vector<std::string> gone;
        for (int i = 0; i < 400; ++i) {
          if (i % 4 != 0) gone.push_back(Fld(i));
        }
        std::vector<std::string_view> gv(gone.begin(), gone.end());
        uint64_t n;
        (void)cache::HDel(c, tt, "tm:" + std::to_string(h), gv, &n);
      }
      c.alloc.FlushToGlobal();
      cache::Automover mover;
      if (mover.Start(c, /*force=*/true)) {
        for (int i = 0; i < 100 && mover.active(); ++i) (void)mover.Step(c, 1u << 20);
      }
    }
    // FLUSHDB and the drop free tries too: a trie hash and a trie set here
    auto tries = [&] {
      std::vector<std::string> st;
      for (int i = 0; i < 3; ++i) st.push_back(Fld(i)), st.push_back(FVal(i, 70));
      std::vector<std::string_view> fv(st.begin(), st.end());
      uint64_t n;
      (void)cache::HSet(c, tt, "th", fv, &n);  // values > 64 bytes: a trie
      (void)cache::SAdd(c, tt, "ts", fv, &n);  // members > 64 bytes: a trie
    };
    tries();
    (void)cache::ClearCollection(c, tt, nullptr);
    for (int i = 0; i < 10; ++i) (void)cache::Set(c, tt, "t:" + std::to_string(i), val(i, 9));
    tries();
    (void)cache::RenameCollection(c, tmp, tmp + "r");
    (void)cache::ResizeCollection(c, tmp + "r", 64);
    (void)cache::DropCollection(c, tmp + "r");
  }
  // adoption: a grandchild dies holding private cells; we adopt its slot
  pid_t g = fork();
  if (g == 0) {
    mem::crash::Arm("", 0);  // the grandchild never dies at a point
    cache::Ctx cg(c.arena, 6);
    mem::Off x[20];
    for (auto& y : x) (void)cg.alloc.Alloc(64, &y);
    for (auto y : x) cg.alloc.Free(y);
    _exit(0);
  }
  int st;
  waitpid(g, &st, 0);
  (void)cache::RepairDead(c);
  return 0;
}

void Seed(cache::Ctx& c) {
  // The workload's conversions (h1 past 128 fields) assume a hash turns
  // into a trie at 128 entries, whatever the daemon's default is.
  cache::DictLimits lim = cache::GetDictLimits(c);
  lim.hash_pack_entries = 128;
  cache::SetDictLimits(c, lim);
  cache::CollectionOptions a, o;
  a.buckets = 16;
  o.buckets = 16;
  o.load_x100 = 1000000;  // never grows: full buckets spill to overflow
  cache::TableRef ta, to;
  (void)cache::CreateCollection(c, "a", a, &ta);
  (void)cache::CreateCollection(c, "o", o, &to);
  // Mortal keys of "o" first: they fill its buckets (10 a bucket on
  // average, 9 positions), and the victim rewrites them (Workload).
  for (int i = 0; i < kMortalO; ++i) (void)cache::Set(c, to, "om:" + std::to_string(i), std::string(8, 'o'));
  for (int i = 0; i < kImmortal; ++i) {
    (void)cache::Set(c, i % 2 ? to : ta, Imm(i), ImmVal(i));
  }
  c.alloc.FlushToGlobal();
}

// Check everything after a crash; "" when all is well. `pr`: the victim's
// aggregate progress.
std::string Verify(mem::Arena& a, cache::Ctx& c, const Progress& pr) {
  cache::AuditReport r = cache::Audit(c);
  if (!r.clean()) return "audit after repair: " + r.Summary();
  cache::TableRef ta, to;
  if (cache::OpenCollection(c, "a", &ta) != Status::kOk ||
      cache::OpenCollection(c, "o", &to) != Status::kOk) {
    return "a seeded collection is gone";
  }
  std::string v;
  for (int i = 0; i < kImmortal; ++i) {
    if (cache::GetString(c, i % 2 ? to : ta, Imm(i), &v) != Status::kOk || v != ImmVal(i)) {
      return "immortal key " + Imm(i) + " lost or changed";
    }
  }
  cache::ScanFilter all_values;
  all_values.values = true;
  for (const cache::TableRef* t : {&ta, &to}) {
    uint64_t cursor = 0;
    std::string bad;
    int steps = 0;
    do {
      if (cache::ScanStep(c, *t, cursor, 64, all_values,
                          [&](const cache::ScanItem& it) {
                            if (it.info.type == cache::kTypeInt || it.info.type == cache::kTypeHash ||
                                it.info.type == cache::kTypeSet) {
                              return;  // aggregates: CheckAgg below
                            }
                            if (!WellFormed(std::string(it.value)) && bad.empty()) bad = std::string(it.key);
                          },
                          &cursor) != Status::kOk) {
        return "scan failed";
      }
    } while (cursor != 0 && ++steps < 100000);
    if (!bad.empty()) return "torn value under key " + bad;
  }
  // Hashes and sets: each as it was or as it would be.
  if (std::string why = CheckAgg(c, ta, pr); !why.empty()) return why;
  // A collection the workload made (tmp*, renamed tmp*r) is never live
  // below the version floor it was created with (perf_create's WAL floor:
  // a write the moment it is visible must not take a lower version).
  for (const cache::CollectionInfo& ci : cache::ListCollections(c)) {
    cache::TableRef t;
    if (ci.name.rfind("tmp", 0) != 0 || cache::OpenCollection(c, ci.name, &t) != Status::kOk) continue;
    if (cache::VersionFloor(t) < kTmpFloor) {
      return ci.name + " is live with version floor " + std::to_string(cache::VersionFloor(t));
    }
  }
  // The thinned hashes of the automove phase, if the kill left them: each
  // whole (400 fields) or thinned (100), every field with its value, also
  // when the kill hit a move of its trie.
  cache::TableRef tt;
  if (cache::OpenCollection(c, "tmp0", &tt) == Status::kOk) {
    for (int h = 0; h < 4; ++h) {
      cache::FieldValues all;
      std::string key = "tm:" + std::to_string(h);
      cache::ReadInfo ri;
      if (cache::Probe(c, tt, key, &ri) == Status::kNotFound) continue;  // not made yet, or cleared
      if (cache::HGetAll(c, tt, key, cache::HPart::kBoth, &all) != Status::kOk) return key + ": HGETALL failed";
      if (all.size() != 400 && all.size() != 100) return key + " holds " + std::to_string(all.size()) + " fields";
      for (const auto& [fl, v] : all) {
        if (fl.size() < 2 || v != FVal(std::atoi(fl.c_str() + 1) + h, 150)) return key + ": field " + fl + " is wrong";
      }
    }
  }
  // The engine still works: the workload again, in a fresh child, in time.
  // A run that nobody kills leaks nothing: the leaked cells (those of the
  // killed victim) are the same after it.
  Progress* pr2 = NewProgress();
  if (!pr2) return "mmap failed";
  pid_t p = fork();
  if (p == 0) {
    mem::crash::Arm("", 0);
    alarm(20);
    cache::Ctx cw(a, 3);
    int rc = Workload(cw, 1, pr2);
    cw.alloc.Release();
    _exit(rc);
  }
  int st;
  waitpid(p, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    munmap(pr2, sizeof(Progress));
    return "the workload after repair did not complete (status " + std::to_string(st) + ")";
  }
  (void)cache::RepairDead(c);
  cache::AuditReport r2 = cache::Audit(c);
  if (!r2.clean()) return "audit after the second workload: " + r2.Summary();
  if (r2.cells_leaked != r.cells_leaked || r2.large_leaked != r.large_leaked) {
    return "the second workload (not killed) leaked: " + r.Summary() + " -> " + r2.Summary();
  }
  std::string why = pr2->finished.load() != static_cast<int>(AggSteps().size())
                        ? "the second workload did not finish its aggregate phase"
                        : CheckAgg(c, ta, *pr2);
  munmap(pr2, sizeof(Progress));
  if (!why.empty()) return "after the second workload: " + why;
  return "";
}

constexpr uint32_t kSkipGroups = 16384;  // 32 GiB of 2 MiB groups

mem::Arena* FreshArena() {
  mem::ArenaOptions o;
  o.arena_mb = 24;
  // 32 GiB more, skipped after the seed (Trial): the victim's new pages lie
  // above 32 GiB, so replacing a seeded record changes a bucket position's
  // high byte (cache/bucket.h CopySlot, ReplaceSlot) and kills land there.
  o.arena_cap_mb = 64 + kSkipGroups * 2;
  o.best_tier = mem::Tier::kSmall;
  o.prefault = false;
  o.max_procs = 8;
  o.max_value = 4u << 20;
  std::string err;
  mem::Arena* a = mem::Arena::Create(o, &err);
  if (!a) std::fprintf(stderr, "crash_points: arena: %s\n", err.c_str());
  return a;
}

// One trial in a runner process; returns "" or the failure.
int Trial(const std::string& site, uint64_t occ, bool* died) {
  int pfd[2];
  if (pipe(pfd) != 0) return 2;
  pid_t runner = fork();
  if (runner == 0) {
    close(pfd[0]);
    mem::crash::Arm("", 0);
    mem::Arena* a = FreshArena();
    if (!a) _exit(2);
    (void)cache::InitCatalog(*a, 0xC0FFEE);
    cache::Ctx c(*a, 0);
    Seed(c);
    if (a->SkipGroupsForTest(kSkipGroups) < 0) _exit(2);
    Progress* pr = NewProgress();
    if (!pr) _exit(2);
    pid_t v = fork();
    if (v == 0) {
      mem::crash::Arm(site, occ);
      cache::Ctx cv(*a, 1);
      int rc = Workload(cv, 0, pr);
      mem::crash::Arm("", 0);
      cv.alloc.Release();
      _exit(rc);
    }
    int st;
    waitpid(v, &st, 0);
    char killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 1 : 0;
    (void)!write(pfd[1], &killed, 1);
    if (!killed && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
      std::fprintf(stderr, "  FAIL %s #%llu: the victim failed on its own (status %d)\n", site.c_str(),
                   static_cast<unsigned long long>(occ), st);
      _exit(1);
    }
    (void)cache::RepairDead(c);  // what the supervisor does after reaping
    std::string why = Verify(*a, c, *pr);
    if (!why.empty()) {
      std::fprintf(stderr, "  FAIL %s #%llu: %s\n", site.c_str(), static_cast<unsigned long long>(occ),
                   why.c_str());
      _exit(1);
    }
    _exit(0);
  }
  close(pfd[1]);
  char killed = 0;
  if (read(pfd[0], &killed, 1) != 1) killed = 0;
  close(pfd[0]);
  *died = killed != 0;
  int st;
  waitpid(runner, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

}  // namespace

int main(int argc, char** argv) {
  bool all = false;
  int sample = 400, per_site = 3;
  uint64_t seed = 1;
  std::string only;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--all") all = true;
    else if (a == "--sample" && i + 1 < argc) sample = std::atoi(argv[++i]);
    else if (a == "--per-site" && i + 1 < argc) per_site = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--site" && i + 1 < argc) only = argv[++i];
    else if (a == "--list") list = true;
    else {
      std::fprintf(stderr,
                   "usage: crash_points [--all | --sample N --per-site K] [--seed S] [--site file:line] [--list]\n");
      return 2;
    }
  }
  if (!mem::crash::Enabled()) {
    std::fprintf(stderr, "crash_points: built without -DPERFCACHED_CRASH_POINTS\n");
    return 2;
  }
  // 1. Record the sites of the workload (in a child, on a fresh arena).
  int pfd[2];
  if (pipe(pfd) != 0) return 2;
  pid_t rec = fork();
  if (rec == 0) {
    close(pfd[0]);
    mem::Arena* a = FreshArena();
    if (!a) _exit(2);
    (void)cache::InitCatalog(*a, 0xC0FFEE);
    {
      cache::Ctx c(*a, 0);
      Seed(c);
    }
    if (a->SkipGroupsForTest(kSkipGroups) < 0) _exit(2);  // as every trial does
    Progress* pr = NewProgress();
    if (!pr) _exit(2);
    pid_t v = fork();
    if (v == 0) {
      cache::Ctx cv(*a, 1);
      mem::crash::StartRecording();
      int rc = Workload(cv, 0, pr);
      std::string out;
      for (auto& s : mem::crash::Recorded()) out += s.where + " " + std::to_string(s.occurrences) + "\n";
      FILE* f = fdopen(pfd[1], "w");
      std::fputs(out.c_str(), f);
      std::fclose(f);
      if (rc == 0) {  // the workload again, the model checked after every step
        g_selfcheck = true;
        std::memset(static_cast<void*>(pr), 0, sizeof(Progress));
        rc = Workload(cv, 1, pr);
        if (rc == 0 && pr->finished.load() != static_cast<int>(AggSteps().size())) rc = 4;
      }
      _exit(rc);
    }
    close(pfd[1]);
    int st;
    waitpid(v, &st, 0);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 3);
  }
  close(pfd[1]);
  std::vector<std::pair<std::string, uint64_t>> sites;
  {
    FILE* f = fdopen(pfd[0], "r");
    char where[512];
    unsigned long long n;
    while (std::fscanf(f, "%511s %llu", where, &n) == 2) sites.emplace_back(where, n);
    std::fclose(f);
  }
  int st;
  waitpid(rec, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || sites.empty()) {
    std::fprintf(stderr, "crash_points: recording run failed (status %d, %zu sites)\n", st, sites.size());
    return 2;
  }
  std::sort(sites.begin(), sites.end());
  if (list) {
    for (auto& [w, n] : sites) std::printf("%-28s %llu\n", w.c_str(), static_cast<unsigned long long>(n));
  }
  uint64_t total = 0;
  for (auto& [w, n] : sites) total += n;
  // 2. Choose the trials.
  std::vector<std::pair<std::string, uint64_t>> trials;
  std::mt19937_64 rng(seed);
  for (auto& [w, n] : sites) {
    if (!only.empty() && w != only) continue;
    if (all) {
      for (uint64_t k = 1; k <= n; ++k) trials.emplace_back(w, k);
    } else {
      for (uint64_t k = 1; k <= n && k <= static_cast<uint64_t>(per_site); ++k) trials.emplace_back(w, k);
      if (n > static_cast<uint64_t>(per_site)) trials.emplace_back(w, n);  // the last one too
    }
  }
  if (!all && only.empty()) {
    for (int i = 0; i < sample; ++i) {
      auto& [w, n] = sites[rng() % sites.size()];
      trials.emplace_back(w, 1 + rng() % n);
    }
  }
  std::printf("crash points: %zu sites, %llu store occurrences in the workload, %zu trials (%s)\n",
              sites.size(), static_cast<unsigned long long>(total), trials.size(),
              all ? "every site x every occurrence" : "sample");
  std::fflush(stdout);
  // 3. Run them.
  auto t0 = std::chrono::steady_clock::now();
  uint64_t checked = 0, failed = 0, died = 0;
  for (auto& [w, k] : trials) {
    bool d = false;
    int rc = Trial(w, k, &d);
    ++checked;
    died += d;
    if (rc != 0) ++failed;
    if (checked % 5000 == 0) {
      std::printf("crash points: ... %llu of %zu checked, %llu failed (%.0f s)\n",
                  static_cast<unsigned long long>(checked), trials.size(),
                  static_cast<unsigned long long>(failed),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::fflush(stdout);
    }
    if (failed >= 50) {
      std::printf("crash points: stopping after 50 failures\n");
      break;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("crash points: sites x occurrences: %llu checked, %llu failed (%llu killed at the point, "
              "%.1f s)\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(failed),
              static_cast<unsigned long long>(died), secs);
  return failed ? 1 : 0;
}
