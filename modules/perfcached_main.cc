// perfcached — the daemon binary: command line, config, and the doors wired into workers.
// Copyright (c) 2026 the perfcached authors.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "mem/arena.h"
#include "modules/mi/mi_module.h"
#include "modules/resp/command.h"
#include "net/server.h"
#include "proc/config.h"
#include "proc/daemon.h"
#include "proc/log.h"
#include "proc/secret.h"

namespace {

constexpr char kVersion[] = "perfcached 0.1.0";

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: perfcached [-f FILE] [-o section.key=value ...] [-C] [-E] [-D] [-V]\n"
               "  -f FILE   config file (INI); without it the embedded default serves\n"
               "  -o K=V    override a setting, e.g. -o listen.resp=127.0.0.1:7000\n"
               "            (collections: -o collection.NAME.buckets=4096)\n"
               "  -C        validate the configuration, print what would run, exit 0/1\n"
               "  -E        print the effective configuration (secrets masked) and exit\n"
               "  -D        stay in the foreground, log to stderr (default: daemonize, syslog)\n"
               "  -V        version and build\n"
               "  -h        this help, with every setting\n"
               "  --list-commands  the RESP dispatch table: name arity flags first last step group\n\n"
               "settings (section, key = default):\n%s",
               proc::ConfigHelp().c_str());
}

struct Door {
  modules::resp::Env env;
  net::Server* server = nullptr;
  int event_fd = -1;
  event* event_ev = nullptr;
};

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
      modules::resp::PubSubDeliver(d->env, std::string_view(buf, static_cast<size_t>(n)));
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

void* WorkerInit(proc::WorkerContext& wc) {
  auto* d = new Door();
  d->env.ctx = wc.ctx;
  d->env.cfg = wc.cfg;
  d->env.procs = wc.procs;
  d->env.self = wc.self;
  modules::resp::InitEnv(d->env);
  if (wc.listen_fd >= 0) {
    net::ServerOptions so;
    // maxclients is for the whole daemon: a counter in the process table,
    // shared by every worker (never a per-worker split).
    so.maxclients = wc.cfg->maxclients;
    so.clients = &wc.procs->clients;
    so.timeout_s = wc.cfg->timeout;
    ApplyLiveLimits(*wc.procs, &so.limits.max_bulk, &so.query_buf_max, so.output);
    for (const auto& c : wc.cfg->resp_allow) {
      net::Cidr cidr;
      if (net::ParseCidr(c, &cidr)) so.allow.push_back(cidr);  // FinishConfig refused bad ones
    }
    so.require_allow = true;
    so.auth_required = !wc.cfg->resp_secrets.empty();
    so.id_base = static_cast<uint64_t>(wc.rank) << 40;
    Door* dp = d;
    so.on_close = [dp](net::Conn& c) {
      if (c.subscribed()) modules::resp::PubSubLeave(dp->env, c);
    };
    d->server = new net::Server(wc.base, wc.listen_fd, so,
                                [dp](net::Conn& c) { modules::resp::Dispatch(dp->env, c); },
                                wc.self->door);
    d->env.server = d->server;
    OpenEventChannel(d, wc.base, wc.event_fd, wc.rank);
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  std::vector<std::string> overrides;
  bool check = false, dump = false, foreground = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      Usage(stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("%s (built %s %s, g++ %s)\n", kVersion, __DATE__, __TIME__, __VERSION__);
      return 0;
    }
    if (std::strcmp(argv[i], "--list-commands") == 0) {  // the RESP dispatch table (test/diff)
      std::fputs(modules::resp::ListCommands().c_str(), stdout);
      return 0;
    }
  }
  int opt;
  while ((opt = getopt(argc, argv, "f:o:CEDVh")) != -1) {
    switch (opt) {
      case 'f': file = optarg; break;
      case 'o': overrides.emplace_back(optarg); break;
      case 'C': check = true; break;
      case 'E': dump = true; break;
      case 'D': foreground = true; break;
      case 'V':
        std::printf("%s (built %s %s, g++ %s)\n", kVersion, __DATE__, __TIME__, __VERSION__);
        return 0;
      case 'h': Usage(stdout); return 0;
      default: Usage(stderr); return 1;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "perfcached: unexpected argument '%s'\n", argv[optind]);
    return 1;
  }
  proc::Config cfg;
  // MI `arg` shows the command line with secret values masked; then the
  // values are overwritten in our own argv, so ps and /proc/PID/cmdline
  // never show them (better: keep [secrets] in a 0600 file given with -f).
  for (int i = 0; i < argc; ++i) cfg.argv.push_back(proc::MaskSecretArg(argv[i]));
  if (!proc::SecretsInit()) {
    std::fprintf(stderr, "perfcached: libsodium cannot start\n");
    return 1;
  }
  std::string err;
  if (!file.empty() && !proc::LoadConfigFile(file, &cfg, &err)) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());
    return 1;
  }
  for (auto& o : overrides) {
    bool ok = proc::ApplyOverride(o, &cfg, &err);
    proc::Wipe(o.data(), o.size());  // our copy of a secret override
    if (!ok) {
      std::fprintf(stderr, "perfcached: %s\n", err.c_str());
      return 1;
    }
  }
  proc::ScrubArgv(argc, argv);
  if (!proc::FinishConfig(&cfg, &err)) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());  // err names FILE:LINE
    return 1;
  }
  if (dump) {
    std::fputs(proc::DumpConfig(cfg).c_str(), stdout);
    return 0;
  }
  if (check) {
    int nw = cfg.workers > 0 ? cfg.workers : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    std::printf("configuration OK (%s)\n", cfg.source.c_str());
    std::printf("  %d worker(s) + timer, arena %d MiB (cap %d MiB, hugepages %s)\n", nw,
                cfg.arena_mb, cfg.arena_cap_mb ? cfg.arena_cap_mb : cfg.arena_mb,
                cfg.hugepages.c_str());
    std::printf("  RESP door: %s%s\n", cfg.resp.empty() ? "(off)" : cfg.resp.c_str(),
                cfg.resp_secrets.empty() ? " (no AUTH)" : " (AUTH required)");
    std::printf("  %zu collection(s):", cfg.collections.size());
    for (const auto& c : cfg.collections) std::printf(" %s", c.name.c_str());
    std::printf("\n");
    return 0;
  }
  proc::DaemonHooks hooks;
  hooks.worker_init = &WorkerInit;
  hooks.stop_accepting = [](void* p) {
    auto* d = static_cast<Door*>(p);
    if (d->server) d->server->StopAccepting();
  };
  hooks.drain = [](void* p) {
    auto* d = static_cast<Door*>(p);
    return !d->server || d->server->DrainIdle();
  };
  hooks.tick = [](void* p, int64_t now) {
    auto* d = static_cast<Door*>(p);
    if (!d->server) return;
    d->server->set_timeout(d->env.procs->live_timeout.load());
    size_t max_bulk, query_buf;
    net::OutputLimit output[net::kOutputClasses];
    ApplyLiveLimits(*d->env.procs, &max_bulk, &query_buf, output);
    d->server->set_limits(max_bulk, query_buf, output);
    d->server->CloseIdle(now);
    d->server->CheckOutputLimits(now);
  };
  hooks.destroy = [](void* p) {
    auto* d = static_cast<Door*>(p);
    delete d->server;  // closes every connection (on_close unsubscribes the worker)
    if (d->event_ev) event_free(d->event_ev);
    if (d->event_fd >= 0) close(d->event_fd);
    delete d;
  };
  if (!cfg.mi_fifo.empty() || !cfg.mi_datagram.empty() || !cfg.http.empty()) {
    hooks.procs.push_back(proc::ModuleProc{"MI", &modules::mi_door::RunMi});
  }
  proc::DaemonOptions o;
  o.foreground = foreground;
  return proc::RunDaemon(cfg, o, hooks);
}
