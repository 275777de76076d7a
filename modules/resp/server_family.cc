// perfcached — RESP connection and server commands (PING AUTH SELECT HELLO INFO ROLE ...).
// Copyright (c) 2026 the perfcached authors.
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "cache/glob.h"
#include "mem/arena.h"
#include "mem/slab.h"
#include "cache/access.h"
#include "cache/automove.h"
#include "cache/encoding.h"
#include "cache/evict.h"
#include "cache/key_ops.h"
#include "modules/resp/command.h"
#include "proc/secret.h"
#include "proc/log.h"
#include "proc/tier_words.h"

namespace modules::resp {

inline constexpr char kPerfcachedVersion[] = "0.1.0";

namespace {

using mem::Status;

// Redis's replies for a container command: a known subcommand with the
// wrong arguments, or an unknown one.
void SubcommandError(CmdCtx& c, const char* cmd, std::initializer_list<const char*> known) {
  std::string sub(c.arg(1));
  for (const char* k : known) {
    if (EqNoCase(sub, k)) {
      c.r.Error(std::string("ERR wrong number of arguments for '") + cmd + "|" + k + "' command");
      return;
    }
  }
  std::string up(cmd);
  for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  c.r.Error("ERR unknown subcommand '" + sub.substr(0, 128) + "'. Try " + up + " HELP.");
}

void CmdPing(CmdCtx& c) {
  if (c.argc() > 2) {
    WrongArity(c, "ping");
  } else if (c.conn.subscribed()) {  // RESP2 subscribed mode: a "pong" message
    c.r.Array(2);
    c.r.Bulk("pong");
    c.r.Bulk(c.argc() == 2 ? c.arg(1) : "");
  } else if (c.argc() == 2) {
    c.r.Bulk(c.arg(1));
  } else {
    c.r.Simple("PONG");
  }
}

void CmdEcho(CmdCtx& c) { c.r.Bulk(c.arg(1)); }

void CmdQuit(CmdCtx& c) {
  c.r.Simple("OK");
  c.conn.close_after_write = true;
}

// True when `pass` matches one of the configured secrets (rotation: any);
// constant time over content and length (proc/secret.h).
bool CheckPassword(const Env& e, std::string_view pass) {
  return proc::SecretMatches(e.cfg->resp_secrets, pass);
}

// Shared by AUTH and HELLO ... AUTH. Replies on failure.
bool DoAuth(CmdCtx& c, std::string_view user, std::string_view pass, bool with_user) {
  if (c.env.cfg->resp_secrets.empty() && with_user && user == "default") {
    c.conn.authed = true;  // the default user has no password: any password is accepted
    return true;
  }
  if (c.env.cfg->resp_secrets.empty() && !with_user) {
    c.r.Error(
        "ERR AUTH <password> called without any password configured for the default user. Are "
        "you sure your configuration is correct?");
    return false;
  }
  bool ok = CheckPassword(c.env, pass) && user == "default";
  // The password's bytes in the connection's input buffer are not needed
  // again: wipe them (the argument points into the buffer or the parser).
  proc::Wipe(const_cast<char*>(pass.data()), pass.size());
  if (!ok) {
    c.r.Error("WRONGPASS invalid username-password pair or user is disabled.");
    return false;
  }
  c.conn.authed = true;
  return true;
}

void CmdAuth(CmdCtx& c) {
  if (c.argc() > 3) {
    c.r.Error(kErrSyntax);
    return;
  }
  bool ok = c.argc() == 2 ? DoAuth(c, "default", c.arg(1), false)
                          : DoAuth(c, c.arg(1), c.arg(2), true);
  if (ok) c.r.Simple("OK");
}

void CmdSelect(CmdCtx& c) {
  int db;
  if (!ParseIntOrReply(c, c.arg(1), &db)) return;
  cache::TableRef t;
  if (db < 0 || !TableForDb(c.env, db, &t)) {
    c.r.Error("ERR DB index is out of range");
    return;
  }
  c.conn.db = db;
  c.r.Simple("OK");
}

bool ValidClientName(std::string_view n) {
  for (char ch : n) {
    if (ch < '!' || ch > '~') return false;
  }
  return true;
}

void CmdHello(CmdCtx& c) {
  size_t i = 1;
  if (c.argc() >= 2) {
    long long ver;
    if (!ParseLL(c.arg(1), &ver)) {
      c.r.Error("ERR Protocol version is not an integer or out of range");
      return;
    }
    if (ver != 2) {
      c.r.Error("NOPROTO unsupported protocol version");
      return;
    }
    i = 2;
  }
  for (; i < c.argc(); ++i) {
    bool more = i + 1 < c.argc();
    if (EqNoCase(c.arg(i), "AUTH") && i + 2 < c.argc()) {
      if (!DoAuth(c, c.arg(i + 1), c.arg(i + 2), true)) return;
      i += 2;
    } else if (EqNoCase(c.arg(i), "SETNAME") && more) {
      if (!ValidClientName(c.arg(i + 1))) {
        c.r.Error("ERR Client names cannot contain spaces, newlines or special characters.");
        return;
      }
      c.conn.name = std::string(c.arg(++i));
    } else {
      c.r.Error("ERR Syntax error in HELLO option '" + std::string(c.arg(i)) + "'");
      return;
    }
  }
  if (!c.conn.authed) {
    c.r.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
              "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
              "the RESP protocol version at the same time");
    return;
  }
  c.r.Array(14);
  c.r.Bulk("server");
  c.r.Bulk("redis");
  c.r.Bulk("version");
  c.r.Bulk(kRedisCompatVersion);
  c.r.Bulk("proto");
  c.r.Int(2);
  c.r.Bulk("id");
  c.r.Int(static_cast<long long>(c.conn.id));
  c.r.Bulk("mode");
  c.r.Bulk("standalone");
  c.r.Bulk("role");
  c.r.Bulk("master");
  c.r.Bulk("modules");
  c.r.Array(0);
}

// COMMAND and its subcommands are computed from the dispatch table (the
// CommandSpec rows): what COMMAND lists is exactly what Dispatch runs, with
// the arity Dispatch enforces and the key positions GETKEYS uses.
const CommandSpec* FindSpec(const Env& e, std::string_view name, const char** group = nullptr) {
  for (size_t i = 0; i < e.ordered.size(); ++i) {
    if (EqNoCase(name, e.ordered[i]->name)) {
      if (group) *group = e.groups[i];
      return e.ordered[i];
    }
  }
  return nullptr;
}

void CommandInfo(CmdCtx& c, const CommandSpec& s) {
  c.r.Array(10);
  c.r.Bulk(s.name);
  c.r.Int(s.arity);
  size_t nflags = 0;
  for (const FlagName& f : kFlagNames) nflags += (s.flags & f.bit) != 0;
  c.r.Array(nflags);
  for (const FlagName& f : kFlagNames) {
    if (s.flags & f.bit) c.r.Simple(f.name);
  }
  c.r.Int(s.first_key);
  c.r.Int(s.last_key);
  c.r.Int(s.key_step);
  c.r.Array(0);  // ACL categories (no ACLs)
  c.r.Array(0);  // tips
  c.r.Array(0);  // key specs
  c.r.Array(0);  // subcommands
}

// COMMAND GETKEYS cmd args...: the key arguments by first/last/step.
void CommandGetKeys(CmdCtx& c) {
  const CommandSpec* s = FindSpec(c.env, c.arg(2));
  int argc = static_cast<int>(c.argc()) - 2;  // the command's own argv
  bool known_sub = !s || !s->subcommands;  // a container: its subcommand is the command
  for (const char* const* sub = s && s->subcommands && argc >= 2 ? s->subcommands : nullptr;
       sub && *sub; ++sub) {
    known_sub |= EqNoCase(c.arg(3), std::strchr(*sub, '|') + 1);
  }
  if (!s || !known_sub) {
    c.r.Error("ERR Invalid command specified");
  } else if (s->first_key == 0) {
    c.r.Error("ERR The command has no key arguments");
  } else if ((s->arity > 0 && argc != s->arity) || argc < -s->arity) {
    c.r.Error("ERR Invalid number of arguments specified for command");
  } else {
    int last = s->last_key < 0 ? argc + s->last_key : s->last_key;
    if (last >= argc) last = argc - 1;
    std::vector<std::string_view> keys;
    int step = s->key_step > 0 ? s->key_step : 1;  // a row without a step: one key at a time
    for (int i = s->first_key; i <= last; i += step) keys.push_back(c.arg(2 + i));
    c.r.Array(keys.size());
    for (std::string_view k : keys) c.r.Bulk(k);
  }
}

void CmdCommand(CmdCtx& c) {
  const Env& e = c.env;
  if (c.argc() == 1) {
    c.r.Array(e.ordered.size());
    for (const CommandSpec* s : e.ordered) CommandInfo(c, *s);
    return;
  }
  std::string_view sub = c.arg(1);
  if (EqNoCase(sub, "COUNT") && c.argc() == 2) {
    c.r.Int(static_cast<long long>(e.ordered.size()));
  } else if (EqNoCase(sub, "INFO")) {
    if (c.argc() == 2) {  // no names: every command (Redis 7)
      c.r.Array(e.ordered.size());
      for (const CommandSpec* s : e.ordered) CommandInfo(c, *s);
      return;
    }
    c.r.Array(c.argc() - 2);
    for (size_t i = 2; i < c.argc(); ++i) {
      const CommandSpec* s = FindSpec(e, c.arg(i));
      if (s) {
        CommandInfo(c, *s);
      } else {
        c.r.NullArray();
      }
    }
  } else if (EqNoCase(sub, "DOCS")) {
    // name -> its doc map; perfcached documents the group (no summaries).
    std::vector<std::pair<const CommandSpec*, const char*>> out;
    if (c.argc() == 2) {
      for (size_t i = 0; i < e.ordered.size(); ++i) out.emplace_back(e.ordered[i], e.groups[i]);
    }
    for (size_t i = 2; i < c.argc(); ++i) {
      const char* group = nullptr;
      if (const CommandSpec* s = FindSpec(e, c.arg(i), &group)) out.emplace_back(s, group);
    }
    c.r.Array(out.size() * 2);
    for (const auto& [s, group] : out) {
      c.r.Bulk(s->name);
      c.r.Array(2);
      c.r.Bulk("group");
      c.r.Bulk(group);
    }
  } else if (EqNoCase(sub, "LIST")) {
    std::vector<const CommandSpec*> out;
    if (c.argc() == 2) {
      out = e.ordered;
    } else if (c.argc() != 5 || !EqNoCase(c.arg(2), "FILTERBY")) {
      c.r.Error(kErrSyntax);
      return;
    } else if (EqNoCase(c.arg(3), "PATTERN")) {
      for (const CommandSpec* s : e.ordered) {
        if (cache::GlobMatch(c.arg(4), s->name, true)) out.push_back(s);
      }
    } else if (!EqNoCase(c.arg(3), "MODULE") && !EqNoCase(c.arg(3), "ACLCAT")) {
      c.r.Error(kErrSyntax);  // MODULE / ACLCAT: no modules and no ACL categories here
      return;
    }
    c.r.Array(out.size());
    for (const CommandSpec* s : out) c.r.Bulk(s->name);
  } else if (EqNoCase(sub, "GETKEYS") && c.argc() >= 4) {
    CommandGetKeys(c);
  } else {
    SubcommandError(c, "command", {"count", "info", "docs", "list", "getkeys"});
  }
}

std::string Human(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2fG", static_cast<double>(b) / (1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.2fM", static_cast<double>(b) / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.2fK", static_cast<double>(b) / 1024);
  }
  return buf;
}

// A standalone Redis 7 master with no replicas and no backlog: the fields
// and values redis-server prints (rtpengine refuses a server without
// role:master). master_replid is random per daemon start (ProcTable).
std::string ReplicationSection(const Env& e) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (uint8_t b : e.procs->replid) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
         "master_failover_state:no-failover\r\nmaster_replid:" + id +
         "\r\nmaster_replid2:" + std::string(40, '0') +
         "\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0"
         "\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0"
         "\r\nrepl_backlog_histlen:0\r\n\r\n";
}

// ROLE on a master without replicas: *3 master, offset 0, no replicas.
void CmdRole(CmdCtx& c) {
  c.r.Array(3);
  c.r.Bulk("master");
  c.r.Int(0);
  c.r.Array(0);
}

void CmdInfo(CmdCtx& c) {
  std::string want = c.argc() > 1 ? std::string(c.arg(1)) : "default";
  for (char& ch : want) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto on = [&](const char* s) { return want == "default" || want == "all" || want == "everything" || want == s; };
  std::string o;
  Env& e = c.env;
  mem::Arena& a = e.ctx->arena;
  int64_t now = NowMs(e);
  int64_t up = (now - e.procs->started_ms.load()) / 1000;
  if (on("server")) {
    utsname u;
    uname(&u);
    o += "# Server\r\nredis_version:" + std::string(kRedisCompatVersion) +
         "\r\nperfcached_version:" + kPerfcachedVersion + "\r\nredis_mode:standalone\r\nos:" +
         u.sysname + " " + u.release + " " + u.machine + "\r\narch_bits:64\r\nprocess_id:" +
         std::to_string(getppid()) + "\r\nworker_pid:" + std::to_string(getpid()) +
         "\r\ntcp_port:" + e.cfg->resp.substr(e.cfg->resp.rfind(':') + 1) +
         "\r\nuptime_in_seconds:" + std::to_string(up) +
         "\r\nuptime_in_days:" + std::to_string(up / 86400) +
         "\r\nconfig_file:" + (e.cfg->source[0] == '(' ? "" : e.cfg->source) + "\r\n\r\n";
  }
  if (on("clients")) {
    o += "# Clients\r\nconnected_clients:" + std::to_string(proc::DoorSum(*e.procs, proc::kDoorOpen)) +
         "\r\nmaxclients:" + std::to_string(e.cfg->maxclients) + "\r\n\r\n";
  }
  if (on("memory")) {
    uint64_t used = mem::UsedMemory(a), rss = a.committed_bytes(), peak = mem::NoteUsedPeak(a);
    uint64_t allocated = mem::CellBytesInUse(a) + a.hdr()->large_bytes.load(), active = a.used_bytes();
    cache::MemoryLimits ml = cache::GetMemoryLimits(*e.ctx);
    char afrag[32], ppct[32];
    std::snprintf(afrag, sizeof afrag, "%.2f", allocated ? static_cast<double>(active) / static_cast<double>(allocated) : 0.0);
    std::snprintf(ppct, sizeof ppct, "%.2f%%", peak ? 100.0 * static_cast<double>(used) / static_cast<double>(peak) : 0.0);
    char frag[32];
    std::snprintf(frag, sizeof frag, "%.2f", used ? static_cast<double>(rss) / static_cast<double>(used) : 0.0);
    cache::AutomoveStats am = cache::GetAutomoveStats(*e.ctx);
    uint64_t clients_mem = 0;  // every worker's clients, as of their last tick (maxmemory-clients)
    for (const auto& m : e.procs->client_mem) clients_mem += m.load(std::memory_order_relaxed);
    o += "# Memory\r\nused_memory:" + std::to_string(used) + "\r\nused_memory_human:" + Human(used) +
         "\r\nused_memory_rss:" + std::to_string(rss) + "\r\nused_memory_rss_human:" + Human(rss) +
         "\r\nused_memory_peak:" + std::to_string(peak) + "\r\nused_memory_peak_human:" + Human(peak) +
         "\r\nused_memory_peak_perc:" + ppct + "\r\nallocator_allocated:" + std::to_string(allocated) +
         "\r\nallocator_active:" + std::to_string(active) + "\r\nallocator_resident:" + std::to_string(rss) +
         "\r\nallocator_frag_ratio:" + afrag + "\r\nmem_allocator:perfcached-slab" +
         "\r\nmem_fragmentation_ratio:" + frag + "\r\narena_groups_bytes:" + std::to_string(a.used_bytes()) +
         "\r\nmaxmemory:" + std::to_string(ml.maxmemory) + "\r\nmaxmemory_human:" +
         Human(ml.maxmemory) + "\r\nmaxmemory_policy:" + cache::PolicyName(ml.policy) +
         "\r\nmem_clients_normal:" + std::to_string(clients_mem) +
         "\r\narena_cap:" + std::to_string(a.cap_bytes()) + "\r\narena_committed:" +
         std::to_string(a.committed_bytes()) + "\r\narena_tier:" + mem::TierName(a.tier()) +
         "\r\narena_large_objects:" + std::to_string(a.hdr()->large_objects.load()) +
         "\r\narena_nomem_events:" + std::to_string(a.hdr()->nomem_events.load()) +
         "\r\nautomove:" + (am.enabled ? "yes" : "no") + "\r\nautomove_passes:" + std::to_string(am.passes) +
         "\r\nautomove_moved:" + std::to_string(am.moved) +
         "\r\nautomove_pages_freed:" + std::to_string(am.pages_freed) +
         "\r\nautomove_given_back:" + std::to_string(am.given_back) + "\r\n\r\n";
  }
  if (on("persistence")) {
    // The WAL is our AOF: Redis's aof_* fields that tools read, then ours.
    auto WalInfo = [](const Env& env) {
      db::WalShared* w = db::Wal();
      std::string o = std::string("\r\naof_enabled:") + (w ? "1" : "0") +
                      "\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1"
                      "\r\naof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0"
                      "\r\naof_last_write_status:" + (w && w->failed_errno.load() ? "err" : "ok") +
                      "\r\nwal_enabled:" + (w ? "1" : "0");
      if (!w) return o;
      o += "\r\nwal_fsync:" + env.cfg->wal_fsync;
      for (const db::WalFigure& f : db::WalFigures()) o += "\r\nwal_" + std::string(f.name) + ":" + std::to_string(f.value);
      return o;
    };
    // Workers serve only after the start-up load: loading is always 0 on
    // this door. There is no AOF; SQL persistence (modules/db) is db_*.
    const proc::PersistStats& ps = e.procs->persist;
    uint32_t busy = ps.busy_pid.load() != 0 ? ps.busy_kind.load() : 0;
    // Snapshots: Redis's rdb_* names (a snapshot is our RDB).
    const proc::SnapshotStats& ss = e.procs->snap;
    uint64_t changes = 0;
    for (const auto& ci : cache::ListCollections(*e.ctx)) changes += ci.changes;
    uint64_t base = ss.changes_at_last.load();
    int64_t last = ss.last_at_ms.load() ? ss.last_at_ms.load() : e.procs->started_ms.load();
    int64_t started = ss.started_ms.load();
    o += "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:" +
         std::to_string(changes > base ? changes - base : 0) +
         "\r\nrdb_bgsave_in_progress:" + (started ? "1" : "0") +
         "\r\nrdb_last_save_time:" + std::to_string(last / 1000) +
         "\r\nrdb_last_bgsave_status:" + (ss.last_failed.load() ? "err" : "ok") +
         "\r\nrdb_last_bgsave_time_sec:" + std::to_string(ss.snapshots.load() ? ss.last_took_ms.load() / 1000 : -1) +
         "\r\nrdb_current_bgsave_time_sec:" + std::to_string(started ? (now - started) / 1000 : -1) +
         "\r\nrdb_saves:" + std::to_string(ss.snapshots.load()) +
         "\r\nrdb_last_load_keys_loaded:" + std::to_string(ss.recovered_records.load()) +
         "\r\nsnapshot_dir:" + e.cfg->wal_dir + "\r\nsnapshot_failures:" + std::to_string(ss.failures.load()) +
         "\r\nsnapshot_last_keys:" + std::to_string(ss.last_records.load()) +
         "\r\nsnapshot_last_bytes:" + std::to_string(ss.last_bytes.load()) +
         "\r\nsnapshot_recovered_ms:" + std::to_string(ss.recovered_ms.load()) +
         WalInfo(e) + "\r\ndb_enabled:" +
         std::string(e.cfg->db_url.empty() ? "0" : "1") + "\r\ndb_mode:" + std::to_string(e.cfg->db_mode) +
         "\r\ndb_in_progress:" + (busy == 1 ? "save" : busy == 2 ? "load" : "none") +
         "\r\ndb_saves:" + std::to_string(ps.saves.load()) +
         "\r\ndb_save_failures:" + std::to_string(ps.save_failures.load()) +
         "\r\ndb_last_save_status:" + (ps.last_save_failed.load() ? "err" : "ok") +
         "\r\ndb_last_save_time:" + std::to_string(ps.last_save_at_ms.load() / 1000) +
         "\r\ndb_last_save_rows:" + std::to_string(ps.last_save_rows.load()) +
         "\r\ndb_last_save_ms:" + std::to_string(ps.last_save_took_ms.load()) +
         "\r\ndb_loads:" + std::to_string(ps.loads.load()) +
         "\r\ndb_load_failures:" + std::to_string(ps.load_failures.load()) +
         "\r\ndb_last_load_rows:" + std::to_string(ps.last_load_rows.load()) +
         "\r\ndb_last_load_ms:" + std::to_string(ps.last_load_took_ms.load()) +
         "\r\ndb_rows_expired:" + std::to_string(ps.rows_expired.load()) +
         "\r\ndb_rows_skipped:" + std::to_string(ps.rows_bad.load()) + "\r\n\r\n";
  }
  if (on("stats")) {
    uint64_t hits = 0, misses = 0, expired = 0, evicted = 0;
    for (const auto& ci : cache::ListCollections(*e.ctx)) {
      hits += ci.stats[cache::kStatHits];
      misses += ci.stats[cache::kStatMisses];
      expired += ci.stats[cache::kStatExpired];
      evicted += ci.stats[cache::kStatEvicted];
    }
    o += "# Stats\r\ntotal_connections_received:" +
         std::to_string(proc::DoorSum(*e.procs, proc::kDoorAccepted)) +
         "\r\ntotal_commands_processed:" +
         std::to_string(proc::DoorSum(*e.procs, proc::kDoorCommands)) +
         "\r\ntotal_net_input_bytes:" + std::to_string(proc::DoorSum(*e.procs, proc::kDoorBytesIn)) +
         "\r\ntotal_net_output_bytes:" +
         std::to_string(proc::DoorSum(*e.procs, proc::kDoorBytesOut)) +
         "\r\nrejected_connections:" + std::to_string(proc::DoorSum(*e.procs, proc::kDoorRejected)) +
         "\r\ntotal_error_replies:" + std::to_string(proc::DoorSum(*e.procs, proc::kDoorErrors)) +
         "\r\nclient_query_buffer_limit_disconnections:" +
         std::to_string(proc::DoorSum(*e.procs, proc::kDoorQueryLimit)) +
         "\r\nclient_output_buffer_limit_disconnections:" +
         std::to_string(proc::DoorSum(*e.procs, proc::kDoorOutputLimit)) +
         "\r\nevicted_clients:" + std::to_string(proc::DoorSum(*e.procs, proc::kDoorEvictedClients)) +
         "\r\nexpired_keys:" + std::to_string(expired) + "\r\nevicted_keys:" + std::to_string(evicted) +
         "\r\nkeyspace_hits:" +
         std::to_string(hits) + "\r\nkeyspace_misses:" + std::to_string(misses) + "\r\n\r\n";
  }
  if (on("replication")) o += ReplicationSection(e);
  if (on("keyspace")) {
    o += "# Keyspace\r\n";
    for (size_t db = 0; db < e.db_names.size(); ++db) {
      cache::TableRef t;
      if (!TableForDb(e, static_cast<int>(db), &t)) continue;
      uint64_t n = cache::CollectionEntries(*e.ctx, t);
      if (n) o += "db" + std::to_string(db) + ":keys=" + std::to_string(n) + ",expires=0,avg_ttl=0\r\n";
    }
  }
  c.r.Bulk(o);
}

std::string ClientLine(const net::Conn& k, int64_t now) {
  return "id=" + std::to_string(k.id) + " addr=" + k.addr + " laddr=" + k.laddr +
         " fd=" + std::to_string(k.fd) + " name=" + k.name +
         " age=" + std::to_string((now - k.created_ms) / 1000) +
         " idle=" + std::to_string((now - k.last_ms) / 1000) + " flags=" + (k.no_evict ? "e" : "N") + " db=" + std::to_string(k.db) +
         " sub=0 psub=0 ssub=0 multi=-1 qbuf=" + std::to_string(k.in.size() - k.in_pos) +
         " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=" + std::to_string(k.in.capacity()) +
         " rbp=" + std::to_string(k.in.capacity()) + " obl=0 oll=0 omem=" + std::to_string(k.pending()) +
         " tot-mem=" + std::to_string(k.Memory()) + " events=r cmd=" + k.last_cmd + " user=default redir=-1 resp=2\n";
}

void CmdClient(CmdCtx& c) {
  std::string_view sub = c.arg(1);
  int64_t now = net::WallMs();
  if (EqNoCase(sub, "ID") && c.argc() == 2) {
    c.r.Int(static_cast<long long>(c.conn.id));
  } else if (EqNoCase(sub, "GETNAME") && c.argc() == 2) {
    if (c.conn.name.empty()) {
      c.r.Null();
    } else {
      c.r.Bulk(c.conn.name);
    }
  } else if (EqNoCase(sub, "SETNAME") && c.argc() == 3) {
    if (!ValidClientName(c.arg(2))) {
      c.r.Error("ERR Client names cannot contain spaces, newlines or special characters.");
      return;
    }
    c.conn.name = std::string(c.arg(2));
    c.r.Simple("OK");
  } else if (EqNoCase(sub, "NO-EVICT") && c.argc() == 3) {
    // Exempt this connection from maxmemory-clients (Redis 7).
    if (EqNoCase(c.arg(2), "on")) {
      c.conn.no_evict = true;
    } else if (EqNoCase(c.arg(2), "off")) {
      c.conn.no_evict = false;
    } else {
      c.r.Error("ERR syntax error");
      return;
    }
    c.r.Simple("OK");
  } else if (EqNoCase(sub, "SETINFO") && c.argc() == 4) {
    c.r.Simple("OK");
  } else if (EqNoCase(sub, "INFO") && c.argc() == 2) {
    c.r.Bulk(ClientLine(c.conn, now));
  } else if (EqNoCase(sub, "LIST")) {
    // The connections of this worker process (each worker owns its own).
    std::string o;
    c.env.server->ForEach([&](const net::Conn& k) { o += ClientLine(k, now); });
    c.r.Bulk(o);
  } else if (EqNoCase(sub, "KILL") && c.argc() == 4 && EqNoCase(c.arg(2), "ID")) {
    // The filter form: replies the number killed (0 when no such client).
    long long id;
    if (!ParseLL(c.arg(3), &id) || id < 1) {
      c.r.Error("ERR client-id should be greater than 0");
      return;
    }
    bool found = false;
    c.env.server->ForEach([&](const net::Conn& k) { found |= k.id == static_cast<uint64_t>(id); });
    if (!found) {
      c.r.Int(0);
      return;
    }
    if (static_cast<uint64_t>(id) == c.conn.id) {
      c.conn.close_after_write = true;
    } else {
      c.env.server->Kill(static_cast<uint64_t>(id));
    }
    c.r.Int(1);
  } else {
    SubcommandError(c, "client", {"id", "getname", "setname", "setinfo", "info", "list", "kill", "no-evict"});
  }
}

struct LiveParam {
  const char* name;
  bool settable;
};
constexpr LiveParam kConfigParams[] = {
    {"timeout", true},       {"loglevel", true},  {"maxclients", false},
    {"databases", false},    {"port", false},     {"bind", false},
    {"maxmemory", true},     {"maxmemory-policy", true}, {"maxmemory-samples", true},
    {"maxmemory-eviction-tenacity", true}, {"maxmemory-clients", true},
    {"lfu-log-factor", true}, {"lfu-decay-time", true},
    {"proto-max-bulk-len", true},
    {"client-query-buffer-limit", true}, {"client-output-buffer-limit", true},
    {"save", false},         {"appendonly", false},
    {"hash-max-listpack-entries", true}, {"hash-max-ziplist-entries", true},
    {"hash-max-listpack-value", true},   {"hash-max-ziplist-value", true},
    {"set-max-intset-entries", true},    {"set-max-listpack-entries", true},
    {"set-max-listpack-value", true},    {"list-max-listpack-size", true},
    {"list-max-ziplist-size", true},     {"zset-max-listpack-entries", true},
    {"zset-max-ziplist-entries", true},  {"zset-max-listpack-value", true},
    {"zset-max-ziplist-value", true},
};

// The encoding thresholds of aggregates (cache/dict.h DictLimits, shared by
// every process through the catalog). Redis's names and their ziplist
// aliases; -1 = not one of them.
int LimitField(std::string_view name) {
  static constexpr std::pair<const char*, int> kNames[] = {
      {"hash-max-listpack-entries", 0}, {"hash-max-ziplist-entries", 0},
      {"hash-max-listpack-value", 1},   {"hash-max-ziplist-value", 1},
      {"set-max-intset-entries", 2},    {"set-max-listpack-entries", 3},
      {"set-max-listpack-value", 4},    {"list-max-listpack-size", 5},
      {"list-max-ziplist-size", 5},     {"zset-max-listpack-entries", 6},
      {"zset-max-ziplist-entries", 6},  {"zset-max-listpack-value", 7},
      {"zset-max-ziplist-value", 7}};
  for (const auto& [n, f] : kNames) {
    if (EqNoCase(name, n)) return f;
  }
  return -1;
}

long long* LimitRef(cache::DictLimits& l, int f, long long* tmp) {
  switch (f) {
    case 0: *tmp = l.hash_pack_entries; break;
    case 1: *tmp = l.hash_pack_value; break;
    case 2: *tmp = l.set_intset_entries; break;
    case 3: *tmp = l.set_pack_entries; break;
    case 4: *tmp = l.set_pack_value; break;
    case 5: *tmp = l.list_pack_size; break;
    case 6: *tmp = l.zset_pack_entries; break;
    default: *tmp = l.zset_pack_value; break;
  }
  return tmp;
}

void StoreLimit(cache::DictLimits& l, int f, long long v) {
  uint32_t u = v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v < 0 ? 0 : v);
  switch (f) {
    case 0: l.hash_pack_entries = u; break;
    case 1: l.hash_pack_value = u; break;
    case 2: l.set_intset_entries = u; break;
    case 3: l.set_pack_entries = u; break;
    case 4: l.set_pack_value = u; break;
    case 5: l.list_pack_size = static_cast<int32_t>(v); break;
    case 6: l.zset_pack_entries = u; break;
    default: l.zset_pack_value = u; break;
  }
}

std::string ConfigValue(const Env& e, std::string_view name) {
  if (name == "timeout") return std::to_string(e.procs->live_timeout.load());
  if (name == "loglevel") {
    return proc::LogLevelName(static_cast<proc::LogLevel>(e.procs->live_loglevel.load()));
  }
  if (name == "maxclients") return std::to_string(e.cfg->maxclients);
  if (name == "databases") return std::to_string(e.db_names.size());
  if (name == "port") return e.cfg->resp.substr(e.cfg->resp.rfind(':') + 1);
  if (name == "bind") return e.cfg->resp.substr(0, e.cfg->resp.rfind(':'));
  if (name == "maxmemory") return std::to_string(cache::GetMemoryLimits(*e.ctx).maxmemory);
  if (name == "maxmemory-policy") return cache::PolicyName(cache::GetMemoryLimits(*e.ctx).policy);
  if (name == "maxmemory-samples") return std::to_string(cache::GetMemoryLimits(*e.ctx).samples);
  if (name == "maxmemory-eviction-tenacity") return std::to_string(e.procs->live_tenacity.load());
  if (name == "maxmemory-clients") return proc::FormatClientsLimit(e.procs->live_clients_limit.load());
  if (name == "lfu-log-factor") return std::to_string(cache::LoadAccessParams(*e.ctx->catalog).log_factor);
  if (name == "lfu-decay-time") return std::to_string(cache::LoadAccessParams(*e.ctx->catalog).decay_min);
  if (name == "proto-max-bulk-len") return std::to_string(e.procs->live_proto_max_bulk.load());
  if (name == "client-query-buffer-limit") return std::to_string(e.procs->live_query_buf.load());
  if (name == "client-output-buffer-limit") {
    std::string o;
    const char* kClass[2] = {"normal", "pubsub"};
    for (int k = 0; k < 2; ++k) {
      o += std::string(k ? " " : "") + kClass[k];
      for (int f = 0; f < 3; ++f) o += " " + std::to_string(e.procs->live_output[k][f].load());
    }
    return o;
  }
  if (name == "save") return "";
  if (name == "appendonly") return "no";
  if (int f = LimitField(name); f >= 0) {
    cache::DictLimits l = cache::GetDictLimits(*e.ctx);
    long long v;
    return std::to_string(*LimitRef(l, f, &v));
  }
  return "";
}

// One pair of CONFIG SET: checked, and stored when `apply`. An error is
// answered here (false). CmdConfig checks every pair before it stores any.
bool Refuse(CmdCtx& c, const std::string& e) {
  c.r.Error(e);
  return false;
}

bool ConfigSetOne(CmdCtx& c, std::string_view k, std::string_view v, bool apply) {
  if (EqNoCase(k, "timeout")) {
    long long t;
    if (!ParseLL(v, &t)) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument 'timeout') - argument "
                "couldn't be parsed into an integer");
      return false;
    }
    if (t < 0 || t > INT32_MAX) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument 'timeout') - argument "
                "must be between 0 and 2147483647 inclusive");
      return false;
    }
    if (apply) c.env.procs->live_timeout.store(static_cast<int32_t>(t));
  } else if (EqNoCase(k, "loglevel")) {
    proc::LogLevel l;
    std::string lv(v);
    if (lv == "verbose") lv = "info";
    if (lv == "warning" || !proc::LogLevelFromName(lv, &l)) {
      if (lv == "warning") l = proc::LogLevel::kWarning;
      else {
        c.r.Error("ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) "
                  "must be one of the following: debug, verbose, notice, warning");
        return false;
      }
    }
    if (apply) c.env.procs->live_loglevel.store(static_cast<int32_t>(l));
  } else if (EqNoCase(k, "proto-max-bulk-len") || EqNoCase(k, "client-query-buffer-limit")) {
    int64_t x;
    if (!proc::ParseMemSize(v, &x)) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument '" + std::string(k) +
                "') - argument must be a memory value");
      return false;
    }
    if (x < (int64_t{1} << 20)) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument '" + std::string(k) +
                "') - argument must be between 1048576 and 9223372036854775807 inclusive");
      return false;
    }
    if (apply) {
      (EqNoCase(k, "proto-max-bulk-len") ? c.env.procs->live_proto_max_bulk
                                         : c.env.procs->live_query_buf).store(x);
    }
  } else if (EqNoCase(k, "client-output-buffer-limit")) {
    proc::Config tmp;
    tmp.output_normal = {c.env.procs->live_output[0][0].load(), c.env.procs->live_output[0][1].load(),
                         c.env.procs->live_output[0][2].load()};
    tmp.output_pubsub = {c.env.procs->live_output[1][0].load(), c.env.procs->live_output[1][1].load(),
                         c.env.procs->live_output[1][2].load()};
    std::string err;
    if (!proc::ParseOutputLimits(v, &tmp, &err)) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - " +
                err);
      return false;
    }
    const proc::Config::OutputLimit* ol[2] = {&tmp.output_normal, &tmp.output_pubsub};
    for (int cl = 0; apply && cl < 2; ++cl) {
      c.env.procs->live_output[cl][0].store(ol[cl]->hard);
      c.env.procs->live_output[cl][1].store(ol[cl]->soft);
      c.env.procs->live_output[cl][2].store(ol[cl]->soft_s);
    }
  } else if (EqNoCase(k, "maxmemory") || EqNoCase(k, "maxmemory-policy") ||
             EqNoCase(k, "maxmemory-samples")) {
    cache::MemoryLimits l = cache::GetMemoryLimits(*c.env.ctx);
    std::string pre = "ERR CONFIG SET failed (possibly related to argument '" + std::string(k) + "') - ";
    if (EqNoCase(k, "maxmemory")) {
      int64_t x;
      if (!proc::ParseMemSize(v, &x) || x < 0) return Refuse(c, pre + "argument must be a memory value");
      l.maxmemory = static_cast<uint64_t>(x);
    } else if (EqNoCase(k, "maxmemory-policy")) {
      cache::EvictPolicy p;
      if (!cache::ParsePolicy(v, &p)) {
        return Refuse(c, pre + "argument(s) must be one of the following: volatile-lru, volatile-lfu, "
                               "volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, "
                               "noeviction");
      }
      l.policy = p;
    } else {
      long long x;
      if (!ParseLL(v, &x)) return Refuse(c, pre + "argument couldn't be parsed into an integer");
      if (x < 1 || x > INT32_MAX) return Refuse(c, pre + "argument must be between 1 and 2147483647 inclusive");
      l.samples = static_cast<uint32_t>(x);
    }
    if (apply) cache::SetMemoryLimits(*c.env.ctx, l);
  } else if (EqNoCase(k, "maxmemory-eviction-tenacity")) {
    std::string pre = "ERR CONFIG SET failed (possibly related to argument '" + std::string(k) + "') - ";
    long long x;
    if (!ParseLL(v, &x)) return Refuse(c, pre + "argument couldn't be parsed into an integer");
    if (x < 0 || x > 100) return Refuse(c, pre + "argument must be between 0 and 100 inclusive");
    if (apply) c.env.procs->live_tenacity.store(static_cast<int32_t>(x));
  } else if (EqNoCase(k, "maxmemory-clients")) {
    int64_t x;
    if (!proc::ParseClientsLimit(v, &x)) {
      int64_t pct;
      const char* why = proc::ParsePercent(v, &pct) ? "percentage argument must be less or equal to 100"
                                                    : "argument must be a memory or percent value";
      return Refuse(c, "ERR CONFIG SET failed (possibly related to argument '" + std::string(k) + "') - " + why);
    }
    if (apply) c.env.procs->live_clients_limit.store(x);
  } else if (EqNoCase(k, "lfu-log-factor") || EqNoCase(k, "lfu-decay-time")) {
    std::string pre = "ERR CONFIG SET failed (possibly related to argument '" + std::string(k) + "') - ";
    long long x;
    if (!ParseLL(v, &x)) return Refuse(c, pre + "argument couldn't be parsed into an integer");
    if (x < 0 || x > INT32_MAX) return Refuse(c, pre + "argument must be between 0 and 2147483647 inclusive");
    cache::AccessParams p = cache::LoadAccessParams(*c.env.ctx->catalog);
    if (EqNoCase(k, "lfu-log-factor")) p.log_factor = static_cast<uint32_t>(x);
    else p.decay_min = static_cast<uint32_t>(x);
    if (apply) cache::SetLfuParams(*c.env.ctx, p.log_factor, p.decay_min);
  } else if (int f = LimitField(k); f >= 0) {
    long long x;
    if (!ParseLL(v, &x)) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument '" + std::string(k) +
                "') - argument couldn't be parsed into an integer");
      return false;
    }
    bool list = f == 5;
    if ((list && (x < INT32_MIN || x > INT32_MAX)) || (!list && x < 0)) {
      c.r.Error("ERR CONFIG SET failed (possibly related to argument '" + std::string(k) +
                (list ? "') - argument must be between -2147483648 and 2147483647 inclusive"
                      : "') - argument must be between 0 and 9223372036854775807 inclusive"));
      return false;
    }
    cache::DictLimits l = cache::GetDictLimits(*c.env.ctx);
    StoreLimit(l, f, x);
    if (apply) cache::SetDictLimits(*c.env.ctx, l);
  } else {
    bool known = false;
    for (const auto& p : kConfigParams) known |= EqNoCase(k, p.name);
    c.r.Error(known ? "ERR CONFIG SET failed (possibly related to argument '" + std::string(k) +
                          "') - can't set immutable config"
                    : "ERR Unknown option or number of arguments for CONFIG SET - '" +
                          std::string(k) + "'");
    return false;
  }
  return true;
}

void CmdConfig(CmdCtx& c) {
  std::string_view sub = c.arg(1);
  if (EqNoCase(sub, "GET") && c.argc() >= 3) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& p : kConfigParams) {
      for (size_t i = 2; i < c.argc(); ++i) {
        if (cache::GlobMatch(c.arg(i), p.name, true)) {
          out.emplace_back(p.name, ConfigValue(c.env, p.name));
          break;
        }
      }
    }
    c.r.Array(out.size() * 2);
    for (const auto& [k, v] : out) {
      c.r.Bulk(k);
      c.r.Bulk(v);
    }
  } else if (EqNoCase(sub, "SET") && c.argc() >= 4 && c.argc() % 2 == 0) {
    // All or nothing, as Redis 7: names first (an unknown one wins, then
    // an immutable or repeated one), then every value, then the stores.
    // The first bad name decides which error is answered (Redis 7 records
    // only the first).
    std::string unknown, bad;
    const char* why = nullptr;
    for (size_t i = 2; i < c.argc() && unknown.empty() && !why; i += 2) {
      std::string_view k = c.arg(i);
      const LiveParam* found = nullptr;
      for (const auto& p : kConfigParams) {
        if (EqNoCase(k, p.name)) found = &p;
      }
      if (!found) {
        unknown = k;
      } else if (!found->settable) {
        why = "can't set immutable config";
        bad = k;
      } else {
        // The same name twice (Redis 7.0 takes an alias and its name, such
        // as hash-max-ziplist-entries and hash-max-listpack-entries, as two).
        for (size_t j = 2; j < i && !why; j += 2) {
          if (EqNoCase(c.arg(j), k)) {
            why = "duplicate parameter";
            bad = k;
          }
        }
      }
    }
    if (!unknown.empty()) {
      return c.r.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + unknown + "'");
    }
    if (why) return c.r.Error("ERR CONFIG SET failed (possibly related to argument '" + bad + "') - " + why);
    for (size_t i = 2; i < c.argc(); i += 2) {
      if (!ConfigSetOne(c, c.arg(i), c.arg(i + 1), false)) return;
    }
    for (size_t i = 2; i < c.argc(); i += 2) (void)ConfigSetOne(c, c.arg(i), c.arg(i + 1), true);
    c.env.procs->live_gen.fetch_add(1);
    c.r.Simple("OK");
  } else if (EqNoCase(sub, "RESETSTAT") && c.argc() == 2) {
    for (int s = 0; s < proc::kDoorStatCount; ++s) {
      c.env.procs->door_base[s] = proc::DoorSum(*c.env.procs, static_cast<proc::DoorStat>(s), true);
    }
    for (size_t db = 0; db < c.env.db_names.size(); ++db) {
      cache::TableRef t;
      if (TableForDb(c.env, static_cast<int>(db), &t)) cache::ResetCollectionStats(*c.env.ctx, t);
    }
    c.r.Simple("OK");
  } else {
    SubcommandError(c, "config", {"get", "set", "resetstat"});
  }
}

void CmdTime(CmdCtx& c) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  c.r.Array(2);
  c.r.Bulk(std::to_string(tv.tv_sec));
  c.r.Bulk(std::to_string(tv.tv_usec));
}

constexpr const char* kClientSubs[] = {"client|id",   "client|getname", "client|setname",
                                       "client|setinfo", "client|info", "client|list",
                                       "client|kill", "client|no-evict", nullptr};
constexpr const char* kConfigSubs[] = {"config|get", "config|set", "config|resetstat", nullptr};
constexpr const char* kCommandSubs[] = {"command|count", "command|info",    "command|docs",
                                        "command|list",  "command|getkeys", nullptr};

// Flags and groups as redis-server 7.0's COMMAND INFO / DOCS give them
// (test/diff compares them). CLIENT and CONFIG are containers: Redis puts
// the flags (admin ...) on their subcommands, not on them.
// MEMORY USAGE | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP.
void CmdMemory(CmdCtx& c) {
  std::string_view sub = c.arg(1);
  Env& e = c.env;
  mem::Arena& a = e.ctx->arena;
  if (EqNoCase(sub, "HELP") && c.argc() == 2) {
    static constexpr const char* kHelp[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR", "    Return memory problems reports.",
        "MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
        "PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS", "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP", "    Prints this help."};
    c.r.Array(std::size(kHelp));
    for (const char* l : kHelp) c.r.Simple(l);
    return;
  }
  if (EqNoCase(sub, "USAGE") && c.argc() >= 3) {
    long long samples = 5;
    for (size_t i = 3; i < c.argc(); ++i) {
      if (EqNoCase(c.arg(i), "SAMPLES") && i + 1 < c.argc()) {
        if (!ParseLLOrReply(c, c.arg(++i), &samples)) return;
        if (samples < 0) return c.r.Error("ERR syntax error");
      } else {
        return c.r.Error("ERR syntax error");
      }
    }
    cache::TableRef t;
    if (!CurrentTable(c, &t)) return;
    uint64_t bytes;
    Status st = cache::MemoryUsage(*e.ctx, t, c.arg(2), static_cast<uint64_t>(samples), &bytes);
    if (st == Status::kNotFound) return c.r.Null();
    if (st != Status::kOk) return ReplyStatus(c, st);
    return c.r.Int(static_cast<long long>(bytes));
  }
  uint64_t used = mem::UsedMemory(a), rss = a.committed_bytes(), keys = 0;
  const mem::ArenaHeader& h = *a.hdr();
  uint64_t startup = mem::MetaBytes(a);
  uint64_t index = h.region_used.load(), dataset = used > startup + index ? used - startup - index : 0;
  if (EqNoCase(sub, "STATS") && c.argc() == 2) {
    uint64_t overflow = 0;
    for (const auto& ci : cache::ListCollections(*e.ctx)) {
      keys += ci.entries;
      overflow += ci.overflow;
    }
    char frag[32], pct[32], per[32];
    std::snprintf(frag, sizeof frag, "%.4f", used ? static_cast<double>(rss) / static_cast<double>(used) : 0.0);
    std::snprintf(pct, sizeof pct, "%.4f", used ? 100.0 * static_cast<double>(dataset) / static_cast<double>(used) : 0.0);
    std::snprintf(per, sizeof per, "%llu", static_cast<unsigned long long>(keys ? (used - startup) / keys : 0));
    struct F {
      const char* name;
      uint64_t v;
      const char* text;
    };
    const F f[] = {{"peak.allocated", mem::NoteUsedPeak(a), nullptr},
                   {"total.allocated", used, nullptr},
                   {"startup.allocated", startup, nullptr},
                   {"overhead.hashtable.main", index, nullptr},
                   {"keys.count", keys, nullptr},
                   {"keys.overflow", overflow, nullptr},
                   {"keys.bytes-per-key", 0, per},
                   {"dataset.bytes", dataset, nullptr},
                   {"dataset.percentage", 0, pct},
                   {"fragmentation", 0, frag},
                   {"fragmentation.bytes", rss > used ? rss - used : 0, nullptr},
                   {"arena.cap", a.cap_bytes(), nullptr},
                   {"arena.rss", rss, nullptr},
                   {"arena.groups", a.used_bytes(), nullptr},
                   {"arena.slab_pages", h.slab_pages.load(), nullptr},
                   {"arena.large_bytes", h.large_bytes.load(), nullptr},
                   {"arena.groups_returned", h.groups_returned.load(), nullptr},
                   {"arena.nomem_events", h.nomem_events.load(), nullptr}};
    c.r.Array(2 * std::size(f));
    for (const F& x : f) {
      c.r.Bulk(x.name);
      if (x.text) c.r.Bulk(x.text);
      else c.r.Int(static_cast<long long>(x.v));
    }
    return;
  }
  if (EqNoCase(sub, "DOCTOR") && c.argc() == 2) {
    std::string out;
    uint64_t cap = a.cap_bytes();
    if (used > cap / 10 * 9) {
      out += "* The arena is " + std::to_string(used * 100 / cap) +
             "% used: writes will soon be refused (-OOM). Raise [memory] arena_cap_mb or delete keys.\n";
    }
    if (h.nomem_events.load() > 0) {
      out += "* " + std::to_string(h.nomem_events.load()) +
             " allocation(s) were refused because the arena was full.\n";
    }
    // (rss includes the arena pre-faulted at start: groups in use are the
    // figure that fragmentation inflates)
    uint64_t groups = a.used_bytes();
    if (groups > (64u << 20) && groups > used / 2 * 3) {
      out += "* The arena's groups in use hold " + std::to_string(groups * 100 / (used ? used : 1)) +
             "% of the data's bytes: free cells sit in pages that still hold live ones. Free pages "
             "and groups go back by themselves; MEMORY PURGE gives back what a crash left counted.\n";
    }
    if (a.tier() != mem::Tier::kHugetlb) {
      out += std::string("* The arena is on ") + mem::TierName(a.tier()) + " pages, not 2 MiB hugetlb ones (" +
             proc::ExplainTierNote(a.tier_note()) + ").\n";
    }
    if (out.empty()) {
      out = "No memory problem found: " + Human(used) + " used of a " + Human(cap) +
            " arena, fragmentation " + std::to_string(used ? rss * 100 / used : 100) + "%.";
    } else {
      out = "Memory report:\n" + out;
    }
    return c.r.Bulk(out);
  }
  if (EqNoCase(sub, "MALLOC-STATS") && c.argc() == 2) {
    return c.r.Bulk("Stats not supported for the current allocator (perfcached's shared-memory slab: "
                    "see MEMORY STATS and MI mem_shm_dump)");
  }
  if (EqNoCase(sub, "PURGE") && c.argc() == 2) {
    (void)mem::TidyPages(a);
    return c.r.Simple("OK");
  }
  bool known = EqNoCase(sub, "USAGE") || EqNoCase(sub, "STATS") || EqNoCase(sub, "DOCTOR") ||
               EqNoCase(sub, "MALLOC-STATS") || EqNoCase(sub, "PURGE") || EqNoCase(sub, "HELP");
  if (known) {
    std::string n(sub);
    for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return c.r.Error("ERR wrong number of arguments for 'memory|" + n + "' command");
  }
  c.r.Error("ERR unknown subcommand '" + std::string(sub) + "'. Try MEMORY HELP.");
}

constexpr const char* kMemorySubs[] = {"memory|usage", "memory|stats", "memory|doctor",
                                       "memory|malloc-stats", "memory|purge", "memory|help", nullptr};

constexpr CommandSpec kServerCommands[] = {
    {"ping", -1, kFast | kPubSub, &CmdPing, 0, 0, 0, "connection"},
    {"echo", 2, kFast, &CmdEcho, 0, 0, 0, "connection"},
    {"quit", -1, kFast | kNoAuth | kPubSub, &CmdQuit, 0, 0, 0, "connection"},
    {"auth", -2, kFast | kNoAuth, &CmdAuth, 0, 0, 0, "connection"},
    {"select", 2, kFast, &CmdSelect, 0, 0, 0, "connection"},
    {"hello", -1, kFast | kNoAuth, &CmdHello, 0, 0, 0, "connection"},
    {"command", -1, 0, &CmdCommand, 0, 0, 0, "server", kCommandSubs},
    {"info", -1, 0, &CmdInfo},
    {"client", -2, 0, &CmdClient, 0, 0, 0, "connection", kClientSubs},
    {"config", -2, 0, &CmdConfig, 0, 0, 0, "server", kConfigSubs},
    {"time", 1, kFast, &CmdTime},
    {"role", 1, kFast, &CmdRole},
    {"memory", -2, 0, &CmdMemory, 0, 0, 0, "server", kMemorySubs},
};

}  // namespace

void RegisterServerFamily(Env& e) { Register(e, kServerCommands); }

}  // namespace modules::resp
