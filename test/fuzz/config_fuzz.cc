// perfcached — libFuzzer target for the configuration loader (proc/config.h).
// Copyright (c) 2026 the perfcached authors.
//
// Input: an INI file. It is written to a memfd and loaded through /proc/self/fd/N (the
// loader only takes a path), then FinishConfig and DumpConfig run on the result. Checks,
// abort()ing on the first violation:
//   * a refused file is reported as "PATH:..." (LoadConfigFile) and FinishConfig either
//     succeeds or says why;
//   * for a file that loads and finishes: DumpConfig re-loaded (and finished) gives the same
//     DumpConfig again, apart from its first line, which names the source. Skipped when
//     secrets are set, since the dump masks them;
//   * the same effective configuration rebuilt with ApplyOverride ("section.key=value",
//     "collection.NAME.key=value") on the defaults dumps the same (the collections are
//     declared by a file of "[collection NAME]" headers: -o tunes, never creates, one).
//
// -DCONFIG_FUZZ_IGNORE_KNOWN=1 skips the re-load check when the dump holds " #" (a value
// starting with '#' is dumped as "key = #...", which the loader reads as a comment) so a
// campaign can look for other bugs until that is fixed.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "proc/config.h"

#ifndef CONFIG_FUZZ_IGNORE_KNOWN
#define CONFIG_FUZZ_IGNORE_KNOWN 0
#endif

namespace {

[[noreturn]] void Fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
  std::fprintf(stderr, "config_fuzz: %s\n", what);
  if (!a.empty() || !b.empty()) {
    std::fprintf(stderr, "---- first:\n%s\n---- second:\n%s\n", a.c_str(), b.c_str());
  }
  std::abort();
}

// A memfd holding one file, reachable by path.
struct MemFile {
  int fd = -1;
  std::string path;
  explicit MemFile(const char* name) {
    fd = memfd_create(name, 0);
    if (fd < 0) Fail("memfd_create failed");
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  void Set(std::string_view text) {
    if (ftruncate(fd, 0) != 0) Fail("ftruncate failed");
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = pwrite(fd, text.data() + off, text.size() - off, static_cast<off_t>(off));
      if (n <= 0) Fail("pwrite failed");
      off += static_cast<size_t>(n);
    }
  }
};

std::string Body(const std::string& dump) {
  size_t nl = dump.find('\n');
  return nl == std::string::npos ? dump : dump.substr(nl + 1);
}

// The effective configuration as -o overrides; false when it cannot be written that way.
bool AsOverrides(const proc::Config& c, std::vector<std::string>* out) {
  for (const proc::ParamSpec& p : proc::Params()) {
    if (p.type == proc::ParamType::kSecret) continue;
    std::string v = p.get(c);
    // Lists append to the (empty) default: an empty list needs no override.
    if (p.type == proc::ParamType::kList && v.empty()) continue;
    out->push_back(std::string(p.section) + "." + p.name + "=" + v);
  }
  for (const proc::CollectionConfig& cc : c.collections) {
    if (cc.name.find('=') != std::string::npos) return false;  // "collection.a=b.key=v" is ambiguous
    const std::string pre = "collection." + cc.name + ".";
    out->push_back(pre + "buckets=" + std::to_string(cc.buckets));
    out->push_back(pre + "load_factor=" + std::to_string(cc.load_factor));
    out->push_back(pre + "expired_events=" + (cc.expired_events ? "yes" : "no"));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemFile input("config_fuzz_in");
  static MemFile again("config_fuzz_again");
  input.Set(std::string_view(reinterpret_cast<const char*>(data), size));

  proc::Config c;
  std::string err;
  if (!proc::LoadConfigFile(input.path, &c, &err)) {
    if (err.rfind(input.path + ":", 0) != 0) Fail("load error without 'path:'", err);
    (void)proc::DumpConfig(c);
    return 0;
  }
  if (!proc::FinishConfig(&c, &err)) {
    if (err.empty()) Fail("FinishConfig refused without a message");
    (void)proc::DumpConfig(c);
    return 0;
  }
  const std::string d1 = proc::DumpConfig(c);
  if (d1.find("(from " + input.path + ")") == std::string::npos) Fail("dump does not name its source", d1);

  // Re-load the dump.
  if (c.resp_secrets.empty() && c.http_tokens.empty() && !(CONFIG_FUZZ_IGNORE_KNOWN && Body(d1).find(" #") != std::string::npos)) {
    again.Set(d1);
    proc::Config r;
    if (!proc::LoadConfigFile(again.path, &r, &err)) Fail(("the dump does not load: " + err).c_str(), d1);
    if (!proc::FinishConfig(&r, &err)) Fail(("the dump does not finish: " + err).c_str(), d1);
    const std::string d2 = proc::DumpConfig(r);
    if (Body(d1) != Body(d2)) Fail("the re-loaded dump differs", d1, d2);
  }

  // Rebuild it with overrides on the defaults (collections declared by a file).
  std::vector<std::string> ovr;
  if (AsOverrides(c, &ovr)) {
    proc::Config o;
    static MemFile decl("config_fuzz_decl");
    std::string headers;
    for (const proc::CollectionConfig& cc : c.collections) headers += "[collection " + cc.name + "]\n";
    decl.Set(headers);
    if (!proc::LoadConfigFile(decl.path, &o, &err)) Fail(("collection headers refused: " + err).c_str(), d1);
    for (const std::string& kv : ovr) {
      if (!proc::ApplyOverride(kv, &o, &err)) Fail(("override refused: " + err).c_str(), d1);
    }
    o.resp_secrets = c.resp_secrets;  // secrets are not written as overrides
    o.http_tokens = c.http_tokens;
    if (!proc::FinishConfig(&o, &err)) Fail(("overrides do not finish: " + err).c_str(), d1);
    const std::string d3 = proc::DumpConfig(o);
    if (Body(d1) != Body(d3)) Fail("the config rebuilt with overrides differs", d1, d3);
  }
  return 0;
}
