// perfcached — configuration rows, INI loader and overrides.
// Copyright (c) 2026 the perfcached authors.
#include "proc/config.h"

#include <arpa/inet.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace proc {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ToInt(std::string_view v, int lo, int hi, int* out, std::string* err) {
  int x;
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || x < lo || x > hi) {
    *err = "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" +
           std::string(v) + "'";
    return false;
  }
  *out = x;
  return true;
}

bool ToBool(std::string_view v, bool* out, std::string* err) {
  if (v == "yes" || v == "true" || v == "on" || v == "1") {
    *out = true;
  } else if (v == "no" || v == "false" || v == "off" || v == "0") {
    *out = false;
  } else {
    *err = "expected yes/no, got '" + std::string(v) + "'";
    return false;
  }
  return true;
}

std::vector<std::string> SplitList(std::string_view v) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= v.size()) {
    size_t j = v.find_first_of(", ", i);
    if (j == std::string_view::npos) j = v.size();
    std::string_view item = Trim(v.substr(i, j - i));
    if (!item.empty()) out.emplace_back(item);
    i = j + 1;
  }
  return out;
}

std::string JoinList(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// DumpConfig writes "key = value" and joins lists with ", ": a value or list item that
// starts with '#' would read back as an inline comment.
bool NoHash(std::string* e) {
  *e = "a value or list item may not start with '#' (it reads back as a comment)";
  return false;
}

#define INT_ROW(sec, key, field, lo, hi, help)                                         \
  ParamSpec {                                                                          \
    sec, #key, ParamType::kInt, help,                                                  \
        [](Config& c, std::string_view v, std::string* e) {                            \
          return ToInt(v, lo, hi, &c.field, e);                                        \
        },                                                                             \
        [](const Config& c) { return std::to_string(c.field); },                       \
        [](Config& to, const Config& from) { to.field = from.field; }                  \
  }
#define BOOL_ROW(sec, key, field, help)                                                \
  ParamSpec {                                                                          \
    sec, #key, ParamType::kBool, help,                                                 \
        [](Config& c, std::string_view v, std::string* e) { return ToBool(v, &c.field, e); }, \
        [](const Config& c) { return std::string(c.field ? "yes" : "no"); },           \
        [](Config& to, const Config& from) { to.field = from.field; }                  \
  }
#define STR_ROW(sec, key, field, help)                                                 \
  ParamSpec {                                                                          \
    sec, #key, ParamType::kString, help,                                               \
        [](Config& c, std::string_view v, std::string* e) {                            \
          if (!v.empty() && v[0] == '#') return NoHash(e);                             \
          c.field = std::string(v);                                                    \
          return true;                                                                 \
        },                                                                             \
        [](const Config& c) { return c.field; },                                       \
        [](Config& to, const Config& from) { to.field = from.field; }                  \
  }
#define LIST_ROW(sec, key, field, type, help)                                          \
  ParamSpec {                                                                          \
    sec, #key, type, help,                                                             \
        [](Config& c, std::string_view v, std::string* e) {                            \
          auto l = SplitList(v);                                                       \
          for (const auto& x : l) {                                                    \
            if (x[0] == '#') return NoHash(e);                                         \
          }                                                                            \
          c.field.insert(c.field.end(), l.begin(), l.end());                           \
          return true;                                                                 \
        },                                                                             \
        [](const Config& c) { return JoinList(c.field); },                             \
        [](Config& to, const Config& from) { to.field = from.field; }                  \
  }

#define SIZE_ROW(sec, key, field, lo, help)                                             \
  ParamSpec {                                                                          \
    sec, #key, ParamType::kInt, help,                                                  \
        [](Config& c, std::string_view v, std::string* e) {                            \
          int64_t x;                                                                   \
          if (!ParseMemSize(v, &x) || x < (lo)) {                                      \
            *e = "expected a size of at least " + std::to_string(lo) +                 \
                 " bytes (e.g. 1048576, 512mb, 1gb), got '" + std::string(v) + "'";   \
            return false;                                                              \
          }                                                                            \
          c.field = x;                                                                 \
          return true;                                                                 \
        },                                                                             \
        [](const Config& c) { return std::to_string(c.field); },                       \
        [](Config& to, const Config& from) { to.field = from.field; }                  \
  }

}  // namespace

// A database url with its password masked (postgres://u:***@h/db,
// password=***): what -E, MI `config` and the log show.
std::string MaskDbUrl(const std::string& url) {
  std::string out = url;
  size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    size_t at = out.find('@', scheme + 3), colon = out.find(':', scheme + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      out = out.substr(0, colon + 1) + "***" + out.substr(at);
    }
  }
  size_t pw = out.find("password=");
  if (pw != std::string::npos) {
    size_t end = out.find('&', pw);
    out.replace(pw + 9, (end == std::string::npos ? out.size() : end) - pw - 9, "***");
  }
  return out;
}

namespace {

// A row a running daemon takes on SIGHUP (proc/reload.h); README.md
// "Reloading the configuration" lists these rows.
ParamSpec Reloads(ParamSpec p) {
  p.reload = true;
  return p;
}

const ParamSpec kParams[] = {
    INT_ROW("daemon", workers, workers, 0, 1024, "worker processes (0 = number of cores)"),
    INT_ROW("daemon", databases, databases, 1, 128,
            "collections \"0\"..\"N-1\" for SELECT when none are declared"),
    STR_ROW("daemon", pid_file, pid_file, "pid file written when daemonized; its directory (made if missing) also holds the TCP doors' lock files, with -D too"),
    Reloads(STR_ROW("daemon", log_level, log_level, "error | warning | notice | info | debug")),
    Reloads(BOOL_ROW("daemon", allow_create, allow_create, "allow creating/dropping collections at runtime")),
    Reloads(INT_ROW("daemon", growth_budget, growth_budget, 1, 1 << 20,
            "bucket splits per timer tick per collection")),
    Reloads(INT_ROW("daemon", sweep_ms, sweep_ms, 10, 60000, "expiry sweep period in ms")),
    INT_ROW("memory", arena_mb, arena_mb, 16, 1048576, "shared arena committed at start (MiB)"),
    INT_ROW("memory", arena_cap_mb, arena_cap_mb, 0, 1048576,
            "arena may grow to this (MiB, 0 = arena_mb)"),
    STR_ROW("memory", hugepages, hugepages, "auto | hugetlb | thp | collapse | off"),
    BOOL_ROW("memory", lock_memory, lock_memory, "mlock the arena (warns when refused)"),
    INT_ROW("memory", max_value_mb, max_value_mb, 1, 4095, "largest value accepted (MiB)"),
    Reloads(SIZE_ROW("memory", maxmemory, maxmemory, 0,
             "evict (or refuse writes) above this much used memory (Redis maxmemory; 0 = none)")),
    Reloads(STR_ROW("memory", maxmemory_policy, maxmemory_policy,
            "noeviction | allkeys-lru | allkeys-lfu | allkeys-random | volatile-lru | volatile-lfu | "
            "volatile-random | volatile-ttl")),
    Reloads(INT_ROW("memory", maxmemory_samples, maxmemory_samples, 1, 2147483647,
            "keys sampled per eviction (Redis maxmemory-samples; above 64 counts as 64)")),
    Reloads(INT_ROW("memory", maxmemory_eviction_tenacity, maxmemory_eviction_tenacity, 0, 100,
            "how long one write may evict before it runs anyway: 10 = 500 us, +15% a step, 100 = no bound "
            "(Redis maxmemory-eviction-tenacity)")),
    Reloads(ParamSpec{"memory", "maxmemory_clients", ParamType::kString,
              "close the largest RESP clients while all clients' buffers take more than this: a size, "
              "or N% of maxmemory; 0 = none (Redis maxmemory-clients)",
              [](Config& c, std::string_view v, std::string* e) {
                if (ParseClientsLimit(v, &c.maxmemory_clients)) return true;
                *e = "expected 0, a memory size (64mb) or a percentage of maxmemory (0% to 100%), got '" +
                     std::string(v) + "'";
                return false;
              },
              [](const Config& c) { return FormatClientsLimit(c.maxmemory_clients); },
              [](Config& to, const Config& from) { to.maxmemory_clients = from.maxmemory_clients; }}),
    Reloads(INT_ROW("memory", lfu_log_factor, lfu_log_factor, 0, 2147483647,
            "LFU counter growth: an access adds 1 with odds 1/((counter-5)*factor+1) (Redis lfu-log-factor)")),
    Reloads(INT_ROW("memory", lfu_decay_time, lfu_decay_time, 0, 2147483647,
            "LFU counter loses 1 per this many idle minutes, 0 = never (Redis lfu-decay-time)")),
    Reloads(BOOL_ROW("memory", automove, automove,
             "move live values out of sparse slab pages when memory is short (memcached slab_automove)")),
    Reloads(INT_ROW("memory", automove_buckets, automove_buckets, 64, 16777216,
            "buckets a running automove pass walks per timer tick (about 1 ms apart)")),
    STR_ROW("listen", resp, resp, "RESP (Redis) door host:port, empty = off"),
    Reloads(LIST_ROW("listen", resp_allow, resp_allow, ParamType::kList,
             "CIDRs allowed to connect; required when resp is not loopback")),
    LIST_ROW("listen", resp_collections, resp_collections, ParamType::kList,
             "SELECT mapping, e.g. 0:sessions, 1:counters"),
    STR_ROW("listen", http, http,
            "HTTP door host:port (/metrics /stats /health /reset-stats /mi); empty = off"),
    Reloads(LIST_ROW("listen", http_hosts, http_hosts, ParamType::kList,
             "host names accepted in the HTTP Host header (IPs and localhost always are)")),
    INT_ROW("listen", maxclients, maxclients, 1, 1000000, "connections per daemon"),
    Reloads(INT_ROW("listen", timeout, timeout, 0, 1 << 30, "close idle clients after N s (0 = never)")),
    Reloads(SIZE_ROW("listen", proto_max_bulk_len, proto_max_bulk_len, int64_t{1} << 20,
             "largest bulk a RESP client may send (Redis proto-max-bulk-len)")),
    Reloads(SIZE_ROW("listen", client_query_buffer_limit, client_query_buffer_limit, int64_t{1} << 20,
             "unparsed input + argument table per client (Redis client-query-buffer-limit)")),
    Reloads(ParamSpec{"listen", "client_output_buffer_limit", ParamType::kString,
              "CLASS HARD SOFT SECONDS for normal and pubsub (Redis client-output-buffer-limit; 0 = none)",
              [](Config& c, std::string_view v, std::string* e) { return ParseOutputLimits(v, &c, e); },
              [](const Config& c) { return FormatOutputLimits(c); },
              [](Config& to, const Config& from) {
                to.output_normal = from.output_normal;
                to.output_pubsub = from.output_pubsub;
              }}),
    STR_ROW("mi", fifo_name, mi_fifo, "MI FIFO path (OpenSIPS mi_fifo framing); empty = off"),
    STR_ROW("mi", fifo_mode, mi_fifo_mode,
            "MI FIFO permissions (octal, e.g. 0600; no setuid/setgid/sticky, not world-writable)"),
    STR_ROW("mi", fifo_user, mi_fifo_user, "MI FIFO owner (user name or uid); empty = unchanged"),
    STR_ROW("mi", fifo_group, mi_fifo_group, "MI FIFO group (name or gid); empty = the user's"),
    STR_ROW("mi", reply_dir, mi_reply_dir,
            "directory of the clients' reply FIFOs (OpenSIPS's default is /tmp/; ours is beside the FIFO)"),
    STR_ROW("mi", datagram, mi_datagram, "MI UNIX datagram socket path; empty = off"),
    STR_ROW("mi", xmlrpc, mi_xmlrpc,
            "MI XML-RPC door host:port (OpenSIPS mi_xmlrpc_ng; a bare port is 127.0.0.1); empty = off; "
            "off loopback it needs [secrets] http"),
    STR_ROW("mi", xmlrpc_root, mi_xmlrpc_root, "URL path of the XML-RPC door: POST /<xmlrpc_root>"),
    ParamSpec{"db", "url", ParamType::kString,
              "SQL database for perf_save / perf_load: sqlite:///var/lib/perfcached/cache.db or "
              "postgres://user@host/db (a password in it is masked in -E and MI); empty = off",
              [](Config& c, std::string_view v, std::string*) {
                c.db_url.assign(v);
                return true;
              },
              [](const Config& c) { return MaskDbUrl(c.db_url); },
              [](Config& to, const Config& from) { to.db_url = from.db_url; }},
    STR_ROW("db", table, db_table, "table holding the persisted rows (created when missing)"),
    INT_ROW("db", mode, db_mode, 0, 2,
            "0 = MI only (perf_save / perf_load), 1 = load at start, 2 = load at start + save at a graceful stop"),
    LIST_ROW("db", persist_collections, persist_collections, ParamType::kList,
             "collections db mode 1 / 2 loads and saves, and perf_save / perf_load without an argument "
             "(empty = every collection)"),
    STR_ROW("wal", dir, wal_dir,
            "directory of snapshots and WAL segments, made when missing; empty = memory only"),
    STR_ROW("wal", fsync, wal_fsync,
            "always (a write's reply waits until its record is on disk: group commit) | everysec | no | "
            "off (snapshots only, no WAL)"),
    STR_ROW("wal", commit, wal_commit,
            "fsync = always: who writes and fsyncs a batch of records: worker (the worker whose replies wait, "
            "as leader of a group commit across workers) | wal (the WAL process; a hung disk then stalls no "
            "worker)"),
    INT_ROW("wal", ring_mb, wal_ring_mb, 1, 1024,
            "each writing process's WAL ring in shared memory, MiB (rounded up to a power of two); a "
            "record larger than a quarter of it is logged in parts (a large hash or set logs only the fields written)"),
    INT_ROW("wal", segment_mb, wal_segment_mb, 1, 65536, "WAL segment file size before a new one starts, MiB"),
    ParamSpec{"wal", "save", ParamType::kList,
              "snapshot rule SECONDS CHANGES (Redis save; repeat the line, any rule met starts one; "
              "save = \"\" none; default 3600 1, 300 100, 60 10000)",
              [](Config& c, std::string_view v, std::string* e) {
                c.wal_save_set = true;
                if (Trim(v) == "\"\"" || Trim(v).empty()) {  // Redis's save "": no rules, earlier lines too
                  c.wal_save.clear();
                  return true;
                }
                // Pairs of numbers: one rule a line, or several on one
                // line as Redis writes them ("3600 1 300 100"; -E joins with ", ").
                auto tok = SplitList(v);
                for (size_t i = 0; i < tok.size(); i += 2) {
                  int64_t secs = 0, changes = 0;
                  char extra;
                  std::string t = tok[i] + (i + 1 < tok.size() ? " " + tok[i + 1] : std::string());
                  if (i + 1 >= tok.size() || std::sscanf(t.c_str(), "%ld %ld %c", &secs, &changes, &extra) != 2 ||
                      secs < 1 || changes < 1) {
                    *e = "expected SECONDS CHANGES (two positive integers, e.g. 300 100), got '" + std::string(Trim(v)) + "'";
                    return false;
                  }
                  c.wal_save.push_back(std::to_string(secs) + " " + std::to_string(changes));
                }
                return true;
              },
              [](const Config& c) { return c.wal_save_set && c.wal_save.empty() ? std::string("\"\"") : JoinList(c.wal_save); },
              [](Config& to, const Config& from) {
                to.wal_save = from.wal_save;
                to.wal_save_set = from.wal_save_set;
              }},
    INT_ROW("wal", snapshots_kept, wal_snapshots_kept, 1, 1000,
            "snapshots kept in dir (the newest; an older one is the fallback when the newest is damaged)"),
    Reloads(LIST_ROW("secrets", resp, resp_secrets, ParamType::kSecret,
             "AUTH password(s); several lines rotate (any matches)")),
    Reloads(LIST_ROW("secrets", http, http_tokens, ParamType::kSecret,
             "HTTP and XML-RPC doors' bearer token(s): when set, every request needs one (loopback too); "
             "required when [listen] http or [mi] xmlrpc is not loopback")),
};

#undef INT_ROW
#undef BOOL_ROW
#undef STR_ROW
#undef LIST_ROW
#undef SIZE_ROW

bool SetCollectionKey(CollectionConfig& cc, std::string_view key, std::string_view v,
                      std::string* err) {
  int x;
  if (key == "buckets") {
    if (!ToInt(v, 16, 1 << 30, &x, err)) return false;
    cc.buckets = static_cast<uint32_t>(x);
  } else if (key == "buckets_log2") {
    if (!ToInt(v, 4, 30, &x, err)) return false;
    cc.buckets = 1u << x;
  } else if (key == "load_factor") {
    if (!ToInt(v, 1, 64, &x, err)) return false;
    cc.load_factor = static_cast<uint32_t>(x);
  } else if (key == "expired_events") {
    return ToBool(v, &cc.expired_events, err);
  } else {
    *err = "unknown key '" + std::string(key) +
           "' in [collection] (expected buckets, buckets_log2, load_factor, expired_events)";
    return false;
  }
  return true;
}

CollectionConfig* DeclareCollection(Config* c, std::string_view section, int line) {
  std::string name(Trim(section.substr(11)));
  for (auto& x : c->collections) {
    if (x.name == name) return &x;
  }
  c->collections.push_back(CollectionConfig{name, 1024, 4, false, line});
  return &c->collections.back();
}

bool SetKey(Config* c, std::string_view section, std::string_view key, std::string_view value,
            int line, std::string* err) {
  if (section.substr(0, 11) == "collection ") {
    return SetCollectionKey(*DeclareCollection(c, section, line), key, value, err);
  }
  std::string known;
  bool section_known = false;
  for (const ParamSpec& p : kParams) {
    if (section != p.section) continue;
    section_known = true;
    if (key == p.name) return p.set(*c, value, err);
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  if (!section_known) {
    *err = "unknown section [" + std::string(section) +
           "] (expected daemon, memory, listen, mi, db, wal, secrets, collection NAME)";
  } else {
    *err = "unknown key '" + std::string(key) + "' in [" + std::string(section) +
           "] (expected one of: " + known + ")";
  }
  return false;
}

// A list key adds up over its lines; any other key is set once.
bool IsListKey(std::string_view section, std::string_view key) {
  for (const ParamSpec& p : kParams) {
    if (section == p.section && key == p.name) {
      return p.type == ParamType::kList || p.type == ParamType::kSecret;
    }
  }
  return false;
}

// The origin key of "section.key": buckets and buckets_log2 are one setting.
std::string OriginKey(std::string_view section, std::string_view key) {
  if (section.substr(0, 11) == "collection " && key == "buckets_log2") key = "buckets";
  return std::string(section) + "." + std::string(key);
}

// A setting -o gives twice is refused, both values named: which one the
// operator meant is not ours to guess (a file that sets a key twice is
// refused too; a -o over the file's value is what -o is for). Lists add
// up and never come here. `okey` is OriginKey's (buckets_log2 is buckets).
bool OverrideOnce(const std::string& okey, std::string_view kv, Config* c, std::string* err) {
  auto [it, first] = c->overrides_given.emplace(okey, std::string(kv));
  if (first) return true;
  *err = "-o " + std::string(kv) + ": given twice (first -o " + it->second + "): give it once";
  return false;
}

}  // namespace

std::span<const ParamSpec> Params() { return kParams; }

bool LoadConfigFile(const std::string& path, Config* c, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  c->source = path;
  std::string raw, section;
  std::set<std::string> seen;  // the keys this file set (a repeated one is refused)
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    std::string_view s = Trim(raw);
    if (s.empty() || s[0] == '#' || s[0] == ';') continue;
    // Inline comments: " # ..." (a '#' inside a value needs no space before it).
    size_t hc = s.find(" #");
    if (hc != std::string_view::npos) s = Trim(s.substr(0, hc));
    if (s[0] == '[') {
      if (s.back() != ']') {
        *err = path + ":" + std::to_string(line) + ": expected ']' to close the section header";
        return false;
      }
      section = std::string(Trim(s.substr(1, s.size() - 2)));
      if (section == "collection" ||
          (section.rfind("collection ", 0) == 0 && Trim(std::string_view(section).substr(11)).empty())) {
        *err = path + ":" + std::to_string(line) + ": [collection NAME] needs a name";
        return false;
      }
      if (section.rfind("collection ", 0) == 0) {
        DeclareCollection(c, section, line);
      } else if (section != "daemon" && section != "memory" && section != "listen" &&
                 section != "mi" && section != "db" && section != "wal" && section != "secrets") {
        *err = path + ":" + std::to_string(line) + ": unknown section [" + section +
               "] (expected daemon, memory, listen, mi, db, wal, secrets, collection NAME)";
        return false;
      }
      continue;
    }
    size_t eq = s.find('=');
    if (eq == std::string_view::npos) {
      *err = path + ":" + std::to_string(line) + ": expected 'key = value' or '[section]'";
      return false;
    }
    if (section.empty()) {
      *err = path + ":" + std::to_string(line) + ": key outside of any [section]";
      return false;
    }
    std::string e;
    std::string_view key = Trim(s.substr(0, eq));
    std::string here = path + ":" + std::to_string(line);
    std::string okey = OriginKey(section, key);
    if (!IsListKey(section, key) && !seen.insert(okey).second) {
      *err = here + ": '" + std::string(key) + "' is set twice in [" + section + "] (first at " +
             c->origin[okey] + "): remove one";
      return false;
    }
    if (!SetKey(c, section, key, Trim(s.substr(eq + 1)), line, &e)) {
      *err = here + ": " + e;
      return false;
    }
    c->origin[okey] = here;
    if (IsListKey(section, key)) {  // each item remembers its own line
      for (const std::string& item : SplitList(Trim(s.substr(eq + 1)))) c->origin[okey + "=" + item] = here;
    }
  }
  if (in.bad()) {
    *err = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool ApplyOverride(std::string_view kv, Config* c, std::string* err) {
  size_t eq = kv.find('=');
  size_t dot = kv.find('.');
  if (eq == std::string_view::npos || dot == std::string_view::npos || dot > eq) {
    *err = "-o " + std::string(kv) + ": expected section.key=value";
    return false;
  }
  std::string section(kv.substr(0, dot));
  std::string_view key = kv.substr(dot + 1, eq - dot - 1);
  std::string where = "-o " + std::string(kv.substr(0, eq));
  if (section == "collection") {
    size_t d2 = key.rfind('.');
    if (d2 == std::string_view::npos) {
      *err = "-o " + std::string(kv) + ": expected collection.NAME.key=value";
      return false;
    }
    std::string name(key.substr(0, d2));
    std::string_view ckey = key.substr(d2 + 1);
    CollectionConfig scratch;  // the key and value are checked now, the NAME by FinishConfig
    std::string e;
    if (!SetCollectionKey(scratch, ckey, kv.substr(eq + 1), &e)) {
      *err = "-o " + std::string(kv) + ": " + e;
      return false;
    }
    std::string okey = OriginKey("collection " + name, ckey);
    if (!OverrideOnce(okey, kv, c, err)) return false;
    c->collection_overrides.push_back({name, std::string(ckey), std::string(kv.substr(eq + 1)), where});
    c->origin[okey] = where;
    return true;
  }
  std::string e;
  if (!SetKey(c, section, key, kv.substr(eq + 1), 0, &e)) {
    // Never echo a secret's value.
    *err = "-o " + (section == "secrets" ? std::string(kv.substr(0, eq + 1)) + "********" : std::string(kv)) +
           ": " + e;
    return false;
  }
  std::string okey = OriginKey(section, key);
  if (!IsListKey(section, key) && !OverrideOnce(okey, kv, c, err)) return false;
  c->origin[okey] = where;
  if (IsListKey(section, key)) {
    for (const std::string& item : SplitList(kv.substr(eq + 1))) c->origin[okey + "=" + item] = where;
  }
  return true;
}

bool ParseMemSize(std::string_view s, int64_t* out) {
  static const struct {
    const char* suffix;
    int64_t mul;
  } kUnits[] = {{"gb", int64_t{1} << 30}, {"mb", int64_t{1} << 20}, {"kb", 1024}, {"g", 1000000000},
                {"m", 1000000}, {"k", 1000}, {"b", 1}};
  std::string low;
  for (char ch : s) low += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
  int64_t mul = 1;
  std::string_view num = low;
  for (const auto& u : kUnits) {
    size_t n = std::strlen(u.suffix);
    if (num.size() > n && num.substr(num.size() - n) == u.suffix) {
      mul = u.mul;
      num.remove_suffix(n);
      break;
    }
  }
  int64_t x;
  auto r = std::from_chars(num.data(), num.data() + num.size(), x);
  if (num.empty() || r.ec != std::errc() || r.ptr != num.data() + num.size() || x < 0 ||
      x > INT64_MAX / mul) {
    return false;
  }
  *out = x * mul;
  return true;
}

bool ParsePercent(std::string_view s, int64_t* pct) {
  if (s.size() < 2 || s.back() != '%') return false;
  std::string_view num = s.substr(0, s.size() - 1);
  if (num[0] < '0' || num[0] > '9' || (num.size() > 1 && num[0] == '0')) return false;  // as Redis's string2ll
  auto r = std::from_chars(num.data(), num.data() + num.size(), *pct);
  return r.ec == std::errc() && r.ptr == num.data() + num.size();
}

bool ParseClientsLimit(std::string_view s, int64_t* out) {
  int64_t pct;
  if (ParsePercent(s, &pct)) {
    if (pct > 100) return false;
    *out = -pct;
    return true;
  }
  if (!s.empty() && s.back() == '%') return false;
  return ParseMemSize(s, out);
}

std::string FormatClientsLimit(int64_t v) {
  return v < 0 ? std::to_string(-v) + "%" : std::to_string(v);
}

bool ParseOutputLimits(std::string_view s, Config* c, std::string* err) {
  std::vector<std::string> w;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) w.emplace_back(s.substr(i, j - i));
    i = j;
  }
  if (w.empty() || w.size() % 4 != 0) {
    *err = "expected CLASS HARD SOFT SECONDS (repeated), e.g. 'normal 128mb 0 0 pubsub 32mb 8mb 60'";
    return false;
  }
  Config tmp = *c;
  for (size_t k = 0; k < w.size(); k += 4) {
    Config::OutputLimit l;
    int64_t secs;
    if (!ParseMemSize(w[k + 1], &l.hard) || !ParseMemSize(w[k + 2], &l.soft) ||
        !ParseMemSize(w[k + 3], &secs) || secs > (1 << 30)) {
      *err = "bad limits for class '" + w[k] + "': expected HARD SOFT SECONDS, e.g. 32mb 8mb 60";
      return false;
    }
    l.soft_s = secs;
    if (w[k] == "normal") {
      tmp.output_normal = l;
    } else if (w[k] == "pubsub") {
      tmp.output_pubsub = l;
    } else if (w[k] != "replica" && w[k] != "slave") {
      *err = "unknown class '" + w[k] + "' (expected normal or pubsub)";
      return false;
    }
  }
  c->output_normal = tmp.output_normal;
  c->output_pubsub = tmp.output_pubsub;
  return true;
}

std::string FormatOutputLimits(const Config& c) {
  auto one = [](const char* n, const Config::OutputLimit& l) {
    return std::string(n) + " " + std::to_string(l.hard) + " " + std::to_string(l.soft) + " " +
           std::to_string(l.soft_s);
  };
  return one("normal", c.output_normal) + " " + one("pubsub", c.output_pubsub);
}

bool ParseHostPort(std::string_view s, std::string* host, int* port) {
  std::string_view h = "127.0.0.1", p = s;
  if (!s.empty() && s[0] == '[') {
    size_t rb = s.find(']');
    if (rb == std::string_view::npos || rb + 1 >= s.size() || s[rb + 1] != ':') return false;
    h = s.substr(1, rb - 1);
    p = s.substr(rb + 2);
  } else if (size_t colon = s.rfind(':'); colon != std::string_view::npos) {
    h = s.substr(0, colon);
    p = s.substr(colon + 1);
  }
  int x;
  auto r = std::from_chars(p.data(), p.data() + p.size(), x);
  if (r.ec != std::errc() || r.ptr != p.data() + p.size() || x < 0 || x > 65535 || h.empty()) {
    return false;
  }
  *host = std::string(h);
  *port = x;
  return true;
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

namespace {

// "FILE:LINE: " (or "-o section.key: ", or the source) for errors found after loading.
std::string Where(const Config& c, const std::string& key) {
  auto it = c.origin.find(key);
  return (it != c.origin.end() ? it->second : c.source) + ": ";
}

// Where one item of a list key was given (its own line), else the key's.
std::string WhereItem(const Config& c, const std::string& key, const std::string& item) {
  auto it = c.origin.find(key + "=" + item);
  return it != c.origin.end() ? it->second + ": " : Where(c, key);
}

bool ValidCidr(const std::string& s) {
  std::string addr = s;
  int bits = -1;
  if (size_t slash = s.find('/'); slash != std::string::npos) {
    addr = s.substr(0, slash);
    std::string_view b = std::string_view(s).substr(slash + 1);
    auto r = std::from_chars(b.data(), b.data() + b.size(), bits);
    if (b.empty() || r.ec != std::errc() || r.ptr != b.data() + b.size() || bits < 0) return false;
  }
  unsigned char buf[16];
  if (inet_pton(AF_INET, addr.c_str(), buf) == 1) return bits <= 32;
  if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) return bits <= 128;
  return false;
}

// A user or group: a name ([A-Za-z0-9._-], starting with a letter or '_',
// at most 32) or a number that fits an id (below 4294967295).
bool ValidOwner(const std::string& s) {
  if (s.empty()) return true;
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    unsigned long long v;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && v < 4294967295ull;
  }
  if (s.size() > 32 || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') return false;
  }
  return true;
}

struct TcpDoor {
  const std::string* addr;
  const char* key;        // origin key ("listen.http")
  const char* label;      // "[listen] http"
  const char* short_key;  // "http"
  const char* name;       // "HTTP door"
};

// One port on one host, or on a wildcard address (port 0 is any free port:
// never a clash).
bool SameTcpAddress(const std::string& a, const std::string& b) {
  std::string h1, h2;
  int p1, p2;
  if (a.empty() || b.empty() || !ParseHostPort(a, &h1, &p1) || !ParseHostPort(b, &h2, &p2)) return false;
  return p1 == p2 && p1 != 0 && (h1 == h2 || h1 == "0.0.0.0" || h2 == "0.0.0.0" || h1 == "::" || h2 == "::");
}

}  // namespace

bool ParseFifoMode(std::string_view s, unsigned* mode, std::string* err) {
  unsigned m = 0;
  bool ok = (s.size() == 3 || s.size() == 4) && s.find_first_not_of("01234567") == std::string_view::npos;
  if (ok) {
    for (char ch : s) m = m * 8 + static_cast<unsigned>(ch - '0');
  }
  if (!ok) {
    *err = "[mi] fifo_mode: expected an octal mode like 0600 or 0660, got '" + std::string(s) + "'";
    return false;
  }
  if (m & 07000) {
    *err = "[mi] fifo_mode " + std::string(s) + ": setuid, setgid and sticky bits are refused";
    return false;
  }
  if (m & 0002) {
    *err = "[mi] fifo_mode " + std::string(s) + ": a world-writable FIFO lets any local user run MI commands";
    return false;
  }
  *mode = m;
  return true;
}

bool FinishConfig(Config* c, std::string* err) {
  if (c->collections.empty()) {
    for (int i = 0; i < c->databases; ++i) {
      c->collections.push_back(CollectionConfig{std::to_string(i), 1024, 4, false, 0});
    }
  }
  // -o collection.NAME.key: only for a collection that exists (declared in
  // the file, or a default database): a misspelt NAME is refused, never
  // made into a new, empty collection.
  for (const Config::CollectionOverride& ov : c->collection_overrides) {
    CollectionConfig* cc = nullptr;
    for (auto& x : c->collections) {
      if (x.name == ov.name) cc = &x;
    }
    if (!cc) {
      std::string names;
      size_t shown = 0;
      for (const auto& x : c->collections) {
        if (shown++ == 20) {
          names += ", ...";
          break;
        }
        names += (names.empty() ? "" : ", ") + x.name;
      }
      *err = ov.where + ": no collection '" + ov.name + "' (collections: " + names +
             "); a new collection is declared in the config file: [collection " + ov.name + "]";
      return false;
    }
    std::string e;
    if (!SetCollectionKey(*cc, ov.key, ov.value, &e)) {  // checked by ApplyOverride already
      *err = ov.where + ": " + e;
      return false;
    }
  }
  c->collection_overrides.clear();
  for (const auto& cc : c->collections) {
    // A name that starts with '#' or holds " #" would read back from the
    // dumped file (perfcached -C, MI) as a comment (found by config_fuzz).
    if (cc.name[0] == '#' || cc.name.find(" #") != std::string::npos) {
      *err = (cc.line ? c->source + ":" + std::to_string(cc.line) + ": " : std::string()) +
             "[collection " + cc.name + "]: a collection name may not start with '#' or hold ' #'";
      return false;
    }
  }
  if (c->arena_cap_mb != 0 && c->arena_cap_mb < c->arena_mb) {
    *err = Where(*c, "memory.arena_cap_mb") + "[memory] arena_cap_mb (" + std::to_string(c->arena_cap_mb) +
           ") is below arena_mb (" + std::to_string(c->arena_mb) + ")";
    return false;
  }
  static const char* kTiers[] = {"auto", "hugetlb", "thp", "collapse", "off"};
  bool tier_ok = false;
  for (const char* t : kTiers) tier_ok |= c->hugepages == t;
  if (!tier_ok) {
    *err = Where(*c, "memory.hugepages") +
           "[memory] hugepages: expected auto, hugetlb, thp, collapse or off, got '" + c->hugepages + "'";
    return false;
  }
  // Redis's eight names (cache/evict.h; config_fuzz links this file alone).
  static const char* kPolicies[] = {"noeviction",   "allkeys-lru",  "allkeys-lfu",     "allkeys-random",
                                    "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"};
  bool policy_ok = false;
  for (const char* p : kPolicies) policy_ok |= c->maxmemory_policy == p;
  if (!policy_ok) {
    *err = Where(*c, "memory.maxmemory_policy") +
           "[memory] maxmemory_policy: expected noeviction, allkeys-lru, allkeys-lfu, allkeys-random, "
           "volatile-lru, volatile-lfu, volatile-random or volatile-ttl, got '" + c->maxmemory_policy + "'";
    return false;
  }
  static const char* kLevels[] = {"error", "warning", "notice", "info", "debug"};
  bool lvl_ok = false;
  for (const char* l : kLevels) lvl_ok |= c->log_level == l;
  if (!lvl_ok) {
    *err = Where(*c, "daemon.log_level") +
           "[daemon] log_level: expected error, warning, notice, info or debug, got '" + c->log_level + "'";
    return false;
  }
  if (!c->resp.empty()) {
    std::string host;
    int port;
    if (!ParseHostPort(c->resp, &host, &port)) {
      *err = Where(*c, "listen.resp") + "[listen] resp: expected host:port, got '" + c->resp + "'";
      return false;
    }
    if (!IsLoopbackHost(host) && c->resp_allow.empty()) {
      *err = Where(*c, "listen.resp") + "[listen] resp = " + c->resp +
             " is not loopback: set resp_allow (CIDRs allowed to connect) to open it";
      return false;
    }
  }
  for (const auto& a : c->resp_allow) {
    if (!ValidCidr(a)) {
      *err = WhereItem(*c, "listen.resp_allow", a) + "[listen] resp_allow: expected an address or CIDR "
             "(10.0.0.0/8, 2001:db8::/32), got '" + a + "'";
      return false;
    }
  }
  const TcpDoor tcp[] = {{&c->resp, "listen.resp", "[listen] resp", "resp", "RESP door"},
                         {&c->http, "listen.http", "[listen] http", "http", "HTTP door"},
                         {&c->mi_xmlrpc, "mi.xmlrpc", "[mi] xmlrpc", "xmlrpc", "XML-RPC door"}};
  // The doors a bearer token guards ([secrets] http): host:port, and a
  // token when they are not on loopback.
  for (const TcpDoor& d : {tcp[1], tcp[2]}) {
    if (d.addr->empty()) continue;
    std::string host;
    int port;
    if (!ParseHostPort(*d.addr, &host, &port)) {
      *err = Where(*c, d.key) + d.label + ": expected host:port, got '" + *d.addr + "'";
      return false;
    }
    if (!IsLoopbackHost(host) && c->http_tokens.empty()) {
      *err = Where(*c, d.key) + d.label + " = " + *d.addr +
             " is not loopback: set [secrets] http (a bearer token) to open it";
      return false;
    }
  }
  // Two TCP doors on one address: the later one is named.
  for (size_t j = 1; j < std::size(tcp); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (!SameTcpAddress(*tcp[i].addr, *tcp[j].addr)) continue;
      *err = Where(*c, tcp[j].key) + tcp[j].label + " = " + *tcp[j].addr + " is the " + tcp[i].name +
             "'s address (" + tcp[i].short_key + " = " + *tcp[i].addr + "): give the " + tcp[j].name +
             " its own port";
      return false;
    }
  }
  // [db]: the url's scheme (db/backend.h parses the rest when it opens),
  // a table name that can be spliced into SQL, a mode that has a url, and
  // collections that exist.
  if (!c->db_url.empty()) {
    bool sqlite = c->db_url.rfind("sqlite://", 0) == 0;
    bool pg = c->db_url.rfind("postgres://", 0) == 0 || c->db_url.rfind("postgresql://", 0) == 0;
    if ((!sqlite && !pg) || (sqlite && c->db_url.size() == 9)) {
      *err = Where(*c, "db.url") + "[db] url: expected sqlite:///path/file.db or postgres://user@host/db, got '" +
             MaskDbUrl(c->db_url) + "'";
      return false;
    }
  }
  {
    const std::string& t = c->db_table;
    bool ok = !t.empty() && t.size() <= 63 && !(t[0] >= '0' && t[0] <= '9') &&
              t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                  std::string::npos;
    if (!ok) {
      *err = Where(*c, "db.table") + "[db] table: expected an SQL name (letters, digits, _; 1..63, not "
             "starting with a digit), got '" + t + "'";
      return false;
    }
  }
  if (!c->wal_save_set) c->wal_save = {"3600 1", "300 100", "60 10000"};  // Redis's defaults
  if (c->wal_commit != "worker" && c->wal_commit != "wal") {
    *err = Where(*c, "wal.commit") + "[wal] commit: expected worker or wal, got '" + c->wal_commit + "'";
    return false;
  }
  if (c->wal_fsync != "always" && c->wal_fsync != "everysec" && c->wal_fsync != "no" && c->wal_fsync != "off") {
    *err = Where(*c, "wal.fsync") + "[wal] fsync: expected always, everysec, no or off, got '" + c->wal_fsync + "'";
    return false;
  }
  if (c->db_mode != 0 && !c->wal_dir.empty()) {
    // Two start-up sources: after a crash the SQL rows (from the last
    // graceful stop) would overwrite the newer snapshot.
    *err = Where(*c, "db.mode") + "[db] mode = " + std::to_string(c->db_mode) +
           " and [wal] dir both load at start: keep one (snapshots in [wal] dir are newer after a crash; "
           "perf_save / perf_load still work with mode 0)";
    return false;
  }
  if (c->db_mode != 0 && c->db_url.empty()) {
    *err = Where(*c, "db.mode") + "[db] mode = " + std::to_string(c->db_mode) +
           " needs [db] url (the database to load from" + (c->db_mode == 2 ? " and save to)" : ")");
    return false;
  }
  for (const auto& name : c->persist_collections) {
    bool found = false;
    for (const auto& cc : c->collections) found |= cc.name == name;
    if (!found) {
      *err = WhereItem(*c, "db.persist_collections", name) + "[db] persist_collections: no collection '" + name +
             "'";
      return false;
    }
  }
  if (c->mi_xmlrpc_root.empty() || c->mi_xmlrpc_root.size() > 64 ||
      c->mi_xmlrpc_root.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-") !=
          std::string::npos) {
    *err = Where(*c, "mi.xmlrpc_root") + "[mi] xmlrpc_root: expected 1..64 of A-Z a-z 0-9 . _ ~ - (the path "
           "after '/'), got '" + c->mi_xmlrpc_root + "'";
    return false;
  }
  for (const auto& m : c->resp_collections) {
    size_t colon = m.find(':');
    int db;
    std::string e;
    if (colon == std::string::npos || !ToInt(std::string_view(m).substr(0, colon), 0, 1023, &db, &e)) {
      *err = WhereItem(*c, "listen.resp_collections", m) + "[listen] resp_collections: expected DB:collection, got '" +
             m + "'";
      return false;
    }
    std::string name = m.substr(colon + 1);
    bool found = false;
    for (const auto& cc : c->collections) found |= cc.name == name;
    if (!found) {
      *err = WhereItem(*c, "listen.resp_collections", m) + "[listen] resp_collections: '" + m +
             "' names no declared collection";
      return false;
    }
  }
  for (const auto& cc : c->collections) {
    if (cc.name.empty() || cc.name.size() > 63) {
      std::string where = c->source + ": ";
      if (cc.line) where = c->source + ":" + std::to_string(cc.line) + ": ";
      for (const auto& [k, v] : c->origin) {
        if (!cc.line && k.rfind("collection " + cc.name + ".", 0) == 0) where = v + ": ";
      }
      *err = where +
             "[collection " + cc.name + "]: the name must be 1..63 characters";
      return false;
    }
  }
  unsigned mode;
  std::string e;
  if (!ParseFifoMode(c->mi_fifo_mode, &mode, &e)) {
    *err = Where(*c, "mi.fifo_mode") + e;
    return false;
  }
  if (!ValidOwner(c->mi_fifo_user) || !ValidOwner(c->mi_fifo_group)) {
    bool user = !ValidOwner(c->mi_fifo_user);
    *err = Where(*c, user ? "mi.fifo_user" : "mi.fifo_group") + "[mi] " + (user ? "fifo_user" : "fifo_group") +
           ": expected a name or a number below 4294967295, got '" +
           (user ? c->mi_fifo_user : c->mi_fifo_group) + "'";
    return false;
  }
  // reply_dir is a directory: "/tmp" means "/tmp/" (it used to be prefixed
  // verbatim, so replies went to "/tmpNAME").
  if (!c->mi_reply_dir.empty() && c->mi_reply_dir.back() != '/') c->mi_reply_dir += '/';
  return true;
}

std::string DumpConfig(const Config& c) {
  std::ostringstream o;
  o << "# effective configuration (from " << c.source << ")\n";
  const char* cur = "";
  for (const ParamSpec& p : kParams) {
    if (std::string_view(cur) != p.section) {
      o << (cur[0] ? "\n" : "") << "[" << p.section << "]\n";
      cur = p.section;
    }
    std::string v = p.get(c);
    if (p.type == ParamType::kSecret && !v.empty()) v = "********";
    o << p.name << " = " << v << "\n";
  }
  for (const auto& cc : c.collections) {
    o << "\n[collection " << cc.name << "]\nbuckets = " << cc.buckets
      << "\nload_factor = " << cc.load_factor
      << "\nexpired_events = " << (cc.expired_events ? "yes" : "no") << "\n";
  }
  return o.str();
}

bool BuildConfig(const ConfigSource& src, Config* c, std::string* err) {
  if (!src.file.empty() && !LoadConfigFile(src.file, c, err)) return false;
  for (const std::string& o : src.overrides) {
    if (!ApplyOverride(o, c, err)) return false;
  }
  return FinishConfig(c, err);
}

namespace {

std::string InWords(const ParamSpec& p, const std::string& v) {
  if (p.type == ParamType::kSecret) return std::to_string(SplitList(v).size()) + " set";
  return v.empty() ? "(empty)" : v;
}

std::string CollectionWords(const CollectionConfig& cc) {
  return "buckets " + std::to_string(cc.buckets) + ", load_factor " + std::to_string(cc.load_factor) +
         ", expired_events " + (cc.expired_events ? "yes" : "no");
}

const CollectionConfig* FindCollection(const Config& c, const std::string& name) {
  for (const auto& cc : c.collections) {
    if (cc.name == name) return &cc;
  }
  return nullptr;
}

}  // namespace

std::vector<ConfigChange> DiffConfig(const Config& running, const Config& next) {
  std::vector<ConfigChange> out;
  for (const ParamSpec& p : kParams) {
    std::string a = p.get(running), b = p.get(next);
    if (a == b) continue;
    std::string from = InWords(p, a), to = InWords(p, b);
    if (from == to) to += " (other values)";  // a secret swapped for another
    out.push_back({std::string(p.section) + "." + p.name, from, to, p.reload});
  }
  // Collections are made once, in the arena: never reloaded.
  for (const auto& cc : running.collections) {
    const CollectionConfig* n = FindCollection(next, cc.name);
    if (!n) {
      out.push_back({"collection " + cc.name, CollectionWords(cc), "(removed)", false});
    } else if (CollectionWords(cc) != CollectionWords(*n)) {
      out.push_back({"collection " + cc.name, CollectionWords(cc), CollectionWords(*n), false});
    }
  }
  for (const auto& cc : next.collections) {
    if (!FindCollection(running, cc.name)) {
      out.push_back({"collection " + cc.name, "(none)", CollectionWords(cc), false});
    }
  }
  return out;
}

void CopyReloadable(const Config& from, Config* to) {
  for (const ParamSpec& p : kParams) {
    if (p.reload) p.copy(*to, from);
  }
}

std::vector<std::pair<std::string, std::string>> ReloadableValues(const Config& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ParamSpec& p : kParams) {
    if (p.reload) out.emplace_back(std::string(p.section) + "." + p.name, p.get(c));
  }
  return out;
}

bool SetReloadable(Config* c, std::string_view key, std::string_view value, std::string* err) {
  for (const ParamSpec& p : kParams) {
    if (!p.reload || key != std::string(p.section) + "." + p.name) continue;
    return p.set(*c, value, err);
  }
  *err = "'" + std::string(key) + "' is not a reloadable setting";
  return false;
}

std::string ConfigHelp() {
  std::ostringstream o;
  Config def;
  const char* cur = "";
  for (const ParamSpec& p : kParams) {
    if (std::string_view(cur) != p.section) {
      o << "  [" << p.section << "]\n";
      cur = p.section;
    }
    std::string v = p.get(def);
    o << "    " << p.name << " = " << (v.empty() ? "(empty)" : v) << "\n        " << p.help
      << (p.reload ? " (reloads on SIGHUP)" : "") << "\n";
  }
  o << "  [collection NAME]\n    buckets = 1024 | buckets_log2 = 10\n        initial size\n"
       "    load_factor = 4\n        grow above this many entries per bucket\n"
       "    expired_events = no\n        raise an event for every expired key\n";
  return o.str();
}

}  // namespace proc
