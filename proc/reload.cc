// perfcached — SIGHUP: build the configuration again, apply what reloads, name what needs a restart.
// Copyright (c) 2026 the perfcached authors.
#include "proc/reload.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "proc/log.h"
#include "proc/secret.h"

namespace proc {
namespace {

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }

bool GetU32(std::string_view* in, uint32_t* v) {
  if (in->size() < sizeof *v) return false;
  std::memcpy(v, in->data(), sizeof *v);
  in->remove_prefix(sizeof *v);
  return true;
}

bool GetField(std::string_view* in, std::string* out) {
  uint32_t n;
  if (!GetU32(in, &n) || n > in->size()) return false;
  out->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}

}  // namespace

void WipeSecrets(Config* c) {
  for (auto* v : {&c->resp_secrets, &c->http_tokens}) {
    for (std::string& s : *v) Wipe(s.data(), s.size());
  }
}

std::string EncodeReload(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out;
  for (const auto& [k, v] : kv) {
    PutU32(&out, static_cast<uint32_t>(k.size()));
    out += k;
    PutU32(&out, static_cast<uint32_t>(v.size()));
    out += v;
  }
  return out;
}

bool DecodeReload(std::string_view bytes, std::vector<std::pair<std::string, std::string>>* kv) {
  kv->clear();
  while (!bytes.empty()) {
    std::pair<std::string, std::string> one;
    if (!GetField(&bytes, &one.first) || !GetField(&bytes, &one.second)) return false;
    kv->push_back(std::move(one));
  }
  return true;
}

uint32_t PublishReload(ReloadArea& r, std::string_view bytes) {
  if (bytes.size() > kReloadBytes) return 0;
  uint32_t s = r.seq.load(std::memory_order_relaxed);
  r.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(r.bytes, bytes.data(), bytes.size());
  r.len = static_cast<uint32_t>(bytes.size());
  r.seq.store(s + 2, std::memory_order_release);
  uint32_t g = r.gen.load(std::memory_order_relaxed) + 1;
  if (g == 0) g = 1;  // 0 is "nothing published" (every entry starts there)
  r.gen.store(g, std::memory_order_release);
  return g;
}

void WipeReload(ReloadArea& r) {
  uint32_t s = r.seq.load(std::memory_order_relaxed);
  r.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  Wipe(r.bytes, r.len);
  r.len = 0;
  r.seq.store(s + 2, std::memory_order_release);
}

ReloadFetch FetchReload(const ReloadArea& r, uint32_t have, std::string* bytes, uint32_t* gen) {
  uint32_t g = r.gen.load(std::memory_order_acquire);
  if (g == have) return ReloadFetch::kNothing;
  uint32_t s1 = r.seq.load(std::memory_order_acquire);
  if (s1 & 1) return ReloadFetch::kBusy;
  uint32_t len = std::min(r.len, kReloadBytes);
  bytes->assign(r.bytes, len);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (r.seq.load(std::memory_order_relaxed) != s1 || r.gen.load(std::memory_order_relaxed) != g) {
    Wipe(bytes->data(), bytes->size());
    bytes->clear();
    return ReloadFetch::kBusy;
  }
  *gen = g;
  return ReloadFetch::kNew;
}

bool ApplyReloadBytes(std::string_view bytes, Config* cfg, std::string* err) {
  std::vector<std::pair<std::string, std::string>> kv;
  if (!DecodeReload(bytes, &kv)) {
    *err = "the reload channel holds " + std::to_string(bytes.size()) + " bytes that do not decode";
    return false;
  }
  Config scratch;  // every list starts empty: the values replace, not add
  bool ok = true;
  for (auto& [k, v] : kv) {
    if (ok && !SetReloadable(&scratch, k, v, err)) {
      *err = k + ": " + *err;
      ok = false;
    }
    Wipe(v.data(), v.size());
  }
  if (ok) CopyReloadable(scratch, cfg);
  WipeSecrets(&scratch);
  return ok;
}

bool FollowLiveSettings(ProcTable& pt, ProcEntry& self, Config* cfg, uint32_t* seen_live_gen) {
  uint32_t lg = pt.live_gen.load();
  if (lg != *seen_live_gen) {
    *seen_live_gen = lg;
    SetLogLevel(static_cast<LogLevel>(pt.live_loglevel.load()));
  }
  std::string bytes;
  uint32_t gen = 0;
  if (FetchReload(pt.reload, self.config_gen.load(), &bytes, &gen) != ReloadFetch::kNew) return false;
  std::string err;
  bool ok = ApplyReloadBytes(bytes, cfg, &err);
  Wipe(bytes.data(), bytes.size());
  if (ok) {
    LOG_INFO("configuration reload %u applied", gen);
  } else {
    LOG_ERR("configuration reload %u not applied: %s", gen, err.c_str());
  }
  self.config_gen.store(gen);
  return ok;
}

}  // namespace proc
