// perfcached — door claims (see claim.h).
// Copyright (c) 2026 the perfcached authors.
#include "proc/claim.h"

#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "proc/config.h"

namespace proc {
namespace {

struct Held {
  int fd;
  std::string path;
  dev_t dev;
  ino_t ino;
};
std::vector<Held> g_claims;

// The pid a holder wrote into its lock file, or 0 (not written yet, or
// that process is gone).
int HolderPid(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  char* end = nullptr;
  long pid = std::strtol(buf, &end, 10);
  if (end == buf || pid <= 0 || pid > 0x3fffffff) return 0;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return 0;
  return static_cast<int>(pid);
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool MakeDirs(const std::string& dir, std::string* err) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string part = dir.substr(0, i);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      *err = "cannot create directory " + part + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *err = dir + " is not a directory";
    return false;
  }
  return true;
}

std::string NotOurs(const std::string& lock, uid_t owner) {
  std::string dir = DirOf(lock);
  struct stat ds;
  bool open_to_all = stat(dir.c_str(), &ds) == 0 && (ds.st_mode & S_IWOTH);
  return "belongs to uid " + std::to_string(owner) + ", not to this user (uid " + std::to_string(geteuid()) +
         "): not using it, it is not this user's perfcached (" +
         (open_to_all ? "any user can make files in " + dir + ": choose a directory only this user can write"
                      : "remove it if nothing of that user's uses it") +
         ")";
}

enum class Lock { kHeld, kBusy, kError };

// Locks `lock` (made if missing). kBusy with *pid = the holder's (0 when
// unknown); kError with *why.
Lock TakeLock(const std::string& lock, int* pid, std::string* why) {
  *pid = 0;
  // The holder removes its file as it stops: a file we locked but that no
  // longer is at `lock` is given up and the path opened again (bounded).
  for (int attempt = 0; attempt < 8; ++attempt) {
    // Opened first without O_CREAT: fs.protected_regular refuses O_CREAT
    // on another user's file in a sticky directory, and we want to name
    // that user, not say "Permission denied".
    const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    int fd = open(lock.c_str(), flags);
    if (fd < 0 && errno == ENOENT) {
      fd = open(lock.c_str(), flags | O_CREAT | O_EXCL, 0600);
      if (fd < 0 && errno == EEXIST) continue;  // made meanwhile: open that one
    }
    struct stat st;
    if (fd < 0) {
      int e = errno;
      if (e == EACCES && lstat(lock.c_str(), &st) == 0 && st.st_uid != geteuid()) {
        *why = NotOurs(lock, st.st_uid);
      } else {
        *why = e == ELOOP ? std::string("is a symbolic link: not following it") : std::strerror(e);
      }
      return Lock::kError;
    }
    if (fstat(fd, &st) != 0) {
      *why = std::strerror(errno);
      close(fd);
      return Lock::kError;
    }
    if (!S_ISREG(st.st_mode)) {
      *why = "is not a regular file: remove it";
      close(fd);
      return Lock::kError;
    }
    if (st.st_uid != geteuid()) {
      // Another user made it (a world-writable directory): whoever it is,
      // it is not this user's perfcached, and its lock proves nothing.
      *why = NotOurs(lock, st.st_uid);
      close(fd);
      return Lock::kError;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      if (e == EWOULDBLOCK) *pid = HolderPid(fd);
      else *why = std::string("flock: ") + std::strerror(e);
      close(fd);
      return e == EWOULDBLOCK ? Lock::kBusy : Lock::kError;
    }
    struct stat now;
    if (lstat(lock.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
      close(fd);  // its holder removed it as it stopped: take the new one
      continue;
    }
    if (st.st_mode & 077) (void)fchmod(fd, 0600);
    std::string me = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
      *why = std::string("cannot write our pid: ") + std::strerror(errno);
      close(fd);
      return Lock::kError;
    }
    g_claims.push_back({fd, lock, st.st_dev, st.st_ino});
    return Lock::kHeld;
  }
  *why = "was removed and made again 8 times in a row: giving up";
  return Lock::kError;
}

std::string Busy(int pid) {
  return "another perfcached " + (pid > 0 ? "(pid " + std::to_string(pid) + ") " : std::string()) + "serves it";
}

}  // namespace

std::string RunDir(const Config& cfg) {
  return cfg.pid_file.empty() ? std::string("/run/perfcached") : DirOf(cfg.pid_file);
}

// TakeLock with the door's words: *err = busy_pre + "another perfcached
// (pid N) serves it", or error_pre + "lock file F <why>".
static bool TakeClaim(const std::string& lock, const std::string& busy_pre, const std::string& error_pre,
               std::string* err) {
  int pid;
  std::string why;
  switch (TakeLock(lock, &pid, &why)) {
    case Lock::kHeld:
      return true;
    case Lock::kBusy:
      *err = busy_pre + Busy(pid);
      return false;
    case Lock::kError:
      break;
  }
  *err = error_pre + "lock file " + lock + " " + why;
  return false;
}

bool ClaimPath(const std::string& path, const std::string& what, std::string* err) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string lock = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "." + base + ".lock";
  return TakeClaim(lock, what + ": ", what + ": ", err);
}

bool ClaimTcp(const std::string& hostport, const std::string& run_dir, std::string* err) {
  std::string host;
  int port;
  if (!ParseHostPort(hostport, &host, &port)) {
    *err = "bad listen address " + hostport;
    return false;
  }
  if (port == 0) return true;  // any free port: each bind gets its own
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *err = "cannot resolve " + host + ": " + gai_strerror(rc);
    return false;
  }
  char num[NI_MAXHOST];
  if (getnameinfo(res->ai_addr, res->ai_addrlen, num, sizeof num, nullptr, 0, NI_NUMERICHOST) != 0) {
    std::snprintf(num, sizeof num, "%s", host.c_str());
  }
  freeaddrinfo(res);
  std::string why;
  if (!MakeDirs(run_dir, &why)) {
    *err = "cannot claim " + hostport + ": " + why + " (TCP door lock files live in daemon.pid_file's directory)";
    return false;
  }
  std::string lock = run_dir + (run_dir.back() == '/' ? "" : "/") + ".perfcached-tcp-" + num + ":" +
                     std::to_string(port) + ".lock";
  return TakeClaim(lock, "cannot listen on " + hostport + ": address in use: ", "cannot claim " + hostport + ": ",
                   err);
}

void ReleaseDoorClaims() {
  for (const Held& h : g_claims) {
    // Still ours (an operator may have removed it and another daemon made
    // and locked a new one): removed while we hold the lock.
    struct stat st;
    if (lstat(h.path.c_str(), &st) == 0 && st.st_dev == h.dev && st.st_ino == h.ino) unlink(h.path.c_str());
    close(h.fd);
  }
  g_claims.clear();
}

void CloseDoorClaimsInChild() {
  for (const Held& h : g_claims) close(h.fd);
  g_claims.clear();
}

int BindTcp(const std::string& hostport, bool reuseport, int backlog, std::string* err) {
  std::string host;
  int port;
  if (!ParseHostPort(hostport, &host, &port)) {
    *err = "bad listen address " + hostport;
    return -1;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *err = "cannot resolve " + host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  // SO_REUSEADDR: a connection in TIME_WAIT is no owner.
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd >= 0 && reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  bool ok = fd >= 0 && bind(fd, res->ai_addr, res->ai_addrlen) == 0 && (backlog == 0 || listen(fd, backlog) == 0);
  int e = errno;
  freeaddrinfo(res);
  if (!ok) {
    if (fd >= 0) close(fd);
    *err = "cannot listen on " + hostport + ": " +
           (e == EADDRINUSE ? std::string("address in use (another process listens there)")
                            : std::string(std::strerror(e)));
    return -1;
  }
  return fd;
}

bool ProbeTcpFree(const std::string& hostport, std::string* err) {
  // Without SO_REUSEPORT this bind fails while anybody listens on the address.
  int fd = BindTcp(hostport, /*reuseport=*/false, /*backlog=*/0, err);
  if (fd < 0) return false;
  close(fd);
  return true;
}

bool MakeParentDirs(const std::string& path, std::string* err) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  return MakeDirs(path.substr(0, slash), err);
}

}  // namespace proc
