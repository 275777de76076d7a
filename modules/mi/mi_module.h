// perfcached — the MI door: command set and the FIFO transport process.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <event2/event.h>

#include <string>
#include <vector>

#include "mi/mi.h"
#include "proc/daemon.h"

namespace modules::mi_door {

// Register the commands this build serves (core + perf_*), bound to the
// calling process's engine context.
void RegisterCommands(mi::Registry& r, proc::ModuleProcContext& pc);
// Supervisor, before any fork: claim (proc/claim.h) and open every
// configured MI door — the FIFO, the datagram socket, the HTTP and
// XML-RPC listeners.
// False with *err when one cannot open (start-up stops). The MI process
// (and each restart of it) serves the descriptors opened here.
bool OpenMiDoors(const proc::Config& cfg, std::vector<int>* fds, std::string* err);
// Supervisor, at exit: close them and remove the FIFO and socket paths.
void CloseMiDoors(const proc::Config& cfg);
// The MI process body (FIFO and datagram transports); returns when the
// daemon stops.
void RunMi(proc::ModuleProcContext& pc);

// The HTTP door inside the MI process's event loop: GET /metrics
// (Prometheus), GET /stats (JSON), GET /health, POST /reset-stats, POST
// /mi (JSON-RPC), on the listening socket `fd` (OpenHttpListener).
// nullptr when it could not start (logged).
void* StartHttp(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg, int fd);
// The XML-RPC door (OpenSIPS mi_xmlrpc_ng) in the same loop: POST
// /<xmlrpc_root> on `fd`. nullptr when it could not start (logged).
void* StartXmlRpc(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg, int fd);
// Stops either door (nullptr: nothing).
void StopHttp(void* http);
// Supervisor: claim (a lock file in `run_dir`, proc/claim.h) and bind a
// TCP door's address (no SO_REUSEPORT: one daemon per port). -1 with
// *err = "<door>: <why>".
int OpenHttpListener(const char* door, const std::string& hostport, const std::string& run_dir, std::string* err);

}  // namespace modules::mi_door
