// perfcached — the statistics model behind get_statistics / list_statistics / reset_*.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "modules/exports.h"
#include "proc/daemon.h"

namespace modules::mi_door {

using modules::StatExport;
using modules::StatValue;

// The engine's statistic groups, exported by the MI module (mi_exports.cc).
extern const StatExport kEngineStats[2];

// Every module's statistics (modules/exports.h), in a stable order.
// Groups: "perfcached" (all collections summed), "perfcached_<collection>"
// (one collection), "resp" (the RESP door), "arena" (shared memory),
// "core" (processes).
std::vector<StatValue> CollectStats(proc::ModuleProcContext& pc);
// Re-baseline one counter (bare name, every group that has it); false when
// no counter has that name. Gauges are never touched.
bool ResetStat(proc::ModuleProcContext& pc, const std::string& name);
void ResetAllStats(proc::ModuleProcContext& pc);

}  // namespace modules::mi_door
