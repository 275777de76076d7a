// perfcached — SIGHUP: build the configuration again, apply what reloads, name what needs a restart.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// HOW IT WORKS
//
// The supervisor, on SIGHUP, builds the configuration again from the same
// source as at start (ConfigSource: the -f file, or the embedded default,
// then the -o overrides) through the same checks (BuildConfig). An invalid
// one is refused whole: logged at error, nothing changes. Otherwise every
// setting that differs from the running one is logged; a row marked
// reloadable (ParamSpec::reload, proc/config.cc) is applied, any other
// change is logged as "needs a restart" and not applied.
//
// Applying is done in three places:
//  1. The supervisor copies the reloadable rows into its own Config, so a
//     child it forks later (a restart after a crash) starts with them.
//  2. The settings that live in shared memory — the ones CONFIG SET
//     changes: log level, timeout and the client buffer limits (process
//     table), maxmemory, its policy and samples, the LFU parameters and
//     automove (catalog) — are stored there by the supervisor, only those
//     the new configuration changed: a value CONFIG SET gave stays until
//     the file changes that setting.
//  3. Everything else (the secrets, the allow lists, the timer's periods,
//     allow_create) lives in each process's own copy of the Config. The
//     supervisor publishes all reloadable rows in the process table's
//     ReloadArea (proc/proctable.h) under a new generation; every child,
//     on its tick (100 ms for workers and the timer, 500 ms for the MI
//     process), copies them out under the area's seqlock, applies them to
//     its Config, lets its modules re-read what they copied out of it (the
//     RESP door: its allow list and whether AUTH is required), and stores
//     the generation in its ProcEntry::config_gen.
//
// The supervisor watches the entries: once every running child has the
// generation it overwrites the bytes (the secrets do not stay in shared
// memory) and tells systemd READY=1 again.
//
// SEQLOCK (ReloadArea): the supervisor is the only writer: seq odd, bytes,
// len, seq even, then gen + 1. A reader takes an even seq, copies, and
// keeps the copy only if seq did not move; else it tries on its next tick.
//
// LIMITS: the encoded reloadable rows must fit kReloadBytes (64 KiB: a few
// thousand allow-list entries); a larger set is refused like an invalid
// file. Connections already open keep what they were given: one that was
// authenticated stays so after its password is removed, and one accepted
// under the old allow list stays open (close it with CLIENT KILL).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proc/config.h"
#include "proc/proctable.h"

namespace proc {

// The wire form of ReloadableValues: records "u32 key length, key, u32
// value length, value" (host order), and back. Decode is false on anything
// malformed (a truncated record, a length past the end).
std::string EncodeReload(const std::vector<std::pair<std::string, std::string>>& kv);
bool DecodeReload(std::string_view bytes, std::vector<std::pair<std::string, std::string>>* kv);

// ---- Supervisor API -----------------------------------------------------------
// (The SIGHUP itself — build, diff, log, steps 1 and 2 — is the
// supervisor's ReloadConfig() in proc/daemon.cc; this file is the channel.)

// Publish `bytes` under a new generation (returned). 0 when they do not fit.
uint32_t PublishReload(ReloadArea& r, std::string_view bytes);
// Overwrite the published bytes; the generation stays.
void WipeReload(ReloadArea& r);
// Overwrite the secrets a Config copy holds before it goes.
void WipeSecrets(Config* c);

// ---- Child API ------------------------------------------------------------------

enum class ReloadFetch { kNothing, kBusy, kNew };
// A generation other than `have` is published: copy its bytes into *bytes
// (kNew, *gen set); kBusy while the supervisor writes.
ReloadFetch FetchReload(const ReloadArea& r, uint32_t have, std::string* bytes, uint32_t* gen);
// Decode `bytes` and set them into *cfg (the reloadable rows only).
bool ApplyReloadBytes(std::string_view bytes, Config* cfg, std::string* err);
// A child's tick: follow the live log level (CONFIG SET, reload) and apply
// a published reload to *cfg, then record it in self.config_gen. True when
// a reload was applied (the caller re-reads what it copied out of *cfg).
bool FollowLiveSettings(ProcTable& pt, ProcEntry& self, Config* cfg, uint32_t* seen_live_gen);

}  // namespace proc
