// perfcached — supervisor, timer process and worker process lifecycles.
// Copyright (c) 2026 the perfcached authors.
#include "proc/daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "cache/access.h"
#include "cache/automove.h"
#include "cache/evict.h"
#include "mem/arena.h"
#include "proc/claim.h"
#include "proc/log.h"
#include "proc/notify.h"
#include "proc/reload.h"
#include "proc/secret.h"
#include "proc/tier_words.h"

namespace proc {
namespace {

volatile sig_atomic_t g_stop = 0;

int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

int64_t WallMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

void OwnerBump(std::atomic<int64_t>& v, int64_t x) { v.store(x, std::memory_order_relaxed); }

void RaiseFdLimit(int want) {
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t target = static_cast<rlim_t>(want);
  if (rl.rlim_cur >= target) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= target ? target : rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < target) {
    LOG_WARN("open files limit is %lu, below maxclients %d (raise LimitNOFILE / ulimit -n)",
             static_cast<unsigned long>(rl.rlim_cur), want);
  }
}

// ---- the timer process ------------------------------------------------------

[[noreturn]] void RunTimer(mem::Arena& a, Config& cfg, ProcTable* pt, ProcEntry* self) {
  LogSetRole("timer");
  prctl(PR_SET_NAME, "pc-timer");  // what ps / top show for each role
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  cache::Ctx ctx(a, self->slot);
  int64_t last_sweep = 0, last_repair = 0, last_tidy = 0;
  uint64_t repair_cursor = 0;
  cache::Automover mover;  // the one mover (cache/automove.h)
  int64_t last_age = 0;
  uint64_t age_cursor = 0;
  uint32_t live_gen = 0;
  while (!g_stop) {
    int64_t now = MonoMs();
    OwnerBump(self->heartbeat_ms, WallMs());
    (void)FollowLiveSettings(*pt, *self, &cfg, &live_gen);  // the periods below may have changed
    EventTable& ev = pt->events;
    int64_t wall = WallMs();
    // E_PERF_MEM_DEGRADED: once, when huge pages were wanted and not had.
    if (HasSubscribers(ev, kEvMemDegraded) && cfg.hugepages != "off" &&
        a.tier() != mem::Tier::kHugetlb && ev.degraded_sent.exchange(1) == 0) {
      RaiseEvent(ev, kEvMemDegraded,
                 {P("requested_mb", int64_t{cfg.arena_mb}), P("tier", mem::TierName(a.tier())),
                  P("note", ExplainTierNote(a.tier_note()))},
                 wall);
    }
    bool behind = false;
    for (const auto& ci : cache::ListCollections(ctx)) {
      cache::TableRef t;
      if (cache::OpenCollection(ctx, ci.name, &t) != mem::Status::kOk) continue;
      uint32_t n = cache::GrowStep(ctx, t, static_cast<uint32_t>(cfg.growth_budget));
      // A step that used its whole budget left work: come back at once
      // instead of in 100 ms, so growth keeps up with a pipelined fill
      // (else chains pile up in the overflow table and writes slow down).
      if (n >= static_cast<uint32_t>(cfg.growth_budget)) behind = true;
      if (n > 0) {
        LOG_DEBUG("collection %s: %u splits/merges", ci.name.c_str(), n);
        if (HasSubscribers(ev, kEvGrown)) {
          cache::CollectionInfo after;
          if (cache::CollectionInfoOf(ctx, t, &after)) {
            RaiseEvent(ev, kEvGrown,
                       {P("collection", ci.name), P("prev_buckets", static_cast<int64_t>(ci.buckets)),
                        P("buckets", static_cast<int64_t>(after.buckets)),
                        P("splits", static_cast<int64_t>(n)),
                        P("entries", static_cast<int64_t>(after.entries))},
                       wall);
          }
        }
      }
      if (now - last_sweep >= cfg.sweep_ms) {
        // Expired-key events only for opted-in collections, and only when
        // somebody listens: otherwise the sweep takes no callback at all.
        bool report = (t.h->flags & cache::kTableExpiredEvents) && HasSubscribers(ev, kEvExpired);
        std::string name = ci.name;
        (void)cache::SweepExpired(ctx, t, 1u << 20,
                                  report ? std::function<void(std::string_view)>(
                                               [&](std::string_view key) {
                                                 RaiseEvent(ev, kEvExpired,
                                                            {P("collection", name), P("key", key)},
                                                            wall);
                                               })
                                         : std::function<void(std::string_view)>());
      }
    }
    if (now - last_sweep >= cfg.sweep_ms) last_sweep = now;
    if (now - last_repair >= 1000) {
      // Deaths are repaired when the supervisor reaps the child; this slow,
      // budgeted pass (16384 buckets a second, round robin) only catches
      // what nobody else saw.
      uint32_t r = cache::RepairDeadStep(ctx, &repair_cursor, 16384);
      if (r) LOG_NOTICE("background pass repaired %u lock(s)/slot(s) left by dead processes", r);
      last_repair = now;
    }
    if (now - last_age >= 1000) {
      // The aging pass (cache/access.h): a whole round over every bucket in
      // at most 500 s, so no access stamp wraps to look young.
      uint64_t buckets = 0;
      for (const auto& ci : cache::ListCollections(ctx)) buckets += ci.buckets;
      uint32_t budget = static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(1024, buckets / 500), 1u << 24));
      (void)cache::AgeAccessStep(ctx, &age_cursor, budget);
      last_age = now;
    }
    if (now - last_tidy >= 10000) {
      // Pages a crash left counted as used although they are free.
      size_t n = mem::TidyPages(a);
      if (n) LOG_INFO("gave back %zu free slab page(s) the live counts had kept", n);
      last_tidy = now;
    }
    // Automove: empty sparse slab pages when memory is short (or when MI
    // asked); a running pass walks 16384 buckets a tick and comes back soon.
    if (uint64_t moved = mover.Step(ctx, static_cast<uint32_t>(cfg.automove_buckets)); moved) LOG_DEBUG("automove: %llu record(s) moved", static_cast<unsigned long long>(moved));
    // A pass whose walk is done waits for the processes it asked to give
    // back their cells (their ticks: 100 ms and more): no need to spin.
    bool waiting = mover.waiting();
    if (mover.active() && !waiting) behind = true;
    (void)mem::NoteUsedPeak(a);  // INFO used_memory_peak
    cache::AccessClockTick(ctx);  // the LRU / LFU clock (cache/access.h)
    usleep(behind ? 1000 : waiting ? 20 * 1000 : 100 * 1000);
  }
  ctx.alloc.FlushToGlobal();
  _exit(0);
}

// ---- a worker process -------------------------------------------------------

struct WorkerState {
  event_base* base;
  const DaemonHooks* hooks;
  void* door;
  ProcTable* pt;
  ProcEntry* self;
  Config* cfg;
  cache::Ctx* ctx;
  bool stopping = false;
  int64_t stop_deadline = 0;
  uint32_t live_gen = 0;
};

void OnWorkerSignal(evutil_socket_t, short, void* arg) {
  auto* w = static_cast<WorkerState*>(arg);
  if (w->stopping) return;
  w->stopping = true;
  w->stop_deadline = MonoMs() + 5000;
  w->hooks->stop_accepting(w->door);
  LOG_INFO("stopping: no new connections, finishing replies in flight");
}

void OnWorkerTick(evutil_socket_t, short, void* arg) {
  auto* w = static_cast<WorkerState*>(arg);
  int64_t now = WallMs();
  OwnerBump(w->self->heartbeat_ms, now);
  (void)w->ctx->alloc.AnswerGiveBack();  // automove asked for our cells in its pages
  if (FollowLiveSettings(*w->pt, *w->self, w->cfg, &w->live_gen) && w->hooks->reload) {
    w->hooks->reload(w->door);
  }
  if (w->hooks->tick) w->hooks->tick(w->door, now);
  if (w->stopping && (w->hooks->drain(w->door) || MonoMs() > w->stop_deadline)) {
    event_base_loopbreak(w->base);
  }
}

[[noreturn]] void RunWorker(mem::Arena& a, Config& cfg, ProcTable* pt, ProcEntry* self,
                            int lfd, int event_fd, const DaemonHooks& hooks) {
  char role[32];
  std::snprintf(role, sizeof role, "worker %d", self->rank);
  LogSetRole(strdup(role));
  char comm[16];
  std::snprintf(comm, sizeof comm, "pc-worker %d", self->rank);
  prctl(PR_SET_NAME, comm);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_IGN);
  cache::Ctx ctx(a, self->slot);
  OwnerBump(self->heartbeat_ms, WallMs());  // alive from the start (/health), not from the first tick
  event_base* base = event_base_new();
  WorkerContext wc{base, &ctx, &cfg, pt, self, lfd, self->rank, event_fd};
  WorkerState ws{base, &hooks, nullptr, pt, self, &cfg, &ctx};
  ws.door = hooks.worker_init(wc);
  event* sigterm = evsignal_new(base, SIGTERM, &OnWorkerSignal, &ws);
  event* sigint = evsignal_new(base, SIGINT, &OnWorkerSignal, &ws);
  event_add(sigterm, nullptr);
  event_add(sigint, nullptr);
  event* tick = event_new(base, -1, EV_PERSIST, &OnWorkerTick, &ws);
  timeval every{0, 100 * 1000};
  event_add(tick, &every);
  event_base_dispatch(base);
  hooks.destroy(ws.door);
  ctx.alloc.FlushToGlobal();
  _exit(0);
}

void OnStopSignal(int) { g_stop = 1; }

[[noreturn]] void RunModuleProc(mem::Arena& a, Config& cfg, ProcTable* pt, ProcEntry* self,
                                const ModuleProc& mp) {
  LogSetRole(strdup(mp.name.c_str()));
  std::string comm = "pc-" + mp.name;
  for (char& ch : comm) ch = ch == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  prctl(PR_SET_NAME, comm.substr(0, 15).c_str());
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_IGN);
  cache::Ctx ctx(a, self->slot);
  ModuleProcContext mc{&ctx, &cfg, pt, self, {}};
  uint32_t live_gen = 0;
  mc.tick = [&cfg, pt, self, &live_gen, &ctx] {
    (void)ctx.alloc.AnswerGiveBack();  // automove asked for our cells in its pages
    (void)FollowLiveSettings(*pt, *self, &cfg, &live_gen);
  };
  mp.run(mc);
  ctx.alloc.FlushToGlobal();
  _exit(0);
}

// ---- SIGHUP (proc/reload.h) ---------------------------------------------------

bool Has(const std::vector<std::string>* keys, std::string_view k) {
  return !keys || std::find(keys->begin(), keys->end(), k) != keys->end();
}

// Store the shared-memory settings of `c` named in `keys` ("section.key";
// null: every one, at start) into the process table and the catalog: the
// settings CONFIG SET changes live.
void StoreSharedSettings(const Config& c, const std::vector<std::string>* keys, ProcTable* pt, cache::Ctx& ctx) {
  bool level = Has(keys, "daemon.log_level");
  if (level) {
    LogLevel l = LogLevel::kNotice;
    (void)LogLevelFromName(c.log_level, &l);  // FinishConfig checked it
    SetLogLevel(l);                           // the supervisor's own
    pt->live_loglevel.store(static_cast<int32_t>(l));
  }
  if (Has(keys, "listen.timeout")) pt->live_timeout.store(c.timeout);
  if (Has(keys, "listen.proto_max_bulk_len")) pt->live_proto_max_bulk.store(c.proto_max_bulk_len);
  if (Has(keys, "listen.client_query_buffer_limit")) pt->live_query_buf.store(c.client_query_buffer_limit);
  if (Has(keys, "listen.client_output_buffer_limit")) {
    const Config::OutputLimit* ol[2] = {&c.output_normal, &c.output_pubsub};
    for (int k = 0; k < 2; ++k) {
      pt->live_output[k][0].store(ol[k]->hard);
      pt->live_output[k][1].store(ol[k]->soft);
      pt->live_output[k][2].store(ol[k]->soft_s);
    }
  }
  if (Has(keys, "memory.maxmemory_eviction_tenacity")) pt->live_tenacity.store(c.maxmemory_eviction_tenacity);
  if (Has(keys, "memory.maxmemory_clients")) pt->live_clients_limit.store(c.maxmemory_clients);
  // maxmemory, its policy and samples are one record: change only the
  // fields the file changed (CONFIG SET may have set the others).
  bool mm = Has(keys, "memory.maxmemory"), mp = Has(keys, "memory.maxmemory_policy"),
       ms = Has(keys, "memory.maxmemory_samples");
  if (mm || mp || ms) {
    cache::MemoryLimits ml = cache::GetMemoryLimits(ctx);
    if (mm) ml.maxmemory = static_cast<uint64_t>(c.maxmemory);
    if (mp) (void)cache::ParsePolicy(c.maxmemory_policy, &ml.policy);  // validated by FinishConfig
    if (ms) ml.samples = static_cast<uint32_t>(c.maxmemory_samples);
    cache::SetMemoryLimits(ctx, ml);
  }
  bool lf = Has(keys, "memory.lfu_log_factor"), ld = Has(keys, "memory.lfu_decay_time");
  if (lf || ld) {
    cache::AccessParams p = cache::LoadAccessParams(*ctx.catalog);
    cache::SetLfuParams(ctx, lf ? static_cast<uint32_t>(c.lfu_log_factor) : p.log_factor,
                        ld ? static_cast<uint32_t>(c.lfu_decay_time) : p.decay_min);
  }
  if (Has(keys, "memory.automove")) cache::SetAutomoveEnabled(ctx, c.automove);
  // Every process follows the live log level (and timeout) on its tick.
  if (keys && level) pt->live_gen.fetch_add(1);
}

// The whole SIGHUP in the supervisor: build the configuration again, log
// every difference, apply the reloadable ones to *live and to shared
// memory, publish them to the children. False when the new configuration
// was refused (nothing changed).
bool ReloadConfig(const ConfigSource& src, Config* live, ProcTable* pt, cache::Ctx& ctx) {
  const char* from = src.file.empty() ? "(embedded default)" : src.file.c_str();
  Config next;
  next.argv = live->argv;
  std::string err;
  if (!BuildConfig(src, &next, &err)) {
    LOG_ERR("reload refused, nothing changed: %s", err.c_str());
    WipeSecrets(&next);
    return false;
  }
  std::string bytes = EncodeReload(ReloadableValues(next));
  if (bytes.size() > kReloadBytes) {
    LOG_ERR("reload refused, nothing changed: the reloadable settings of %s take %zu bytes, more than the "
            "%u the reload channel holds (shorten the allow lists, or restart)",
            from, bytes.size(), kReloadBytes);
    Wipe(bytes.data(), bytes.size());
    WipeSecrets(&next);
    return false;
  }
  std::vector<ConfigChange> diff = DiffConfig(*live, next);
  std::vector<std::string> applied;
  for (const ConfigChange& ch : diff) {
    if (ch.reloads) applied.push_back(ch.key);
  }
  CopyReloadable(next, live);
  StoreSharedSettings(*live, &applied, pt, ctx);
  uint32_t gen = PublishReload(pt->reload, bytes);
  Wipe(bytes.data(), bytes.size());
  WipeSecrets(&next);
  // Logged under the new log level.
  size_t restart = diff.size() - applied.size();
  for (const ConfigChange& ch : diff) {
    if (ch.reloads) {
      LOG_NOTICE("reload: %s: %s -> %s", ch.key.c_str(), ch.from.c_str(), ch.to.c_str());
    } else {
      LOG_WARN("reload: %s: %s -> %s needs a restart: not applied, %s stays", ch.key.c_str(), ch.from.c_str(),
               ch.to.c_str(), ch.from.c_str());
    }
  }
  LOG_NOTICE("configuration reload %u from %s: %zu setting(s) applied, %zu need a restart", gen, from,
             applied.size(), restart);
  return true;
}

}  // namespace

bool StopRequested() { return g_stop != 0; }

mem::Tier TierFromConfig(const std::string& h) {
  if (h == "off") return mem::Tier::kSmall;
  if (h == "collapse") return mem::Tier::kCollapse;
  if (h == "thp") return mem::Tier::kThp;
  return mem::Tier::kHugetlb;  // auto / hugetlb: try the whole ladder
}

namespace {

// Background start: the process started from the shell (or by systemd's
// Type=forking) waits on a pipe until the daemon serves — one byte 'R' —
// or fails — end of file, after the daemon printed why on the stderr it
// inherited —, and exits 0 or 1 accordingly. Returns the write end in the
// daemon (the grandchild: setsid, not a session leader).
int Detach() {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "perfcached: pipe: %s\n", std::strerror(errno));
    return -1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t p = fork();
  if (p < 0) {
    std::fprintf(stderr, "perfcached: fork: %s\n", std::strerror(errno));
    return -1;
  }
  if (p > 0) {
    close(pfd[1]);
    char c = 0;
    ssize_t n;
    do {
      n = read(pfd[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    waitpid(p, nullptr, 0);  // the intermediate child
    _exit(n == 1 && c == 'R' ? 0 : 1);
  }
  close(pfd[0]);
  setsid();
  p = fork();
  if (p < 0) {
    std::fprintf(stderr, "perfcached: fork: %s\n", std::strerror(errno));
    _exit(1);
  }
  if (p > 0) _exit(0);
  return pfd[1];
}

void StdioToDevNull() {
  int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (dn < 0) return;
  dup2(dn, 0);
  dup2(dn, 1);
  dup2(dn, 2);
  if (dn > 2) close(dn);
}

}  // namespace

int RunDaemon(Config* live, const DaemonOptions& o, const DaemonHooks& hooks) {
  Config& cfg = *live;  // the supervisor's: a reload changes it, a child forked later inherits it
  LogLevel lvl = LogLevel::kNotice;
  (void)LogLevelFromName(cfg.log_level, &lvl);
  // systemd's variables are read, and removed from the environment, first.
  Notifier notify = Notifier::FromEnvironment();
  // SIGHUP (reload) waits in the mask until the main loop takes it; its
  // default action would end the daemon while it starts.
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  sigprocmask(SIG_BLOCK, &hup, nullptr);
  int ready_fd = -1;
  if (!o.foreground) {
    // Daemonize before anything records a pid or a tid; everything that can
    // fail (claims, binds, directories, the pid file, every door, the arena)
    // happens before the starting process is told we serve.
    ready_fd = Detach();
    if (ready_fd < 0) return 1;
  }
  // A launcher that went away (Ctrl-C, a closed pipe on stderr) must not
  // kill the daemon with SIGPIPE when it logs or says it serves; children
  // inherit this (workers and the MI process ignore it anyway).
  signal(SIGPIPE, SIG_IGN);
  LogInit(!o.foreground, lvl);
  LogAlsoStderr(!o.foreground);
  LogSetRole("supervisor");
  if (!notify.ignored().empty()) LOG_WARN("systemd: %s", notify.ignored().c_str());
  int nworkers = cfg.workers > 0 ? cfg.workers : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (nworkers < 1) nworkers = 1;
  RaiseFdLimit(cfg.maxclients + 64 * nworkers + 64);
  std::string err;

  // On any return from here: give the doors back, remove what we made.
  bool pid_written = false;
  struct Cleanup {
    const DaemonHooks& hooks;
    const Config& cfg;
    bool& pid_written;
    std::vector<int> lfds;
    ~Cleanup() {
      for (int fd : lfds) close(fd);
      if (hooks.close_doors) hooks.close_doors();
      if (pid_written) unlink(cfg.pid_file.c_str());
      ReleaseDoorClaims();
    }
  } cleanup{hooks, cfg, pid_written, {}};
  std::vector<int>& lfds = cleanup.lfds;

  // The RESP door: claimed (one daemon per address: a lock file in the
  // run directory), probed (nobody else listens there), then one
  // SO_REUSEPORT socket per worker.
  if (!cfg.resp.empty()) {
    if (!ClaimTcp(cfg.resp, RunDir(cfg), &err) || !ProbeTcpFree(cfg.resp, &err)) {
      LOG_ERR("RESP door: %s", err.c_str());
      return 1;
    }
    for (int i = 0; i < nworkers; ++i) {
      int fd = BindTcp(cfg.resp, /*reuseport=*/true, 511, &err);
      if (fd < 0) {
        LOG_ERR("RESP door: %s", err.c_str());
        return 1;
      }
      lfds.push_back(fd);
    }
    LOG_NOTICE("RESP door listening on %s (%d worker socket(s), AUTH %s)", cfg.resp.c_str(), nworkers,
               cfg.resp_secrets.empty() ? "off" : "required");
  } else {
    LOG_NOTICE("RESP door off ([listen] resp is empty)");
  }
  // The module processes' doors (MI FIFO, datagram socket, HTTP): opened
  // here, before any fork; a configured door that cannot open is fatal.
  std::vector<int> module_fds;
  if (hooks.open_doors && !hooks.open_doors(&module_fds, &err)) {
    LOG_ERR("%s", err.c_str());
    return 1;
  }
  if (!o.foreground && !cfg.pid_file.empty()) {
    // Its directory is made first (/run is empty after a reboot); the file
    // is claimed like a door: two daemons never share (and delete) one.
    if (!MakeParentDirs(cfg.pid_file, &err) || !ClaimPath(cfg.pid_file, "pid file " + cfg.pid_file, &err)) {
      LOG_ERR("pid file: %s", err.c_str());
      return 1;
    }
    FILE* f = std::fopen(cfg.pid_file.c_str(), "we");
    if (!f || std::fprintf(f, "%d\n", static_cast<int>(getpid())) < 0 || std::fclose(f) != 0) {
      LOG_ERR("cannot write pid file %s: %s", cfg.pid_file.c_str(), std::strerror(errno));
      return 1;
    }
    pid_written = true;
  }

  notify.Status("mapping the arena: " + std::to_string(cfg.arena_mb) + " MiB, hugepages " + cfg.hugepages);
  mem::ArenaOptions ao;
  ao.arena_mb = static_cast<size_t>(cfg.arena_mb);
  ao.arena_cap_mb = static_cast<size_t>(cfg.arena_cap_mb);
  ao.best_tier = TierFromConfig(cfg.hugepages);
  ao.lock_memory = cfg.lock_memory;
  ao.max_value = static_cast<size_t>(cfg.max_value_mb) << 20;
  int nmods = static_cast<int>(hooks.procs.size());
  ao.max_procs = static_cast<uint32_t>(nworkers + 2 + nmods > 8 ? nworkers + 2 + nmods : 8);
  // Faulting a large arena in takes seconds (about 1 s a GiB on 4 KiB
  // pages): from 1 GiB the start and the end are logged, and at any size
  // the progress every second meanwhile (log and systemd STATUS=).
  int64_t fault_start = MonoMs(), fault_said = fault_start;
  bool fault_told = false;
  ao.progress = [&](size_t done, size_t total) {
    constexpr double kGiB = double(size_t{1} << 30);
    int64_t now = MonoMs();
    if (done < total && done <= mem::kGroupSize) {  // the first call
      if (total >= (size_t{1} << 30)) {
        LOG_NOTICE("arena: faulting in %.1f GiB (progress every second)", total / kGiB);
        fault_told = true;
      }
      return;
    }
    if (done < total && now - fault_said >= 1000) {
      LOG_NOTICE("arena: faulted in %.1f of %.1f GiB (%d%%)", done / kGiB, total / kGiB,
                 static_cast<int>(done * 100 / total));
      char st[96];
      std::snprintf(st, sizeof st, "mapping the arena: faulted in %.1f of %.1f GiB", done / kGiB, total / kGiB);
      notify.Status(st);
      fault_said = now;
      fault_told = true;
    } else if (done == total && fault_told) {
      LOG_NOTICE("arena: faulted in %.1f of %.1f GiB in %.1f s", done / kGiB, total / kGiB,
                 static_cast<double>(now - fault_start) / 1000);
    }
  };
  mem::Arena* a = mem::Arena::Create(ao, &err);
  if (!a) {
    LOG_ERR("cannot create the arena: %s", err.c_str());
    return 1;
  }
  // Unmapped when the supervisor returns (children leave with _exit and
  // never run it); by then every child is gone.
  struct ArenaGuard {
    mem::Arena* a;
    ~ArenaGuard() { mem::Arena::Destroy(a); }
  } arena_guard{a};
  LOG_NOTICE("arena: %d MiB committed, cap %zu MiB, tier %s (%s)%s", cfg.arena_mb,
             a->cap_bytes() >> 20, mem::TierName(a->tier()), ExplainTierNote(a->tier_note()).c_str(),
             a->tier() == mem::Tier::kHugetlb || cfg.hugepages == "off"
                 ? "" : "; run perfcached-setup-host to see what the host needs");
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = static_cast<uint64_t>(WallMs());
  (void)cache::InitCatalog(*a, seed);
  cache::Ctx ctx(*a, 0);
  notify.Status("creating " + std::to_string(cfg.collections.size()) + " collection(s)");
  for (const auto& cc : cfg.collections) {
    cache::CollectionOptions co;
    co.buckets = cc.buckets;
    co.load_x100 = cc.load_factor * 100;
    co.expired_events = cc.expired_events;
    mem::Status s = cache::CreateCollection(ctx, cc.name, co, nullptr);
    if (s != mem::Status::kOk) {
      LOG_ERR("cannot create collection '%s': %s", cc.name.c_str(),
              std::string(mem::StatusName(s)).c_str());
      return 1;
    }
  }
  mem::Off pto = a->RegionAlloc(sizeof(ProcTable));
  if (pto == 0) {
    LOG_ERR("arena too small for the process table");
    return 1;
  }
  auto* pt = reinterpret_cast<ProcTable*>(a->At(pto));
  pt->started_ms.store(WallMs());
  if (getrandom(pt->replid, sizeof pt->replid, 0) != sizeof pt->replid) {
    for (size_t i = 0; i < sizeof pt->replid; ++i) pt->replid[i] = static_cast<uint8_t>(seed >> (i % 8 * 8));
  }
  // The settings CONFIG SET (and a reload) change live: in the process
  // table and the catalog.
  StoreSharedSettings(cfg, nullptr, pt, ctx);
  if (hooks.warm) {
    // The start-up load (modules/db): before any fork, so every worker
    // starts with the data and no client ever sees a half-loaded cache.
    notify.Status("loading data");
    struct LoadingDoor {  // its thread is gone before any fork, also when warm throws
      const DaemonHooks& h;
      void* door;
      ~LoadingDoor() {
        if (h.loading_end) h.loading_end(door);
      }
    };
    bool warmed;
    {
      LoadingDoor loading{hooks, hooks.loading_begin ? hooks.loading_begin(lfds) : nullptr};
      warmed = hooks.warm(ctx, pt, &err);
    }
    if (!warmed) {
      LOG_ERR("%s", err.c_str());
      return 1;
    }
  }
  // Event channels: one datagram socketpair per worker, made before any
  // fork so that only the daemon's own processes hold a write end.
  std::vector<int> ev_read, ev_write;
  for (int i = 0; i < nworkers; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) {
      LOG_ERR("event channel: socketpair: %s", std::strerror(errno));
      return 1;
    }
    int sz = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    ev_read.push_back(sv[0]);
    ev_write.push_back(sv[1]);
  }
  SetWorkerChannels(ev_write);
  // Entries: 0 supervisor, 1 timer, 2.. workers, then module processes
  // (slot == entry index).
  pt->count = static_cast<uint32_t>(nworkers + 2 + nmods);
  auto init_entry = [&](uint32_t i, int rank, Role role) {
    ProcEntry& e = pt->e[i];
    e.rank = rank;
    e.slot = i;
    e.role.store(static_cast<uint32_t>(role));
  };
  init_entry(0, 0, Role::kSupervisor);
  pt->e[0].pid.store(getpid());
  pt->e[0].start_ms.store(WallMs());
  init_entry(1, -1, Role::kTimer);
  for (int i = 0; i < nworkers; ++i) init_entry(static_cast<uint32_t>(2 + i), i + 1, Role::kWorker);
  for (int k = 0; k < nmods; ++k) {
    init_entry(static_cast<uint32_t>(2 + nworkers + k), -2 - k, Role::kModule);
  }
  ctx.alloc.FlushToGlobal();  // children never use slot 0's cells

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, nullptr);

  auto spawn = [&](uint32_t i) -> bool {
    ProcEntry& e = pt->e[i];
    e.heartbeat_ms.store(WallMs());  // a restarted child is not "stalled" by its predecessor's last beat
    e.config_gen.store(pt->reload.gen.load());  // it inherits the supervisor's Config, reloads included
    pid_t p = fork();
    if (p < 0) {
      LOG_ERR("fork: %s", std::strerror(errno));
      return false;
    }
    if (p == 0) {
      sigprocmask(SIG_UNBLOCK, &mask, nullptr);
      struct sigaction sa{};
      sa.sa_handler = OnStopSignal;
      sigaction(SIGTERM, &sa, nullptr);
      sigaction(SIGINT, &sa, nullptr);
      signal(SIGHUP, SIG_IGN);
      e.pid.store(getpid());
      e.start_ms.store(WallMs());
      // The door locks stay the supervisor's alone: they go when it goes.
      CloseDoorClaimsInChild();
      if (ready_fd >= 0) {
        // Only the supervisor tells the starting process; a child keeps
        // neither the pipe nor the caller's terminal (syslog only).
        close(ready_fd);
        StdioToDevNull();
        LogAlsoStderr(false);
      }
      bool module_proc = i >= static_cast<uint32_t>(2 + nworkers);
      if (!module_proc) {
        for (int fd : module_fds) close(fd);
      }
      for (size_t k = 0; k < lfds.size(); ++k) {
        if (static_cast<int>(k) != static_cast<int>(i) - 2) close(lfds[k]);
      }
      for (size_t k = 0; k < ev_read.size(); ++k) {
        if (static_cast<int>(k) != static_cast<int>(i) - 2) close(ev_read[k]);
      }
      if (i == 1) RunTimer(*a, cfg, pt, &e);
      if (module_proc) {
        RunModuleProc(*a, cfg, pt, &e, hooks.procs[i - 2 - static_cast<uint32_t>(nworkers)]);
      }
      RunWorker(*a, cfg, pt, &e, lfds.empty() ? -1 : lfds[i - 2], ev_read[i - 2], hooks);
    }
    e.pid.store(p);
    return true;
  };
  for (uint32_t i = 1; i < pt->count; ++i) {
    if (!spawn(i)) return 1;
  }
  LOG_NOTICE("perfcached ready: %d workers on %s, %zu collections", nworkers,
             cfg.resp.empty() ? "(no RESP door)" : cfg.resp.c_str(), cfg.collections.size());
  if (ready_fd >= 0) {
    // Serving: the starting process exits 0; from now on syslog only.
    ssize_t w;
    do {
      w = write(ready_fd, "R", 1);
    } while (w < 0 && errno == EINTR);
    close(ready_fd);
    ready_fd = -1;
    LogAlsoStderr(false);
    StdioToDevNull();
  }
  // systemd: the same point. Every door listens (bound before the fork,
  // so a connection waits in the backlog until its worker runs), the
  // arena is mapped, the collections are made.
  auto serving_status = [&]() {
    uint64_t keys = 0;
    size_t ncoll = 0;
    for (const auto& ci : cache::ListCollections(ctx)) {
      keys += ci.entries;
      ++ncoll;
    }
    int down = 0;
    for (uint32_t i = 1; i < pt->count; ++i) down += pt->e[i].pid.load() <= 0;
    std::string restarting = down ? ", " + std::to_string(down) + " process(es) restarting" : "";
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "serving: %d worker(s)%s, %llu key(s) in %zu collection(s), %d client(s), %llu of %zu MiB used",
                  nworkers, restarting.c_str(), static_cast<unsigned long long>(keys), ncoll, pt->clients.load(),
                  static_cast<unsigned long long>(mem::UsedMemory(*a) >> 20), a->cap_bytes() >> 20);
    return std::string(buf);
  };
  if (notify.enabled()) notify.Ready(serving_status());

  // Watched every tick: stalled children, a full arena (rate-limited).
  // watch() returns the stalled ones in words ("" when every worker and
  // the timer beat): the systemd watchdog is fed only then.
  std::vector<int64_t> stalled_since(pt->count, 0);
  uint64_t nomem_seen = a->hdr()->nomem_events.load(std::memory_order_relaxed);
  int64_t nomem_logged = 0;
  auto watch = [&](int64_t now) {
    int64_t wall = WallMs();
    std::string stalled;
    for (uint32_t i = 1; i < pt->count; ++i) {
      const ProcEntry& e = pt->e[i];
      Role role = static_cast<Role>(e.role.load());
      if ((role != Role::kWorker && role != Role::kTimer) || e.pid.load() <= 0) {
        stalled_since[i] = 0;
        continue;
      }
      int64_t hb = e.heartbeat_ms.load(std::memory_order_relaxed);
      if (hb == 0) continue;  // not started yet
      if (wall - hb > 3000 && stalled_since[i] == 0) {
        stalled_since[i] = hb;
        LOG_WARN("%s rank %d (pid %d) is stalled: no heartbeat for %lld ms (%s)", RoleName(role), e.rank,
                 e.pid.load(), static_cast<long long>(wall - hb),
                 role == Role::kWorker ? "its clients wait; /health answers 503" : "no growth, expiry or repair");
      } else if (wall - hb <= 3000 && stalled_since[i] != 0) {
        LOG_NOTICE("%s rank %d (pid %d) beats again after %lld ms", RoleName(role), e.rank, e.pid.load(),
                   static_cast<long long>(hb - stalled_since[i]));
        stalled_since[i] = 0;
      }
      if (stalled_since[i] != 0) {
        stalled += std::string(stalled.empty() ? "" : ", ") + RoleName(role) + " rank " + std::to_string(e.rank) +
                   " (pid " + std::to_string(e.pid.load()) + ", " + std::to_string((wall - hb) / 1000) + " s)";
      }
    }
    uint64_t nm = a->hdr()->nomem_events.load(std::memory_order_relaxed);
    if (nm != nomem_seen && (nomem_logged == 0 || now - nomem_logged >= 60000)) {
      LOG_WARN("arena full: %llu allocation(s) refused %s (writes answered -OOM); raise [memory] "
               "arena_cap_mb, or set maxmemory with an eviction policy (logged at most once a minute)",
               static_cast<unsigned long long>(nm - nomem_seen),
               nomem_logged == 0 ? "so far" : "in the last minute");
      nomem_seen = nm;
      nomem_logged = now;
    }
    return stalled;
  };

  // systemd's watchdog: WATCHDOG=1 at half its interval while nothing is
  // stalled. A restart after a crash is not a stall (the supervisor is
  // handling it); a worker or timer without a heartbeat for 3 s is.
  const int64_t wd_every_ms = static_cast<int64_t>(notify.watchdog_us() / 2000);
  int64_t wd_next = 0, status_next = MonoMs() + 5000;
  std::string status_sent, stalled_now;
  if (wd_every_ms > 0) {
    LOG_INFO("systemd watchdog: %lld ms; fed every %lld ms while every worker and the timer beat",
             static_cast<long long>(notify.watchdog_us() / 1000), static_cast<long long>(wd_every_ms));
  }
  // A reload is done when every running child has its generation.
  uint32_t reload_gen = 0;
  int64_t reload_deadline = 0;
  bool reload_ready_sent = true;
  uint32_t sup_live_gen = pt->live_gen.load();

  // Crash-loop control per entry: restarts within the last 30 s.
  std::vector<std::vector<int64_t>> recent(pt->count);
  std::vector<int64_t> restart_at(pt->count, 0);
  bool stopping = false;
  int64_t stop_deadline = 0;
  for (;;) {
    timespec ts{0, 100 * 1000 * 1000};
    siginfo_t si;
    int sig = sigtimedwait(&mask, &si, &ts);
    int64_t now = MonoMs();
    if (sig == SIGTERM || sig == SIGINT) {
      if (!stopping) {
        LOG_NOTICE("shutting down (signal %d)", sig);
        notify.Stopping("stopping: " + std::to_string(pt->count - 1) + " process(es) finish their work");
        stopping = true;
        stop_deadline = now + 10000;
        for (uint32_t i = 1; i < pt->count; ++i) {
          if (pt->e[i].pid.load() > 0) kill(pt->e[i].pid.load(), SIGTERM);
        }
      }
    } else if (sig == SIGHUP && !stopping) {
      LOG_NOTICE("SIGHUP: reloading the configuration from %s",
                 o.source.file.empty() ? "the embedded default and -o" : o.source.file.c_str());
      notify.Reloading();
      if (ReloadConfig(o.source, &cfg, pt, ctx)) {
        reload_gen = pt->reload.gen.load();
        reload_deadline = now + 5000;
        reload_ready_sent = false;
        sup_live_gen = pt->live_gen.load();  // the supervisor set its own level
      } else if (notify.enabled()) {
        notify.Ready(serving_status() + "; the last reload was refused (see the log)");
      }
    }
    if (uint32_t lg = pt->live_gen.load(); lg != sup_live_gen) {  // CONFIG SET loglevel
      sup_live_gen = lg;
      SetLogLevel(static_cast<LogLevel>(pt->live_loglevel.load()));
    }
    if (!stopping) {
      std::string stalled = watch(now);
      if (wd_every_ms > 0 && stalled != stalled_now) {
        if (stalled_now.empty()) {
          LOG_ERR("systemd watchdog: no longer fed: %s stalled (systemd restarts the service after WatchdogSec)",
                  stalled.c_str());
        } else if (stalled.empty()) {
          LOG_NOTICE("systemd watchdog: fed again, nothing is stalled");
        }
      }
      if (stalled != stalled_now) status_next = now;  // say it at once
      stalled_now = stalled;
      if (wd_every_ms > 0 && now >= wd_next) {
        if (stalled_now.empty()) notify.Watchdog();
        wd_next = now + wd_every_ms;
      }
    }
    if (reload_gen != 0) {
      std::string late;
      for (uint32_t i = 1; i < pt->count; ++i) {
        const ProcEntry& e = pt->e[i];
        if (e.pid.load() > 0 && e.config_gen.load() != reload_gen) {
          late += std::string(late.empty() ? "" : ", ") + RoleName(static_cast<Role>(e.role.load())) + " rank " +
                  std::to_string(e.rank) + " (pid " + std::to_string(e.pid.load()) + ")";
        }
      }
      if (late.empty()) {
        WipeReload(pt->reload);  // the secrets do not stay in shared memory
        LOG_INFO("configuration reload %u: every process applied it", reload_gen);
        reload_gen = 0;
      } else if (now > reload_deadline && !reload_ready_sent) {
        LOG_WARN("configuration reload %u: not applied yet by %s (stalled?): they apply it when they run again",
                 reload_gen, late.c_str());
      }
      if (!reload_ready_sent && (late.empty() || now > reload_deadline)) {
        if (notify.enabled()) notify.Ready(serving_status());
        reload_ready_sent = true;
        status_next = now + 5000;
      }
    }
    if (notify.enabled() && !stopping && reload_ready_sent && now >= status_next) {
      std::string st = stalled_now.empty() ? serving_status()
                                           : "degraded: " + stalled_now + " stalled" +
                                                 (wd_every_ms > 0 ? "; the watchdog is not fed" : "");
      if (st != status_sent) notify.Status(st);
      status_sent = st;
      status_next = now + 5000;
    }
    // Reap.
    for (;;) {
      int st;
      pid_t p = waitpid(-1, &st, WNOHANG);
      if (p <= 0) break;
      for (uint32_t i = 1; i < pt->count; ++i) {
        if (pt->e[i].pid.load() != p) continue;
        pt->e[i].pid.store(0);
        // A save, load or snapshot the dead process had claimed is free
        // again (modules/db takes over a dead claimer too; this also
        // covers its pid being reused meanwhile).
        for (std::atomic<int32_t>* claim : {&pt->persist.busy_pid, &pt->snap.busy_pid}) {
          int32_t held = p;
          claim->compare_exchange_strong(held, 0);
        }
        if (pt->snap.busy_pid.load() == 0) pt->snap.started_ms.store(0);
        // Give back the connections the dead process held (maxclients).
        uint64_t open = pt->e[i].door[kDoorOpen].load();
        pt->e[i].door[kDoorOpen].store(0);
        if (open) pt->clients.fetch_sub(static_cast<int32_t>(open));
        pt->client_mem[i].store(0);  // its clients are gone (maxmemory-clients)
        pt->client_big[i].store(0);
        if (stopping) break;
        if (WIFSIGNALED(st)) {
          LOG_WARN("%s (rank %d, pid %d) killed by signal %d", RoleName(static_cast<Role>(pt->e[i].role.load())),
                   pt->e[i].rank, p, WTERMSIG(st));
        } else {
          LOG_WARN("%s (rank %d, pid %d) exited with status %d",
                   RoleName(static_cast<Role>(pt->e[i].role.load())), pt->e[i].rank, p,
                   WEXITSTATUS(st));
        }
        // Repair what the dead process held before anyone else waits on it.
        uint32_t r = cache::RepairDead(ctx);
        if (r) LOG_NOTICE("repaired %u lock(s)/slot(s) left by pid %d", r, p);
        auto& rc = recent[i];
        rc.push_back(now);
        while (!rc.empty() && now - rc.front() > 30000) rc.erase(rc.begin());
        int64_t delay = 0;
        if (rc.size() > 5) {
          delay = std::min<int64_t>(30000, int64_t{1000} << std::min<size_t>(rc.size() - 6, 5));
          LOG_ERR("%s rank %d is crash-looping (%zu deaths in 30 s): restarting in %lld ms",
                  RoleName(static_cast<Role>(pt->e[i].role.load())), pt->e[i].rank, rc.size(),
                  static_cast<long long>(delay));
        }
        restart_at[i] = now + delay;
        pt->e[i].restarts.store(pt->e[i].restarts.load() + 1);
      }
    }
    if (stopping) {
      bool any = false;
      for (uint32_t i = 1; i < pt->count; ++i) any |= pt->e[i].pid.load() > 0;
      if (!any) break;
      if (now > stop_deadline) {
        LOG_WARN("children did not stop in time: SIGKILL");
        for (uint32_t i = 1; i < pt->count; ++i) {
          if (pt->e[i].pid.load() > 0) kill(pt->e[i].pid.load(), SIGKILL);
        }
        stop_deadline = now + 1000000;
      }
      continue;
    }
    for (uint32_t i = 1; i < pt->count; ++i) {
      if (pt->e[i].pid.load() == 0 && restart_at[i] != 0 && now >= restart_at[i]) {
        restart_at[i] = 0;
        if (spawn(i)) {
          LOG_NOTICE("%s rank %d restarted (pid %d)", RoleName(static_cast<Role>(pt->e[i].role.load())),
                     pt->e[i].rank, pt->e[i].pid.load());
        }
      }
    }
  }
  for (int fd : ev_read) close(fd);
  for (int fd : ev_write) close(fd);
  if (hooks.at_stop) {
    // A child killed on the way out (the 10 s deadline) may have held a
    // lock: repair before the final save walks the table.
    uint32_t r = cache::RepairDead(ctx);
    if (r) LOG_INFO("reclaimed %u lock(s)/slot(s) of the stopped processes before the final save", r);
    notify.Status("saving data");
    hooks.at_stop(ctx, pt);
  }
  LOG_NOTICE("stopped");
  notify.Status("stopped");
  return 0;
}

const char* RoleName(Role r) {
  switch (r) {
    case Role::kSupervisor: return "supervisor";
    case Role::kTimer: return "timer";
    case Role::kWorker: return "worker";
    case Role::kModule: return "MI process";
    case Role::kNone: break;
  }
  return "process";
}

}  // namespace proc
