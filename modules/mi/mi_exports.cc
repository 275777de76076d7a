// perfcached — the MI module's exports: its process, its commands, the engine statistics.
// Copyright (c) 2026 the perfcached authors.
#include "modules/exports.h"
#include "modules/mi/mi_module.h"
#include "modules/mi/mi_stats.h"

namespace modules::mi_door {
namespace {

// One MI process when any MI transport (FIFO, datagram, HTTP, XML-RPC) is configured.
int MiProcesses(const proc::Config& cfg) {
  return !cfg.mi_fifo.empty() || !cfg.mi_datagram.empty() || !cfg.http.empty() || !cfg.mi_xmlrpc.empty() ? 1 : 0;
}

constexpr ProcExport kProcs[] = {{"MI", &MiProcesses, &RunMi, &OpenMiDoors, &CloseMiDoors}};

}  // namespace

extern const ModuleExports kExports;
const ModuleExports kExports = {
    .name = "mi",
    .init = nullptr,
    .child_init = nullptr,
    .stop_accepting = nullptr,
    .drain = nullptr,
    .tick = nullptr,
    .reload = nullptr,
    .destroy = nullptr,
    .procs = kProcs,
    .stats = kEngineStats,
    .mi_commands = &RegisterCommands,
    .resp_families = {},
};

}  // namespace modules::mi_door
