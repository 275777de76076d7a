// perfcached — the daemon binary: command line and config; the modules' tables do the rest.
// Copyright (c) 2026 the perfcached authors.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <map>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "db/snapshot.h"
#include "db/probe.h"
#include "db/wal.h"
#include "modules/db/backup_tool.h"
#include "modules/exports.h"
#include "modules/resp/command.h"
#include "proc/config.h"
#include "proc/daemon.h"
#include "proc/log.h"
#include "proc/secret.h"
#include "proc/version.h"

namespace {

const std::string kVersion = std::string("perfcached ") + proc::kVersion;

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: perfcached [-f FILE] [-o section.key=value ...] [-C] [-E] [-D] [-V] [-R FILE] [-W DIR] [-P DIR]\n"
               "  -f FILE   config file (INI); without it the embedded default serves\n"
               "  -o K=V    override a setting, e.g. -o listen.resp=127.0.0.1:7000\n"
               "            (a declared collection or default database: -o collection.0.expired_events=yes)\n"
               "  -C        validate the configuration, print what would run, exit 0/1\n"
               "  -E        print the effective configuration (secrets masked) and exit\n"
               "  -D        stay in the foreground, log to stderr (default: daemonize, syslog)\n"
               "  -V        version and build\n"
               "  -R FILE   verify a snapshot file (every checksum) and print its summary; exit 0 / 1\n"
               "  -W DIR    verify the WAL segments in DIR (every record) and print a summary; exit 0 / 1\n"
               "  -P DIR    probe the disk under DIR (fsync latency, write rate) and recommend [wal] settings\n"
               "  --dump DIR / --restore DIR [--host H] [--port P] [--jobs N] [--rate MB] ...\n"
               "            a logical backup of a running server over RESP, and its restore (--dump -h: options)\n"
               "  -h        this help, with every setting\n"
               "  --list-commands  the RESP dispatch table: name arity flags first last step group\n\n"
               "settings (section, key = default):\n%s",
               proc::ConfigHelp().c_str());
}

// -R FILE: read the whole snapshot, checking every checksum; print what it holds.
int InspectSnapshot(const char* path) {
  db::SnapshotInfo info;
  std::string err;
  std::map<std::string, std::array<uint64_t, 8>> per;  // collection -> records by type
  bool ok = db::ReadSnapshot(path, [&](std::string_view coll, const cache::Entry& e) {
    ++per[std::string(coll)][e.type & 7];
    return true;
  }, &info, &err);
  if (!ok) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());
    return 1;
  }
  auto when = [](int64_t ms) {
    time_t t = static_cast<time_t>(ms / 1000);
    char b[64];
    std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    return std::string(b);
  };
  std::printf("%s: OK (every checksum verified)\n  seq %llu, taken %s .. %s (%lld ms)\n"
              "  %llu key(s) in %llu collection(s); %llu bytes on disk, %llu before zstd\n",
              path, static_cast<unsigned long long>(info.seq), when(info.started_ms).c_str(),
              when(info.finished_ms).c_str(), static_cast<long long>(info.finished_ms - info.started_ms),
              static_cast<unsigned long long>(info.records), static_cast<unsigned long long>(info.collections),
              static_cast<unsigned long long>(info.file_bytes), static_cast<unsigned long long>(info.raw_bytes));
  for (const auto& [name, n] : per) {
    std::printf("  collection %s:", name.c_str());
    for (uint8_t t = 0; t < 8; ++t) {
      if (n[t]) std::printf(" %llu %s", static_cast<unsigned long long>(n[t]),
                            cache::ExportTypeName(t) ? cache::ExportTypeName(t) : "other");
    }
    std::printf("\n");
  }
  return 0;
}

// -W DIR: read every WAL segment, checking every record; print a summary.
// Nothing is changed (a torn tail is reported, not cut).
int InspectWal(const char* dir) {
  auto segs = db::ListWalSegments(dir);
  if (segs.empty()) {
    std::fprintf(stderr, "perfcached: %s: no WAL segment (wal-*.log)\n", dir);
    return 1;
  }
  db::WalReadReport rep;
  std::string err;
  uint64_t kinds[8] = {};
  std::map<std::string, uint64_t> per;
  uint64_t top = 0;
  bool ok = db::ReadWal(dir, 0, false, [&](uint64_t, const db::WalRecord& r) {
    ++kinds[r.kind <= db::kWalPart ? r.kind : 0];
    ++per[r.collection];
    if (r.entry.version > top) top = r.entry.version;
    return true;
  }, &rep, &err);
  if (!ok) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: %llu segment(s), %llu record(s) (%llu put, %llu tombstone, %llu flush, %llu drop, %llu fields, %llu expire), "
              "%llu joined from %llu part(s), %llu bytes, "
              "positions %llu .. %llu, newest version %llu\n",
              dir, static_cast<unsigned long long>(rep.segments), static_cast<unsigned long long>(rep.records),
              static_cast<unsigned long long>(kinds[db::kWalPut]), static_cast<unsigned long long>(kinds[db::kWalTombstone]),
              static_cast<unsigned long long>(kinds[db::kWalFlush]), static_cast<unsigned long long>(kinds[db::kWalDrop]),
              static_cast<unsigned long long>(kinds[db::kWalFields]), static_cast<unsigned long long>(kinds[db::kWalExpire]),
              static_cast<unsigned long long>(rep.joined), static_cast<unsigned long long>(rep.parts),
              static_cast<unsigned long long>(rep.bytes),
              static_cast<unsigned long long>(segs.front().first), static_cast<unsigned long long>(rep.end),
              static_cast<unsigned long long>(top));
  for (const auto& [start, path] : segs) std::printf("  %s\n", path.c_str());
  for (const auto& [name, n] : per) std::printf("  collection %s: %llu record(s)\n", name.c_str(), static_cast<unsigned long long>(n));
  for (const std::string& p : rep.problems) std::printf("  PROBLEM: %s\n", p.c_str());
  if (!rep.problems.empty()) {
    std::fprintf(stderr, "perfcached: %s: %zu problem(s), %llu byte(s) unreadable (recovery cuts a torn tail)\n", dir,
                 rep.problems.size(), static_cast<unsigned long long>(rep.torn_bytes));
    return 1;
  }
  std::printf("  OK (every record's checksum verified)\n");
  return 0;
}

// -P DIR: measure the disk and recommend [wal] fsync and ring_mb.
int ProbeDir(const char* dir) {
  db::ProbeResult r;
  std::string err;
  if (!db::ProbeDisk(dir, 200, &r, &err)) {
    std::fprintf(stderr, "perfcached: probe: %s\n", err.c_str());
    return 1;
  }
  db::ProbeAdvice a = db::Recommend(r);
  std::printf("%s: %s\n"
              "  fsync (4 KiB write + fdatasync) x %llu: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n"
              "  sustained write: %.0f MB/s (%llu MiB, then one fdatasync, in %.2f s)\n"
              "recommended:\n  [wal]\n  fsync = %s\n  ring_mb = %d\nwhy:\n  %s\n",
              dir, r.fs_type.c_str(), static_cast<unsigned long long>(r.fsyncs), r.p50_ms, r.p99_ms, r.max_ms,
              r.write_mb_s, static_cast<unsigned long long>(r.bytes_written >> 20), r.write_s, a.fsync, a.ring_mb,
              a.why.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  std::vector<std::string> overrides;
  bool check = false, dump = false, foreground = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      Usage(stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("%s (built %s %s, g++ %s)\n", kVersion.c_str(), __DATE__, __TIME__, __VERSION__);
      return 0;
    }
    if (std::strcmp(argv[i], "--list-commands") == 0) {  // the RESP dispatch table (test/diff)
      std::fputs(modules::resp::ListCommands().c_str(), stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--dump") == 0 || std::strcmp(argv[i], "--restore") == 0) {
      return modules::db_module::RunBackupTool(argc, argv, i);  // a client of a running server
    }
  }
  int opt;
  while ((opt = getopt(argc, argv, "f:o:CEDVhR:W:P:")) != -1) {
    switch (opt) {
      case 'f': file = optarg; break;
      case 'o': overrides.emplace_back(optarg); break;
      case 'C': check = true; break;
      case 'E': dump = true; break;
      case 'D': foreground = true; break;
      case 'V':
        std::printf("%s (built %s %s, g++ %s)\n", kVersion.c_str(), __DATE__, __TIME__, __VERSION__);
        return 0;
      case 'h': Usage(stdout); return 0;
      case 'R': return InspectSnapshot(optarg);
      case 'W': return InspectWal(optarg);
      case 'P': return ProbeDir(optarg);
      default: Usage(stderr); return 1;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "perfcached: unexpected argument '%s'\n", argv[optind]);
    return 1;
  }
  proc::Config cfg;
  // MI `arg` shows the command line with secret values masked; then the
  // values are overwritten in our own argv, so ps and /proc/PID/cmdline
  // never show them (better: keep [secrets] in a 0600 file given with -f).
  for (int i = 0; i < argc; ++i) cfg.argv.push_back(proc::MaskSecretArg(argv[i]));
  if (!proc::SecretsInit()) {
    std::fprintf(stderr, "perfcached: libsodium cannot start\n");
    return 1;
  }
  proc::ScrubArgv(argc, argv);
  // The file and the overrides are kept: SIGHUP builds the configuration
  // again from them (proc/reload.h), the overrides winning as at start.
  proc::DaemonOptions o;
  o.source.file = file;
  o.source.overrides = std::move(overrides);
  std::string err;
  if (!proc::BuildConfig(o.source, &cfg, &err)) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());  // err names FILE:LINE
    return 1;
  }
  if (dump) {
    std::fputs(proc::DumpConfig(cfg).c_str(), stdout);
    return 0;
  }
  if (check) {
    int nw = cfg.workers > 0 ? cfg.workers : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    std::printf("configuration OK (%s)\n", cfg.source.c_str());
    std::printf("  %d worker(s) + timer, arena %d MiB (cap %d MiB, hugepages %s)\n", nw,
                cfg.arena_mb, cfg.arena_cap_mb ? cfg.arena_cap_mb : cfg.arena_mb,
                cfg.hugepages.c_str());
    std::printf("  RESP door: %s%s\n", cfg.resp.empty() ? "(off)" : cfg.resp.c_str(),
                cfg.resp_secrets.empty() ? " (no AUTH)" : " (AUTH required)");
    std::printf("  MI: FIFO %s, datagram %s, HTTP %s, XML-RPC %s%s\n",
                cfg.mi_fifo.empty() ? "(off)" : cfg.mi_fifo.c_str(),
                cfg.mi_datagram.empty() ? "(off)" : cfg.mi_datagram.c_str(), cfg.http.empty() ? "(off)" : cfg.http.c_str(),
                cfg.mi_xmlrpc.empty() ? "(off)" : cfg.mi_xmlrpc.c_str(),
                cfg.mi_xmlrpc.empty() ? "" : ("/" + cfg.mi_xmlrpc_root).c_str());
    std::printf("  %zu collection(s):", cfg.collections.size());
    for (const auto& c : cfg.collections) {
      std::printf(" %s%s", c.name.c_str(), c.expired_events ? " (expired_events)" : "");
    }
    std::printf("\n");
    return 0;
  }
  // Every module's table (modules/exports.h): hooks, processes, commands.
  if (!modules::InitModules(cfg, &err)) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());
    return 1;
  }
  proc::DaemonHooks hooks = modules::HooksFromModules(cfg);
  o.foreground = foreground;
  return proc::RunDaemon(&cfg, o, hooks);
}
