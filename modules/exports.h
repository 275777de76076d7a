// perfcached — what a module exports: hooks, processes, statistics, commands.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Like OpenSIPS's `struct module_exports`: each module (modules/resp,
// modules/mi) describes itself in ONE table, and the daemon's startup
// (daemon/perfcached_main.cc) reads the tables of AllModules() instead of
// wiring each module by hand:
//   init           supervisor, after the config, before any fork
//   child_init     each worker: build the module's per-worker state
//   stop_accepting / drain / tick / destroy   that state's life in the worker
//   procs          processes the module owns (OpenSIPS proc_export_t)
//   stats          statistic groups (OpenSIPS stat_export_t)
//   mi_commands    MI commands, registered in the MI process
//   resp_families  RESP command rows, registered in each worker's dispatch
// To add a module: write its table, add it to AllModules() (exports.cc).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proc/config.h"
#include "proc/daemon.h"

namespace mi {
class Registry;
}
namespace modules::resp {
struct Env;
}

namespace modules {

// One statistic in OpenSIPS's shape: "group:name". Counters are sums of
// per-process lines (never a shared atomic); gauges are read live.
struct StatValue {
  std::string group;
  std::string name;
  double value;
  bool incremental;  // a counter (resettable), else a gauge
};

struct StatExport {
  int order;  // where its groups appear in get_statistics / metrics (ascending)
  void (*collect)(proc::ModuleProcContext& pc, std::vector<StatValue>* out);
  // Re-baseline the counter with this bare name; false when none of ours.
  bool (*reset)(proc::ModuleProcContext& pc, const std::string& name);
  void (*reset_all)(proc::ModuleProcContext& pc);
};

struct ProcExport {
  const char* name;                          // "MI"
  int (*count)(const proc::Config& cfg);     // how many to start (0: off)
  void (*run)(proc::ModuleProcContext& pc);  // returns when the daemon stops
  // Supervisor, before any fork (see proc::DaemonHooks::open_doors); may be null.
  bool (*open_doors)(const proc::Config& cfg, std::vector<int>* fds, std::string* err);
  void (*close_doors)(const proc::Config& cfg);
};

// A RESP command family's registration (its rows into the dispatch table).
// A family's Register function and the COMMAND DOCS group of its rows
// (a row may name its own group).
struct RespFamily {
  void (*reg)(resp::Env& e);
  const char* group;
};

struct ModuleExports {
  const char* name;
  bool (*init)(const proc::Config& cfg, std::string* err);
  void* (*child_init)(proc::WorkerContext& wc);
  void (*stop_accepting)(void* state);
  bool (*drain)(void* state);                // true when nothing is left
  void (*tick)(void* state, int64_t now_ms);
  void (*reload)(void* state);               // SIGHUP changed the worker's Config (may be null)
  void (*destroy)(void* state);
  std::span<const ProcExport> procs;
  std::span<const StatExport> stats;
  void (*mi_commands)(mi::Registry& r, proc::ModuleProcContext& pc);
  std::span<const RespFamily> resp_families;
  // Supervisor, collections made, before any fork: fill them (a start-up
  // load); false is fatal. And after a graceful stop: a final save.
  bool (*warm)(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg, std::string* err) = nullptr;
  void (*at_stop)(cache::Ctx& c, proc::ProcTable* pt, const proc::Config& cfg) = nullptr;
  // While warm runs: serve the bound listening sockets (-LOADING); the
  // first module that has it. See proc::DaemonHooks::loading_begin.
  void* (*loading_begin)(const std::vector<int>& listen_fds) = nullptr;
  void (*loading_end)(void* door) = nullptr;
};

// Every module of this build, in start order.
std::span<const ModuleExports* const> AllModules();

// The daemon's hooks, built from the tables (supervisor: call InitModules first).
bool InitModules(const proc::Config& cfg, std::string* err);
proc::DaemonHooks HooksFromModules(const proc::Config& cfg);

// Every module's statistics, by StatExport::order.
std::vector<StatValue> CollectAllStats(proc::ModuleProcContext& pc);
bool ResetStatByName(proc::ModuleProcContext& pc, const std::string& name);
void ResetAllModuleStats(proc::ModuleProcContext& pc);

}  // namespace modules
