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
//        well-formed value, and the engine still works: a fresh child runs
//        the workload again to completion within a deadline, then a final
//        audit.
// Prints "crash points: sites x occurrences: N checked, F failed" and exits
// non-zero when any trial failed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cache/audit.h"
#include "cache/table.h"
#include "mem/arena.h"
#include "mem/crash_point.h"

namespace {

using mem::Status;

constexpr int kImmortal = 64;

std::string Imm(int i) { return "imm:" + std::to_string(i); }
std::string ImmVal(int i) { return std::string(40 + i % 30, static_cast<char>('A' + i % 26)); }

// Values of the workload are one repeated letter: any other content is torn.
bool WellFormed(const std::string& v) {
  if (v.empty()) return true;
  if (v.find_first_not_of(v[0]) == std::string::npos) return true;
  // counters: decimal text
  return v.find_first_not_of("-0123456789") == std::string::npos;
}

// The bounded workload: every write path of the engine at least once.
int Workload(cache::Ctx& c, int round) {
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
  // allocator: churn one class past the donation threshold, refill after
  {
    std::vector<mem::Off> cells(300);
    for (auto& x : cells) (void)c.alloc.Alloc(48, &x);
    for (auto x : cells) c.alloc.Free(x);
    for (auto& x : cells) (void)c.alloc.Alloc(48, &x);
    for (auto x : cells) c.alloc.Free(x);
  }
  // collections: create, fill, flush, rename, resize, drop
  cache::TableRef tt;
  cache::CollectionOptions co;
  co.buckets = 16;
  std::string tmp = "tmp" + std::to_string(round);
  if (cache::CreateCollection(c, tmp, co, &tt) == Status::kOk) {
    for (int i = 0; i < 40; ++i) (void)cache::Set(c, tt, "t:" + std::to_string(i), val(i, 9));
    (void)cache::ClearCollection(c, tt, nullptr);
    for (int i = 0; i < 10; ++i) (void)cache::Set(c, tt, "t:" + std::to_string(i), val(i, 9));
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
  cache::CollectionOptions a, o;
  a.buckets = 16;
  o.buckets = 16;
  o.load_x100 = 1000000;  // never grows: full buckets spill to overflow
  cache::TableRef ta, to;
  (void)cache::CreateCollection(c, "a", a, &ta);
  (void)cache::CreateCollection(c, "o", o, &to);
  for (int i = 0; i < kImmortal; ++i) {
    (void)cache::Set(c, i % 2 ? to : ta, Imm(i), ImmVal(i));
  }
  c.alloc.FlushToGlobal();
}

// Check everything after a crash; "" when all is well.
std::string Verify(mem::Arena& a, cache::Ctx& c) {
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
                            if (it.info.type == cache::kTypeInt) return;
                            if (!WellFormed(std::string(it.value)) && bad.empty()) bad = std::string(it.key);
                          },
                          &cursor) != Status::kOk) {
        return "scan failed";
      }
    } while (cursor != 0 && ++steps < 100000);
    if (!bad.empty()) return "torn value under key " + bad;
  }
  // The engine still works: the workload again, in a fresh child, in time.
  pid_t p = fork();
  if (p == 0) {
    mem::crash::Arm("", 0);
    alarm(20);
    cache::Ctx cw(a, 3);
    int rc = Workload(cw, 1);
    cw.alloc.Release();
    _exit(rc);
  }
  int st;
  waitpid(p, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    return "the workload after repair did not complete (status " + std::to_string(st) + ")";
  }
  (void)cache::RepairDead(c);
  cache::AuditReport r2 = cache::Audit(c);
  if (!r2.clean()) return "audit after the second workload: " + r2.Summary();
  return "";
}

mem::Arena* FreshArena() {
  mem::ArenaOptions o;
  o.arena_mb = 24;
  o.arena_cap_mb = 64;
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
    pid_t v = fork();
    if (v == 0) {
      mem::crash::Arm(site, occ);
      cache::Ctx cv(*a, 1);
      int rc = Workload(cv, 0);
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
    std::string why = Verify(*a, c);
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
    pid_t v = fork();
    if (v == 0) {
      cache::Ctx cv(*a, 1);
      mem::crash::StartRecording();
      int rc = Workload(cv, 0);
      std::string out;
      for (auto& s : mem::crash::Recorded()) out += s.where + " " + std::to_string(s.occurrences) + "\n";
      FILE* f = fdopen(pfd[1], "w");
      std::fputs(out.c_str(), f);
      std::fclose(f);
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
