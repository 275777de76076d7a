// perfcached — the HTTP door: /metrics (Prometheus), /stats, /health, /reset-stats, /mi.
// Copyright (c) 2026 the perfcached authors.
//
// Runs inside the MI process's event loop (libevent evhttp, http_server.h),
// never on a worker. With a token in [secrets] http, every request
// (loopback too) needs "Authorization: Bearer <token>" (the config refuses
// a non-loopback listener without one); the Host header must name this
// listener (DNS rebinding) and a POST must be application/json (cross-site
// forms). Counters in /metrics are the raw per-process sums:
// a stats reset (MI, CONFIG RESETSTAT, POST /reset-stats) re-baselines what
// MI and INFO show, never what Prometheus scrapes, so counters only rise.
#include <event2/http.h>

#include <cstdio>
#include <string>

#include "cache/automove.h"
#include "cache/table.h"
#include "mem/arena.h"
#include "mem/slab.h"
#include "modules/mi/http_checks.h"
#include "modules/mi/http_server.h"
#include "modules/mi/mi_module.h"
#include "modules/mi/mi_stats.h"
#include "proc/config.h"
#include "proc/log.h"
#include "proc/proctable.h"
#include "proc/version.h"

namespace modules::mi_door {
namespace {

// A cross-site form or fetch() without a preflight can only send
// text/plain, form or multipart bodies: POSTs here must be JSON.
bool JsonBody(evhttp_request* req) { return IsJsonContentType(RequestContentType(req)); }

void Send(evhttp_request* req, int code, const char* reason, const std::string& body,
          const char* type = "application/json") {
  SendReply(req, code, reason, body, type);
}

std::string Label(const std::string& v) {
  std::string o;
  for (char ch : v) {
    if (ch == '\\' || ch == '"') o += '\\';
    if (ch == '\n') {
      o += "\\n";
      continue;
    }
    o += ch;
  }
  return o;
}

void Metric(std::string* o, const char* name, const char* type, const char* help) {
  *o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

bool Healthy(proc::ModuleProcContext& pc, std::string* why);

std::string Metrics(proc::ModuleProcContext& pc) {
  std::string o;
  cache::Ctx& c = *pc.ctx;
  auto infos = cache::ListCollections(c);
  struct Row {
    const char* name;
    cache::Stat stat;
    const char* help;
  };
  static const Row kRows[] = {
      {"perfcached_hits_total", cache::kStatHits, "Reads that found the key."},
      {"perfcached_misses_total", cache::kStatMisses, "Reads that did not."},
      {"perfcached_stores_total", cache::kStatStores, "Writes applied."},
      {"perfcached_removes_total", cache::kStatRemoves,
       "Keys deleted (DEL, MI, overwritten by RENAME ...; evictions are perfcached_evicted_total)."},
      {"perfcached_expired_total", cache::kStatExpired, "Keys removed by expiry."},
      {"perfcached_evicted_total", cache::kStatEvicted, "Keys evicted to stay under maxmemory."},
      {"perfcached_seqlock_retries_total", cache::kStatSeqRetries, "Lock-free read retries."},
      {"perfcached_lock_fallbacks_total", cache::kStatLockFallbacks, "Reads that took the lock."},
      {"perfcached_splits_total", cache::kStatSplits, "Bucket splits (growth)."},
      {"perfcached_merges_total", cache::kStatMerges, "Bucket merges (shrink)."},
      {"perfcached_nomem_total", cache::kStatNoMem, "Writes to the collection refused (-OOM): arena full."},
      {"perfcached_repairs_total", cache::kStatRepairs, "Buckets repaired after a dead holder."},
  };
  Metric(&o, "perfcached_entries", "gauge", "Records in the collection.");
  for (const auto& ci : infos) o += "perfcached_entries{collection=\"" + Label(ci.name) + "\"} " + std::to_string(ci.entries) + "\n";
  Metric(&o, "perfcached_buckets", "gauge", "Buckets of the collection.");
  for (const auto& ci : infos) o += "perfcached_buckets{collection=\"" + Label(ci.name) + "\"} " + std::to_string(ci.buckets) + "\n";
  Metric(&o, "perfcached_overflow", "gauge", "Records in the overflow table.");
  for (const auto& ci : infos) o += "perfcached_overflow{collection=\"" + Label(ci.name) + "\"} " + std::to_string(ci.overflow) + "\n";
  for (const Row& r : kRows) {
    Metric(&o, r.name, "counter", r.help);
    for (const auto& ci : infos) {
      cache::TableRef t;
      if (cache::OpenCollection(c, ci.name, &t) != mem::Status::kOk) continue;
      o += std::string(r.name) + "{collection=\"" + Label(ci.name) + "\"} " +
           std::to_string(cache::SumStat(c, t, r.stat)) + "\n";
    }
  }
  const proc::ProcTable& pt = *pc.procs;
  struct DoorRow {
    const char* name;
    proc::DoorStat stat;
    const char* help;
  };
  static const DoorRow kDoor[] = {
      {"perfcached_resp_connections_accepted_total", proc::kDoorAccepted, "RESP connections accepted."},
      {"perfcached_resp_connections_rejected_total", proc::kDoorRejected, "RESP connections refused."},
      {"perfcached_resp_commands_total", proc::kDoorCommands, "RESP commands processed."},
      {"perfcached_resp_errors_total", proc::kDoorErrors, "RESP error replies."},
      {"perfcached_resp_bytes_in_total", proc::kDoorBytesIn, "Bytes read from RESP clients."},
      {"perfcached_resp_bytes_out_total", proc::kDoorBytesOut, "Bytes written to RESP clients."},
      {"perfcached_resp_output_limit_disconnections_total", proc::kDoorOutputLimit,
       "RESP clients closed over client-output-buffer-limit."},
      {"perfcached_resp_query_limit_disconnections_total", proc::kDoorQueryLimit,
       "RESP clients closed over client-query-buffer-limit."},
      {"perfcached_resp_evicted_clients_total", proc::kDoorEvictedClients,
       "RESP clients closed over maxmemory-clients."},
  };
  Metric(&o, "perfcached_resp_connections", "gauge", "Open RESP connections.");
  o += "perfcached_resp_connections " + std::to_string(proc::DoorSum(pt, proc::kDoorOpen)) + "\n";
  for (const DoorRow& d : kDoor) {
    Metric(&o, d.name, "counter", d.help);
    o += std::string(d.name) + " " + std::to_string(proc::DoorSum(pt, d.stat, true)) + "\n";
  }
  mem::Arena& a = c.arena;
  // One name per meaning (a sum over a "kind" label would add a cap to a use).
  Metric(&o, "perfcached_arena_cap_bytes", "gauge", "Shared arena: the most it may grow to.");
  o += "perfcached_arena_cap_bytes " + std::to_string(a.cap_bytes()) + "\n";
  Metric(&o, "perfcached_arena_committed_bytes", "gauge", "Shared arena: mapped and committed now.");
  o += "perfcached_arena_committed_bytes " + std::to_string(a.committed_bytes()) + "\n";
  Metric(&o, "perfcached_arena_used_bytes", "gauge", "Shared arena: handed out (slab pages, large objects, index).");
  o += "perfcached_arena_used_bytes " + std::to_string(a.used_bytes()) + "\n";
  Metric(&o, "perfcached_large_objects", "gauge", "Values stored as large objects (runs of 32 KiB units, above 256 KiB).");
  o += "perfcached_large_objects " + std::to_string(a.hdr()->large_objects.load()) + "\n";
  Metric(&o, "perfcached_large_object_bytes", "gauge", "Bytes of the live large objects' runs.");
  o += "perfcached_large_object_bytes " + std::to_string(a.hdr()->large_bytes.load()) + "\n";
  Metric(&o, "perfcached_used_memory_bytes", "gauge", "What the data takes (INFO used_memory).");
  o += "perfcached_used_memory_bytes " + std::to_string(mem::UsedMemory(a)) + "\n";
  Metric(&o, "perfcached_groups_returned_total", "counter", "Slab groups given back after all their pages came free.");
  o += "perfcached_groups_returned_total " + std::to_string(a.hdr()->groups_returned.load()) + "\n";
  {
    cache::AutomoveStats am = cache::GetAutomoveStats(c);
    Metric(&o, "perfcached_automove_passes_total", "counter", "Automove passes started.");
    o += "perfcached_automove_passes_total " + std::to_string(am.passes) + "\n";
    Metric(&o, "perfcached_automove_moved_total", "counter", "Records automove moved out of sparse slab pages.");
    o += "perfcached_automove_moved_total " + std::to_string(am.moved) + "\n";
    Metric(&o, "perfcached_automove_pages_freed_total", "counter", "Slab pages automove emptied.");
    o += "perfcached_automove_pages_freed_total " + std::to_string(am.pages_freed) + "\n";
    Metric(&o, "perfcached_automove_given_back_total", "counter",
           "Free cells processes gave back from their claims and stacks when automove asked.");
    o += "perfcached_automove_given_back_total " + std::to_string(am.given_back) + "\n";
  }
  {
    mem::ClassUsage u[mem::kNumClasses];
    mem::UsageAll(a, /*exact=*/false, u);
    struct ClassRow {
      const char* name;
      const char* help;
      uint64_t mem::ClassUsage::*field;
    };
    static const ClassRow kClass[] = {
        {"perfcached_slab_pages", "Slab pages in use, per cell size.", &mem::ClassUsage::pages},
        {"perfcached_slab_cells", "Cells in those pages, per cell size.", &mem::ClassUsage::cells},
        {"perfcached_slab_used_cells", "Cells live or claimed by a process, per cell size.", &mem::ClassUsage::used},
        {"perfcached_slab_page_bytes", "Bytes of those pages, per cell size.", &mem::ClassUsage::page_bytes},
    };
    for (const ClassRow& r : kClass) {
      Metric(&o, r.name, "gauge", r.help);
      for (int k = 0; k < mem::kNumClasses; ++k) {
        if (u[k].pages == 0) continue;
        o += std::string(r.name) + "{cell=\"" + std::to_string(mem::kClassSize[k]) + "\"} " +
             std::to_string(u[k].*r.field) + "\n";
      }
    }
  }
  Metric(&o, "perfcached_arena_tier", "gauge", "Page tier: 1 hugetlb, 2 thp, 3 collapse, 4 small.");
  o += "perfcached_arena_tier " + std::to_string(static_cast<int>(a.tier())) + "\n";
  Metric(&o, "perfcached_arena_nomem_total", "counter",
         "Arena allocations refused, whoever asked (writes, MI, growth); perfcached_nomem_total counts the "
         "refused writes per collection.");
  o += "perfcached_arena_nomem_total " + std::to_string(a.hdr()->nomem_events.load()) + "\n";
  Metric(&o, "perfcached_process_restarts_total", "counter", "Child processes restarted.");
  uint64_t restarts = 0;
  for (uint32_t i = 0; i < pt.count; ++i) restarts += pt.e[i].restarts.load();
  o += "perfcached_process_restarts_total " + std::to_string(restarts) + "\n";
  // Worker health as gauges: perfcached_healthy is GET /health (alert on 0).
  std::string why;
  int64_t now = cache::NowMs(c);
  Metric(&o, "perfcached_healthy", "gauge", "1 when every worker is up and beat in the last 3 s (GET /health 200).");
  o += std::string("perfcached_healthy ") + (Healthy(pc, &why) ? "1" : "0") + "\n";
  Metric(&o, "perfcached_worker_up", "gauge", "1 while the worker of this rank runs.");
  for (uint32_t i = 0; i < pt.count; ++i) {
    if (static_cast<proc::Role>(pt.e[i].role.load()) != proc::Role::kWorker) continue;
    o += "perfcached_worker_up{rank=\"" + std::to_string(pt.e[i].rank) + "\"} " +
         (pt.e[i].pid.load() > 0 ? "1" : "0") + "\n";
  }
  Metric(&o, "perfcached_worker_heartbeat_age_seconds", "gauge", "Seconds since the worker's last heartbeat (3 s: stalled).");
  for (uint32_t i = 0; i < pt.count; ++i) {
    if (static_cast<proc::Role>(pt.e[i].role.load()) != proc::Role::kWorker) continue;
    int64_t hb = pt.e[i].heartbeat_ms.load();
    char age[32];
    std::snprintf(age, sizeof age, "%.3f", hb > 0 && now >= hb ? static_cast<double>(now - hb) / 1000.0 : 0.0);
    o += "perfcached_worker_heartbeat_age_seconds{rank=\"" + std::to_string(pt.e[i].rank) + "\"} " + age + "\n";
  }
  Metric(&o, "perfcached_build_info", "gauge", "Always 1; the labels say which build serves.");
  o += "perfcached_build_info{version=\"" + std::string(proc::kVersion) + "\",compiler=\"" +
       Label("g++ " __VERSION__) + "\",built=\"" + Label(__DATE__ " " __TIME__) + "\"} 1\n";
  Metric(&o, "perfcached_uptime_seconds", "gauge", "Seconds since the supervisor started.");
  o += "perfcached_uptime_seconds " +
       std::to_string((cache::NowMs(c) - pt.started_ms.load()) / 1000) + "\n";
  return o;
}

// Serving = every worker is alive and has beaten in the last 3 s.
bool Healthy(proc::ModuleProcContext& pc, std::string* why) {
  const proc::ProcTable& pt = *pc.procs;
  int64_t now = cache::NowMs(*pc.ctx);
  int workers = 0;
  for (uint32_t i = 0; i < pt.count; ++i) {
    const proc::ProcEntry& e = pt.e[i];
    if (static_cast<proc::Role>(e.role.load()) != proc::Role::kWorker) continue;
    ++workers;
    if (e.pid.load() <= 0) {
      *why = "worker rank " + std::to_string(e.rank) + " is down";
      return false;
    }
    if (now - e.heartbeat_ms.load() > 3000) {
      *why = "worker rank " + std::to_string(e.rank) + " has not beaten for " +
             std::to_string((now - e.heartbeat_ms.load()) / 1000) + " s";
      return false;
    }
  }
  if (workers == 0) {
    *why = "no worker";
    return false;
  }
  return true;
}

void Serve(evhttp_request* req, HttpServer& h) {
  if (!Admit(h, req)) return;
  if (evhttp_request_get_command(req) == EVHTTP_REQ_POST && !JsonBody(req)) {
    Send(req, 415, "Unsupported Media Type", "{\"error\":\"POST needs Content-Type: application/json\"}");
    return;
  }
  std::string path = RequestPath(req);
  evhttp_cmd_type m = evhttp_request_get_command(req);
  auto only = [&](evhttp_cmd_type want) {
    if (m == want) return true;
    Send(req, 405, "Method Not Allowed", "{\"error\":\"method not allowed\"}");
    return false;
  };
  if (path == "/metrics") {
    if (only(EVHTTP_REQ_GET)) Send(req, 200, "OK", Metrics(*h.pc), "text/plain; version=0.0.4");
  } else if (path == "/stats") {
    if (!only(EVHTTP_REQ_GET)) return;
    mi::Json j = mi::Json::object();
    for (const auto& s : CollectStats(*h.pc)) {
      if (s.value == static_cast<double>(static_cast<int64_t>(s.value))) {
        j[s.group + ":" + s.name] = static_cast<int64_t>(s.value);
      } else {
        j[s.group + ":" + s.name] = s.value;
      }
    }
    Send(req, 200, "OK", mi::Serialize(j));
  } else if (path == "/health") {
    if (!only(EVHTTP_REQ_GET)) return;
    std::string why;
    if (Healthy(*h.pc, &why)) {
      Send(req, 200, "OK", "{\"status\":\"serving\"}");
    } else {
      Send(req, 503, "Service Unavailable", mi::Serialize(mi::Json{{"status", "down"}, {"why", why}}));
    }
  } else if (path == "/reset-stats") {
    if (!only(EVHTTP_REQ_POST)) return;
    ResetAllStats(*h.pc);
    Send(req, 200, "OK", "{\"reset\":true}");
  } else if (path == "/mi") {
    if (!only(EVHTTP_REQ_POST)) return;
    mi::Json reply = mi::ProcessText(*h.reg, RequestBody(req));
    if (reply.is_null()) {
      Send(req, 204, "No Content", "");
    } else {
      Send(req, 200, "OK", mi::Serialize(reply));
    }
  } else {
    Send(req, 404, "Not Found", "{\"error\":\"not found\"}");
  }
}

}  // namespace

void* StartHttp(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg, int fd) {
  return StartHttpServer(base, pc, reg, fd, pc.cfg->http, "HTTP door", "application/json", &Serve);
}

void StopHttp(void* p) { StopHttpServer(static_cast<HttpServer*>(p)); }

}  // namespace modules::mi_door
