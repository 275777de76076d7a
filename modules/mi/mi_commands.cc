// perfcached — MI commands: the OpenSIPS core set and the perf_* set.
// Copyright (c) 2026 the perfcached authors.
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <ctime>
#include <memory>
#include <vector>

#include "db/wal_ring.h"
#include "cache/automove.h"
#include "cache/glob.h"
#include "cache/journal.h"
#include "cache/key_ops.h"
#include "cache/audit.h"
#include "cache/evict.h"
#include "cache/table.h"
#include "mem/arena.h"
#include "modules/mi/mi_module.h"
#include "modules/mi/mi_stats.h"
#include "mem/slab.h"
#include "proc/events.h"
#include "proc/log.h"
#include "proc/tier_words.h"
#include "proc/version.h"

namespace modules::mi_door {
namespace {

using mi::Json;
using mi::Params;
using mi::Response;

struct Env {
  proc::ModuleProcContext pc;
  const mi::Registry* reg;
  std::string default_collection;
  db::WalLogger wal;  // this process's WAL ring (inactive without a WAL)
  std::string wal_error;  // a tombstone (eviction, drop) that could not be logged
};

std::string CTime(time_t t) {
  char b[64];
  ctime_r(&t, b);
  std::string s(b);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The collection named by the optional "collection" param (or the default).
bool Table(Env& e, const Params& p, cache::TableRef* t, Response* err, std::string* coll = nullptr) {
  std::string name = e.default_collection, msg;
  if (p.Has("collection") && !p.GetString("collection", &name, &msg)) {
    *err = mi::MiParamError(msg);
    return false;
  }
  if (cache::OpenCollection(*e.pc.ctx, name, t) != mem::Status::kOk) {
    *err = mi::MiError(404, "no such collection");
    return false;
  }
  if (coll) *coll = name;
  return true;
}

// The WAL around an MI write, as on the RESP door (modules/resp/wal_log.cc):
// Admit before it (a refusal changes nothing), then Logged after it: each
// key's state goes into this process's ring and, under fsync = always, the
// reply waits until it is on disk. Logged answers the error to return, or
// nothing.
bool Admit(Env& e, Response* err) {
  e.wal_error.clear();
  if (const char* why = e.wal.Admit()) {
    *err = mi::MiError(500, why);
    return false;
  }
  return true;
}
// journals (may be null): per key, what its write changed (cache/journal.h),
// so that a large hash or set whose expiry alone changed logs that alone.
bool Logged(Env& e, const cache::TableRef& t, const std::string& coll, const std::vector<std::string>& keys,
            Response* err, const std::vector<std::vector<cache::DictChange>>* journals = nullptr) {
  if (!e.wal.active()) return true;
  std::string why = std::move(e.wal_error);
  e.wal_error.clear();
  if (!why.empty()) {
    *err = mi::MiError(500, "applied but not logged, so not acknowledged: " + why);
    return false;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!e.wal.LogKey(*e.pc.ctx, t, coll, keys[i], &why, journals ? &(*journals)[i] : nullptr)) {
      *err = mi::MiError(500, "applied but not logged, so not acknowledged: " + why);
      return false;
    }
  }
  if (!e.wal.WaitDurable(e.wal.position(), 30000)) {
    *err = mi::MiError(500, "applied, but the WAL did not make it durable within 30 s: not acknowledged");
    return false;
  }
  return true;
}

// now + seconds as an absolute time in ms; false when it would overflow
// (Redis answers "invalid expire time" there instead of wrapping around).
// The same rule as SET EX (cache::AbsoluteExpire).
bool Deadline(int64_t seconds, int64_t now_ms, int64_t* at) {
  return cache::AbsoluteExpire(now_ms, seconds, 1000, true, true, at) == mem::Status::kOk;
}

int64_t TtlSeconds(const cache::ReadInfo& ri, int64_t now) {
  if (ri.expire_ms == 0) return -1;
  int64_t left = ri.expire_ms - now;
  return left <= 0 ? 0 : (left + 999) / 1000;
}

Json CollectionJson(const cache::CollectionInfo& ci) {
  uint64_t reads = ci.stats[cache::kStatReads];
  double retries_1k = reads ? 1000.0 * static_cast<double>(ci.stats[cache::kStatSeqRetries]) /
                                  static_cast<double>(reads)
                            : 0.0;
  uint64_t hm = ci.stats[cache::kStatHits] + ci.stats[cache::kStatMisses];
  return Json{{"name", ci.name},
              {"buckets", ci.buckets},
              {"entries", ci.entries},
              {"overflow", ci.overflow},
              {"load_factor", ci.load_factor},
              {"hits", ci.stats[cache::kStatHits]},
              {"misses", ci.stats[cache::kStatMisses]},
              {"stores", ci.stats[cache::kStatStores]},
              {"removes", ci.stats[cache::kStatRemoves]},
              {"expired", ci.stats[cache::kStatExpired]},
              {"evicted", ci.stats[cache::kStatEvicted]},
              {"seqlock_retries", ci.stats[cache::kStatSeqRetries]},
              {"retries_per_1k_reads", retries_1k},
              {"lock_fallbacks", ci.stats[cache::kStatLockFallbacks]},
              {"splits", ci.stats[cache::kStatSplits]},
              {"merges", ci.stats[cache::kStatMerges]},
              {"repairs", ci.stats[cache::kStatRepairs]},
              {"nomem", ci.stats[cache::kStatNoMem]},
              {"hit_rate_pct", hm ? 100.0 * static_cast<double>(ci.stats[cache::kStatHits]) /
                                        static_cast<double>(hm)
                                  : 0.0}};
}

// OpenSIPS 4.0 canonical names of the core commands that were renamed
// (reference §2.3-2.4), registered as aliases beside NAME and core:NAME.
const char* Alias40(std::string_view name) {
  if (name == "get_statistics") return "statistics:get";
  if (name == "list_statistics") return "statistics:list";
  if (name == "reset_statistics") return "statistics:reset";
  if (name == "reset_all_statistics") return "statistics:reset_all";
  if (name == "mem_shm_dump") return "mem:shm_dump";
  return nullptr;
}

void Add(mi::Registry& r, const char* module, const char* name, const char* help,
         std::vector<std::vector<std::string>> recipes, mi::Handler h) {
  mi::Command c;
  c.name = name;
  c.module = module;
  c.help = help;
  c.recipes = std::move(recipes);
  c.handler = std::move(h);
  if (const char* a = Alias40(name)) c.aliases.push_back(a);
  r.Add(std::move(c));
}

// Walk keys matching `glob` (SCAN with its guarantee), at most `limit`.
// fn returns false to stop.
void Walk(Env& e, const cache::TableRef& t, const std::string& glob, bool values,
          const std::function<bool(const cache::ScanItem&)>& fn) {
  cache::ScanFilter f;
  if (glob != "*") f.glob = glob;
  f.values = values;
  uint64_t cursor = 0;
  bool stop = false;
  do {
    if (cache::ScanStep(*e.pc.ctx, t, cursor, 256, f,
                        [&](const cache::ScanItem& it) {
                          if (!stop && !fn(it)) stop = true;
                        },
                        &cursor) != mem::Status::kOk) {
      break;
    }
  } while (cursor != 0 && !stop);
}

// The type names TYPE answers.
const char* TypeName(uint8_t type) {
  switch (type) {
    case cache::kTypeHash: return "hash";
    case cache::kTypeSet: return "set";
    default: return "string";
  }
}

// A key's value as the MI shows it, read through the same Ops as the RESP
// door: a string (an INCR counter in decimal), a hash as {field: value}, a
// set as [member, ...]; *size = bytes of a string, fields / members of an
// aggregate. A key whose type changes under us is read again.
mem::Status ReadValue(Env& e, const cache::TableRef& t, std::string_view key, Json* value,
                      uint64_t* size, cache::ReadInfo* ri) {
  cache::Ctx& c = *e.pc.ctx;
  for (int round = 0; round < 8; ++round) {
    mem::Status s = cache::Probe(c, t, key, ri);
    if (s != mem::Status::kOk) return s;
    if (ri->type == cache::kTypeHash) {
      cache::FieldValues fv;
      s = cache::HGetAll(c, t, key, cache::HPart::kBoth, &fv);  // the HGETALL Op
      if (s == mem::Status::kWrongType || s == mem::Status::kNotFound) continue;
      if (s != mem::Status::kOk) return s;
      *value = Json::object();
      for (auto& [f, v] : fv) (*value)[f] = v;
      *size = fv.size();
      return s;
    }
    if (ri->type == cache::kTypeSet) {
      std::vector<std::string> ms;
      s = cache::SMembers(c, t, key, &ms);  // the SMEMBERS Op
      if (s == mem::Status::kWrongType || s == mem::Status::kNotFound) continue;
      if (s != mem::Status::kOk) return s;
      *value = ms;
      *size = ms.size();
      return s;
    }
    std::string v;
    s = cache::GetString(c, t, key, &v, ri);
    if (s == mem::Status::kNotFound) continue;
    if (s != mem::Status::kOk) return s;
    if (ri->type != cache::kTypeString && ri->type != cache::kTypeInt) continue;  // changed type
    *size = v.size();
    *value = std::move(v);
    return s;
  }
  return mem::Status::kBusy;
}

}  // namespace

void RegisterCommands(mi::Registry& r, proc::ModuleProcContext& pc) {
  // The commands' environment lives as long as the process (the handlers
  // capture it); kept here so that it stays owned (LeakSanitizer).
  static std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(std::make_unique<Env>(Env{pc, &r, pc.cfg->collections.empty() ? "0" : pc.cfg->collections[0].name, {}, {}}));
  Env* e = envs.back().get();
  if (pc.procs && pc.self && e->wal.Attach(static_cast<uint32_t>(pc.self - pc.procs->e))) {
    // A write here that evicts to find room (a full arena) logs a
    // tombstone, as on the RESP door: a restart does not bring it back.
    auto removed = [e](std::string_view coll, std::string_view key, uint64_t version) {
      if (!e->wal_error.empty()) return;  // the command fails: do not wait again per key
      std::string why;
      if (!e->wal.LogTombstone(coll, key, version, &why)) {
        LOG_ERR("WAL: removal of '%s' not logged: %s", std::string(key.substr(0, 64)).c_str(), why.c_str());
        e->wal_error = why;
      }
    };
    pc.ctx->on_evict = removed;
    pc.ctx->on_cleared = removed;  // perf_drop's keys
  }

  // ---- core ----
  Add(r, "core", "which", "list the MI commands, or the recipes of one", {{}, {"command"}},
      [e](const Params& p) {
        if (!p.Has("command")) return mi::MiResult(e->reg->Names());
        std::string name, err;
        if (!p.GetString("command", &name, &err)) return mi::MiParamError(err);
        const mi::Command* c = e->reg->Find(name);
        if (!c) return mi::MiError(404, "unknown MI command");
        return mi::MiResult(c->recipes);
      });
  Add(r, "core", "help", "describe an MI command", {{}, {"mi_cmd"}}, [e](const Params& p) {
    if (!p.Has("mi_cmd")) return mi::MiResult("Usage: help mi_cmd - returns information about 'mi_cmd'");
    std::string name, err;
    if (!p.GetString("mi_cmd", &name, &err)) return mi::MiParamError(err);
    const mi::Command* c = e->reg->Find(name);
    if (!c) return mi::MiError(404, "unknown MI command");
    return mi::MiResult(Json{{"Help", c->help}, {"Exported by", c->module}});
  });
  Add(r, "core", "version", "server version", {{}}, [](const Params&) {
    return mi::MiResult(Json{{"Server", std::string("perfcached ") + proc::kVersion + " (x86_64/linux)"}});
  });
  Add(r, "core", "uptime", "start time and uptime", {{}}, [e](const Params&) {
    time_t now = time(nullptr);
    time_t up = static_cast<time_t>(e->pc.procs->started_ms.load() / 1000);
    return mi::MiResult(Json{{"Now", CTime(now)},
                             {"Up since", CTime(up)},
                             {"Up time", std::to_string(now - up) + " [sec]"}});
  });
  Add(r, "core", "ps", "the daemon's processes", {{}}, [e](const Params&) {
    Json list = Json::array();
    for (uint32_t i = 0; i < e->pc.procs->count; ++i) {
      const proc::ProcEntry& pe = e->pc.procs->e[i];
      list.push_back(Json{{"ID", i},
                          {"PID", pe.pid.load()},
                          {"Type", proc::RoleName(static_cast<proc::Role>(pe.role.load()))},
                          {"Rank", pe.rank},
                          {"Restarts", pe.restarts.load()}});
    }
    return mi::MiResult(Json{{"Processes", list}});
  });
  Add(r, "core", "pwd", "working directory", {{}}, [](const Params&) {
    char b[PATH_MAX];
    return mi::MiResult(Json{{"WD", getcwd(b, sizeof b) ? b : ""}});
  });
  Add(r, "core", "log_level", "show or set the log level (0 error .. 4 debug)", {{}, {"level"}},
      [e](const Params& p) {
        if (!p.Has("level")) {
          return mi::MiResult(Json{{"Log level", e->pc.procs->live_loglevel.load()}});
        }
        int64_t l;
        std::string err;
        if (!p.GetInt("level", &l, &err) || l < 0 || l > 4) return mi::MiParamError("Bad level");
        e->pc.procs->live_loglevel.store(static_cast<int32_t>(l));
        e->pc.procs->live_gen.fetch_add(1);
        proc::SetLogLevel(static_cast<proc::LogLevel>(l));
        return mi::MiResult(Json{{"New global log level", l}});
      });
  Add(r, "core", "perf_maxmemory",
      "show or set maxmemory (bytes or 512mb), its policy and samples (Redis's names, docs/memory.md)",
      {{}, {"maxmemory"}, {"policy"}, {"samples"}, {"maxmemory", "policy"},
       {"maxmemory", "policy", "samples"}},
      [e](const Params& p) {
        cache::MemoryLimits l = cache::GetMemoryLimits(*e->pc.ctx);
        std::string v, err;
        if (p.Has("maxmemory")) {
          int64_t x;
          if (!p.GetString("maxmemory", &v, &err) || !proc::ParseMemSize(v, &x) || x < 0) {
            return mi::MiParamError("Bad maxmemory (bytes, or 512mb, 2gb)");
          }
          l.maxmemory = static_cast<uint64_t>(x);
        }
        if (p.Has("policy")) {
          cache::EvictPolicy pol;
          if (!p.GetString("policy", &v, &err) || !cache::ParsePolicy(v, &pol)) {
            return mi::MiParamError("Bad policy (noeviction, allkeys-lru, allkeys-lfu, allkeys-random, "
                                    "volatile-lru, volatile-lfu, volatile-random, volatile-ttl)");
          }
          l.policy = pol;
        }
        if (p.Has("samples")) {
          int64_t n;
          if (!p.GetInt("samples", &n, &err) || n < 1 || n > INT32_MAX) return mi::MiParamError("Bad samples");
          l.samples = static_cast<uint32_t>(n);
        }
        cache::SetMemoryLimits(*e->pc.ctx, l);
        uint64_t evicted = 0;
        for (const auto& ci : cache::ListCollections(*e->pc.ctx)) evicted += ci.stats[cache::kStatEvicted];
        return mi::MiResult(Json{{"maxmemory", l.maxmemory},
                                 {"policy", cache::PolicyName(l.policy)},
                                 {"samples", l.samples},
                                 {"used_memory", mem::UsedMemory(e->pc.ctx->arena)},
                                 {"evicted", evicted}});
      });
  Add(r, "core", "perf_automove",
      "show automove (moving live values out of sparse slab pages), turn it on/off, or ask for a pass now",
      {{}, {"action"}},
      [e](const Params& p) {
        std::string v, err;
        if (p.Has("action")) {
          if (!p.GetString("action", &v, &err)) return mi::MiParamError("Bad action (on, off, now)");
          if (v == "on" || v == "off") {
            cache::SetAutomoveEnabled(*e->pc.ctx, v == "on");
          } else if (v == "now") {
            cache::RequestAutomove(*e->pc.ctx);
          } else {
            return mi::MiParamError("Bad action (on, off, now)");
          }
        }
        cache::AutomoveStats s = cache::GetAutomoveStats(*e->pc.ctx);
        return mi::MiResult(Json{{"enabled", s.enabled ? "yes" : "no"},
                                 {"passes", s.passes},
                                 {"moved", s.moved},
                                 {"pages_freed", s.pages_freed},
                                 {"given_back", s.given_back},
                                 {"active", s.active ? "yes" : "no"},
                                 {"pending", v == "now" ? "yes" : "no"}});
      });
  Add(r, "core", "kill", "stop the daemon gracefully", {{}}, [](const Params&) {
    kill(getppid(), SIGTERM);
    return mi::MiOk();
  });

  Add(r, "core", "arg", "the daemon's command line", {{}}, [e](const Params&) {
    return mi::MiResult(e->pc.cfg->argv);
  });
  Add(r, "core", "mem_shm_dump", "shared arena report: tier, groups, slab classes, large objects",
      {{}}, [e](const Params&) {
        mem::Arena& a = e->pc.ctx->arena;
        const mem::ArenaHeader& h = *a.hdr();
        Json kinds = Json::object();
        const char* names[] = {"free", "meta", "region", "slab", "large", "released"};  // mem::GroupKind
        for (uint32_t g = 0; g < h.hwm_groups; ++g) {
          auto k = static_cast<size_t>(mem::Arena::EntryKind(a.GroupEntry(g)));
          if (k < std::size(names)) kinds[names[k]] = kinds.value(names[k], 0) + 1;
        }
        Json classes = Json::array();
        std::vector<mem::ClassUsage> all(mem::kNumClasses);
        mem::UsageAll(a, /*exact=*/true, all.data());
        mem::LargeUsage lu = mem::LargeUsageOf(a);
        for (int c = 0; c < mem::kNumClasses; ++c) {
          const mem::SlabPool* p = mem::PoolAt(a, c);
          const mem::ClassUsage& u = all[c];
          if (u.pages == 0 && p->pages_returned.load() == 0) continue;
          uint64_t cell = mem::kClassSize[c];
          classes.push_back(Json{{"cell", cell},
                                 {"pages", u.pages},
                                 {"page_bytes", u.page_bytes},
                                 {"cells", u.cells},
                                 {"used", u.used},
                                 {"free", u.cells - u.used},
                                 {"waste_bytes", u.page_bytes - u.cells * cell},
                                 {"pages_returned", p->pages_returned.load()},
                                 {"moved", p->moved.load()},
                                 {"pages_drained", p->drained.load()}});
        }
        return mi::MiResult(Json{{"tier", mem::TierName(a.tier())},
                                 {"tier_note", proc::ExplainTierNote(a.tier_note())},
                                 {"cap_bytes", a.cap_bytes()},
                                 {"populated_bytes", a.populated_bytes()},
                                 {"committed_bytes", a.committed_bytes()},
                                 {"used_bytes", a.used_bytes()},
                                 {"locked", h.locked != 0},
                                 {"groups_2mb", kinds},
                                 {"large_objects", h.large_objects.load()},
                                 {"large_bytes", h.large_bytes.load()},
                                 {"large", Json{{"objects", lu.objects},
                                                {"unit_bytes", mem::kLargeUnit},
                                                {"units", lu.units},
                                                {"groups", lu.groups},
                                                {"free_bytes", (lu.groups * mem::kUnitsPerGroup - lu.units) *
                                                                   mem::kLargeUnit}}},
                                 {"slab_pages", h.slab_pages.load()},
                                 {"groups_returned", h.groups_returned.load()},
                                 {"cell_bytes_in_use", mem::CellBytesInUse(a)},
                                 {"nomem_events", h.nomem_events.load()},
                                 {"slab_classes", classes}});
      });
  Add(r, "core", "get_statistics", "statistics as {\"group:name\": value}; \"all\", \"group:\" or names",
      {{"statistics"}}, [e](const Params& p) {
        std::vector<std::string> want;
        std::string err;
        if (!p.GetArray("statistics", &want, &err)) return mi::MiParamError(err);
        auto all = CollectStats(e->pc);
        Json out = Json::object();
        for (const auto& w : want) {
          for (const auto& s : all) {
            bool match = w == "all" || (w.back() == ':' && w.substr(0, w.size() - 1) == s.group) ||
                         w == s.group + ":" + s.name || cache::GlobMatch(w, s.name, true);
            if (!match) continue;
            std::string k = s.group + ":" + s.name;
            if (s.value == static_cast<double>(static_cast<int64_t>(s.value))) {
              out[k] = static_cast<int64_t>(s.value);
            } else {
              out[k] = s.value;
            }
            if (w != "all" && w.back() != ':' && w.find(':') == std::string::npos) break;  // first match
          }
        }
        if (out.empty()) return mi::MiError(404, "Statistics Not Found");
        return mi::MiResult(out);
      });
  Add(r, "core", "list_statistics", "every statistic and whether it is a counter", {{}, {"statistics"}},
      [e](const Params& p) {
        std::vector<std::string> want;
        std::string err;
        if (p.Has("statistics") && !p.GetArray("statistics", &want, &err)) return mi::MiParamError(err);
        Json out = Json::object();
        for (const auto& s : CollectStats(e->pc)) {
          bool match = want.empty();
          for (const auto& w : want) {
            match |= w == "all" || (w.back() == ':' && w.substr(0, w.size() - 1) == s.group) ||
                     w == s.name;
          }
          if (match) out[s.group + ":" + s.name] = s.incremental ? "incremental" : "non-incremental";
        }
        if (out.empty()) return mi::MiError(404, "Statistics Not Found");
        return mi::MiResult(out);
      });
  Add(r, "core", "reset_statistics", "re-baseline counters: \"group:name\" as get_statistics prints it, or the bare name (gauges are not touched)",
      {{"statistics"}}, [e](const Params& p) {
        std::vector<std::string> want;
        std::string err;
        if (!p.GetArray("statistics", &want, &err)) return mi::MiParamError(err);
        bool any = false;
        for (const auto& w : want) {
          // "group:name" as get_statistics prints it, or the bare name.
          std::string name = w;
          if (size_t colon = w.rfind(':'); colon != std::string::npos) {
            bool known = false;
            for (const auto& s : CollectStats(e->pc)) known |= s.incremental && s.group + ":" + s.name == w;
            if (!known) continue;
            name = w.substr(colon + 1);
          }
          any |= ResetStat(e->pc, name);
        }
        if (!any) return mi::MiError(404, "Statistics Not Found");
        return mi::MiOk();
      });
  Add(r, "core", "reset_all_statistics", "re-baseline every counter", {{}}, [e](const Params&) {
    ResetAllStats(e->pc);
    return mi::MiOk();
  });

  Add(r, "evi", "event_subscribe", "subscribe a UNIX datagram socket to an event (expire in s)",
      {{"event", "socket"}, {"event", "socket", "expire"}}, [e](const Params& p) {
        std::string ev, sock, err;
        int64_t expire = 3600;
        if (!p.GetString("event", &ev, &err) || !p.GetString("socket", &sock, &err) ||
            (p.Has("expire") && !p.GetInt("expire", &expire, &err))) {
          return mi::MiParamError(err);
        }
        proc::EventId id = proc::EventFromName(ev);
        if (id == proc::kEvNone) return mi::MiError(400, "unknown event");
        if (expire < 0) return mi::MiParamError("Bad type for parameter 'expire'");
        int64_t at = 0;
        if (expire > 0 && !Deadline(expire, cache::NowMs(*e->pc.ctx), &at)) {
          return mi::MiParamError("invalid expire time: too large");
        }
        if (!proc::Subscribe(e->pc.procs->events, id, sock, at, &err)) return mi::MiError(400, err);
        return mi::MiOk();
      });
  Add(r, "evi", "events_list", "the events this daemon raises", {{}}, [](const Params&) {
    Json list = Json::array();
    for (uint32_t i = 1; i < proc::kEvCount; ++i) {
      list.push_back(Json{{"name", proc::EventName(static_cast<proc::EventId>(i))}, {"id", i}});
    }
    return mi::MiResult(Json{{"Events", list}});
  });
  Add(r, "evi", "subscribers_list", "current event subscribers", {{}}, [e](const Params&) {
    Json list = Json::array();
    int64_t now = cache::NowMs(*e->pc.ctx);
    for (const auto& s : proc::Subscribers(e->pc.procs->events, now)) {
      list.push_back(Json{{"event", s.event},
                          {"socket", s.socket},
                          {"expire", s.expire_ms == 0 ? -1 : (s.expire_ms - now) / 1000}});
    }
    return mi::MiResult(Json{{"Subscribers", list}});
  });

  // ---- perf_* ----
  Add(r, "perfcached", "perf_check",
      "audit the live arena in bounded steps (tables, catalog, locks held by dead processes)",
      {{}}, [e](const Params&) {
        cache::AuditReport rep = cache::Audit(*e->pc.ctx, {.live = true});
        Json errs = Json::array();
        for (const auto& m : rep.errors) errs.push_back(m);
        return mi::MiResult(Json{{"clean", rep.clean()},
                                 {"tables", rep.tables},
                                 {"buckets", rep.buckets},
                                 {"records", rep.records},
                                 {"overflow_nodes", rep.overflow_nodes},
                                 {"dead_holders", rep.dead_holders},
                                 {"error_count", rep.error_count},
                                 {"errors", errs}});
      });
  Add(r, "perfcached", "perf_collections", "list collections", {{}}, [e](const Params&) {
    Json list = Json::array();
    for (const auto& ci : cache::ListCollections(*e->pc.ctx)) list.push_back(CollectionJson(ci));
    return mi::MiResult(Json{{"collections", list}});
  });
  Add(r, "perfcached", "perf_stats", "per-collection statistics and the arena",
      {{}, {"collection"}}, [e](const Params& p) {
        Json list = Json::array();
        std::string only, err;
        if (p.Has("collection") && !p.GetString("collection", &only, &err)) return mi::MiParamError(err);
        for (const auto& ci : cache::ListCollections(*e->pc.ctx)) {
          if (only.empty() || ci.name == only) list.push_back(CollectionJson(ci));
        }
        if (!only.empty() && list.empty()) return mi::MiError(404, "no such collection");
        mem::Arena& a = e->pc.ctx->arena;
        Json arena{{"tier", mem::TierName(a.tier())},
                   {"tier_note", proc::ExplainTierNote(a.tier_note())},
                   {"cap_bytes", a.cap_bytes()},
                   {"committed_bytes", a.committed_bytes()},
                   {"used_bytes", a.used_bytes()},
                   {"large_objects", a.hdr()->large_objects.load()},
                   {"nomem_events", a.hdr()->nomem_events.load()}};
        return mi::MiResult(Json{{"collections", list}, {"arena", arena}});
      });
  Add(r, "perfcached", "perf_stats_reset", "re-baseline the counters", {{}, {"collection"}},
      [e](const Params& p) {
        std::string only, err;
        if (p.Has("collection") && !p.GetString("collection", &only, &err)) return mi::MiParamError(err);
        int n = 0;
        for (const auto& ci : cache::ListCollections(*e->pc.ctx)) {
          if (!only.empty() && ci.name != only) continue;
          cache::TableRef t;
          if (cache::OpenCollection(*e->pc.ctx, ci.name, &t) == mem::Status::kOk) {
            cache::ResetCollectionStats(*e->pc.ctx, t);
            ++n;
          }
        }
        if (!only.empty() && n == 0) return mi::MiError(404, "no such collection");
        return mi::MiResult(Json{{"collections_reset", n}});
      });
  Add(r, "perfcached", "perf_get", "a key's value", {{"key"}, {"key", "collection"}},
      [e](const Params& p) {
        cache::TableRef t;
        Response err;
        std::string key, msg;
        if (!p.GetString("key", &key, &msg)) return mi::MiParamError(msg);
        if (!Table(*e, p, &t, &err)) return err;
        cache::ReadInfo ri;
        Json v;
        uint64_t size = 0;
        mem::Status s = ReadValue(*e, t, key, &v, &size, &ri);
        if (s == mem::Status::kNotFound) return mi::MiError(404, "key not found");
        if (s != mem::Status::kOk) return mi::MiError(500, "busy key, try again");
        return mi::MiResult(Json{{"key", key},
                                 {"type", TypeName(ri.type)},
                                 {"value", std::move(v)},
                                 {"size", size},
                                 {"ttl", TtlSeconds(ri, cache::NowMs(*e->pc.ctx))}});
      });
  Add(r, "perfcached", "perf_probe", "a key's size and TTL, never the value",
      {{"key"}, {"key", "collection"}}, [e](const Params& p) {
        cache::TableRef t;
        Response err;
        std::string key, msg;
        if (!p.GetString("key", &key, &msg)) return mi::MiParamError(msg);
        if (!Table(*e, p, &t, &err)) return err;
        cache::ReadInfo ri;
        if (cache::Probe(*e->pc.ctx, t, key, &ri) != mem::Status::kOk) {
          return mi::MiError(404, "key not found");
        }
        // size: the stored bytes (of a hash or set, its root record's).
        return mi::MiResult(Json{{"key", key},
                                 {"type", TypeName(ri.type)},
                                 {"size", ri.vlen},
                                 {"ttl", TtlSeconds(ri, cache::NowMs(*e->pc.ctx))}});
      });
  Add(r, "perfcached", "perf_set", "store a key (ttl in seconds, 0 = never)",
      {{"key", "value"}, {"key", "value", "ttl"}, {"key", "value", "ttl", "collection"}},
      [e](const Params& p) {
        cache::TableRef t;
        Response err;
        std::string key, value, msg;
        int64_t ttl = 0;
        if (!p.GetString("key", &key, &msg) || !p.GetString("value", &value, &msg) ||
            (p.Has("ttl") && !p.GetInt("ttl", &ttl, &msg))) {
          return mi::MiParamError(msg);
        }
        if (ttl < 0) return mi::MiParamError("Bad type for parameter 'ttl'");
        std::string coll;
        if (!Table(*e, p, &t, &err, &coll)) return err;
        cache::StrSetArgs o;
        if (ttl > 0 && !Deadline(ttl, cache::NowMs(*e->pc.ctx), &o.expire_ms)) {
          return mi::MiParamError("invalid expire time: too large");
        }
        cache::StrSetResult res;
        if (!Admit(*e, &err)) return err;
        mem::Status s = cache::StrSet(*e->pc.ctx, t, key, value, o, &res);  // the SET Op
        if (s == mem::Status::kNoMem) return mi::MiError(500, "out of memory");
        if (s != mem::Status::kOk) return mi::MiError(500, "store failed");
        if (!Logged(*e, t, coll, {key}, &err)) return err;
        return mi::MiOk();
      });
  Add(r, "perfcached", "perf_del", "delete the keys matching a glob",
      {{"glob"}, {"glob", "collection"}}, [e](const Params& p) {
        cache::TableRef t;
        Response err;
        std::string glob, msg;
        if (!p.GetString("glob", &glob, &msg)) return mi::MiParamError(msg);
        std::string coll;
        if (!Table(*e, p, &t, &err, &coll)) return err;
        if (!Admit(*e, &err)) return err;
        std::vector<std::string> keys;
        if (cache::GlobIsLiteral(glob)) {
          keys.push_back(cache::GlobUnescape(glob));
        } else {
          Walk(*e, t, glob, false, [&](const cache::ScanItem& it) {
            keys.emplace_back(it.key);
            return true;
          });
        }
        std::vector<std::string_view> views(keys.begin(), keys.end());
        int64_t n = 0;
        (void)cache::DelKeys(*e->pc.ctx, t, views, &n);  // the DEL Op
        if (n > 0 && !Logged(*e, t, coll, keys, &err)) return err;
        return mi::MiResult(Json{{"deleted", n}});
      });
  auto keys_cmd = [e](const Params& p, bool values) {
    cache::TableRef t;
    Response err;
    std::string glob, msg;
    int64_t limit = 1000;
    if (!p.GetString("glob", &glob, &msg) || (p.Has("limit") && !p.GetInt("limit", &limit, &msg))) {
      return mi::MiParamError(msg);
    }
    if (limit <= 0) return mi::MiParamError("Bad type for parameter 'limit'");
    if (!Table(*e, p, &t, &err)) return err;
    Json keys = Json::array();
    int64_t now = cache::NowMs(*e->pc.ctx);
    bool truncated = false;
    Walk(*e, t, glob, values, [&](const cache::ScanItem& it) {
      if (static_cast<int64_t>(keys.size()) >= limit) {
        truncated = true;
        return false;
      }
      Json k{{"key", std::string(it.key)}, {"ttl", TtlSeconds(it.info, now)}};
      if (values) {
        k["type"] = TypeName(it.info.type);
        if (it.info.type == cache::kTypeString) {
          k["value"] = std::string(it.value);
        } else {  // a counter's 8 bytes, an aggregate's encoding: read it as perf_get does
          Json v;
          uint64_t size;
          cache::ReadInfo ri;
          if (ReadValue(*e, t, it.key, &v, &size, &ri) != mem::Status::kOk) return true;  // gone
          k["type"] = TypeName(ri.type);
          k["value"] = std::move(v);
        }
      }
      keys.push_back(std::move(k));
      return true;
    });
    Json res{{"keys", keys}, {"returned", keys.size()}};
    if (truncated) res["note"] = "limit reached - truncated; use perf_scan for the rest";
    return mi::MiResult(res);
  };
  Add(r, "perfcached", "perf_keys", "keys matching a glob (with TTL), up to limit (1000)",
      {{"glob"}, {"glob", "collection"}, {"glob", "collection", "limit"}},
      [keys_cmd](const Params& p) { return keys_cmd(p, false); });
  Add(r, "perfcached", "perf_dump", "as perf_keys, with values",
      {{"glob"}, {"glob", "collection"}, {"glob", "collection", "limit"}},
      [keys_cmd](const Params& p) { return keys_cmd(p, true); });
  Add(r, "perfcached", "perf_scan",
      "one SCAN step: cursor 0 starts, a returned cursor 0 means done; count = buckets per call",
      {{"cursor"}, {"cursor", "glob"}, {"cursor", "glob", "count"}, {"cursor", "glob", "count", "collection"}},
      [e](const Params& p) {
        cache::TableRef t;
        Response err;
        std::string glob = "*", msg;
        int64_t cursor, count = 100;
        if (!p.GetInt("cursor", &cursor, &msg) || (p.Has("glob") && !p.GetString("glob", &glob, &msg)) ||
            (p.Has("count") && !p.GetInt("count", &count, &msg))) {
          return mi::MiParamError(msg);
        }
        if (cursor < 0 || count <= 0 || count > 100000) return mi::MiParamError("Bad type for parameter 'count'");
        if (!Table(*e, p, &t, &err)) return err;
        cache::ScanFilter f;
        if (glob != "*") f.glob = glob;
        Json keys = Json::array();
        int64_t now = cache::NowMs(*e->pc.ctx);
        uint64_t next = 0;
        mem::Status s = cache::ScanStep(*e->pc.ctx, t, static_cast<uint64_t>(cursor), static_cast<uint32_t>(count), f,
                                        [&](const cache::ScanItem& it) {
                                          keys.push_back(Json{{"key", std::string(it.key)},
                                                              {"ttl", TtlSeconds(it.info, now)}});
                                        },
                                        &next);
        if (s == mem::Status::kInvalid) return mi::MiError(400, "invalid cursor");
        if (s != mem::Status::kOk) return mi::MiError(500, "internal error");
        return mi::MiResult(Json{{"keys", keys}, {"cursor", next}, {"returned", keys.size()}});
      });
  auto admin = [e](const char* what) -> Response {
    (void)what;
    return mi::MiError(400, "collection management is disabled (set [daemon] allow_create = yes)");
  };
  Add(r, "perfcached", "perf_create", "create a collection (needs [daemon] allow_create)",
      {{"name"}, {"name", "buckets"}}, [e, admin](const Params& p) {
        if (!e->pc.cfg->allow_create) return admin("create");
        std::string name, msg;
        int64_t buckets = 1024;
        if (!p.GetString("name", &name, &msg) || (p.Has("buckets") && !p.GetInt("buckets", &buckets, &msg))) {
          return mi::MiParamError(msg);
        }
        if (buckets < 16 || buckets > (1 << 30)) return mi::MiParamError("Bad type for parameter 'buckets'");
        cache::CollectionOptions o;
        o.buckets = static_cast<uint32_t>(buckets);
        // With the WAL: its versions start above everything logged, so the
        // log's records of an earlier collection of this name (dropped)
        // never outrank its writes at replay — from before it is visible
        // (a worker may write to it the moment it is made).
        if (e->wal.active()) o.version_floor = db::WalMaxVersion();
        mem::Status s = cache::CreateCollection(*e->pc.ctx, name, o, nullptr);
        if (s == mem::Status::kExists) return mi::MiError(400, "collection exists");
        if (s == mem::Status::kInvalid) return mi::MiError(400, "bad collection name");
        if (s != mem::Status::kOk) return mi::MiError(500, std::string(mem::StatusName(s)));
        return mi::MiOk();
      });
  Add(r, "perfcached", "perf_resize", "set a collection's size; it grows or shrinks toward it",
      {{"name", "buckets"}}, [e, admin](const Params& p) {
        if (!e->pc.cfg->allow_create) return admin("resize");
        std::string name, msg;
        int64_t buckets;
        if (!p.GetString("name", &name, &msg) || !p.GetInt("buckets", &buckets, &msg)) return mi::MiParamError(msg);
        if (buckets < 16 || buckets > (1 << 30)) return mi::MiParamError("Bad type for parameter 'buckets'");
        mem::Status s = cache::ResizeCollection(*e->pc.ctx, name, static_cast<uint32_t>(buckets));
        if (s == mem::Status::kNotFound) return mi::MiError(404, "no such collection");
        if (s != mem::Status::kOk) return mi::MiError(500, std::string(mem::StatusName(s)));
        return mi::MiOk();
      });
  Add(r, "perfcached", "perf_rename", "rename a collection", {{"name", "new_name"}},
      [e, admin](const Params& p) {
        if (!e->pc.cfg->allow_create) return admin("rename");
        std::string name, to, msg;
        if (!p.GetString("name", &name, &msg) || !p.GetString("new_name", &to, &msg)) return mi::MiParamError(msg);
        // With the WAL the renamed keys' states under the new name must
        // outrank every record logged under that name before (a rename back,
        // a name dropped earlier): the table's floor goes above everything
        // logged first (keys made from now on start there), and each key is
        // restamped above it below. A rename keeps the keys' versions; without
        // this, `perf_rename a b` then `perf_rename b a` lost every key of a
        // at the next replay (its puts under a lost to the first rename's
        // tombstones under a, at the same versions).
        uint64_t above = 0;
        if (e->wal.active()) {
          Response err;
          if (!Admit(*e, &err)) return err;
          above = db::WalMaxVersion();
          cache::TableRef from;
          if (cache::OpenCollection(*e->pc.ctx, name, &from) == mem::Status::kOk) {
            cache::RaiseVersionFloor(from, above);
          }
        }
        mem::Status s = cache::RenameCollection(*e->pc.ctx, name, to);
        if (s == mem::Status::kNotFound) return mi::MiError(404, "no such collection");
        if (s == mem::Status::kExists) return mi::MiError(400, "collection exists");
        if (s != mem::Status::kOk) return mi::MiError(400, std::string(mem::StatusName(s)));
        if (e->wal.active()) {
          // The log names keys by collection: every key moves from the old
          // name to the new one (a tombstone there, its state here).
          cache::TableRef t;
          if (cache::OpenCollection(*e->pc.ctx, to, &t) == mem::Status::kOk) {
            std::vector<std::pair<std::string, uint64_t>> keys;
            Walk(*e, t, "*", false, [&](const cache::ScanItem& it) {
              keys.emplace_back(std::string(it.key), it.info.version);
              return true;
            });
            std::string why;
            for (const auto& [k, v] : keys) {
              uint64_t nv = 0;
              (void)cache::Restamp(*e->pc.ctx, t, k, above, &nv);  // absent by now: LogKey logs that
              if (!e->wal.LogTombstone(name, k, v, &why) || !e->wal.LogKey(*e->pc.ctx, t, to, k, &why)) {
                return mi::MiError(500, "renamed, but the WAL could not log it (" + why +
                                            "): take a BGSAVE before a restart");
              }
            }
            if (!e->wal.LogDrop(name, db::WalMaxVersion(), &why)) {
              return mi::MiError(500, "renamed, but the WAL could not log it (" + why +
                                          "): take a BGSAVE before a restart");
            }
            if (!e->wal.WaitDurable(e->wal.position(), 60000)) {
              return mi::MiError(500, "renamed, but the WAL did not make it durable: take a BGSAVE before a restart");
            }
          }
        }
        return mi::MiOk();
      });
  Add(r, "perfcached", "perf_drop", "drop a collection and every key in it", {{"name"}},
      [e, admin](const Params& p) {
        if (!e->pc.cfg->allow_create) return admin("drop");
        std::string name, msg;
        if (!p.GetString("name", &name, &msg)) return mi::MiParamError(msg);
        Response err;
        if (!Admit(*e, &err)) return err;
        // With the WAL, every key dropped is logged as a tombstone
        // (Ctx::on_cleared, set in RegisterCommands).
        mem::Status s = cache::DropCollection(*e->pc.ctx, name);
        if (s == mem::Status::kNotFound) return mi::MiError(404, "no such collection");
        if (s != mem::Status::kOk) return mi::MiError(500, std::string(mem::StatusName(s)));
        // ... then the collection itself, so that a replay does not make
        // it again (empty) from the puts logged before the drop.
        std::string why;
        if (e->wal.active() && e->wal_error.empty() && !e->wal.LogDrop(name, db::WalMaxVersion(), &why)) {
          e->wal_error = why;
        }
        if (!Logged(*e, cache::TableRef{}, name, {}, &err)) return err;
        return mi::MiOk();
      });
  Add(r, "perfcached", "perf_ttl", "set the TTL (seconds, 0 = persist) of the keys matching a glob",
      {{"glob", "ttl"}, {"glob", "ttl", "collection"}}, [e](const Params& p) {
        cache::TableRef t;
        Response err;
        std::string glob, msg;
        int64_t ttl;
        if (!p.GetString("glob", &glob, &msg) || !p.GetInt("ttl", &ttl, &msg)) return mi::MiParamError(msg);
        if (ttl < 0) return mi::MiParamError("Bad type for parameter 'ttl'");
        std::string coll;
        if (!Table(*e, p, &t, &err, &coll)) return err;
        if (!Admit(*e, &err)) return err;
        std::vector<std::string> keys;
        Walk(*e, t, glob, false, [&](const cache::ScanItem& it) {
          keys.emplace_back(it.key);
          return true;
        });
        int64_t n = 0;
        int64_t at = 0;
        if (ttl > 0 && !Deadline(ttl, cache::NowMs(*e->pc.ctx), &at)) {
          return mi::MiParamError("invalid expire time: too large");
        }
        std::vector<std::vector<cache::DictChange>> journals(keys.size());
        cache::Ctx& c = *e->pc.ctx;
        for (size_t i = 0; i < keys.size(); ++i) {
          // The PERSIST and EXPIREAT Ops, with the journal the WAL logs from.
          bool changed = false;
          struct Journal {  // unset even when the journal's push throws
            cache::Ctx& c;
            Journal(cache::Ctx& x, std::vector<cache::DictChange>* j) : c(x) { c.dict_journal = j; }
            ~Journal() { c.dict_journal = nullptr; }
          } journal(c, &journals[i]);
          mem::Status s = at == 0 ? cache::Persist(c, t, keys[i], &changed)
                                  : cache::Expire(c, t, keys[i], at, cache::ExpireCond::kAlways, &changed);
          n += s == mem::Status::kOk && changed;
        }
        if (n > 0 && !Logged(*e, t, coll, keys, &err, &journals)) return err;
        return mi::MiResult(Json{{"updated", n}});
      });
}

}  // namespace modules::mi_door
