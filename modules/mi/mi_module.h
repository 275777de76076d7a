// perfcached — the MI door: command set and the FIFO transport process.
// Copyright (c) 2026 the perfcached authors.
#pragma once

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

}  // namespace modules::mi_door
