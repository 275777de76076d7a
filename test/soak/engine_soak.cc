// perfcached — multi-process soak of the engine (short in make check, long in make soak).
// Copyright (c) 2026 the perfcached authors.
//
// N forked worker processes run a get/set/del/incr mix on two collections
// of one shared arena while a maintenance process splits/merges ("grow":
// starts at 16 buckets) and sweeps expired keys ("ovf": 16 buckets that
// never grow, so most writes go through the overflow table, with short
// TTLs, the shape that once crashed cachedb_perf in production).
// Invariants, checked during and after the run:
//   1. no torn read: every value is written all-bytes-equal, every hit must be;
//   2. no lost update: the sum of the counters equals the acknowledged
//      increments (with --crash: plus at most one in-flight increment per kill);
//   3. no lost key: every immortal key is always present with its exact value;
//   4. afterwards: no bucket left locked or odd, and (without --crash) the
//      entry count equals the records actually linked;
//   5. a third collection is created, filled, renamed and dropped over and
//      over while workers use it: every answer is ok, absent or stale;
//   6. hashes and sets (a quarter of the ops; --no-agg turns them off), on
//      trie encodings (> 128 fields) and listpacks:
//      torn reads: writers HSET th:i a N b N (one command), readers HMGET
//        a b: both present and equal; writers SADD / SREM a pair pNx pNy of
//        ts:i, readers SMISMEMBER both: equal (and the final contents too);
//      lost updates: HINCRBY on the fields of hc:i by every worker; the
//        sum equals the acknowledged increments (with --crash: plus at
//        most one in-flight per kill);
//      trie churn: tries built (HSET of 130 fields, SUNIONSTORE) and
//        removed (DEL, expiry + sweep, HDEL to empty): without kills not
//        one cell may leak (the audit's count).
// --crash K: the parent SIGKILLs a random worker or the maintenance process
// K times during the run (restarting it on the same slot) and relies on the
// engine's dead-holder repair.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cache/audit.h"
#include "cache/encoding.h"
#include "cache/internal.h"
#include "cache/table.h"
#include "mem/arena.h"

namespace {

using mem::Status;

constexpr int kCounters = 64;
constexpr int kTornKeys = 8;      // th:i (hashes) and ts:i (sets)
constexpr int kFiller = 140;      // filler fields: > 128, the trie encoding
constexpr int kPairs = 200;       // member pairs of a ts:i
constexpr int kHCounterKeys = 4;  // hc:0, hc:1 tries; hc:2, hc:3 listpacks
constexpr int kHCounterFields = 16;
constexpr int kChurnTries = 16;   // tk:i, built and removed
constexpr int kMaxWorkers = 16;

struct alignas(64) WorkerStats {
  std::atomic<uint64_t> ops, gets, hits, sets, dels, incr_ok, inflight, torn, lost, errors, scans;
  std::atomic<uint64_t> agg_ops, agg_torn, hincr_ok, hinflight, trie_builds, trie_drops;
};

struct Shared {
  std::atomic<int> stop;
  std::atomic<int> start;
  std::atomic<uint64_t> splits_seen;
  WorkerStats w[kMaxWorkers + 2];
  char first_error[256];
};

struct Config {
  int procs = 3;
  int seconds = 6;
  int keys = 20000;  // churn keys per collection
  int immortal = 5000;
  int crash = 0;
  bool agg = true;
  uint64_t seed = 1;
};

uint64_t Rng(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

std::string ImmortalKey(int i) { return "imm:" + std::to_string(i); }
std::string ChurnKey(uint64_t i) { return "churn:" + std::to_string(i); }
std::string CounterKey(int i) { return "ctr:" + std::to_string(i); }
std::string TornHash(int i) { return "th:" + std::to_string(i); }
std::string TornSet(int i) { return "ts:" + std::to_string(i); }
std::string HCounterKey(int i) { return "hc:" + std::to_string(i); }
std::string PairX(int p) { return "p" + std::to_string(p) + "x"; }
std::string PairY(int p) { return "p" + std::to_string(p) + "y"; }

void Fail(Shared* sh, const char* what) {
  char expected = 0;
  if (__atomic_compare_exchange_n(&sh->first_error[0], &expected, 'x', false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST)) {
    std::snprintf(sh->first_error, sizeof sh->first_error, "%s", what);
  }
}

bool AllEqual(const char* p, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    if (p[i] != p[0]) return false;
  }
  return true;
}

// One aggregate op of a worker (invariant 6). All on the "grow" collection,
// which splits and merges under them.
void AggOp(cache::Ctx& c, const cache::TableRef& t, Shared* sh, WorkerStats& st, uint64_t r) {
  using SV = std::string_view;
  st.agg_ops.fetch_add(1, std::memory_order_relaxed);
  int k = static_cast<int>((r >> 8) % kTornKeys);
  uint64_t op = (r >> 16) % 100;
  auto bad = [&](Status s, const char* what) {
    st.errors.fetch_add(1);
    Fail(sh, (std::string(what) + ": " + std::string(mem::StatusName(s))).c_str());
  };
  if (op < 20) {  // HSET th:k a N b N (N: 1..90 bytes, a trie entry either way)
    std::string n = std::to_string(r >> 20);
    n.resize(1 + (r >> 24) % 90, static_cast<char>('0' + (r >> 4) % 10));
    std::string k0 = TornHash(k);
    SV fv[] = {"a", n, "b", n};
    uint64_t added;
    if (Status s = cache::HSet(c, t, k0, fv, &added); s != Status::kOk) bad(s, "HSET a N b N");
  } else if (op < 40) {  // HMGET th:k a b: equal
    SV f[] = {"a", "b"};
    std::vector<std::optional<std::string>> out;
    Status s = cache::HMGet(c, t, TornHash(k), f, &out);
    if (s != Status::kOk) return bad(s, "HMGET");
    if (out.size() != 2 || !out[0] || !out[1] || *out[0] != *out[1]) {
      st.agg_torn.fetch_add(1);
      Fail(sh, ("torn HMGET of " + TornHash(k) + " a b").c_str());
    }
  } else if (op < 45) {  // the filler moves: the trie's paths change under the readers
    std::string f = "f" + std::to_string((r >> 24) % kFiller), v(1 + (r >> 32) % 100, 'v');
    SV fv[] = {f, v};
    uint64_t n;
    Status s = (r >> 40) % 2 ? cache::HSet(c, t, TornHash(k), fv, &n)
                             : cache::HDel(c, t, TornHash(k), std::span<const SV>(fv, 1), &n);
    if (s != Status::kOk && s != Status::kNotFound) bad(s, "HSET/HDEL filler");
  } else if (op < 60) {  // SADD / SREM of a pair
    int p = static_cast<int>((r >> 24) % kPairs);
    std::string x = PairX(p), y = PairY(p);
    SV m[] = {x, y};
    uint64_t n;
    Status s = (r >> 40) % 2 ? cache::SAdd(c, t, TornSet(k), m, &n) : cache::SRem(c, t, TornSet(k), m, &n);
    if (s != Status::kOk && s != Status::kNotFound) bad(s, "SADD/SREM pair");
  } else if (op < 75) {  // SMISMEMBER of a pair: both or neither
    int p = static_cast<int>((r >> 24) % kPairs);
    std::string x = PairX(p), y = PairY(p);
    SV m[] = {x, y};
    std::vector<bool> in;
    Status s = cache::SMIsMember(c, t, TornSet(k), m, &in);
    if (s != Status::kOk) return bad(s, "SMISMEMBER");
    if (in.size() != 2 || in[0] != in[1]) {
      st.agg_torn.fetch_add(1);
      Fail(sh, ("torn SMISMEMBER of " + TornSet(k) + " " + x + " " + y).c_str());
    }
  } else if (op < 95) {  // HINCRBY: lost-update check
    int ki = static_cast<int>((r >> 24) % kHCounterKeys);
    std::string f = "c" + std::to_string((r >> 32) % kHCounterFields);
    int64_t res;
    st.hinflight.store(1);
    Status s = cache::HIncrBy(c, t, HCounterKey(ki), f, 1, &res);
    if (s == Status::kOk) st.hincr_ok.fetch_add(1);
    st.hinflight.store(0);
    if (s != Status::kOk) bad(s, "HINCRBY");
  } else {  // trie churn: build a trie, or remove one (DEL / expiry / HDEL to empty / replace)
    std::string tk = "tk:" + std::to_string((r >> 24) % kChurnTries);
    uint64_t how = (r >> 32) % 5;
    cache::ReadInfo ri;
    Status p = cache::Probe(c, t, tk, &ri);
    if (p == Status::kNotFound) {
      std::vector<std::string> store;
      for (int i = 0; i < 130; ++i) store.push_back("f" + std::to_string(i)), store.push_back("v" + std::to_string(r));
      std::vector<SV> fv(store.begin(), store.end());
      uint64_t n;
      Status s = how == 0 ? cache::SCombineStore(c, t, cache::SetAlgebra::kUnion, tk,
                                                 std::vector<SV>{TornSet(k)}, &n)
                          : cache::HSet(c, t, tk, fv, &n);
      // kWrongType: another worker built it as the other type meanwhile
      if (s != Status::kOk && s != Status::kWrongType) return bad(s, "trie build");
      if (s == Status::kOk) st.trie_builds.fetch_add(1);
      return;
    }
    Status s = Status::kOk;
    if (how <= 1) {
      s = cache::Del(c, t, tk);
    } else if (how == 2) {
      bool changed;
      s = cache::SetExpire(c, t, tk, cache::NowMs(c) + 20, cache::ExpireCond::kAlways, &changed);
    } else if (how == 3 && ri.type == cache::kTypeHash) {
      std::vector<std::string> fs;
      for (int i = 0; i < 130; ++i) fs.push_back("f" + std::to_string(i));
      std::vector<SV> f(fs.begin(), fs.end());
      uint64_t n;
      s = cache::HDel(c, t, tk, f, &n);
    } else {  // replaced by a set (SUNIONSTORE over a key of any type)
      uint64_t n;
      s = cache::SCombineStore(c, t, cache::SetAlgebra::kInter, tk, std::vector<SV>{TornSet(k), TornSet((k + 1) % kTornKeys)}, &n);
    }
    if (s != Status::kOk && s != Status::kNotFound && s != Status::kWrongType) return bad(s, "trie drop");
    if (s == Status::kOk) st.trie_drops.fetch_add(1);
  }
}

[[noreturn]] void Worker(mem::Arena& a, Shared* sh, const Config& cfg, int idx) {
  cache::Ctx c(a, static_cast<uint32_t>(1 + idx));
  cache::TableRef tg, to;
  if (cache::OpenCollection(c, "grow", &tg) != Status::kOk ||
      cache::OpenCollection(c, "ovf", &to) != Status::kOk) {
    Fail(sh, "worker: open collection");
    _exit(2);
  }
  WorkerStats& st = sh->w[idx];
  uint64_t rng = cfg.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(getpid()) * 7919 + 1;
  char buf[512];
  std::string val;
  while (!sh->start.load()) std::this_thread::yield();
  uint64_t nops = 0;
  while (!sh->stop.load(std::memory_order_relaxed)) {
    uint64_t r = Rng(rng);
    bool ovf = (r >> 40) % 4 == 0;
    if (idx == 0 && ++nops % 50000 == 0) {
      // SCAN while the others write and the maintainer splits and merges:
      // every immortal key comes back (each at least once), nothing else
      // matches the pattern.
      std::vector<char> seen(cfg.immortal, 0);
      uint64_t cursor = 0;
      int steps = 0, distinct = 0;
      bool ok = true;
      do {
        ok = cache::ScanStep(c, tg, cursor, 32, {.glob = "imm:*"},
                             [&](const cache::ScanItem& it) {
                               int i = std::atoi(std::string(it.key.substr(4)).c_str());
                               if (i >= 0 && i < cfg.immortal && !seen[i]) {
                                 seen[i] = 1;
                                 ++distinct;
                               }
                             },
                             &cursor) == Status::kOk;
      } while (ok && cursor != 0 && ++steps < 10000000);
      st.scans.fetch_add(1);
      if (!ok || distinct != cfg.immortal) {
        st.lost.fetch_add(1);
        Fail(sh, ("scan during the run returned " + std::to_string(distinct) + " of " +
                  std::to_string(cfg.immortal) + " immortal keys").c_str());
      }
      continue;
    }
    const cache::TableRef& t = ovf ? to : tg;
    uint64_t op = r % 100;
    st.ops.fetch_add(1, std::memory_order_relaxed);
    if (cfg.agg && (r >> 44) % 4 == 0) {
      AggOp(c, tg, sh, st, Rng(rng));
      continue;
    }
    if ((r >> 56) % 64 == 0) {
      // A collection that the maintainer creates, renames and drops while we
      // use it: every answer must be a clean one (ok, absent, or stale).
      cache::TableRef tmp;
      const char* name = (r >> 8) % 2 ? "tmp" : "tmp2";
      if (cache::OpenCollection(c, name, &tmp) == Status::kOk) {
        Status s = cache::Set(c, tmp, ChurnKey(r % 1000), "tmpval");
        cache::ReadInfo ri;
        Status g = cache::Get(c, tmp, ChurnKey((r >> 10) % 1000), std::span<char>(buf, sizeof buf), &ri);
        if ((s != Status::kOk && s != Status::kStale) ||
            (g != Status::kOk && g != Status::kNotFound && g != Status::kStale) ||
            (g == Status::kOk && std::string_view(buf, ri.vlen) != "tmpval")) {
          st.errors.fetch_add(1);
          Fail(sh, "tmp collection: unexpected answer");
        }
      }
      continue;
    }
    if (op < 45) {
      bool imm = (r >> 20) % 2 == 0;
      std::string k = imm ? ImmortalKey(static_cast<int>((r >> 24) % cfg.immortal))
                          : ChurnKey((r >> 24) % cfg.keys);
      cache::ReadInfo ri;
      Status s = cache::Get(c, imm ? tg : t, k, std::span<char>(buf, sizeof buf), &ri);
      st.gets.fetch_add(1, std::memory_order_relaxed);
      if (s == Status::kOk) {
        st.hits.fetch_add(1, std::memory_order_relaxed);
        if (!AllEqual(buf, ri.vlen)) {
          st.torn.fetch_add(1);
          Fail(sh, ("torn read of " + k).c_str());
        }
        if (imm) {
          int i = std::atoi(k.c_str() + 4);
          if (ri.vlen != 200 || static_cast<unsigned char>(buf[0]) != (i & 0xFF)) {
            st.lost.fetch_add(1);
            Fail(sh, ("wrong immortal value " + k).c_str());
          }
        }
      } else if (imm) {
        st.lost.fetch_add(1);
        Fail(sh, ("immortal key missing during run: " + k).c_str());
      } else if (s != Status::kNotFound) {
        st.errors.fetch_add(1);
        Fail(sh, "get: unexpected status");
      }
    } else if (op < 70) {
      std::string k = ChurnKey((r >> 24) % cfg.keys);
      size_t len = 1 + (r >> 8) % 300;
      val.assign(len, static_cast<char>('a' + (r >> 32) % 26));
      cache::StoreOpts o;
      if (ovf || (r >> 50) % 4 == 0) o.expire_ms = cache::NowMs(c) + 200 + (r >> 12) % 1500;
      Status s = cache::Set(c, t, k, val, o);
      if (s != Status::kOk) {
        st.errors.fetch_add(1);
        Fail(sh, ("set failed: " + std::string(mem::StatusName(s))).c_str());
      }
      st.sets.fetch_add(1, std::memory_order_relaxed);
    } else if (op < 80) {
      Status s = cache::Del(c, t, ChurnKey((r >> 24) % cfg.keys));
      if (s != Status::kOk && s != Status::kNotFound) {
        st.errors.fetch_add(1);
        Fail(sh, "del: unexpected status");
      }
      st.dels.fetch_add(1, std::memory_order_relaxed);
    } else {
      int ci = static_cast<int>((r >> 24) % kCounters);
      int64_t res;
      st.inflight.store(1);
      Status s = cache::IncrBy(c, ci % 2 ? to : tg, CounterKey(ci), 1, &res);
      if (s == Status::kOk) st.incr_ok.fetch_add(1);
      st.inflight.store(0);
      if (s != Status::kOk) {
        st.errors.fetch_add(1);
        Fail(sh, ("incr failed: " + std::string(mem::StatusName(s))).c_str());
      }
    }
  }
  c.alloc.Release();
  _exit(0);
}

[[noreturn]] void Maintainer(mem::Arena& a, Shared* sh, const Config& cfg) {
  cache::Ctx c(a, static_cast<uint32_t>(1 + cfg.procs));
  cache::TableRef tg, to;
  (void)cache::OpenCollection(c, "grow", &tg);
  (void)cache::OpenCollection(c, "ovf", &to);
  while (!sh->start.load()) std::this_thread::yield();
  int tick = 0;
  while (!sh->stop.load(std::memory_order_relaxed)) {
    sh->splits_seen.fetch_add(cache::GrowStep(c, tg, 32));
    (void)cache::GrowStep(c, to, 32);
    if (++tick % 10 == 0) {
      (void)cache::SweepExpired(c, tg, 1u << 20, {});
      (void)cache::SweepExpired(c, to, 1u << 20, {});
      (void)cache::RepairDead(c);
    }
    // Collections come and go under the workers: create, fill, rename, drop.
    if (tick % 7 == 0) {
      switch ((tick / 7) % 3) {
        case 0: {
          cache::TableRef t;
          cache::CollectionOptions co;
          co.buckets = 16;
          if (cache::CreateCollection(c, "tmp", co, &t) == Status::kOk) {
            for (int i = 0; i < 200; ++i) (void)cache::Set(c, t, ChurnKey(i), "tmpval");
          }
          break;
        }
        case 1: (void)cache::RenameCollection(c, "tmp", "tmp2"); break;
        default: (void)cache::DropCollection(c, "tmp2"); break;
      }
    }
    // Every 4th round, force churn of the growth machinery: shrink then grow.
    if (tick % 40 == 0) {
      (void)cache::ResizeCollection(c, "grow", (tick / 40) % 2 ? 16 : 4096);
    }
    usleep(2000);
  }
  c.alloc.Release();
  _exit(0);
}

pid_t Spawn(mem::Arena& a, Shared* sh, const Config& cfg, int idx) {
  pid_t p = fork();
  if (p == 0) {
    if (idx < 0) Maintainer(a, sh, cfg);
    Worker(a, sh, cfg, idx);
  }
  return p;
}

int RunOn(mem::Arena* a, const Config& cfg);

// Invariant 6's keys: th:i tries (filler + a = b), ts:i tries (every pair),
// hc:0 / hc:1 tries with filler, hc:2 / hc:3 absent (they start as listpacks).
bool SeedAgg(cache::Ctx& c, const cache::TableRef& t) {
  using SV = std::string_view;
  std::vector<std::string> fill;
  for (int i = 0; i < kFiller; ++i) fill.push_back("f" + std::to_string(i)), fill.push_back("v");
  std::vector<SV> fv(fill.begin(), fill.end());
  uint64_t n;
  for (int i = 0; i < kTornKeys; ++i) {
    SV ab[] = {"a", "0", "b", "0"};
    if (cache::HSet(c, t, TornHash(i), fv, &n) != Status::kOk ||
        cache::HSet(c, t, TornHash(i), ab, &n) != Status::kOk) {
      return false;
    }
    std::vector<std::string> ms;
    for (int p = 0; p < kPairs; ++p) ms.push_back(PairX(p)), ms.push_back(PairY(p));
    std::vector<SV> m(ms.begin(), ms.end());
    if (cache::SAdd(c, t, TornSet(i), m, &n) != Status::kOk) return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (cache::HSet(c, t, HCounterKey(i), fv, &n) != Status::kOk) return false;
  }
  std::string enc;
  return cache::AggregateEncoding(c, t, TornHash(0), &enc) == Status::kOk && enc == "hashtable" &&
         cache::AggregateEncoding(c, t, TornSet(0), &enc) == Status::kOk && enc == "hashtable";
}

// Invariant 6 after the run; failures through fail(). *sum = the HINCRBY total.
template <class F>
void CheckAgg(cache::Ctx& c, const cache::TableRef& t, uint64_t* sum, F&& fail) {
  *sum = 0;
  for (int i = 0; i < kHCounterKeys; ++i) {
    cache::FieldValues fv;
    Status s = cache::HGetAll(c, t, HCounterKey(i), cache::HPart::kBoth, &fv);
    if (s != Status::kOk && s != Status::kNotFound) fail("HGETALL " + HCounterKey(i));
    for (auto& [f, v] : fv) {
      if (f[0] == 'c') *sum += std::strtoull(v.c_str(), nullptr, 10);
    }
  }
  for (int i = 0; i < kTornKeys; ++i) {
    cache::FieldValues fv;
    if (cache::HGetAll(c, t, TornHash(i), cache::HPart::kBoth, &fv) != Status::kOk) {
      fail("HGETALL " + TornHash(i));
      continue;
    }
    std::string a, b;
    for (auto& [f, v] : fv) {
      if (f == "a") a = v;
      if (f == "b") b = v;
    }
    if (a.empty() || a != b) fail("final " + TornHash(i) + ": a != b");
    std::vector<std::string> ms;
    if (cache::SMembers(c, t, TornSet(i), &ms) != Status::kOk) {
      fail("SMEMBERS " + TornSet(i));
      continue;
    }
    std::vector<int> cnt(kPairs, 0);
    for (auto& m : ms) {
      int p = std::atoi(m.c_str() + 1);
      if (p >= 0 && p < kPairs && (m == PairX(p) || m == PairY(p))) ++cnt[p];
      else fail("final " + TornSet(i) + ": stray member " + m);
    }
    for (int p = 0; p < kPairs; ++p) {
      if (cnt[p] == 1) {
        fail("final " + TornSet(i) + ": half of pair " + std::to_string(p));
        break;
      }
    }
  }
}

int Run(const Config& cfg) {
  mem::ArenaOptions o;
  o.arena_mb = 128;
  o.arena_cap_mb = 512;
  o.max_procs = 64;
  std::string err;
  mem::Arena* a = mem::Arena::Create(o, &err);
  if (!a) {
    std::fprintf(stderr, "soak: arena: %s\n", err.c_str());
    return 2;
  }
  int rc = RunOn(a, cfg);
  mem::Arena::Destroy(a);
  return rc;
}

int RunOn(mem::Arena* a, const Config& cfg) {
  std::printf("soak: %d procs, %d s, %d churn keys, %d immortal, crash=%d, tier=%s\n", cfg.procs,
              cfg.seconds, cfg.keys, cfg.immortal, cfg.crash, mem::TierName(a->tier()));
  (void)cache::InitCatalog(*a, 0xC0FFEEull + cfg.seed);
  auto* sh = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                       MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::memset(static_cast<void*>(sh), 0, sizeof(Shared));
  cache::TableRef tg, to;
  {
    cache::Ctx c(*a, 0);
    // SeedAgg's filler (kFiller fields) must make every torn hash a trie.
    cache::DictLimits lim = cache::GetDictLimits(c);
    lim.hash_pack_entries = 128;
    cache::SetDictLimits(c, lim);
    cache::CollectionOptions g;
    g.buckets = 16;
    (void)cache::CreateCollection(c, "grow", g, &tg);
    cache::CollectionOptions v;
    v.buckets = 16;
    v.load_x100 = 1000000;  // never grows: overflow stays busy
    (void)cache::CreateCollection(c, "ovf", v, &to);
    for (int i = 0; i < cfg.immortal; ++i) {
      std::string val(200, static_cast<char>(i & 0xFF));
      if (cache::Set(c, tg, ImmortalKey(i), val) != Status::kOk) {
        std::fprintf(stderr, "soak: seeding failed\n");
        return 2;
      }
    }
    if (cfg.agg && !SeedAgg(c, tg)) {
      std::fprintf(stderr, "soak: seeding hashes and sets failed\n");
      return 2;
    }
    // Pre-fork: give the parent's private cells back; the children never
    // use the parent's slot.
    c.alloc.FlushToGlobal();
  }
  std::vector<pid_t> pids(cfg.procs);
  for (int i = 0; i < cfg.procs; ++i) pids[i] = Spawn(*a, sh, cfg, i);
  pid_t maint = Spawn(*a, sh, cfg, -1);
  sh->start.store(1);
  auto t0 = std::chrono::steady_clock::now();
  auto end = t0 + std::chrono::seconds(cfg.seconds);
  uint64_t rng = cfg.seed * 31 + 7;
  int kills = 0, maint_kills = 0;
  uint64_t uncertain = 0, huncertain = 0;
  if (cfg.crash > 0) {
    auto gap = std::chrono::microseconds(cfg.seconds * 1000000LL / (cfg.crash + 1));
    while (kills < cfg.crash && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(gap / 2 + std::chrono::microseconds(Rng(rng) % gap.count()));
      int victim = static_cast<int>(Rng(rng) % (cfg.procs + 1));
      pid_t p = victim == cfg.procs ? maint : pids[victim];
      kill(p, SIGKILL);
      int status;
      waitpid(p, &status, 0);
      ++kills;
      if (victim == cfg.procs) {
        ++maint_kills;
        maint = Spawn(*a, sh, cfg, -1);
      } else {
        uncertain += sh->w[victim].inflight.exchange(0);
        huncertain += sh->w[victim].hinflight.exchange(0);
        pids[victim] = Spawn(*a, sh, cfg, victim);
      }
    }
  }
  std::this_thread::sleep_until(end);
  sh->stop.store(1);
  int bad_exit = 0;
  for (pid_t p : pids) {
    int status;
    waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad_exit;
  }
  int status;
  waitpid(maint, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad_exit;

  // ---- verification (the parent, all children gone) ----
  int failures = 0;
  auto fail = [&](const std::string& m) {
    if (failures++ < 10) std::printf("  FAIL: %s\n", m.c_str());
  };
  cache::Ctx c(*a, 0);
  // Before any repair: without kills nothing may be left locked or odd
  // (the children exited cleanly); with kills, only what a dead process held.
  cache::AuditReport pre = cache::Audit(c);
  if (cfg.crash == 0 && !pre.clean()) fail("before repair: " + pre.Summary());
  if (pre.error_count > 0 && pre.dead_holders == 0) fail("damage without a dead holder: " + pre.Summary());
  uint32_t repaired = cache::RepairDead(c);
  if (cfg.crash == 0 && repaired != 0) fail("repairs without kills: " + std::to_string(repaired));
  if (sh->first_error[0]) fail(std::string("during run: ") + sh->first_error);
  if (bad_exit) fail(std::to_string(bad_exit) + " child(ren) exited abnormally");
  std::string v;
  for (int i = 0; i < cfg.immortal; ++i) {
    if (cache::GetString(c, tg, ImmortalKey(i), &v) != Status::kOk ||
        v != std::string(200, static_cast<char>(i & 0xFF))) {
      fail("immortal key lost: " + ImmortalKey(i));
    }
  }
  uint64_t sum = 0, acked = 0, ops = 0, torn = 0, scans = 0;
  for (int i = 0; i < kCounters; ++i) {
    if (cache::GetString(c, i % 2 ? to : tg, CounterKey(i), &v) == Status::kOk) {
      sum += std::strtoull(v.c_str(), nullptr, 10);
    }
  }
  for (int i = 0; i < cfg.procs; ++i) {
    acked += sh->w[i].incr_ok.load();
    ops += sh->w[i].ops.load();
    torn += sh->w[i].torn.load();
    scans += sh->w[i].scans.load();
  }
  if (scans == 0) fail("no SCAN ran during the soak");
  uint64_t hsum = 0, hacked = 0, agg_ops = 0, agg_torn = 0, builds = 0, drops = 0;
  if (cfg.agg) {
    CheckAgg(c, tg, &hsum, fail);
    for (int i = 0; i < cfg.procs; ++i) {
      hacked += sh->w[i].hincr_ok.load();
      agg_ops += sh->w[i].agg_ops.load();
      agg_torn += sh->w[i].agg_torn.load();
      builds += sh->w[i].trie_builds.load();
      drops += sh->w[i].trie_drops.load();
    }
    if (hsum < hacked || hsum > hacked + huncertain) {
      fail("HINCRBY sum " + std::to_string(hsum) + " != acknowledged increments " +
           std::to_string(hacked) + " (+ up to " + std::to_string(huncertain) + " in flight)");
    }
    if (agg_ops == 0 || hacked == 0 || builds == 0 || drops == 0) fail("the aggregate workload did not run");
  }
  if (sum < acked || sum > acked + uncertain) {
    fail("counter sum " + std::to_string(sum) + " != acknowledged increments " +
         std::to_string(acked) + " (+ up to " + std::to_string(uncertain) + " in flight)");
  }
  // The audit after repair: clean; without kills not one cell leaked.
  cache::AuditReport post = cache::Audit(c);
  if (!post.clean()) fail("audit after repair: " + post.Summary());
  if (cfg.crash == 0 && post.cells_leaked + post.large_leaked != 0) {
    fail("cells leaked without kills: " + post.Summary());
  }
  // With kills: a killed process leaks at most what one op had in flight
  // (a trie under construction or being freed: hundreds of cells), not a
  // structure per removal.
  constexpr uint64_t kLeakPerKill = 10000;
  if (cfg.crash > 0 && post.cells_leaked > kLeakPerKill * static_cast<uint64_t>(kills)) {
    fail("more cells leaked than " + std::to_string(kLeakPerKill) + " per kill: " + post.Summary());
  }
  std::printf("audit: %s\n", post.Summary().c_str());
  // Every bucket unlocked and even; immortal keys found by a full SCAN.
  uint64_t linked = 0, scanned_imm = 0;
  for (const cache::TableRef* t : {&tg, &to}) {
    const cache::TableHeader& h = *t->h;
    uint64_t span = uint64_t{h.nsegs} << cache::kSegShift;
    for (uint64_t i = 0; i < span; ++i) {
      cache::Bucket* b = cache::detail::BucketAt(*a, h, i);
      if (!b) continue;
      if (mem::LockHolder(b->lock) != 0 || (b->seq.load() & 1)) {
        fail("bucket " + std::to_string(i) + " left locked or odd");
      }
      if (i < cache::detail::RouteBuckets(h.route.load())) linked += cache::Used(cache::TagsHi(*b));
    }
    linked += h.ovf.count.load();
    if (mem::LockHolder(h.ovf.lock) != 0 || (h.ovf.seq.load() & 1)) fail("overflow left locked");
  }
  uint64_t cursor = 0;
  int steps = 0;
  do {
    if (cache::ScanStep(c, tg, cursor, 64, {.glob = "imm:*"},
                        [&](const cache::ScanItem&) { ++scanned_imm; }, &cursor) != Status::kOk) {
      fail("scan failed");
      break;
    }
  } while (cursor != 0 && ++steps < 10000000);
  if (scanned_imm < static_cast<uint64_t>(cfg.immortal)) {
    fail("scan returned " + std::to_string(scanned_imm) + " immortal keys of " +
         std::to_string(cfg.immortal));
  }
  uint64_t entries = cache::CollectionEntries(c, tg) + cache::CollectionEntries(c, to);
  if (cfg.crash == 0 && entries != linked) {
    fail("entry count " + std::to_string(entries) + " != linked records " + std::to_string(linked));
  }
  cache::CollectionInfo gi, oi;
  (void)cache::CollectionInfoOf(c, tg, &gi);
  (void)cache::CollectionInfoOf(c, to, &oi);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("SOAK RESULT ops=%llu (%.2f Mops/s) torn=%llu counter_sum=%llu acked=%llu "
              "splits+merges=%llu buckets=%llu overflow=%u kills=%d (maint %d) bucket_repairs=%llu repair_dead=%u "
              "live_scans=%llu => %s\n",
              static_cast<unsigned long long>(ops), ops / secs / 1e6,
              static_cast<unsigned long long>(torn), static_cast<unsigned long long>(sum),
              static_cast<unsigned long long>(acked),
              static_cast<unsigned long long>(gi.stats[cache::kStatSplits] +
                                              gi.stats[cache::kStatMerges]),
              static_cast<unsigned long long>(gi.buckets), to.h->ovf.count.load(), kills,
              maint_kills,
              static_cast<unsigned long long>(gi.stats[cache::kStatRepairs] +
                                              oi.stats[cache::kStatRepairs]),
              repaired, static_cast<unsigned long long>(scans), failures ? "*** FAIL ***" : "PASS");
  if (cfg.agg) {
    std::printf("SOAK AGGREGATES ops=%llu torn=%llu hincrby_sum=%llu acked=%llu tries built=%llu removal ops=%llu "
                "(audit: %llu aggregates, %llu trie entries)\n",
                static_cast<unsigned long long>(agg_ops), static_cast<unsigned long long>(agg_torn),
                static_cast<unsigned long long>(hsum), static_cast<unsigned long long>(hacked),
                static_cast<unsigned long long>(builds), static_cast<unsigned long long>(drops),
                static_cast<unsigned long long>(post.aggregates),
                static_cast<unsigned long long>(post.aggregate_entries));
  }
  munmap(sh, sizeof(Shared));
  c.alloc.FlushToGlobal();
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (a == "--procs") cfg.procs = next();
    else if (a == "--seconds") cfg.seconds = next();
    else if (a == "--keys") cfg.keys = next();
    else if (a == "--immortal") cfg.immortal = next();
    else if (a == "--crash") cfg.crash = next();
    else if (a == "--seed") cfg.seed = static_cast<uint64_t>(next());
    else if (a == "--no-agg") cfg.agg = false;
    else {
      std::fprintf(stderr,
                   "usage: engine_soak [--procs N] [--seconds S] [--keys K] [--immortal I] "
                   "[--crash KILLS] [--seed N] [--no-agg]\n");
      return 2;
    }
  }
  if (cfg.procs < 1 || cfg.procs > kMaxWorkers || cfg.seconds < 1 || cfg.keys < 1 ||
      cfg.immortal < 1) {
    std::fprintf(stderr, "engine_soak: bad arguments\n");
    return 2;
  }
  return Run(cfg);
}
