// perfcached — the MI door: command set and the FIFO transport process.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include "mi/mi.h"
#include "proc/daemon.h"

namespace modules::mi_door {

// Register the commands this build serves (core + perf_*), bound to the
// calling process's engine context.
void RegisterCommands(mi::Registry& r, proc::ModuleProcContext& pc);
// The MI FIFO process body; returns when the daemon stops.
void RunMiFifo(proc::ModuleProcContext& pc);

}  // namespace modules::mi_door
