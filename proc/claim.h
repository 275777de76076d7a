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
//  * a claim is an flock(LOCK_EX | LOCK_NB) on a lock file, mode 0600,
//    opened O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK:
//      - a path door (MI FIFO, MI datagram socket) and the pid file: next
//        to the path, in the same directory ("/run/perfcached/
//        .perfcached_fifo.lock"), so the directory's own permissions guard
//        the claim: whoever cannot make the FIFO there cannot lock it
//        either;
//      - a TCP door (RESP, HTTP): in the run directory (RunDir: the pid
//        file's directory, made if missing), named after the numeric
//        address (".perfcached-tcp-127.0.0.1:6379.lock"); port 0 (any free
//        port) is nobody's and is not claimed.
//    A lock file that is not a regular file of this user (another user
//    made it in a world-writable directory such as /tmp) is refused with
//    its owner named, never used. The holder writes its pid into the file
//    once it holds the lock, so a refused daemon says "another perfcached
//    (pid N) serves it". No abstract UNIX socket names: that namespace
//    has no permissions, so any local user could squat a name (issue 8).
//  * then a probe catches what holds the door without a claim (another
//    program, an older perfcached, a daemon whose pid file lives in another
//    directory): a TCP bind without SO_REUSEPORT, a connect() to a
//    datagram socket, a writer's open() of a FIFO.
//
// Only the supervisor holds the locks: every child closes its inherited
// copies right after fork (CloseDoorClaimsInChild; closing a copy does not
// release an flock while the supervisor's descriptor stays open), so the
// locks go with the supervisor, even under kill -9, and no child that
// outlives it keeps a door claimed. When it stops, the supervisor removes
// each lock file while still holding it, and only when the path still
// names the file it locked; a claimant that locked a file which was
// removed meanwhile (checked by inode after locking) starts over. A lock
// file left by kill -9 is harmless: nobody holds its lock, the next daemon
// takes it. Only the holder of a path's claim unlinks the path.

#include <string>

namespace proc {

struct Config;

// Where the TCP doors' lock files live: the directory of daemon.pid_file
// (used with or without -D), /run/perfcached when pid_file is empty.
std::string RunDir(const Config& cfg);

// Claims the path door `path` (lock file "<dir>/.<name>.lock"); `what`
// names the door in the error ("MI FIFO /run/perfcached/perfcached_fifo").
// False with *err = "<what>: another perfcached (pid N) serves it", or
// "<what>: lock file F: <why>" when the lock file cannot be used.
bool ClaimPath(const std::string& path, const std::string& what, std::string* err);

// Claims the TCP address `hostport` (numeric address; port 0: nothing to
// claim) with a lock file in `run_dir`. False with *err = "cannot listen
// on HOSTPORT: address in use: another perfcached (pid N) serves it", or
// "cannot claim HOSTPORT: lock file F: <why>".
bool ClaimTcp(const std::string& hostport, const std::string& run_dir, std::string* err);

// Supervisor, at exit: remove each lock file it holds (while holding it),
// then let the locks go.
void ReleaseDoorClaims();
// A child, right after fork: close the inherited lock descriptors (the
// supervisor's stay open and keep the locks).
void CloseDoorClaimsInChild();

// A TCP address is free when a socket without SO_REUSEPORT can bind it;
// false with *err naming who listens there when it cannot.
bool ProbeTcpFree(const std::string& hostport, std::string* err);

// A non-blocking, close-on-exec TCP socket bound to `hostport`
// (SO_REUSEADDR; SO_REUSEPORT only when `reuseport`: the RESP workers'
// sockets) and listening with `backlog` (0: bound only). -1 with *err =
// "cannot listen on HOSTPORT: address in use (another process listens
// there)" or the system's reason.
int BindTcp(const std::string& hostport, bool reuseport, int backlog, std::string* err);

// mkdir -p of the directory part of `path` (mode 0755). False with *err.
bool MakeParentDirs(const std::string& path, std::string* err);

}  // namespace proc
