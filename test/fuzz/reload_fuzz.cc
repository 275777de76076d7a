// perfcached — libFuzzer target for the reload channel's records (proc/reload.h).
// Copyright (c) 2026 the perfcached authors.
//
// Input: the bytes a child copies out of the ReloadArea. Checks, abort()ing
// on the first violation:
//   * DecodeReload either refuses the bytes or decodes them, and then
//     EncodeReload gives the same bytes back (the encoding is canonical);
//   * ApplyReloadBytes either refuses them (with a reason) or applies them,
//     and then the Config's own reloadable rows, encoded and applied to a
//     fresh Config, give the same rows again (what a child would get from
//     a supervisor holding that Config);
//   * a refused apply changes nothing.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proc/config.h"
#include "proc/reload.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "reload_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::pair<std::string, std::string>> kv;
  if (proc::DecodeReload(in, &kv) && proc::EncodeReload(kv) != in) Fail("decode/encode is not the identity");
  proc::Config c;
  std::string before = proc::EncodeReload(proc::ReloadableValues(c)), err;
  if (!proc::ApplyReloadBytes(in, &c, &err)) {
    if (err.empty()) Fail("refused without a reason");
    if (proc::EncodeReload(proc::ReloadableValues(c)) != before) Fail("a refused apply changed the Config");
    return 0;
  }
  std::string once = proc::EncodeReload(proc::ReloadableValues(c));
  proc::Config d;
  if (!proc::ApplyReloadBytes(once, &d, &err)) Fail("a Config's own rows do not apply");
  if (proc::EncodeReload(proc::ReloadableValues(d)) != once) Fail("a Config's own rows do not round-trip");
  return 0;
}
