// perfcached — the daemon's configuration: option tables, INI loader, overrides.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Options are rows (ParamSpec: section, name, type, default, help, setter,
// getter) next to the struct they fill. The INI loader, `-o section.key=v`,
// `-E` (effective config, secrets masked) and `--help` are generated from
// the rows. An unknown key, a bad value or a missing file is refused with
// file:line and what was expected.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proc {

struct CollectionConfig {
  std::string name;
  uint32_t buckets = 1024;      // initial size (rounded up to a power of two)
  uint32_t load_factor = 4;     // grow above this many entries per bucket
  bool expired_events = false;
  int line = 0;                 // where it was declared (for errors)
};

struct Config {
  // [daemon]
  int workers = 0;              // 0 = number of cores
  int databases = 16;           // collections "0".."N-1" when none declared
  std::string pid_file = "/run/perfcached/perfcached.pid";
  std::string log_level = "notice";
  bool allow_create = false;
  int growth_budget = 4096;     // splits per timer tick per collection
  int sweep_ms = 1000;          // expiry sweep period
  // [memory]
  int arena_mb = 256;
  int arena_cap_mb = 0;         // 0 = arena_mb
  std::string hugepages = "auto";  // auto | hugetlb | thp | collapse | off
  bool lock_memory = false;
  int max_value_mb = 512;
  int64_t maxmemory = 0;                      // bytes of used memory before eviction (0 = none)
  std::string maxmemory_policy = "noeviction";  // Redis's eight names (cache/evict.h)
  int maxmemory_samples = 5;
  int maxmemory_eviction_tenacity = 10;       // Redis's: 0..100, 100 = no time bound
  int64_t maxmemory_clients = 0;              // bytes of RESP client memory, -N = N% of maxmemory; 0 = none
  int lfu_log_factor = 10;                    // Redis's defaults (cache/access.h)
  int lfu_decay_time = 1;
  bool automove = true;                       // move live cells out of sparse pages (cache/automove.h)
  int automove_buckets = 16384;               // buckets a running pass walks per timer tick
  // [listen]
  std::string resp = "127.0.0.1:6379";
  std::vector<std::string> resp_allow;       // CIDRs allowed off loopback
  std::vector<std::string> resp_collections; // "0:sessions" pairs
  std::string http;             // HTTP door host:port (metrics, stats, health, /mi); empty = off
  std::vector<std::string> http_hosts;       // names accepted in Host: besides IPs and localhost
  int maxclients = 10000;
  int timeout = 0;              // idle seconds before close, 0 = never
  int64_t proto_max_bulk_len = int64_t{512} << 20;          // largest bulk a client may send
  int64_t client_query_buffer_limit = int64_t{1} << 30;     // input + argument table per client
  // client-output-buffer-limit (Redis): per class hard, soft, soft seconds.
  struct OutputLimit {
    int64_t hard, soft, soft_s;
  };
  OutputLimit output_normal{int64_t{128} << 20, 0, 0};
  OutputLimit output_pubsub{int64_t{32} << 20, int64_t{8} << 20, 60};
  // [mi]
  std::string mi_fifo = "/run/perfcached/perfcached_fifo";  // empty = off
  std::string mi_fifo_mode = "0660";
  std::string mi_reply_dir = "/run/perfcached/";  // beside the FIFO: the unit has a private /tmp
  std::string mi_fifo_user;     // owner of the FIFO (name or uid); empty = ours
  std::string mi_fifo_group;    // group (name or gid); empty = the user's group
  std::string mi_datagram = "/run/perfcached/perfcached_mi.sock";  // empty = off
  std::string mi_xmlrpc;                // XML-RPC door host:port (mi_xmlrpc_ng); empty = off
  std::string mi_xmlrpc_root = "RPC2";  // its URL path: POST /RPC2 (mi_xmlrpc_ng's http_root)
  // [db] SQL persistence (db/, modules/db): perf_save / perf_load
  std::string db_url;                           // sqlite:///path.db | postgres://...; empty = off
  std::string db_table = "perfcached";
  int db_mode = 0;                              // 0 MI only, 1 load at start, 2 + save at graceful stop
  std::vector<std::string> persist_collections; // what mode 1/2 loads and saves (empty = every collection)
  // [wal] durability on disk (modules/db, db/snapshot.h); empty dir = memory only
  std::string wal_dir;
  std::vector<std::string> wal_save;  // "SECONDS CHANGES" snapshot rules (Redis `save`), OR-ed
  bool wal_save_set = false;          // a save line was given (save = "" turns the defaults off)
  int wal_snapshots_kept = 2;
  std::string wal_fsync = "everysec";  // always | everysec | no | off (snapshots only)
  std::string wal_commit = "worker";   // fsync = always: who commits a batch: worker | wal
  int wal_ring_mb = 16;                // per writing process (db/wal_ring.h)
  int wal_segment_mb = 64;
  // [secrets]
  std::vector<std::string> resp_secrets;     // AUTH passwords (rotation: any)
  std::vector<std::string> http_tokens;      // HTTP and XML-RPC bearer tokens (when set: required on every request)
  // [collection NAME]
  std::vector<CollectionConfig> collections;

  std::string source = "(embedded default)";
  // Where each "section.key" was last set ("FILE:LINE" or "-o"), so that a
  // check made after loading (FinishConfig) can still name it.
  std::map<std::string, std::string> origin;
  // "-o collection.NAME.key=value": applied by FinishConfig to a declared
  // collection (or a default database), never creating one, so a misspelt
  // NAME is an error and the default databases stay.
  struct CollectionOverride {
    std::string name, key, value, where;
  };
  std::vector<CollectionOverride> collection_overrides;
  // "section.key" -> the "section.key=value" its -o gave (not for lists):
  // a second -o of one setting is refused with both values.
  std::map<std::string, std::string> overrides_given;
  std::vector<std::string> argv;  // the command line (MI `arg`)
};

enum class ParamType { kInt, kBool, kString, kList, kSecret };

struct ParamSpec {
  const char* section;
  const char* name;
  ParamType type;
  const char* help;
  bool (*set)(Config&, std::string_view value, std::string* err);
  std::string (*get)(const Config&);
  void (*copy)(Config& to, const Config& from);  // the field(s) of this row
  bool reload = false;  // a running daemon takes a new value on SIGHUP (proc/reload.h)
};

std::span<const ParamSpec> Params();

// Where a configuration comes from: the -f file ("" = the embedded
// default) and the -o overrides, in order. The supervisor keeps it to
// build the configuration again on SIGHUP.
struct ConfigSource {
  std::string file;
  std::vector<std::string> overrides;
};
// LoadConfigFile + ApplyOverride (each) + FinishConfig over *c (defaults,
// argv set by the caller). False with the first error in *err.
bool BuildConfig(const ConfigSource& src, Config* c, std::string* err);

// One setting that differs between the running configuration and a new
// one: "section.key" (collections: "collection NAME"), its old and new
// value in words (secrets: "changed"), and whether it reloads.
struct ConfigChange {
  std::string key;
  std::string from, to;
  bool reloads;
};
std::vector<ConfigChange> DiffConfig(const Config& running, const Config& next);
// Copy every reloadable row's field(s) from `from` into *to.
void CopyReloadable(const Config& from, Config* to);
// The reloadable rows of *c as ("section.key", value) pairs, secrets in
// clear (the reload channel, proc/reload.h), and back: SetReloadable sets
// one of them into *c (a list adds, as in a file); any other key is refused.
std::vector<std::pair<std::string, std::string>> ReloadableValues(const Config& c);
bool SetReloadable(Config* c, std::string_view key, std::string_view value, std::string* err);

// Load `path` over the defaults. False with "file:line: message" in *err.
bool LoadConfigFile(const std::string& path, Config* c, std::string* err);
// Apply "section.key=value" (collections: "collection.NAME.key=value", for
// a collection the file declares or a default database). A file that sets
// a key twice is refused (list keys add up), and so is a second -o of one
// setting (both values named); a -o over the file's value wins.
bool ApplyOverride(std::string_view kv, Config* c, std::string* err);
// Cross-field checks and derived defaults (databases -> collections, ...).
// Errors start with where the offending key was set ("FILE:LINE: ", "-o
// section.key: ", or the source when it was left at its default).
bool FinishConfig(Config* c, std::string* err);
// [mi] fifo_mode as a mode: 3 or 4 octal digits, no setuid/setgid/sticky,
// not world-writable. False with *err otherwise.
bool ParseFifoMode(std::string_view s, unsigned* mode, std::string* err);
// The effective configuration as INI text, secrets masked.
std::string DumpConfig(const Config& c);
// --help text generated from the rows.
std::string ConfigHelp();

// Redis's memtoull: "1024", "16kb", "512mb", "1gb" (k/m/g = 1000^n, kb/mb/gb = 1024^n).
bool ParseMemSize(std::string_view s, int64_t* out);
// "normal 128mb 0 0 pubsub 32mb 8mb 60" (any of the classes; replica is accepted and ignored).
bool ParseOutputLimits(std::string_view s, Config* c, std::string* err);
std::string FormatOutputLimits(const Config& c);
// maxmemory-clients: "0", a memory size, or "N%" (0..100) of maxmemory,
// stored as -N (0% is 0, no limit, as in Redis); and back ("N%" or the bytes).
bool ParseClientsLimit(std::string_view s, int64_t* out);
// "N%" with N a plain non-negative integer (no sign, no leading zero).
bool ParsePercent(std::string_view s, int64_t* pct);
std::string FormatClientsLimit(int64_t v);

// A database url with its password masked ("postgres://u:***@h/db",
// "password=***"): for -E, MI and logs.
std::string MaskDbUrl(const std::string& url);

// "host:port" -> parts. Accepts "[v6]:port" and "port" (127.0.0.1).
bool ParseHostPort(std::string_view s, std::string* host, int* port);
bool IsLoopbackHost(std::string_view host);

}  // namespace proc
