// perfcached — one daemon per door: claims on TCP addresses and socket/FIFO paths.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Two daemons on one RESP port would both start (the workers' listening
// sockets use SO_REUSEPORT, and the kernel accepts another process of the
// same user into the group) and split the clients between them; a second
// daemon used to unlink and remake the first one's FIFO and datagram
// socket. Before it binds or makes anything, the supervisor claims each
// door it will serve:
//
//  * a claim is a listening UNIX socket in the abstract namespace named
//    after the door ("perfcached:tcp:127.0.0.1:6379", "perfcached:path:
//    /run/perfcached/perfcached_fifo"): only one process can hold the name,
//    the kernel drops it when the process dies (no stale lock file), and a
//    refused claimant learns the holder's pid by connecting (SO_PEERCRED);
//  * then a probe catches what holds the door without a claim (another
//    program, an older perfcached): a TCP bind without SO_REUSEPORT, a
//    connect() to a datagram socket, a writer's open() of a FIFO.
//
// Claims live in the supervisor; children inherit them close-on-exec and
// die with it (PR_SET_PDEATHSIG), so a claim is released when the daemon
// is gone. Only the holder of a path's claim unlinks the path.

#include <string>

namespace proc {

// Claims `key` (e.g. "tcp:127.0.0.1:6379"); `what` names the door in the
// error ("RESP door 127.0.0.1:6379"). False with *err = "...: another
// perfcached (pid N) serves it".
bool ClaimDoor(const std::string& key, const std::string& what, std::string* err);

// The canonical key of a TCP listener (numeric address:port; empty for
// port 0, which ClaimDoor takes as nothing to claim) and of a path (its
// directory resolved, which must exist).
bool TcpDoorKey(const std::string& hostport, std::string* key, std::string* err);
std::string PathDoorKey(const std::string& path);

// Supervisor's loop: answer the probes of refused claimants (accept+close).
void ServeDoorClaims();
// Give every claim up (supervisor, at exit).
void ReleaseDoorClaims();

// A TCP address is free when a socket without SO_REUSEPORT can bind it;
// false with *err naming who listens there when it cannot.
bool ProbeTcpFree(const std::string& hostport, std::string* err);

// mkdir -p of the directory part of `path` (mode 0755). False with *err.
bool MakeParentDirs(const std::string& path, std::string* err);

}  // namespace proc
