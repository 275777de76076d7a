// perfcached — the MI door: command set and the FIFO transport process.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <event2/event.h>

#include "mi/mi.h"
#include "proc/daemon.h"

namespace modules::mi_door {

// Register the commands this build serves (core + perf_*), bound to the
// calling process's engine context.
void RegisterCommands(mi::Registry& r, proc::ModuleProcContext& pc);
// The MI process body (FIFO and datagram transports); returns when the
// daemon stops. A transport that cannot be set up is logged and left off;
// the process stays up (exiting would make the supervisor restart it).
void RunMi(proc::ModuleProcContext& pc);

// The HTTP door inside the MI process's event loop: GET /metrics
// (Prometheus), GET /stats (JSON), GET /health, POST /reset-stats, POST
// /mi (JSON-RPC). nullptr when it could not start (logged).
void* StartHttp(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg);
void StopHttp(void* http);

}  // namespace modules::mi_door
