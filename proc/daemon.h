// perfcached — the process model: supervisor, timer process, worker processes.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The supervisor (rank 0) creates the arena and collections, binds one
// SO_REUSEPORT listening socket per worker, then forks the timer process
// (rank -1: growth, expiry sweep, dead-holder repair) and N workers
// (rank 1..N: one libevent loop each). It restarts any child that dies —
// after repairing whatever the dead process held (cache::RepairDead) — and
// backs off when a child crash-loops. SIGTERM: children stop accepting,
// finish the replies in flight, exit; the supervisor exits 0. SIGHUP:
// the configuration is built again and what reloads is applied in every
// process (proc/reload.h). Under systemd (NOTIFY_SOCKET) the supervisor
// alone notifies: READY, STATUS, RELOADING, STOPPING and, while every
// worker and the timer beat, WATCHDOG (proc/notify.h).
//
// proc/ knows nothing of the doors: the binary passes DaemonHooks that
// build the doors inside each worker: daemon/perfcached_main.cc builds them
// from every module's exports table (modules/exports.h).

#include <event2/event.h>

#include <functional>
#include <string>
#include <vector>

#include "cache/table.h"
#include "proc/config.h"
#include "proc/proctable.h"

namespace proc {

struct WorkerContext {
  event_base* base = nullptr;
  cache::Ctx* ctx = nullptr;
  const Config* cfg = nullptr;  // this process's; a reload changes its reloadable rows (DaemonHooks::reload)
  ProcTable* procs = nullptr;
  ProcEntry* self = nullptr;
  int listen_fd = -1;
  int rank = 0;
  int event_fd = -1;  // read end of this worker's event channel (proc/events.h)
};

// A process owned by a module (OpenSIPS proc_export_t): MI FIFO, ...
struct ModuleProcContext {
  cache::Ctx* ctx = nullptr;
  const Config* cfg = nullptr;  // this process's; tick() may change its reloadable rows
  ProcTable* procs = nullptr;
  ProcEntry* self = nullptr;
  // Call from the process's loop at least once a second: follows the live
  // log level and applies a published reload to *cfg (proc/reload.h).
  std::function<void()> tick;
};
struct ModuleProc {
  std::string name;                                   // "MI FIFO"
  std::function<void(ModuleProcContext&)> run;        // returns when asked to stop
};
// Set by SIGTERM in every child; module process loops poll it.
bool StopRequested();

struct DaemonHooks {
  std::vector<ModuleProc> procs;
  // Build the door(s) of a worker; the returned object is passed back.
  std::function<void*(WorkerContext&)> worker_init;
  std::function<void(void*)> stop_accepting;
  // Close idle connections; true when no connection is left.
  std::function<bool(void*)> drain;
  std::function<void(void*, int64_t now_ms)> tick;
  // A reload changed the worker's Config (secrets, allow lists, ...):
  // re-read what the door copied out of it. May be empty.
  std::function<void(void*)> reload;
  std::function<void(void*)> destroy;
  // Supervisor, before anything forks or detaches: claim and open the doors
  // the module processes serve (FIFO, datagram socket, HTTP listener); a
  // door that cannot open is fatal (*err says why). The descriptors only
  // module processes use go to *module_fds (closed in workers and timer).
  std::function<bool(std::vector<int>* module_fds, std::string* err)> open_doors;
  // Supervisor, after every child is gone: close them and remove the paths.
  std::function<void()> close_doors;
  // Supervisor, once the collections exist and before anything forks:
  // fill them (SQL load at start, db mode 1 / 2), so workers start warm.
  // False is fatal (*err says why). May be empty.
  std::function<bool(cache::Ctx&, ProcTable*, std::string* err)> warm;
  // Around warm: a door that answers the clients who connect while it
  // runs (the RESP door's -LOADING) on the bound listening sockets; ended
  // (its thread joined) before any fork. May be empty.
  std::function<void*(const std::vector<int>& listen_fds)> loading_begin;
  std::function<void(void*)> loading_end;
  // Supervisor, after every child of a graceful stop is gone (their
  // locks repaired): the final save (db mode 2). May be empty.
  std::function<void(cache::Ctx&, ProcTable*)> at_stop;
};

struct DaemonOptions {
  bool foreground = true;
  ConfigSource source;  // built again on SIGHUP (proc/reload.h)
};

// Runs the daemon until SIGTERM/SIGINT. Returns the process exit code.
// *cfg is the running configuration: SIGHUP changes its reloadable rows.
int RunDaemon(Config* cfg, const DaemonOptions& o, const DaemonHooks& hooks);

// Map [memory] hugepages to the best tier to try.
mem::Tier TierFromConfig(const std::string& hugepages);

}  // namespace proc
