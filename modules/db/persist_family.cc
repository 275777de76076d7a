// perfcached — SAVE, BGSAVE, LASTSAVE on the RESP door (the db module's RESP rows).
// Copyright (c) 2026 the perfcached authors.
#include <strings.h>
#include <time.h>

#include "modules/db/db_module.h"
#include "modules/resp/command.h"

namespace modules::db_module {
namespace {

using resp::CmdCtx;
using resp::CommandSpec;

// SAVE: a snapshot now, in this worker (Redis's SAVE blocks the server;
// here this worker's other clients wait, the other workers serve).
void CmdSave(CmdCtx& c) {
  db::SnapshotInfo info;
  std::string err;
  // The worker beats while it walks: a long SAVE is not a stalled worker
  // (no "stalled" log, the systemd watchdog keeps being fed).
  SnapshotHooks hooks;
  proc::ProcEntry* self = c.env.self;
  hooks.progress = [self] {
    if (!self) return;
    self->heartbeat_ms.store(WallMs(), std::memory_order_relaxed);
  };
  if (!TakeSnapshot(*c.env.ctx, c.env.procs, *c.env.cfg, "SAVE", &info, &err, hooks)) return c.r.Error("ERR " + err);
  c.r.Simple("OK");
}

// BGSAVE [SCHEDULE]: the persist process takes it. SCHEDULE while one runs
// answers as Redis does and the request stays (it runs after).
void CmdBgsave(CmdCtx& c) {
  bool schedule = c.argc() == 2 && strcasecmp(std::string(c.arg(1)).c_str(), "schedule") == 0;
  if (c.argc() > 2 || (c.argc() == 2 && !schedule)) return c.r.Error("ERR syntax error");
  std::string err;
  if (RequestSnapshot(c.env.procs, *c.env.cfg, &err)) return c.r.Simple("Background saving started");
  if (schedule && err.rfind("Background save already", 0) == 0) {
    c.env.procs->snap.requests.fetch_add(1);
    return c.r.Simple("Background saving scheduled");
  }
  c.r.Error("ERR " + err);
}

// LASTSAVE: unix time of the last good snapshot (after a restart: of the
// one recovered; none yet: the daemon's start, as Redis).
void CmdLastsave(CmdCtx& c) {
  int64_t at = c.env.procs->snap.last_at_ms.load();
  if (at == 0) at = c.env.procs->started_ms.load();
  c.r.Int(at / 1000);
}

constexpr CommandSpec kPersistCommands[] = {
    {"save", 1, resp::kAdmin, &CmdSave, 0, 0, 0, "server"},
    {"bgsave", -1, resp::kAdmin, &CmdBgsave, 0, 0, 0, "server"},
    {"lastsave", 1, resp::kFast, &CmdLastsave, 0, 0, 0, "server"},
};

}  // namespace

void RegisterPersistFamily(resp::Env& e) { resp::Register(e, kPersistCommands); }

}  // namespace modules::db_module
