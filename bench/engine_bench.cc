// perfcached — engine benchmark: ns/op, Mops/s and bytes per key of the shared table.
// Copyright (c) 2026 the perfcached authors.
//
// What it measures (see bench/README.md for every figure and JSON key):
//   1. miss_ns: the latency of one dependent DRAM miss. A pointer chase over
//      a 256 MiB buffer (far above the LLC) of 64-byte nodes linked in one
//      random cycle (Sattolo), on 2 MiB pages (MADV_HUGEPAGE) so that it is a
//      DRAM miss and not a TLB miss; the same chase on 4 KiB pages is printed
//      too. Best of a few rounds, ns per hop. Every engine time below is also
//      given as a multiple of miss_ns.
//   2. Engine ops with 16-byte keys and 200-byte values, at 50,000 and at
//      1,000,000 resident keys, with 1 and 2 worker processes, for four mixes:
//      100% GET, 95/5 and 50/50 GET/SET, 100% SET.
//      How: the parent creates the arena (best tier: hugetlb first, then down
//      the ladder), the catalog and one collection, preloads every key on its
//      own Ctx (slot 0), growing the table with GrowStep until it returns 0.
//      Per run it forks N workers. Each worker pins itself to one CPU, builds
//      its own Ctx on slot 1 + worker index, faults the arena's page tables
//      in, warms up, waits on a start barrier in a MAP_SHARED page, runs a
//      fixed number of ops (calibrated by the parent beforehand for about
//      --seconds per run), writes its elapsed ns and op count back to the
//      shared page and _exit(0)s. Every run is repeated --reps times
//      (1p, 2p, 1p, 2p, ...) and the median repetition is reported. Keys
//      come from a precomputed array, picked uniformly by an xorshift64*
//      PRNG (the next key is prefetched one op ahead, as a server's key
//      would be in its receive buffer); a GET copies into a fixed 256-byte
//      buffer and must hit (misses are counted and printed); a SET
//      overwrites an existing key with a fresh 200-byte value (its first 8
//      bytes are an op stamp, so it is a real replacement and never the
//      engine's same-bytes TTL-bump shortcut); the number of resident keys
//      stays constant. Per process ns/op = elapsed / ops; total Mops/s =
//      sum(ops) / max(elapsed).
//   3. bytes_per_key_1m: Arena::used_bytes() / keys after 1,000,000 keys of
//      16-byte keys and 100-byte values in a fresh arena, grown to target load.
// Targets are printed next to the numbers, informational only: the exit code
// is 0 unless the benchmark itself failed (arena, fork, a worker crash).
//
// Usage: bench/engine [--json] [--quick] [--seconds S] [--reps N] [--no-pin]

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/access.h"
#include "cache/evict.h"
#include "cache/table.h"
#include "mem/arena.h"

namespace {

using mem::Status;

constexpr size_t kKeyLen = 16;
constexpr size_t kValLen = 200;
constexpr size_t kBpkValLen = 100;
constexpr int kMaxWorkers = 2;
constexpr size_t kHuge = size_t{2} << 20;

// Targets (informational).
constexpr double kTargetMix95Ns = 150.0;      // 95/5 at 50k, 1 proc, ns/op
constexpr double kTargetGet1mMisses = 3.0;    // GET at 1M, in DRAM misses
constexpr double kTargetScaling = 1.8;        // 2 procs / 1 proc, total Mops
constexpr double kTargetBytesPerKey = 160.0;  // 16 B keys, 100 B values, 1M keys

// ---- small helpers ----------------------------------------------------------

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// xorshift64*: one multiply, good enough high bits for picking keys.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint64_t Next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
};

// Uniform index in [0, n) from the high 32 bits (Lemire's multiply-shift).
inline uint32_t Pick(uint64_t r, uint32_t n) {
  return static_cast<uint32_t>(((r >> 32) * n) >> 32);
}

// Anonymous private memory, 2 MiB aligned; `huge` asks for THP, else forbids it.
struct Mapping {
  char* raw = nullptr;
  size_t raw_bytes = 0;
  char* p = nullptr;
};
Mapping MapPrivate(size_t bytes, bool huge) {
  Mapping m;
  m.raw_bytes = bytes + kHuge;
  void* r = mmap(nullptr, m.raw_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  m.raw = static_cast<char*>(r);
  uintptr_t a = (reinterpret_cast<uintptr_t>(r) + kHuge - 1) & ~(uintptr_t{kHuge} - 1);
  m.p = reinterpret_cast<char*>(a);
  (void)madvise(m.p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return m;
}
void Unmap(Mapping& m) {
  if (m.raw) munmap(m.raw, m.raw_bytes);
  m = Mapping{};
}

// AnonHugePages of this process, kB (-1 if unknown).
long AnonHugeKb() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "re");
  if (!f) return -1;
  char line[256];
  long v = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "AnonHugePages: %ld kB", &v) == 1) break;
  }
  std::fclose(f);
  return v;
}

std::string CpuModel() {
  FILE* f = std::fopen("/proc/cpuinfo", "re");
  if (!f) return "?";
  char line[512];
  std::string m = "?";
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "model name", 10) == 0) {
      const char* c = std::strchr(line, ':');
      if (c) {
        m = c + 1;
        while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.erase(0, 1);
        while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
      }
      break;
    }
  }
  std::fclose(f);
  return m;
}

std::string JsonEscape(std::string_view s) {
  std::string o;
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (u < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", u);
      o += b;
    } else {
      o += ch;
    }
  }
  return o;
}

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Count(uint64_t n) {
  char b[32];
  if (n >= 1'000'000 && n % 100'000 == 0) {
    std::snprintf(b, sizeof b, "%.1fM", static_cast<double>(n) / 1e6);
  } else if (n >= 1'000'000) {
    std::snprintf(b, sizeof b, "%.2fM", static_cast<double>(n) / 1e6);
  } else if (n >= 1000 && n % 1000 == 0) {
    std::snprintf(b, sizeof b, "%" PRIu64 "k", n / 1000);
  } else {
    std::snprintf(b, sizeof b, "%" PRIu64, n);
  }
  return b;
}

// ---- JSON / report -----------------------------------------------------------

struct Json {
  std::vector<std::pair<std::string, std::string>> kv;
  void Num(const std::string& k, double v, int prec = 2) {
    if (!std::isfinite(v)) {
      kv.emplace_back(k, "null");
      return;
    }
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    kv.emplace_back(k, b);
  }
  void Int(const std::string& k, uint64_t v) { kv.emplace_back(k, std::to_string(v)); }
  void Bool(const std::string& k, bool v) { kv.emplace_back(k, v ? "true" : "false"); }
  void Str(const std::string& k, std::string_view v) {
    kv.emplace_back(k, "\"" + JsonEscape(v) + "\"");
  }
  void Null(const std::string& k) { kv.emplace_back(k, "null"); }
  void Print() const {
    std::printf("{");
    for (size_t i = 0; i < kv.size(); ++i) {
      std::printf("%s\"%s\": %s", i ? ", " : "", kv[i].first.c_str(), kv[i].second.c_str());
    }
    std::printf("}\n");
  }
};

struct Options {
  bool json = false;
  bool quick = false;
  bool pin = true;
  double seconds = 0.6;  // target length of one timed run
  int reps = 3;          // repetitions of every run (median reported)
  // For profiling one figure (perf record, callgrind): run only this suite
  // ("50k" or "1m"), this mix ("get", "mix95", "mix50", "set"), up to this
  // many processes; empty / 0 = all. Bytes per key runs only with no suite.
  std::string suite;
  std::string mix;
  int max_procs = 0;
  // --policy: the maxmemory policy the tables run under (no maxmemory, so
  // nothing is evicted; it decides when a read stores its access stamp:
  // docs/memory.md "The access field"). With it, the access clock moves 2 s
  // before every timed run, so every key's stamp is old: the worst case of
  // an LRU policy, where a key's first read in a second stores.
  std::string policy;
};

Options opt;

// Human output goes to stdout unless --json (then nothing but the object).
void Say(const char* f, ...) __attribute__((format(printf, 1, 2)));
void Say(const char* f, ...) {
  if (opt.json) return;
  va_list ap;
  va_start(ap, f);
  std::vprintf(f, ap);
  va_end(ap);
  std::fflush(stdout);
}

const char* Verdict(bool met) { return met ? "target met" : "target missed"; }

// ---- 1. the DRAM miss ----------------------------------------------------------

struct alignas(64) Node {
  Node* next;
  char pad[56];
};
static_assert(sizeof(Node) == 64);

struct ChaseResult {
  double ns = 0;        // best ns per hop
  long huge_kb = 0;     // THP backing the buffer (kB)
  size_t bytes = 0;
};

ChaseResult Chase(size_t bytes, bool huge, uint64_t hops, int rounds) {
  ChaseResult res;
  res.bytes = bytes;
  size_t n = bytes / sizeof(Node);
  long before = AnonHugeKb();
  Mapping m = MapPrivate(bytes, huge);
  auto* nodes = reinterpret_cast<Node*>(m.p);
  // Sattolo: a uniformly random permutation with exactly one cycle.
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  Rng rng(0xC0FFEE ^ bytes);
  for (size_t i = n - 1; i > 0; --i) {
    size_t j = static_cast<size_t>(((rng.Next() >> 32) * i) >> 32);  // 0..i-1
    std::swap(perm[i], perm[j]);
  }
  for (size_t i = 0; i < n; ++i) nodes[i].next = &nodes[perm[i]];
  std::vector<uint32_t>().swap(perm);
  long after = AnonHugeKb();
  res.huge_kb = (before >= 0 && after >= 0) ? after - before : -1;
  Node* x = nodes;
  for (uint64_t h = 0; h < hops / 2; ++h) x = x->next;  // warm TLB / page walk caches
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    uint64_t t0 = NowNs();
    for (uint64_t h = 0; h < hops; ++h) x = x->next;
    uint64_t t1 = NowNs();
    best = std::min(best, static_cast<double>(t1 - t0) / static_cast<double>(hops));
  }
  asm volatile("" : : "r"(x) : "memory");
  Unmap(m);
  res.ns = best;
  return res;
}

// ---- 2. engine runs ----------------------------------------------------------------

struct Keys {
  Mapping m;
  uint32_t n = 0;
  const char* Ptr(uint32_t i) const { return m.p + size_t{i} * kKeyLen; }
  std::string_view At(uint32_t i) const { return {Ptr(i), kKeyLen}; }
};

Keys MakeKeys(uint32_t n, char prefix) {
  Keys k;
  k.n = n;
  k.m = MapPrivate(std::max<size_t>(size_t{n} * kKeyLen, 4096), true);
  char tmp[32];
  for (uint32_t i = 0; i < n; ++i) {
    std::snprintf(tmp, sizeof tmp, "%c:%014" PRIu32, prefix, i);  // exactly 16 bytes
    std::memcpy(k.m.p + size_t{i} * kKeyLen, tmp, kKeyLen);
  }
  return k;
}

struct Mix {
  const char* id;     // JSON name
  const char* label;  // human name
  uint32_t set_pct;
};
constexpr Mix kMixes[] = {
    {"get", "100% GET", 0},
    {"mix95", "95/5 GET/SET", 5},
    {"mix50", "50/50 GET/SET", 50},
    {"set", "100% SET", 100},
};

struct OpCounts {
  uint64_t misses = 0;  // GET answered kNotFound (must stay 0)
  uint64_t errors = 0;  // any other non-kOk status, or a GET of the wrong length
};

// The timed loop: no allocation, no formatting; one PRNG draw per op.
__attribute__((noinline)) OpCounts RunOps(cache::Ctx& c, const cache::TableRef& t, const Keys& k,
                                          uint32_t set_pct, uint64_t ops, uint64_t seed,
                                          uint64_t stamp_base) {
  alignas(64) char buf[256];
  alignas(8) char val[kValLen];
  std::memset(val, 'x', sizeof val);
  const uint64_t thr = (uint64_t{set_pct} << 32) / 100;  // 100% -> 2^32: always
  Rng rng(seed);
  OpCounts oc;
  uint64_t r = rng.Next();
  for (uint64_t i = 0; i < ops; ++i) {
    const uint32_t idx = Pick(r, k.n);
    const bool is_set = (r & 0xFFFFFFFFu) < thr;
    r = rng.Next();
    __builtin_prefetch(k.Ptr(Pick(r, k.n)));
    const std::string_view key = k.At(idx);
    if (is_set) {
      const uint64_t stamp = stamp_base + i;
      std::memcpy(val, &stamp, sizeof stamp);
      if (cache::Set(c, t, key, std::string_view(val, kValLen)) != Status::kOk) ++oc.errors;
    } else {
      cache::ReadInfo info;
      Status st = cache::Get(c, t, key, std::span<char>(buf, sizeof buf), &info);
      if (st == Status::kNotFound) {
        ++oc.misses;
      } else if (st != Status::kOk || info.vlen != kValLen) {
        ++oc.errors;
      }
    }
  }
  return oc;
}

// Start barrier and results, in a MAP_SHARED anonymous page.
struct alignas(64) WorkerOut {
  uint64_t ns;
  uint64_t ops;
  uint64_t misses;
  uint64_t errors;
  uint32_t done;
};
struct SharedBlock {
  alignas(64) std::atomic<uint32_t> ready;
  alignas(64) std::atomic<uint32_t> go;
  WorkerOut out[kMaxWorkers];
};
SharedBlock* shared = nullptr;

struct Engine {
  const char* size_id;  // "50k" / "1m"
  mem::Arena* arena = nullptr;
  cache::Ctx* ctx = nullptr;  // the parent's, slot 0
  cache::TableRef t;
  Keys keys;
};

// Set every key (value `vlen` bytes), growing the table as it fills, then
// GrowStep until the table is at its target load.
bool Preload(Engine& e, size_t vlen, std::string* err) {
  std::vector<char> val(vlen, 'v');
  for (uint32_t i = 0; i < e.keys.n; ++i) {
    uint64_t stamp = i;
    std::memcpy(val.data(), &stamp, std::min(vlen, sizeof stamp));
    Status st = cache::Set(*e.ctx, e.t, e.keys.At(i), std::string_view(val.data(), vlen));
    if (st != Status::kOk) {
      *err = "preload Set #" + std::to_string(i) + ": " + std::string(mem::StatusName(st));
      return false;
    }
    if ((i & 1023) == 1023) (void)cache::GrowStep(*e.ctx, e.t, 1u << 16);
  }
  for (int i = 0; i < 100000; ++i) {
    if (cache::GrowStep(*e.ctx, e.t, 1u << 16) == 0) return true;
  }
  *err = "GrowStep never settled";
  return false;
}

bool OpenEngine(Engine& e, size_t arena_mb, uint32_t nkeys, size_t vlen, char prefix,
                std::string* err) {
  mem::ArenaOptions o;
  o.arena_mb = arena_mb;  // best_tier stays the default: hugetlb first, then down
  e.arena = mem::Arena::Create(o, err);
  if (!e.arena) return false;
  if (Status st = cache::InitCatalog(*e.arena, 0x5EED0000ull ^ nkeys); st != Status::kOk) {
    *err = "InitCatalog: " + std::string(mem::StatusName(st));
    return false;
  }
  e.ctx = new cache::Ctx(*e.arena, 0);
  cache::CollectionOptions co;  // defaults: 1024 buckets, 4 entries per bucket
  if (Status st = cache::CreateCollection(*e.ctx, "bench", co, &e.t); st != Status::kOk) {
    *err = "CreateCollection: " + std::string(mem::StatusName(st));
    return false;
  }
  if (!opt.policy.empty()) {
    cache::MemoryLimits l = cache::GetMemoryLimits(*e.ctx);
    if (!cache::ParsePolicy(opt.policy, &l.policy)) {
      *err = "unknown policy " + opt.policy;
      return false;
    }
    cache::SetMemoryLimits(*e.ctx, l);
  }
  e.keys = MakeKeys(nkeys, prefix);
  return Preload(e, vlen, err);
}

void CloseEngine(Engine& e) {
  delete e.ctx;
  e.ctx = nullptr;
  mem::Arena::Destroy(e.arena);
  e.arena = nullptr;
  Unmap(e.keys.m);
}

struct RunResult {
  int procs = 0;
  uint64_t ops = 0;              // per process
  double ns_proc[kMaxWorkers]{};  // per process ns/op
  double ns = 0;                 // mean of the per-process ns/op
  double mops = 0;               // total
  uint64_t misses = 0, errors = 0;
  uint64_t retries = 0, fallbacks = 0;
};

[[noreturn]] void WorkerMain(Engine& e, const Mix& mx, int w, uint64_t ops, uint64_t seed) {
  if (opt.pin) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > 1) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(w % ncpu, &set);
      (void)sched_setaffinity(0, sizeof set, &set);
    }
  }
  // The child's own handle: its own allocator slot (slot 0 is the parent's).
  cache::Ctx ctx(*e.arena, 1 + static_cast<uint32_t>(w));
  // A fork does not copy the page tables of a shared mapping: fault them in
  // now (untimed) rather than inside the timed loop.
  size_t span = size_t{e.arena->hdr()->hwm_groups} * mem::kGroupSize;
  if (madvise(e.arena->base(), span, MADV_POPULATE_WRITE) != 0) {
    for (size_t off = 0; off < span; off += 4096) {
      (void)__atomic_load_n(e.arena->base() + off, __ATOMIC_RELAXED);
    }
  }
  uint64_t stamp_base = (seed & 0xFFFF) << 40 | uint64_t(w + 1) << 56;
  (void)RunOps(ctx, e.t, e.keys, mx.set_pct, std::min<uint64_t>(ops / 10, 200'000), seed ^ 0xABCD,
               stamp_base | (uint64_t{1} << 39));
  shared->ready.fetch_add(1, std::memory_order_acq_rel);
  while (shared->go.load(std::memory_order_acquire) == 0) sched_yield();
  uint64_t t0 = NowNs();
  OpCounts oc = RunOps(ctx, e.t, e.keys, mx.set_pct, ops, seed, stamp_base);
  uint64_t t1 = NowNs();
  WorkerOut& out = shared->out[w];
  out.ns = t1 - t0;
  out.ops = ops;
  out.misses = oc.misses;
  out.errors = oc.errors;
  std::atomic_thread_fence(std::memory_order_release);
  out.done = 1;
  ctx.alloc.FlushToGlobal();  // clean exit: hand the private free cells back
  _exit(0);
}

bool RunWorkers(Engine& e, const Mix& mx, int procs, uint64_t ops, uint64_t seed, RunResult* rr,
                std::string* err) {
  std::memset(static_cast<void*>(shared->out), 0, sizeof shared->out);
  shared->ready.store(0);
  shared->go.store(0);
  uint64_t r0 = cache::SumStat(*e.ctx, e.t, cache::kStatSeqRetries);
  uint64_t f0 = cache::SumStat(*e.ctx, e.t, cache::kStatLockFallbacks);
  if (!opt.policy.empty()) {  // every stamp a second old or more (see Options::policy)
    e.ctx->clock_skew_ms += 2000;
    cache::AccessClockTick(*e.ctx);
  }
  e.ctx->alloc.FlushToGlobal();  // documented: before fork
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pids[kMaxWorkers];
  for (int w = 0; w < procs; ++w) {
    pid_t p = fork();
    if (p < 0) {
      *err = std::string("fork: ") + std::strerror(errno);
      for (int i = 0; i < w; ++i) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], nullptr, 0);
      }
      return false;
    }
    if (p == 0) WorkerMain(e, mx, w, ops, seed + 7919 * static_cast<uint64_t>(w));
    pids[w] = p;
  }
  // Wait (sleeping, not spinning: the workers own the CPUs) for all to be
  // ready; a worker that dies before the barrier ends the wait.
  bool reaped[kMaxWorkers] = {};
  int status[kMaxWorkers] = {};
  bool early_death = false;
  while (!early_death &&
         shared->ready.load(std::memory_order_acquire) < static_cast<uint32_t>(procs)) {
    timespec ts{0, 200'000};
    nanosleep(&ts, nullptr);
    for (int w = 0; w < procs; ++w) {
      if (!reaped[w] && waitpid(pids[w], &status[w], WNOHANG) == pids[w]) {
        reaped[w] = true;
        early_death = true;
      }
    }
  }
  shared->go.store(1, std::memory_order_release);
  bool ok = true;
  for (int w = 0; w < procs; ++w) {
    if (!reaped[w] && waitpid(pids[w], &status[w], 0) != pids[w]) status[w] = -1;
    if (status[w] == -1 || !WIFEXITED(status[w]) || WEXITSTATUS(status[w]) != 0 ||
        !shared->out[w].done) {
      *err = "worker " + std::to_string(w) + " failed (wait status " + std::to_string(status[w]) +
             ")";
      ok = false;
    }
  }
  if (!ok) return false;
  rr->procs = procs;
  rr->ops = ops;
  uint64_t sum_ops = 0, max_ns = 0;
  double sum_ns = 0;
  for (int w = 0; w < procs; ++w) {
    const WorkerOut& o = shared->out[w];
    rr->ns_proc[w] = static_cast<double>(o.ns) / static_cast<double>(o.ops);
    sum_ns += rr->ns_proc[w];
    sum_ops += o.ops;
    max_ns = std::max(max_ns, o.ns);
    rr->misses += o.misses;
    rr->errors += o.errors;
  }
  rr->ns = sum_ns / procs;
  rr->mops = static_cast<double>(sum_ops) / static_cast<double>(max_ns) * 1e3;
  rr->retries = cache::SumStat(*e.ctx, e.t, cache::kStatSeqRetries) - r0;
  rr->fallbacks = cache::SumStat(*e.ctx, e.t, cache::kStatLockFallbacks) - f0;
  return true;
}

// Ops per process for about opt.seconds, from a short run in the parent
// (second of two passes, so caches are warm).
uint64_t Calibrate(Engine& e, const Mix& mx) {
  uint64_t n = opt.quick ? 20'000 : 100'000;
  double ns = 0;
  for (int pass = 0; pass < 2; ++pass) {
    uint64_t t0 = NowNs();
    (void)RunOps(*e.ctx, e.t, e.keys, mx.set_pct, n, 0x1234 + pass, uint64_t{0xCA} << 48);
    ns = static_cast<double>(NowNs() - t0) / static_cast<double>(n);
  }
  double want = opt.seconds * 1e9 / std::max(ns, 1.0);
  uint64_t lo = opt.quick ? 20'000 : 1'000'000, hi = opt.quick ? 2'000'000 : 20'000'000;
  uint64_t ops = static_cast<uint64_t>(want);
  ops = std::clamp<uint64_t>(ops, lo, hi);
  uint64_t round = ops >= 1'000'000 ? 100'000 : 1'000;
  return (ops + round - 1) / round * round;
}

// ---- the suite -------------------------------------------------------------------------

struct Report {
  Json j;
  double miss_ns = NAN;
  uint64_t get_misses = 0, errors = 0;
};

void TableInfo(Engine& e, Json* j = nullptr) {
  cache::CollectionInfo ci;
  if (!cache::CollectionInfoOf(*e.ctx, e.t, &ci)) return;
  if (j) {
    j->Int(std::string("buckets_") + e.size_id, ci.buckets);
    j->Int(std::string("overflow_") + e.size_id, ci.overflow);
  }
  Say("  table: %" PRIu64 " entries, %" PRIu64 " buckets, load %.2f/bucket, %" PRIu64
      " in overflow; arena %s in use\n",
      ci.entries, ci.buckets, ci.load_factor, ci.overflow,
      (Count(e.arena->used_bytes() >> 20) + " MiB").c_str());
}

void PrintArena(const mem::Arena& a, size_t mb, const char* what) {
  Say("  arena (%s): %zu MiB, tier %s\n", what, mb, mem::TierName(a.tier()));
  Say("    tier note: %s\n", a.tier_note());
}

bool EngineSuite(Report& rep, const char* size_id, uint32_t nkeys, size_t arena_mb, char prefix) {
  Engine e;
  e.size_id = size_id;
  std::string err;
  uint64_t t0 = NowNs();
  Say("\n== %s resident keys (16-byte keys, 200-byte values) ==\n", Count(nkeys).c_str());
  if (!OpenEngine(e, arena_mb, nkeys, kValLen, prefix, &err)) {
    std::fprintf(stderr, "engine_bench: %s keys: %s\n", size_id, err.c_str());
    if (e.arena) CloseEngine(e);
    return false;
  }
  PrintArena(*e.arena, arena_mb, size_id);
  Say("  preload + grow: %.2f s\n", static_cast<double>(NowNs() - t0) / 1e9);
  TableInfo(e, &rep.j);
  std::string sid = size_id;
  rep.j.Str("tier_" + sid, mem::TierName(e.arena->tier()));
  if (sid == "50k") {
    rep.j.Str("tier", mem::TierName(e.arena->tier()));
    rep.j.Str("tier_note", e.arena->tier_note());
  }
  Say("  (median of %d repetition%s; range = fastest-slowest ns/op over them)\n", opt.reps,
      opt.reps == 1 ? "" : "s");
  Say("  %-14s %5s %9s %24s %11s %7s %8s %6s %7s %8s\n", "mix", "procs", "ops/proc",
      "ns/op/proc", "range", "x miss", "Mops/s", "2p/1p", "misses", "retries");
  bool ok = true;
  const int max_procs = opt.max_procs > 0 ? opt.max_procs : kMaxWorkers;
  for (const Mix& mx : kMixes) {
    if (!opt.mix.empty() && opt.mix != mx.id) continue;
    uint64_t ops = Calibrate(e, mx);
    // Repetitions alternate 1p, 2p, 1p, 2p, ... so that slow phases of a
    // noisy host hit both alike; each figure is the median repetition.
    std::vector<RunResult> runs[kMaxWorkers + 1];
    for (int r = 0; r < opt.reps && ok; ++r) {
      for (int procs = 1; procs <= max_procs; ++procs) {
        RunResult rr;
        uint64_t seed = 0x9E37'79B9'0000'0000ull ^ (uint64_t(nkeys) << 8) ^
                        (uint64_t(mx.set_pct) << 4) ^ (uint64_t(r) << 20) ^
                        static_cast<uint64_t>(procs);
        if (!RunWorkers(e, mx, procs, ops, seed, &rr, &err)) {
          std::fprintf(stderr, "engine_bench: %s %s %dp: %s\n", size_id, mx.id, procs,
                       err.c_str());
          ok = false;
          break;
        }
        runs[procs].push_back(rr);
      }
    }
    if (!ok) break;
    double mops1 = 0;
    for (int procs = 1; procs <= max_procs; ++procs) {
      std::vector<RunResult>& v = runs[procs];
      uint64_t misses = 0, errors = 0, retries = 0, fallbacks = 0;
      double lo = 1e30, hi = 0;
      for (const RunResult& x : v) {
        misses += x.misses;
        errors += x.errors;
        retries += x.retries;
        fallbacks += x.fallbacks;
        lo = std::min(lo, x.ns);
        hi = std::max(hi, x.ns);
      }
      std::sort(v.begin(), v.end(),
                [](const RunResult& a, const RunResult& b) { return a.mops < b.mops; });
      const RunResult& rr = v[v.size() / 2];  // the median repetition (by total Mops/s)
      rep.get_misses += misses;
      rep.errors += errors;
      std::string suffix = sid + "_" + std::to_string(procs) + "p";
      std::string key = std::string(mx.id) + "_ns_" + suffix;
      rep.j.Num(key, rr.ns, 1);
      rep.j.Num(key + "_miss_multiple", rr.ns / rep.miss_ns, 2);
      rep.j.Num("mops_" + std::string(mx.id) + "_" + suffix, rr.mops, 2);
      char nsb[64];
      if (procs == 1) {
        std::snprintf(nsb, sizeof nsb, "%.1f", rr.ns);
      } else {
        std::snprintf(nsb, sizeof nsb, "%.1f (%.1f/%.1f)", rr.ns, rr.ns_proc[0], rr.ns_proc[1]);
      }
      char range[48] = "";
      if (v.size() > 1) std::snprintf(range, sizeof range, "%.0f-%.0f", lo, hi);
      std::string scale;
      if (procs == 1) {
        mops1 = rr.mops;
      } else {
        double sc = rr.mops / mops1;
        scale = Fmt("%.2fx", sc);
        rep.j.Num("scaling_" + std::string(mx.id) + "_" + sid, sc, 2);
        if (sid == "50k" && std::string_view(mx.id) == "mix95") {
          rep.j.Num("mops_50k_2p", rr.mops, 2);  // the issue's name for this one
        }
      }
      Say("  %-14s %5d %9s %24s %11s %7.2f %8.2f %6s %7" PRIu64 " %8" PRIu64 "%s\n", mx.label,
          procs, Count(ops).c_str(), nsb, range, rr.ns / rep.miss_ns, rr.mops, scale.c_str(),
          misses, retries, errors ? "  ERRORS!" : "");
      if (fallbacks) Say("    (%" PRIu64 " reads fell back to the bucket lock)\n", fallbacks);
      if (errors) Say("    %" PRIu64 " operations returned an unexpected status\n", errors);
    }
  }
  TableInfo(e);
  CloseEngine(e);
  Say("  (%s suite: %.1f s)\n", size_id, static_cast<double>(NowNs() - t0) / 1e9);
  return ok;
}

// ---- 3. bytes per key ------------------------------------------------------------------

bool BytesPerKey(Report& rep, uint32_t nkeys, size_t arena_mb, const std::string& key) {
  Engine e;
  std::string err;
  uint64_t t0 = NowNs();
  Say("\n== bytes per key: %s keys, 16-byte keys, 100-byte values ==\n", Count(nkeys).c_str());
  if (!OpenEngine(e, arena_mb, nkeys, kBpkValLen, 'b', &err)) {
    std::fprintf(stderr, "engine_bench: bytes per key: %s\n", err.c_str());
    if (e.arena) CloseEngine(e);
    return false;
  }
  PrintArena(*e.arena, arena_mb, "bytes per key");
  cache::CollectionInfo ci{};
  (void)cache::CollectionInfoOf(*e.ctx, e.t, &ci);
  const mem::ArenaHeader* h = e.arena->hdr();
  size_t used = e.arena->used_bytes();
  double bpk = static_cast<double>(used) / nkeys;
  size_t meta = size_t{h->meta_groups} * mem::kGroupSize;
  size_t region = h->region_bytes.load();
  size_t rest = used - meta - region;
  Say("  arena used %.1f MiB = meta %.1f + index regions %.1f + slab/large %.1f MiB\n",
      used / 1048576.0, meta / 1048576.0, region / 1048576.0, rest / 1048576.0);
  Say("  table: %" PRIu64 " entries, %" PRIu64 " buckets (load %.2f), %" PRIu64
      " in overflow; record = 20 + 16 + 100 = 136 B\n",
      ci.entries, ci.buckets, ci.load_factor, ci.overflow);
  Say("  per key: %.1f bytes (slab/large %.1f, index %.1f, meta %.1f)   [%.2f s]\n", bpk,
      static_cast<double>(rest) / nkeys, static_cast<double>(region) / nkeys,
      static_cast<double>(meta) / nkeys, static_cast<double>(NowNs() - t0) / 1e9);
  rep.j.Num(key, bpk, 1);
  rep.j.Int(key + "_used_bytes", used);
  CloseEngine(e);
  return true;
}

void Usage() {
  std::printf(
      "usage: bench/engine [--json] [--quick] [--seconds S] [--reps N] [--no-pin]\n"
      "                    [--suite 50k|1m] [--mix get|mix95|mix50|set] [--procs 1|2]\n"
      "                    [--policy NAME]\n"
      "  --json      print one JSON object (and nothing else on stdout)\n"
      "  --quick     reduced run for smoke tests: fewer ops, no 1M-key suite\n"
      "  --seconds S target length of each timed run (default 0.6; --quick 0.05)\n"
      "  --reps N    repetitions of every run, median reported (default 3; --quick 1)\n"
      "  --no-pin    do not pin worker w to CPU w\n"
      "  --suite, --mix, --procs  run one suite / mix / up to N processes only (to profile\n"
      "              one figure; bytes per key and the targets then stay unmeasured)\n"
      "  --policy    run under this maxmemory policy (nothing evicted) with every access\n"
      "              stamp a second old before each run: what LRU stamping costs\n"
      "See bench/README.md for what each figure means.\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool seconds_set = false, reps_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--json") {
      opt.json = true;
    } else if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--no-pin") {
      opt.pin = false;
    } else if (a == "--seconds" && i + 1 < argc) {
      opt.seconds = std::atof(argv[++i]);
      seconds_set = true;
      if (!(opt.seconds > 0)) {
        std::fprintf(stderr, "engine_bench: bad --seconds\n");
        return 2;
      }
    } else if (a == "--reps" && i + 1 < argc) {
      opt.reps = std::atoi(argv[++i]);
      reps_set = true;
      if (opt.reps < 1 || opt.reps > 99) {
        std::fprintf(stderr, "engine_bench: bad --reps\n");
        return 2;
      }
    } else if (a == "--suite" && i + 1 < argc) {
      opt.suite = argv[++i];
      if (opt.suite != "50k" && opt.suite != "1m") {
        std::fprintf(stderr, "engine_bench: --suite is 50k or 1m\n");
        return 2;
      }
    } else if (a == "--mix" && i + 1 < argc) {
      opt.mix = argv[++i];
      bool known = false;
      for (const Mix& mx : kMixes) known = known || opt.mix == mx.id;
      if (!known) {
        std::fprintf(stderr, "engine_bench: --mix is get, mix95, mix50 or set\n");
        return 2;
      }
    } else if (a == "--procs" && i + 1 < argc) {
      opt.max_procs = std::atoi(argv[++i]);
      if (opt.max_procs < 1 || opt.max_procs > kMaxWorkers) {
        std::fprintf(stderr, "engine_bench: bad --procs\n");
        return 2;
      }
    } else if (a == "--policy" && i + 1 < argc) {
      opt.policy = argv[++i];
    } else if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    } else {
      std::fprintf(stderr, "engine_bench: unknown argument '%s'\n", argv[i]);
      Usage();
      return 2;
    }
  }
  if (opt.quick && !seconds_set) opt.seconds = 0.05;
  if (opt.quick && !reps_set) opt.reps = 1;
  uint64_t wall0 = NowNs();

  void* sp = mmap(nullptr, sizeof(SharedBlock), PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sp == MAP_FAILED) {
    std::perror("mmap shared");
    return 1;
  }
  shared = new (sp) SharedBlock();

  Report rep;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  std::string cpu = CpuModel();
  Say("perfcached engine benchmark (%s mode)\n", opt.quick ? "quick" : "full");
  Say("machine: %ld CPUs, %s; workers %s\n", ncpu, cpu.c_str(),
      opt.pin ? "pinned (worker w on CPU w)" : "not pinned");
  rep.j.Str("mode", opt.quick ? "quick" : "full");
  rep.j.Int("cpus", static_cast<uint64_t>(ncpu));
  rep.j.Int("reps", static_cast<uint64_t>(opt.reps));
  rep.j.Num("seconds_per_run", opt.seconds, 2);

  // 1. The DRAM miss.
  size_t chase_bytes = (opt.quick ? 128u : 256u) << 20;
  uint64_t hops = opt.quick ? 500'000 : 4'000'000;
  int rounds = opt.quick ? 2 : 3;
  ChaseResult huge = Chase(chase_bytes, true, hops, rounds);
  ChaseResult small = Chase(chase_bytes, false, hops, rounds);
  bool huge_ok = huge.huge_kb >= static_cast<long>(chase_bytes >> 10) / 2;
  rep.miss_ns = huge.ns;
  Say("\n== one dependent DRAM miss (pointer chase, %zu MiB, 64-byte nodes, one random cycle) ==\n",
      chase_bytes >> 20);
  Say("  miss_ns    %6.1f ns/hop   2 MiB pages (THP backing %ld of %zu MiB)%s\n", huge.ns,
      huge.huge_kb >> 10, chase_bytes >> 20,
      huge_ok ? "" : "  [THP refused: this is a 4 KiB-page figure]");
  Say("  miss_ns_4k %6.1f ns/hop   4 KiB pages (adds the TLB miss + page walk)\n", small.ns);
  Say("  every \"x miss\" below is ns/op divided by miss_ns\n");
  rep.j.Num("miss_ns", huge.ns, 1);
  rep.j.Num("miss_ns_4k", small.ns, 1);
  rep.j.Str("miss_pages", huge_ok ? "2m" : "4k");

  // 2. Engine suites.
  bool ok = true;
  if (opt.suite.empty() || opt.suite == "50k") ok = EngineSuite(rep, "50k", 50'000, opt.quick ? 64 : 256, 'k');
  if (ok && !opt.quick && (opt.suite.empty() || opt.suite == "1m")) {
    ok = EngineSuite(rep, "1m", 1'000'000, 1024, 'm');
  }

  // 3. Bytes per key.
  if (ok && opt.suite.empty()) {
    if (opt.quick) {
      ok = BytesPerKey(rep, 200'000, 128, "bytes_per_key_200k");
    } else {
      ok = BytesPerKey(rep, 1'000'000, 1024, "bytes_per_key_1m");
    }
  }
  if (!ok) {
    std::fprintf(stderr, "engine_bench: failed\n");
    return 1;
  }

  // Targets (informational).
  auto get = [&](const std::string& k) -> double {
    for (auto& [kk, v] : rep.j.kv) {
      if (kk == k) return v == "null" ? NAN : std::atof(v.c_str());
    }
    return NAN;
  };
  double mix95 = get("mix95_ns_50k_1p");
  double scale = get("scaling_mix95_50k");
  double get1m = get("get_ns_1m_1p_miss_multiple");
  double bpk = get(opt.quick ? "bytes_per_key_200k" : "bytes_per_key_1m");
  bool m1 = mix95 <= kTargetMix95Ns, m3 = scale >= kTargetScaling, m4 = bpk <= kTargetBytesPerKey;
  bool m2 = get1m <= kTargetGet1mMisses;
  const bool filtered = !opt.suite.empty() || !opt.mix.empty() || opt.max_procs > 0;
  Say(filtered ? "\n== targets: not judged (a --suite / --mix / --procs run) ==\n"
               : "\n== targets (informational, never the exit code) ==\n");
  auto line = [filtered](const char* what, const std::string& val, const std::string& target,
                         const std::string& verdict) {
    if (filtered) return;
    Say("  %-26s %14s   %-16s %s\n", what, val.c_str(), target.c_str(), verdict.c_str());
  };
  line("95/5 at 50k, 1 proc", Fmt("%.1f ns/op", mix95), Fmt("<= %.0f ns/op", kTargetMix95Ns),
       Verdict(m1));
  if (opt.quick) {
    line("GET at 1M, 1 proc", "-", Fmt("<= %.0f misses", kTargetGet1mMisses),
         "skipped (--quick)");
  } else {
    line("GET at 1M, 1 proc", Fmt("%.2f misses", get1m), Fmt("<= %.0f misses", kTargetGet1mMisses),
         std::string(Verdict(m2)) + Fmt(" (%.1f ns/op)", get("get_ns_1m_1p")));
  }
  line("95/5 at 50k, 2p/1p Mops", Fmt("%.2fx", scale), Fmt(">= %.1fx", kTargetScaling),
       Verdict(m3));
  if (opt.quick) {
    line("bytes per key, 200k keys", Fmt("%.1f B", bpk), Fmt("<= %.0f B at 1M", kTargetBytesPerKey),
         "not judged (target is for 1M keys)");
  } else {
    line("bytes per key, 1M keys", Fmt("%.1f B", bpk), Fmt("<= %.0f B", kTargetBytesPerKey),
         Verdict(m4));
  }
  Say("  GET misses over every run: %" PRIu64 "%s; other errors: %" PRIu64 "\n", rep.get_misses,
      rep.get_misses ? "  <-- a miss is a bug" : " (as it must be)", rep.errors);

  rep.j.Bool("target_mix95_ns_50k_1p_met", m1);
  if (opt.quick) {
    rep.j.Null("get_ns_1m_1p");
    rep.j.Null("get_ns_1m_1p_miss_multiple");
    rep.j.Null("bytes_per_key_1m");
    rep.j.Null("target_get_1m_misses_met");
  } else {
    rep.j.Bool("target_get_1m_misses_met", m2);
  }
  rep.j.Bool("target_scaling_mix95_50k_met", m3);
  if (opt.quick) {
    rep.j.Null("target_bytes_per_key_1m_met");
  } else {
    rep.j.Bool("target_bytes_per_key_1m_met", m4);
  }
  rep.j.Int("get_misses", rep.get_misses);
  rep.j.Int("errors", rep.errors);
  double wall = static_cast<double>(NowNs() - wall0) / 1e9;
  rep.j.Num("wall_s", wall, 1);
  Say("\nwall time %.1f s\n", wall);
  if (opt.json) rep.j.Print();
  return 0;
}
