// perfcached — door claims (see claim.h).
// Copyright (c) 2026 the perfcached authors.
#include "proc/claim.h"

#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "proc/config.h"

namespace proc {
namespace {

std::vector<int> g_claims;

// The abstract address of a key; a key too long for sun_path is hashed
// (FNV-1a 64): the name stays unique per door in practice.
socklen_t ClaimAddr(const std::string& key, sockaddr_un* sa) {
  std::memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  std::string name = "perfcached:" + key;
  if (name.size() + 1 > sizeof sa->sun_path) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char ch : key) h = (h ^ ch) * 1099511628211ull;
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    name = "perfcached:" + key.substr(0, 60) + "#" + hex;
  }
  std::memcpy(sa->sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// The pid holding a claim, or 0 when it cannot be learned.
int HolderPid(const sockaddr_un& sa, socklen_t len) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  int pid = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&sa), len) == 0) {
    ucred cr{};
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) pid = cr.pid;
  }
  close(fd);
  return pid;
}

}  // namespace

bool ClaimDoor(const std::string& key, const std::string& what, std::string* err) {
  if (key.empty()) return true;  // nothing to claim (TcpDoorKey of port 0)
  sockaddr_un sa;
  socklen_t len = ClaimAddr(key, &sa);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = what + ": cannot make a claim socket: " + std::strerror(errno);
    return false;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    int e = errno;
    close(fd);
    if (e == EADDRINUSE) {
      int pid = HolderPid(sa, len);
      *err = what + ": another perfcached " +
             (pid > 0 ? "(pid " + std::to_string(pid) + ") " : std::string()) + "serves it";
    } else {
      *err = what + ": cannot claim it: " + std::strerror(e);
    }
    return false;
  }
  if (listen(fd, 16) != 0) {
    *err = what + ": cannot claim it: " + std::strerror(errno);
    close(fd);
    return false;
  }
  g_claims.push_back(fd);
  return true;
}

bool TcpDoorKey(const std::string& hostport, std::string* key, std::string* err) {
  std::string host;
  int port;
  if (!ParseHostPort(hostport, &host, &port)) {
    *err = "bad listen address " + hostport;
    return false;
  }
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
  // Port 0 (any free port) is nobody's to claim: each bind gets its own.
  *key = port == 0 ? std::string() : "tcp:" + std::string(num) + ":" + std::to_string(port);
  return true;
}

std::string PathDoorKey(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  char real[PATH_MAX];
  std::string d = realpath(dir.c_str(), real) ? std::string(real) : dir;
  if (d.empty() || d.back() != '/') d += '/';
  return "path:" + d + base;
}

void ServeDoorClaims() {
  for (int fd : g_claims) {
    for (int i = 0; i < 16; ++i) {
      int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      close(c);
    }
  }
}

void ReleaseDoorClaims() {
  for (int fd : g_claims) close(fd);
  g_claims.clear();
}

bool ProbeTcpFree(const std::string& hostport, std::string* err) {
  std::string host;
  int port;
  if (!ParseHostPort(hostport, &host, &port)) {
    *err = "bad listen address " + hostport;
    return false;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *err = "cannot resolve " + host + ": " + gai_strerror(rc);
    return false;
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  // SO_REUSEADDR (a connection in TIME_WAIT is no owner), never
  // SO_REUSEPORT: this bind fails while anybody listens on the address.
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool ok = fd >= 0 && bind(fd, res->ai_addr, res->ai_addrlen) == 0;
  int e = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (!ok) {
    *err = "cannot listen on " + hostport + ": " +
           (e == EADDRINUSE ? std::string("address in use (another process listens there)")
                            : std::string(std::strerror(e)));
  }
  return ok;
}

bool MakeParentDirs(const std::string& path, std::string* err) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  std::string dir = path.substr(0, slash);
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

}  // namespace proc
