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
};

}  // namespace

std::vector<StatValue> CollectStats(proc::ModuleProcContext& pc) {
  std::vector<StatValue> v;
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
  const proc::ProcTable& pt = *pc.procs;
  v.push_back({"resp", "open_connections", static_cast<double>(proc::DoorSum(pt, proc::kDoorOpen)), false});
  for (const auto& d : kDoorStats) {
    v.push_back({"resp", d.name, static_cast<double>(proc::DoorSum(pt, d.stat)), true});
  }
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
  return v;
}

bool ResetStat(proc::ModuleProcContext& pc, const std::string& name) {
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
  for (const auto& d : kDoorStats) {
    if (name != d.name) continue;
    found = true;
    pc.procs->door_base[d.stat] = proc::DoorSum(*pc.procs, d.stat, true);
  }
  return found;
}

void ResetAllStats(proc::ModuleProcContext& pc) {
  for (const auto& cs : kCollStats) ResetStat(pc, cs.name);
  for (const auto& d : kDoorStats) ResetStat(pc, d.name);
}

}  // namespace modules::mi_door
