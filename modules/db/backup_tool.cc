// perfcached — `perfcached --dump DIR` / `--restore DIR` (see backup_tool.h, db/backup.h).
// Copyright (c) 2026 the perfcached authors.
//
// DUMP: the keyspace is cut into parts, each part read by one of --jobs
// connections (SCAN, then DUMP + PTTL of each key, pipelined) and written
// as zstd chunks; the manifest is rewritten atomically after each chunk.
// On perfcached the parts are ranges of SCAN's hash residues (the cursor
// is residue << 6 | level, cache/scan.cc), so the jobs read disjoint parts
// of one database in parallel; on another server (redis-server) each
// database is one part, read by one connection. A key present for the
// whole dump is in it (SCAN's guarantee); the dump is not a point in
// time: a key written meanwhile may be in it with either value.
//
// RESTORE: every chunk is verified first (header, CRCs, records); then
// --jobs connections send RESTORE key expire payload ABSTTL [REPLACE],
// pipelined, each connection its share of the chunks. A key already there
// is kept unless --replace; a key whose expiry passed is skipped.
//
// --rate MB/s bounds the payload bytes per second over all connections
// (a shared token bucket), so a dump of a busy server takes its time.
#include "modules/db/backup_tool.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "db/backup.h"
#include "net/resp_client.h"

namespace modules::db_module {

namespace {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}
double MonoS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

struct Options {
  bool dump = true;
  std::string dir, host = "127.0.0.1", user;
  int port = 6379, jobs = 4, timeout_s = 10;
  double rate_mb = 100;
  std::vector<int> dbs;  // empty: every non-empty database
  bool replace = false, partial = false;
};

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: perfcached --dump DIR    [--host H] [--port P] [--jobs N] [--rate MB] [--db N,...] [--user U]\n"
               "       perfcached --restore DIR [--host H] [--port P] [--jobs N] [--rate MB] [--replace] [--partial]\n"
               "  a logical backup of a running server over RESP (perfcached or redis-server), and its restore\n"
               "  --host, --port  the server (127.0.0.1 6379)\n"
               "  --jobs N        connections working in parallel (4)\n"
               "  --rate MB       payload megabytes per second over all of them (100; 0 = no limit)\n"
               "  --db N,...      dump only these databases (default: every non-empty one)\n"
               "  --replace       restore over keys that exist (default: keep them, counted as kept)\n"
               "  --partial       restore the chunks of a dump that did not finish\n"
               "  --timeout S     each wait for the server (10)\n"
               "  the password: REDISCLI_AUTH in the environment (as redis-cli), with --user for AUTH user pass\n");
}

bool ParseOptions(int argc, char** argv, int first, Options* o, std::string* err) {
  o->dump = std::strcmp(argv[first], "--dump") == 0;
  if (first + 1 >= argc || argv[first + 1][0] == '-') {
    *err = std::string(argv[first]) + " needs a directory";
    return false;
  }
  o->dir = argv[first + 1];
  for (int i = first + 2; i < argc; ++i) {
    std::string a = argv[i];
    bool has = i + 1 < argc;
    auto num = [&](int lo, int hi, int* v) {
      char* end = nullptr;
      long n = std::strtol(argv[++i], &end, 10);
      if (*end || n < lo || n > hi) {
        *err = a + " " + argv[i] + ": not a number from " + std::to_string(lo) + " to " + std::to_string(hi);
        return false;
      }
      *v = static_cast<int>(n);
      return true;
    };
    if (a == "--host" && has) {
      o->host = argv[++i];
    } else if (a == "--port" && has) {
      if (!num(1, 65535, &o->port)) return false;
    } else if (a == "--jobs" && has) {
      if (!num(1, 64, &o->jobs)) return false;
    } else if (a == "--timeout" && has) {
      if (!num(1, 3600, &o->timeout_s)) return false;
    } else if (a == "--rate" && has) {
      char* end = nullptr;
      o->rate_mb = std::strtod(argv[++i], &end);
      if (*end || !(o->rate_mb >= 0)) {
        *err = "--rate " + std::string(argv[i]) + ": not a number of MB per second (0 = no limit)";
        return false;
      }
    } else if (a == "--db" && has && o->dump) {
      std::stringstream ss(argv[++i]);
      std::string one;
      while (std::getline(ss, one, ',')) {
        char* end = nullptr;
        long n = std::strtol(one.c_str(), &end, 10);
        if (one.empty() || *end || n < 0 || n > 1 << 20) {
          *err = "--db: '" + one + "' is not a database number";
          return false;
        }
        o->dbs.push_back(static_cast<int>(n));
      }
    } else if (a == "--user" && has) {
      o->user = argv[++i];
    } else if (a == "--replace" && !o->dump) {
      o->replace = true;
    } else if (a == "--partial" && !o->dump) {
      o->partial = true;
    } else {
      *err = "unknown option '" + a + "' for " + argv[first];
      return false;
    }
  }
  return true;
}

// Payload bytes per second over every connection.
class RateLimit {
 public:
  explicit RateLimit(double mb_s) : bytes_s_(mb_s * 1e6) {}
  void Take(size_t bytes) {
    if (bytes_s_ <= 0) return;
    double wait;
    {
      std::lock_guard<std::mutex> g(mu_);
      double now = MonoS();
      if (next_ < now) next_ = now;
      next_ += static_cast<double>(bytes) / bytes_s_;
      wait = next_ - now - 0.05;  // up to 50 ms of burst
    }
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }

 private:
  double bytes_s_;
  std::mutex mu_;
  double next_ = 0;
};

// Connected, authenticated, and the server answers PING: a server still
// loading its data (-LOADING) or wanting a password (-NOAUTH) is refused
// here, not taken for an empty one.
bool Open(const Options& o, net::RespClient* c, std::string* err) {
  if (!c->Connect(o.host, o.port, o.timeout_s * 1000, err)) return false;
  net::Reply r;
  const char* pass = std::getenv("REDISCLI_AUTH");
  if (pass && *pass) {
    std::vector<std::string_view> argv{"AUTH"};
    if (!o.user.empty()) argv.push_back(o.user);
    argv.push_back(pass);
    if (!c->Call(argv, &r, err)) return false;
    if (r.kind == net::Reply::kError) {
      *err = "AUTH: " + r.str;
      return false;
    }
  }
  if (!c->Call({"PING"}, &r, err)) return false;
  if (r.kind == net::Reply::kError) {
    *err = o.host + ":" + std::to_string(o.port) + " answers PING with -" + r.str +
           (r.str.rfind("NOAUTH", 0) == 0 ? " (the password: REDISCLI_AUTH in the environment)" : "");
    return false;
  }
  return true;
}

// A command whose reply must be a bulk string (INFO).
bool CallBulk(net::RespClient& c, const std::vector<std::string_view>& argv, std::string* out, std::string* err) {
  net::Reply r;
  if (!c.Call(argv, &r, err)) return false;
  if (r.kind != net::Reply::kBulk) {
    *err = std::string(argv[0]) + " " + std::string(argv.size() > 1 ? argv[1] : "") + ": " +
           (r.kind == net::Reply::kError ? r.str : std::string("an unexpected reply"));
    return false;
  }
  *out = std::move(r.str);
  return true;
}

bool Select(net::RespClient* c, int db, std::string* err) {
  net::Reply r;
  std::string n = std::to_string(db);
  if (!c->Call({"SELECT", n}, &r, err)) return false;
  if (r.kind == net::Reply::kError) {
    *err = "SELECT " + n + ": " + r.str;
    return false;
  }
  return true;
}

// "# Keyspace\r\ndb0:keys=3,expires=0,...": the databases with keys.
std::vector<int> NonEmptyDbs(const std::string& info) {
  std::vector<int> dbs;
  std::stringstream ss(info);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.rfind("db", 0) == 0 && line.find(":keys=") != std::string::npos) {
      dbs.push_back(std::atoi(line.c_str() + 2));
    }
  }
  return dbs;
}

std::string InfoField(const std::string& info, const std::string& key) {
  size_t p = info.find("\n" + key + ":");
  if (p == std::string::npos) return "";
  p += key.size() + 2;
  size_t e = info.find_first_of("\r\n", p);
  return info.substr(p, e - p);
}

// ---- dump ---------------------------------------------------------------------
struct Part {
  int db = 0, index = 0;
  uint64_t from = 0, to = 0;  // residues [from, to); to == 0: a whole plain SCAN
  uint32_t level = 0;
};

struct DumpState {
  const Options* o;
  RateLimit* limit;
  std::mutex mu;  // parts, manifest, first error, failed keys
  std::vector<Part> parts;
  size_t next_part = 0;
  db::BackupManifest manifest;
  double manifest_at = 0;  // MonoS of the last rewrite
  std::string error;
  std::atomic<bool> failed{false};
  uint64_t failed_keys = 0;

  void Fail(const std::string& e) {
    std::lock_guard<std::mutex> g(mu);
    if (error.empty()) error = e;
    failed = true;
  }
};

constexpr size_t kChunkRaw = 8u << 20;
constexpr size_t kKeysPerTrip = 64;  // DUMPs in flight per connection: memory is 64 values at most

// With st.mu held: the manifest, at most once a second (a chunk written
// since is whole but unlisted, so a restore does not see it: the manifest
// stays true), or now.
bool SaveManifest(DumpState& st, bool now, std::string* err) {
  double t = MonoS();
  if (!now && t - st.manifest_at < 1.0) return true;
  st.manifest_at = t;
  return db::WriteFileAtomically(st.o->dir, "manifest", db::FormatBackupManifest(st.manifest), err);
}

bool WriteChunk(DumpState& st, const Part& p, int* seq, uint64_t* records, std::string* raw, std::string* err) {
  if (*records == 0) return true;
  char name[64];
  std::snprintf(name, sizeof name, "db%d-p%03d-%05d.chunk", p.db, p.index, (*seq)++);
  db::BackupManifest::Chunk c;
  c.name = name;
  std::string file = db::EncodeBackupChunk(static_cast<uint32_t>(p.db), *records, *raw, &c.info);
  if (!db::WriteFileAtomically(st.o->dir, name, file, err)) return false;
  raw->clear();
  *records = 0;
  std::lock_guard<std::mutex> g(st.mu);
  st.manifest.chunks.push_back(c);
  st.manifest.keys += c.info.records;
  st.manifest.raw += c.info.raw;
  st.manifest.bytes += c.info.bytes;
  return SaveManifest(st, false, err);
}

// One key read as PTTL, DUMP, PTTL: a key written between them (another
// value, another expiry) shows as two PTTLs that disagree, and is read
// again (3 tries). *gone: it does not exist any more.
struct KeyRead {
  bool ok = false, gone = false;
  std::string payload, error;
  int64_t expire_ms = 0;
};

void SendKey(net::RespClient& c, const std::string& key) {
  c.Send({"PTTL", key});
  c.Send({"DUMP", key});
  c.Send({"PTTL", key});
}

bool ReadKey(net::RespClient& c, KeyRead* k, std::string* err) {
  net::Reply t1, d, t2;
  if (!c.Read(&t1, err) || !c.Read(&d, err) || !c.Read(&t2, err)) return false;
  int64_t now = NowMs();
  *k = KeyRead{};
  for (const net::Reply* r : {&t1, &d, &t2}) {
    if (r->kind == net::Reply::kError) {
      k->error = r->str;
      return true;
    }
  }
  if (d.kind == net::Reply::kNil || t2.num == -2) {
    k->gone = k->ok = true;
    return true;
  }
  if (d.kind != net::Reply::kBulk || t1.kind != net::Reply::kInt || t2.kind != net::Reply::kInt) {
    k->error = "an unexpected reply";
    return true;
  }
  // The same expiry before and after (within the time between): the
  // payload is of that state.
  bool same = (t1.num < 0) == (t2.num < 0) && (t1.num < 0 ? t1.num == t2.num : t1.num - t2.num <= 1000 &&
                                                                                   t2.num <= t1.num);
  if (!same) {
    k->error = "written while it was read";
    return true;
  }
  k->ok = true;
  k->payload = std::move(d.str);
  k->expire_ms = t2.num >= 0 ? now + t2.num : 0;
  return true;
}

bool DumpPart(DumpState& st, net::RespClient& c, const Part& p, std::string* err) {
  if (!Select(&c, p.db, err)) return false;
  bool ranged = p.to != 0;
  uint64_t cursor = ranged ? (p.from << 6) | p.level : 0;
  std::string raw;
  uint64_t records = 0;
  int seq = 0;
  net::Reply r;
  do {
    // perfcached visits COUNT/4 + 1 hash residues a step (keys_family.cc
    // CmdScan): ask for no more than the part has left, so no step
    // reaches into the next part.
    std::string count = "200";
    if (ranged) {
      uint64_t left = std::min<uint64_t>(p.to - (cursor >> 6), 50);
      count = std::to_string(left > 1 ? 4 * (left - 1) : 1);
    }
    std::string cur = std::to_string(cursor);
    if (!c.Call({"SCAN", cur, "COUNT", count}, &r, err)) return false;
    if (r.kind != net::Reply::kArray || r.items.size() != 2 || r.items[1].kind != net::Reply::kArray) {
      *err = "SCAN " + cur + ": " + (r.kind == net::Reply::kError ? r.str : "an unexpected reply");
      return false;
    }
    cursor = std::strtoull(r.items[0].str.c_str(), nullptr, 10);
    const std::vector<net::Reply>& keys = r.items[1].items;
    for (size_t b = 0; b < keys.size(); b += kKeysPerTrip) {
      size_t e = std::min(keys.size(), b + kKeysPerTrip), bytes = 0;
      for (size_t k = b; k < e; ++k) SendKey(c, keys[k].str);
      if (!c.Flush(err)) return false;
      for (size_t k = b; k < e; ++k) {
        const std::string& key = keys[k].str;
        KeyRead kr;
        if (!ReadKey(c, &kr, err)) return false;
        for (int again = 0; !kr.ok && again < 3; ++again) {  // alone, a little later
          usleep(1000);
          SendKey(c, key);
          if (!c.Flush(err) || !ReadKey(c, &kr, err)) return false;
        }
        if (!kr.ok) {
          std::lock_guard<std::mutex> g(st.mu);
          if (st.failed_keys++ < 5) {
            std::fprintf(stderr, "perfcached --dump: database %d key '%s' not dumped: %s\n", p.db,
                         key.substr(0, 100).c_str(), kr.error.c_str());
          }
          continue;
        }
        if (kr.gone) continue;
        db::AppendBackupRecord(&raw, key, kr.expire_ms, kr.payload);
        ++records;
        bytes += kr.payload.size() + key.size();
        if (raw.size() >= kChunkRaw && !WriteChunk(st, p, &seq, &records, &raw, err)) return false;
      }
      st.limit->Take(bytes);
      if (st.failed) return true;
    }
  } while (cursor != 0 && (!ranged || (cursor >> 6) < p.to));
  return WriteChunk(st, p, &seq, &records, &raw, err);
}

int Dump(const Options& o) {
  std::string err;
  struct stat sb;
  if (mkdir(o.dir.c_str(), 0750) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "perfcached --dump: %s: %s\n", o.dir.c_str(), std::strerror(errno));
    return 1;
  }
  if (stat((o.dir + "/manifest").c_str(), &sb) == 0) {
    std::fprintf(stderr, "perfcached --dump: %s already holds a backup (manifest): choose a new directory\n",
                 o.dir.c_str());
    return 1;
  }
  net::RespClient ctl;
  net::Reply r;
  std::string info, keyspace;
  if (!Open(o, &ctl, &err) || !CallBulk(ctl, {"INFO", "server"}, &info, &err) ||
      !CallBulk(ctl, {"INFO", "keyspace"}, &keyspace, &err)) {
    std::fprintf(stderr, "perfcached --dump: %s\n", err.c_str());
    return 1;
  }
  info = "\n" + info;
  std::string ours = InfoField(info, "perfcached_version");
  bool perfcached = !ours.empty();
  RateLimit limit(o.rate_mb);
  DumpState st;
  st.o = &o;
  st.limit = &limit;
  st.manifest.source = o.host + ":" + std::to_string(o.port) + (perfcached ? " perfcached " + ours
                                                                           : " redis " + InfoField(info, "redis_version"));
  st.manifest.started_ms = NowMs();
  std::vector<int> dbs = o.dbs.empty() ? NonEmptyDbs(keyspace) : o.dbs;
  std::sort(dbs.begin(), dbs.end());
  dbs.erase(std::unique(dbs.begin(), dbs.end()), dbs.end());
  // The parts: on perfcached, a database's residues cut into 4 parts a job.
  for (int d : dbs) {
    if (!Select(&ctl, d, &err)) {
      std::fprintf(stderr, "perfcached --dump: %s\n", err.c_str());
      return 1;
    }
    uint64_t next = 0;
    if (perfcached) {
      if (!ctl.Call({"SCAN", "0", "COUNT", "1"}, &r, &err) || r.kind != net::Reply::kArray || r.items.empty()) {
        std::fprintf(stderr, "perfcached --dump: SCAN: %s\n", err.empty() ? "an unexpected reply" : err.c_str());
        return 1;
      }
      next = std::strtoull(r.items[0].str.c_str(), nullptr, 10);
    }
    uint32_t level = static_cast<uint32_t>(next & 63);
    uint64_t residues = next == 0 ? 1 : uint64_t{1} << level;
    uint64_t n = std::min<uint64_t>(residues, static_cast<uint64_t>(o.jobs) * 4);
    if (next == 0) n = 1;
    for (uint64_t k = 0; k < n; ++k) {
      Part p;
      p.db = d;
      p.index = static_cast<int>(k);
      p.level = level;
      if (next != 0) {
        p.from = residues * k / n;
        p.to = residues * (k + 1) / n;
      }
      st.parts.push_back(p);
    }
  }
  if (!SaveManifest(st, true, &err)) {
    std::fprintf(stderr, "perfcached --dump: %s\n", err.c_str());
    return 1;
  }
  double t0 = MonoS();
  int threads = std::max(1, std::min<int>(o.jobs, static_cast<int>(st.parts.size())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      net::RespClient c;
      std::string e;
      if (!Open(o, &c, &e)) return st.Fail(e);
      for (;;) {
        Part p;
        {
          std::lock_guard<std::mutex> g(st.mu);
          if (st.failed || st.next_part >= st.parts.size()) return;
          p = st.parts[st.next_part++];
        }
        if (!DumpPart(st, c, p, &e)) return st.Fail("database " + std::to_string(p.db) + ": " + e);
      }
    });
  }
  for (auto& t : pool) t.join();
  double secs = MonoS() - t0;
  st.manifest.finished_ms = NowMs();
  if (st.failed) {
    st.manifest.failed = true;
    std::string e2;
    (void)SaveManifest(st, true, &e2);
    std::fprintf(stderr, "perfcached --dump: %s\n  %s/manifest lists the %zu chunk(s) written before (state failed)\n",
                 st.error.c_str(), o.dir.c_str(), st.manifest.chunks.size());
    return 1;
  }
  st.manifest.complete = true;
  if (!SaveManifest(st, true, &err)) {
    std::fprintf(stderr, "perfcached --dump: %s\n", err.c_str());
    return 1;
  }
  std::printf("dump: %llu key(s) of %zu database(s) from %s into %s: %zu chunk(s), %.1f MB (%.1f MB zstd) in %.2f s "
              "(%.0f keys/s), %d connection(s), rate limit %s\n",
              static_cast<unsigned long long>(st.manifest.keys), dbs.size(), st.manifest.source.c_str(), o.dir.c_str(),
              st.manifest.chunks.size(), st.manifest.raw / 1e6, st.manifest.bytes / 1e6, secs,
              secs > 0 ? st.manifest.keys / secs : 0.0, threads,
              o.rate_mb > 0 ? (std::to_string(static_cast<int>(o.rate_mb)) + " MB/s").c_str() : "none");
  if (st.failed_keys) {
    std::fprintf(stderr, "perfcached --dump: %llu key(s) could not be read (written non-stop, or an error): "
                         "not in the backup\n", static_cast<unsigned long long>(st.failed_keys));
    return 1;
  }
  return 0;
}

// ---- restore --------------------------------------------------------------------
struct RestoreCounts {
  std::atomic<uint64_t> restored{0}, kept{0}, expired{0}, failed{0};
};

bool ReadFile(const std::string& path, std::string* out, std::string* err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

int Restore(const Options& o) {
  std::string text, err;
  db::BackupManifest m;
  if (!ReadFile(o.dir + "/manifest", &text, &err) || !db::ParseBackupManifest(text, &m, &err)) {
    std::fprintf(stderr, "perfcached --restore: %s/manifest: %s\n", o.dir.c_str(), err.c_str());
    return 1;
  }
  if (!m.complete && !o.partial) {
    std::fprintf(stderr, "perfcached --restore: %s: the dump did not finish (state %s); its %zu chunk(s) hold "
                         "part of the data: --partial restores them\n", o.dir.c_str(), m.failed ? "failed" : "running",
                 m.chunks.size());
    return 1;
  }
  // Every chunk verified before the server is touched.
  for (const auto& c : m.chunks) {
    std::string file;
    db::BackupChunkInfo info;
    std::vector<db::BackupRecord> recs;
    if (!ReadFile(o.dir + "/" + c.name, &file, &err) || !db::DecodeBackupChunk(file, &info, &recs, &err) ||
        info.crc != c.info.crc || info.records != c.info.records || info.db != c.info.db) {
      std::fprintf(stderr, "perfcached --restore: %s/%s: %s; nothing restored\n", o.dir.c_str(), c.name.c_str(),
                   err.empty() ? "does not match its manifest line" : err.c_str());
      return 1;
    }
  }
  // A part's chunks in the order they were written, by one connection: a
  // key a SCAN gave twice (a retried visit, redis-server's rehashing) is
  // restored in the order it was read, so with --replace the later read
  // wins.
  std::vector<std::vector<size_t>> parts;
  {
    std::vector<std::string> names;
    for (size_t i = 0; i < m.chunks.size(); ++i) {
      std::string part = m.chunks[i].name.substr(0, m.chunks[i].name.rfind('-'));
      size_t k = std::find(names.begin(), names.end(), part) - names.begin();
      if (k == names.size()) {
        names.push_back(part);
        parts.emplace_back();
      }
      parts[k].push_back(i);
    }
  }
  RateLimit limit(o.rate_mb);
  RestoreCounts n;
  std::mutex mu;
  size_t next = 0;
  std::string first_error;
  std::atomic<bool> broken{false};
  double t0 = MonoS();
  int threads = std::max(1, std::min<int>(o.jobs, static_cast<int>(parts.size())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto fail = [&](const std::string& e) {
        std::lock_guard<std::mutex> g(mu);
        if (first_error.empty()) first_error = e;
        broken = true;
      };
      net::RespClient c;
      std::string e;
      if (!Open(o, &c, &e)) return fail(e);
      int current_db = -1;
      std::vector<size_t> mine;
      for (;;) {
        if (mine.empty()) {
          std::lock_guard<std::mutex> g(mu);
          if (broken || next >= parts.size()) return;
          mine = parts[next++];
          std::reverse(mine.begin(), mine.end());
        }
        size_t i = mine.back();
        mine.pop_back();
        std::string file;
        db::BackupChunkInfo info;
        std::vector<db::BackupRecord> recs;
        if (!ReadFile(o.dir + "/" + m.chunks[i].name, &file, &e) || !db::DecodeBackupChunk(file, &info, &recs, &e)) {
          return fail(m.chunks[i].name + ": " + e);
        }
        if (static_cast<int>(info.db) != current_db) {
          if (!Select(&c, static_cast<int>(info.db), &e)) return fail(e);
          current_db = static_cast<int>(info.db);
        }
        int64_t now = NowMs();
        for (size_t b = 0; b < recs.size(); b += 512) {
          size_t end = std::min(recs.size(), b + 512), bytes = 0;
          std::vector<size_t> sent;
          std::vector<std::string> ttl(end - b);
          for (size_t k = b; k < end; ++k) {
            const db::BackupRecord& r = recs[k];
            if (r.expire_ms != 0 && r.expire_ms <= now) {
              ++n.expired;
              continue;
            }
            ttl[k - b] = std::to_string(r.expire_ms);
            std::vector<std::string_view> argv{"RESTORE", r.key, ttl[k - b], r.payload, "ABSTTL"};
            if (o.replace) argv.push_back("REPLACE");
            c.Send(argv);
            sent.push_back(k);
            bytes += r.key.size() + r.payload.size();
          }
          if (!c.Flush(&e)) return fail(e);
          for (size_t k : sent) {
            net::Reply rep;
            if (!c.Read(&rep, &e)) return fail(e);
            if (rep.kind != net::Reply::kError) {
              ++n.restored;
            } else if (rep.str.rfind("BUSYKEY", 0) == 0) {
              ++n.kept;
            } else {
              if (n.failed++ < 5) {
                std::fprintf(stderr, "perfcached --restore: db %u key '%s': %s\n", info.db, recs[k].key.c_str(),
                             rep.str.c_str());
              }
            }
          }
          limit.Take(bytes);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  double secs = MonoS() - t0;
  if (broken) {
    std::fprintf(stderr, "perfcached --restore: %s (%llu key(s) were restored before)\n", first_error.c_str(),
                 static_cast<unsigned long long>(n.restored.load()));
    return 1;
  }
  std::printf("restore: %llu key(s) restored to %s:%d from %s (%zu chunk(s)%s) in %.2f s (%.0f keys/s): %llu kept "
              "(already there%s), %llu expired, %llu failed\n",
              static_cast<unsigned long long>(n.restored.load()), o.host.c_str(), o.port, o.dir.c_str(),
              m.chunks.size(), m.complete ? "" : ", an unfinished dump", secs,
              secs > 0 ? n.restored.load() / secs : 0.0, static_cast<unsigned long long>(n.kept.load()),
              o.replace ? "" : "; --replace overwrites", static_cast<unsigned long long>(n.expired.load()),
              static_cast<unsigned long long>(n.failed.load()));
  return n.failed.load() ? 1 : 0;
}

}  // namespace

int RunBackupTool(int argc, char** argv, int first) {
  signal(SIGPIPE, SIG_IGN);  // a server that goes away is an error to report, not a death
  Options o;
  std::string err;
  for (int i = first; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      Usage(stdout);
      return 0;
    }
  }
  if (!ParseOptions(argc, argv, first, &o, &err)) {
    std::fprintf(stderr, "perfcached: %s\n", err.c_str());
    Usage(stderr);
    return 2;
  }
  return o.dump ? Dump(o) : Restore(o);
}

}  // namespace modules::db_module
