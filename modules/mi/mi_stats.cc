// perfcached — statistics for MI: collection, door, arena and process counters.
// Copyright (c) 2026 the perfcached authors.
#include "modules/mi/mi_stats.h"

#include "cache/table.h"
#include "mem/arena.h"
#include "proc/proctable.h"

namespace modules::mi_door {
namespace {

struct CollStat {
  const char* name;
  cache::Stat stat;
};
constexpr CollStat kCollStats[] = {
    {"hits", cache::kStatHits},           {"misses", cache::kStatMisses},
    {"stores", cache::kStatStores},       {"removes", cache::kStatRemoves},
    {"expired", cache::kStatExpired},     {"evicted", cache::kStatEvicted},
    {"seqlock_retries", cache::kStatSeqRetries}, {"lock_fallbacks", cache::kStatLockFallbacks},
    {"splits", cache::kStatSplits},       {"merges", cache::kStatMerges},
    {"nomem", cache::kStatNoMem},         {"overflow_inserts", cache::kStatOvfInserts},
    {"repairs", cache::kStatRepairs},
};


// "perfcached" (all collections summed) and "perfcached_<collection>".
void CollectEngineStats(proc::ModuleProcContext& pc, std::vector<StatValue>* out) {
  std::vector<StatValue>& v = *out;
  auto infos = cache::ListCollections(*pc.ctx);
  double entries = 0, buckets = 0, overflow = 0;
  double totals[std::size(kCollStats)] = {};
  for (const auto& ci : infos) {
    entries += static_cast<double>(ci.entries);
    buckets += static_cast<double>(ci.buckets);
    overflow += static_cast<double>(ci.overflow);
    for (size_t i = 0; i < std::size(kCollStats); ++i) {
      totals[i] += static_cast<double>(ci.stats[kCollStats[i].stat]);
    }
  }
  v.push_back({"perfcached", "entries", entries, false});
  v.push_back({"perfcached", "buckets", buckets, false});
  v.push_back({"perfcached", "overflow", overflow, false});
  for (size_t i = 0; i < std::size(kCollStats); ++i) {
    v.push_back({"perfcached", kCollStats[i].name, totals[i], true});
  }
  for (const auto& ci : infos) {
    std::string g = "perfcached_" + ci.name;
    v.push_back({g, "entries", static_cast<double>(ci.entries), false});
    v.push_back({g, "buckets", static_cast<double>(ci.buckets), false});
    v.push_back({g, "load_factor", ci.load_factor, false});
    v.push_back({g, "overflow", static_cast<double>(ci.overflow), false});
    for (const auto& cs : kCollStats) {
      v.push_back({g, cs.name, static_cast<double>(ci.stats[cs.stat]), true});
    }
  }
}

// "arena" (shared memory) and "core" (processes).
void CollectArenaStats(proc::ModuleProcContext& pc, std::vector<StatValue>* out) {
  std::vector<StatValue>& v = *out;
  const proc::ProcTable& pt = *pc.procs;
  mem::Arena& a = pc.ctx->arena;
  v.push_back({"arena", "tier", static_cast<double>(a.tier()), false});
  v.push_back({"arena", "cap_bytes", static_cast<double>(a.cap_bytes()), false});
  v.push_back({"arena", "committed_bytes", static_cast<double>(a.committed_bytes()), false});
  v.push_back({"arena", "used_bytes", static_cast<double>(a.used_bytes()), false});
  v.push_back({"arena", "large_objects", static_cast<double>(a.hdr()->large_objects.load()), false});
  v.push_back({"arena", "large_bytes", static_cast<double>(a.hdr()->large_bytes.load()), false});
  v.push_back({"arena", "nomem_events", static_cast<double>(a.hdr()->nomem_events.load()), false});
  double restarts = 0;
  for (uint32_t i = 0; i < pt.count; ++i) restarts += pt.e[i].restarts.load();
  v.push_back({"core", "processes", static_cast<double>(pt.count), false});
  v.push_back({"core", "restarts", restarts, false});
  v.push_back({"core", "uptime", static_cast<double>(cache::NowMs(*pc.ctx) - pt.started_ms.load()) / 1000.0, false});
}

bool ResetEngineStat(proc::ModuleProcContext& pc, const std::string& name) {
  bool found = false;
  for (const auto& cs : kCollStats) {
    if (name != cs.name) continue;
    found = true;
    for (const auto& ci : cache::ListCollections(*pc.ctx)) {
      cache::TableRef t;
      if (cache::OpenCollection(*pc.ctx, ci.name, &t) == mem::Status::kOk) {
        cache::ResetCollectionStat(*pc.ctx, t, cs.stat);
      }
    }
  }
  return found;
}

void ResetEngineStats(proc::ModuleProcContext& pc) {
  for (const auto& cs : kCollStats) ResetEngineStat(pc, cs.name);
}
bool ResetNothing(proc::ModuleProcContext&, const std::string&) { return false; }
void ResetNothingAll(proc::ModuleProcContext&) {}

}  // namespace

// The MI module exports the engine's statistics (the RESP module its own).
const StatExport kEngineStats[2] = {
    {10, &CollectEngineStats, &ResetEngineStat, &ResetEngineStats},
    {30, &CollectArenaStats, &ResetNothing, &ResetNothingAll},
};

std::vector<StatValue> CollectStats(proc::ModuleProcContext& pc) { return CollectAllStats(pc); }
bool ResetStat(proc::ModuleProcContext& pc, const std::string& name) {
  return ResetStatByName(pc, name);
}
void ResetAllStats(proc::ModuleProcContext& pc) { ResetAllModuleStats(pc); }

}  // namespace modules::mi_door
