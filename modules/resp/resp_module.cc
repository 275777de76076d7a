// perfcached — the RESP module's exports: its per-worker door, statistics and command families.
// Copyright (c) 2026 the perfcached authors.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "modules/db/db_module.h"
#include "modules/exports.h"
#include "modules/resp/command.h"
#include "net/server.h"
#include "proc/log.h"
#include "proc/proctable.h"

namespace modules::resp {
namespace {

struct Door {
  Env env;
  net::Server* server = nullptr;
  int event_fd = -1;
  event* event_ev = nullptr;
  event* wal_ev = nullptr;  // this ring's eventfd: the WAL process made records durable
};

void OnWalDurable(evutil_socket_t fd, short, void* arg) {
  auto* d = static_cast<Door*>(arg);
  uint64_t v;
  ssize_t n = read(fd, &v, sizeof v);
  (void)n;
  if (d->server) d->server->ReleaseHeld();
}

// Events for this worker's pub/sub subscribers arrive on the read end of
// the socketpair the supervisor made for this rank before forking (see
// proc/events.h): only the daemon's processes can write to it. The bytes
// are still parsed as untrusted input, and nothing thrown leaves the
// callback.
void OnEventDatagram(evutil_socket_t fd, short, void* arg) {
  auto* d = static_cast<Door*>(arg);
  static char buf[65536];
  for (int i = 0; i < 64; ++i) {
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return;
    try {
      PubSubDeliver(d->env, std::string_view(buf, static_cast<size_t>(n)));
    } catch (const std::exception& e) {
      LOG_WARN("event datagram dropped: %s", e.what());
    }
  }
}

void OpenEventChannel(Door* d, event_base* base, int fd, int rank) {
  if (fd < 0) return;
  d->event_fd = fd;
  d->env.event_rank = rank;
  d->event_ev = event_new(base, fd, EV_READ | EV_PERSIST, &OnEventDatagram, d);
  event_add(d->event_ev, nullptr);
}

// CONFIG SET proto-max-bulk-len / client-query-buffer-limit /
// client-output-buffer-limit: stored in the process table by any worker,
// applied by each on its tick.
void ApplyLiveLimits(const proc::ProcTable& pt, size_t* max_bulk, size_t* query_buf,
                     net::OutputLimit* output) {
  *max_bulk = static_cast<size_t>(pt.live_proto_max_bulk.load());
  *query_buf = static_cast<size_t>(pt.live_query_buf.load());
  for (int k = 0; k < net::kOutputClasses; ++k) {
    output[k].hard = static_cast<size_t>(pt.live_output[k][0].load());
    output[k].soft = static_cast<size_t>(pt.live_output[k][1].load());
    output[k].soft_s = static_cast<int>(pt.live_output[k][2].load());
  }
}

std::vector<net::Cidr> AllowList(const proc::Config& cfg) {
  std::vector<net::Cidr> out;
  for (const auto& c : cfg.resp_allow) {
    net::Cidr cidr;
    if (net::ParseCidr(c, &cidr)) out.push_back(cidr);  // FinishConfig refused bad ones
  }
  return out;
}

void* WorkerInit(proc::WorkerContext& wc) {
  auto* d = new Door();
  d->env.ctx = wc.ctx;
  d->env.cfg = wc.cfg;
  d->env.procs = wc.procs;
  d->env.self = wc.self;
  InitEnv(d->env);
  if (wc.listen_fd >= 0) {
    net::ServerOptions so;
    // maxclients is for the whole daemon: a counter in the process table,
    // shared by every worker (never a per-worker split).
    so.maxclients = wc.cfg->maxclients;
    so.clients = &wc.procs->clients;
    so.timeout_s = wc.cfg->timeout;
    ApplyLiveLimits(*wc.procs, &so.limits.max_bulk, &so.query_buf_max, so.output);
    so.allow = AllowList(*wc.cfg);
    so.require_allow = true;
    so.auth_required = !wc.cfg->resp_secrets.empty();
    so.id_base = static_cast<uint64_t>(wc.rank) << 40;
    Door* dp = d;
    so.on_close = [dp](net::Conn& c) {
      if (c.subscribed()) PubSubLeave(dp->env, c);
    };
    // The WAL: this worker's ring is its process-table entry's.
    bool wal = d->env.wal.Attach(static_cast<uint32_t>(wc.self - wc.procs->e));
    if (wal && d->env.wal.efd() < 0) LOG_ERR("WAL: no ring for worker %d: its writes are refused", wc.rank);
    if (wal) {
      // FLUSHDB / FLUSHALL: a tombstone for every key removed.
      Env* env = &d->env;
      wc.ctx->on_cleared = [env](std::string_view coll, std::string_view key, uint64_t version) {
        WalLogRemoved(*env, coll, key, version);
      };
    }
    if (wal && d->env.wal.efd() >= 0 && d->env.wal.policy() == db::WalPolicy::kAlways) {
      so.durable = [dp](uint64_t pos) { return dp->env.wal.Durable(pos); };
      so.waiting = [dp](bool on) { dp->env.wal.SetWaiting(on); };
      if (wc.cfg->wal_commit == "worker") {
        // The worker commits its round's records itself (group commit
        // leader: db_module::WalLead), after the round's replies went out.
        d->env.wal.set_leads(true);
        const proc::Config* cfg = wc.cfg;
        so.commit = [dp, cfg]() { return db_module::WalLead(*cfg, dp->env.wal.index()); };
      }
      d->wal_ev = event_new(wc.base, d->env.wal.efd(), EV_READ | EV_PERSIST, &OnWalDurable, d);
      event_add(d->wal_ev, nullptr);
    }
    d->server = new net::Server(wc.base, wc.listen_fd, so,
                                [dp](net::Conn& c) { Dispatch(dp->env, c); },
                                wc.self->door);
    d->env.server = d->server;
    OpenEventChannel(d, wc.base, wc.event_fd, wc.rank);
  }
  return d;
}


void StopAccepting(void* p) {
  auto* d = static_cast<Door*>(p);
  if (d->server) d->server->StopAccepting();
}

bool Drain(void* p) {
  auto* d = static_cast<Door*>(p);
  return !d->server || d->server->DrainIdle();
}

static_assert(static_cast<int>(net::kCtrEvictedClients) == static_cast<int>(proc::kDoorEvictedClients) &&
              static_cast<int>(net::kCtrQueryLimit) == static_cast<int>(proc::kDoorQueryLimit));

// maxmemory-clients (Redis 7): while the RESP clients of every worker take
// the limit or more, the largest ones are closed, largest first across
// the workers. Each worker publishes its clients' memory and its largest
// evictable client's on its tick; a worker closes its largest clients
// while each is at least the largest another worker published (ties: the
// lower entry goes first) and the total is still at the limit. A worker
// that has not ticked for 2 s (a long command, a WAL wait) is not waited
// for, though its clients still count. Checked every tick (100 ms),
// where Redis checks after each command: a client can stay above the
// limit for a tick or two. The limit is at least 128 KiB, as in Redis (a
// smaller one would close every client, the one that set it too).
constexpr uint64_t kMinClientsLimit = 128 << 10;

void EvictClients(Door* d, int64_t now) {
  proc::ProcTable& pt = *d->env.procs;
  size_t me = static_cast<size_t>(d->env.self - pt.e);
  uint64_t big = 0, mine = d->server->ClientMemory(&big);
  pt.client_mem[me].store(mine, std::memory_order_relaxed);
  pt.client_big[me].store(big, std::memory_order_relaxed);
  int64_t set = pt.live_clients_limit.load(std::memory_order_relaxed);
  if (set == 0 || big == 0) return;
  uint64_t limit = static_cast<uint64_t>(set);
  if (set < 0) {  // N% of maxmemory; none without maxmemory
    uint64_t mm = d->env.ctx->catalog->maxmemory.load(std::memory_order_relaxed);
    if (mm == 0) return;
    uint64_t pct = static_cast<uint64_t>(-set);
    limit = mm / 100 * pct + mm % 100 * pct / 100;
  }
  limit = std::max(limit, kMinClientsLimit);
  uint64_t total = 0, others = 0;  // all clients; the largest another worker should close first
  size_t first = SIZE_MAX;
  for (size_t i = 0; i < proc::kMaxProcEntries; ++i) {
    total += pt.client_mem[i].load(std::memory_order_relaxed);
    uint64_t b = pt.client_big[i].load(std::memory_order_relaxed);
    if (i == me || b == 0 || now - pt.e[i].heartbeat_ms.load(std::memory_order_relaxed) > 2000) continue;
    if (b > others || (b == others && first > i)) others = b, first = i;
  }
  if (total < limit) return;
  d->server->EvictLargest([&](uint64_t m) {
    if (total < limit || m < others || (m == others && first < me)) return false;
    total -= std::min(total, m);
    return true;
  });
  mine = d->server->ClientMemory(&big);
  pt.client_mem[me].store(mine, std::memory_order_relaxed);
  pt.client_big[me].store(big, std::memory_order_relaxed);
}

void Tick(void* p, int64_t now) {
  auto* d = static_cast<Door*>(p);
  if (!d->server) return;
  d->server->set_timeout(d->env.procs->live_timeout.load());
  size_t max_bulk, query_buf;
  net::OutputLimit output[net::kOutputClasses];
  ApplyLiveLimits(*d->env.procs, &max_bulk, &query_buf, output);
  d->server->set_limits(max_bulk, query_buf, output);
  d->server->CloseIdle(now);
  d->server->CheckOutputLimits(now);
  EvictClients(d, now);
  EvictInBackground(d->env);
  if (d->server->held()) d->server->ReleaseHeld();  // a wake-up that went astray costs one tick
  // Replies held for durability that cannot come (the WAL cannot be
  // written: after 2 s; a hung disk: after 30 s) are withdrawn: the
  // connections close, the writes are not acknowledged.
  db::WalShared* w = db::Wal();
  if (d->server->held() && w) {
    bool failed = w->failed_errno.load() != 0;
    size_t n = d->server->DropHeld(now, failed ? 2000 : 30000);
    if (n) {
      LOG_ERR("WAL: %s: %zu connection(s) waiting for durability closed unanswered (their writes are not "
              "acknowledged)", failed ? std::strerror(w->failed_errno.load()) : "no fsync for 30 s", n);
    }
  }
}

// SIGHUP (proc/reload.h): the worker's Config has the new allow list and
// passwords; AUTH reads the passwords from it, the accept path its copy.
void Reload(void* p) {
  auto* d = static_cast<Door*>(p);
  if (d->server) d->server->set_access(AllowList(*d->env.cfg), !d->env.cfg->resp_secrets.empty());
}

void Destroy(void* p) {
  auto* d = static_cast<Door*>(p);
  delete d->server;  // closes every connection (on_close unsubscribes the worker)
  if (d->event_ev) event_free(d->event_ev);
  if (d->wal_ev) event_free(d->wal_ev);
  if (d->event_fd >= 0) close(d->event_fd);
  delete d;
}

// ---- statistics: the "resp" group --------------------------------------------
struct DoorStatName {
  const char* name;
  proc::DoorStat stat;
};
constexpr DoorStatName kDoorStats[] = {
    {"accepted", proc::kDoorAccepted}, {"rejected", proc::kDoorRejected},
    {"commands", proc::kDoorCommands}, {"errors", proc::kDoorErrors},
    {"bytes_in", proc::kDoorBytesIn},  {"bytes_out", proc::kDoorBytesOut},
    {"output_limit_disconnections", proc::kDoorOutputLimit},
    {"query_limit_disconnections", proc::kDoorQueryLimit},
    {"evicted_clients", proc::kDoorEvictedClients},
};

void CollectDoorStats(proc::ModuleProcContext& pc, std::vector<StatValue>* v) {
  const proc::ProcTable& pt = *pc.procs;
  v->push_back({"resp", "open_connections", static_cast<double>(proc::DoorSum(pt, proc::kDoorOpen)), false});
  for (const auto& d : kDoorStats) {
    v->push_back({"resp", d.name, static_cast<double>(proc::DoorSum(pt, d.stat)), true});
  }
}

bool ResetDoorStat(proc::ModuleProcContext& pc, const std::string& name) {
  bool found = false;
  for (const auto& d : kDoorStats) {
    if (name != d.name) continue;
    found = true;
    pc.procs->door_base[d.stat] = proc::DoorSum(*pc.procs, d.stat, true);
  }
  return found;
}

void ResetDoorStats(proc::ModuleProcContext& pc) {
  for (const auto& d : kDoorStats) ResetDoorStat(pc, d.name);
}

constexpr StatExport kStats[] = {{20, &CollectDoorStats, &ResetDoorStat, &ResetDoorStats}};

// The command families, in registration order (COMMAND lists them so).
// A new family (hash, set, ...) is one row here and its Register function.
constexpr RespFamily kFamilies[] = {
    {&RegisterStringFamily, "string"}, {&RegisterKeysFamily, "generic"},
    {&RegisterServerFamily, "server"}, {&RegisterPubSubFamily, "pubsub"},
    {&RegisterHashFamily, "hash"},     {&RegisterSetFamily, "set"},
};

}  // namespace

extern const ModuleExports kExports;
const ModuleExports kExports = {
    .name = "resp",
    .init = nullptr,
    .child_init = &WorkerInit,
    .stop_accepting = &StopAccepting,
    .drain = &Drain,
    .tick = &Tick,
    .reload = &Reload,
    .destroy = &Destroy,
    .procs = {},
    .stats = kStats,
    .mi_commands = nullptr,
    .resp_families = kFamilies,
    .warm = nullptr,
    .at_stop = nullptr,
    .loading_begin = &LoadingBegin,
    .loading_end = &LoadingEnd,
};

}  // namespace modules::resp
