// perfcached — the statistics model behind get_statistics / list_statistics / reset_*.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proc/daemon.h"

namespace modules::mi_door {

// One statistic in OpenSIPS's shape: "group:name". Counters are sums of
// per-process lines (never a shared atomic); gauges are read live.
struct StatValue {
  std::string group;
  std::string name;
  double value;
  bool incremental;  // a counter (resettable), else a gauge
};

// Every statistic, in a stable order. Groups: "perfcached" (all collections
// summed), "perfcached_<collection>" (one collection), "resp" (the RESP
// door), "arena" (shared memory), "core" (processes).
std::vector<StatValue> CollectStats(proc::ModuleProcContext& pc);
// Re-baseline one counter (bare name, every group that has it); false when
// no counter has that name. Gauges are never touched.
bool ResetStat(proc::ModuleProcContext& pc, const std::string& name);
void ResetAllStats(proc::ModuleProcContext& pc);

}  // namespace modules::mi_door
