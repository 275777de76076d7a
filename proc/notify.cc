// perfcached — the systemd notification protocol (sd_notify), without libsystemd.
// Copyright (c) 2026 the perfcached authors.
#include "proc/notify.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "proc/log.h"

namespace proc {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

NotifyEnv ParseNotifyEnv(const char* notify_socket, const char* watchdog_usec, const char* watchdog_pid,
                         pid_t self) {
  NotifyEnv e;
  if (notify_socket && *notify_socket) {
    std::string_view s(notify_socket);
    if (s[0] != '/' && s[0] != '@') {
      e.ignored = "NOTIFY_SOCKET=" + std::string(s) + ": not an absolute path or @abstract name";
    } else if (s.size() >= sizeof e.addr.sun_path || s.size() < 2) {
      e.ignored = "NOTIFY_SOCKET: a socket address of " + std::to_string(s.size()) +
                  " bytes does not fit (2.." + std::to_string(sizeof e.addr.sun_path - 1) + ")";
    } else {
      e.addr.sun_family = AF_UNIX;
      std::memcpy(e.addr.sun_path, s.data(), s.size());
      if (s[0] == '@') e.addr.sun_path[0] = '\0';  // abstract: exact length, no NUL at the end
      e.addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + s.size() + (s[0] == '/' ? 1 : 0));
    }
  }
  if (watchdog_usec && *watchdog_usec) {
    uint64_t us = 0, pid = 0;
    if (!ParseU64(watchdog_usec, &us) || us == 0) {
      e.ignored += (e.ignored.empty() ? "" : "; ") + std::string("WATCHDOG_USEC=") + watchdog_usec +
                   ": not a positive number of microseconds";
    } else if (watchdog_pid && *watchdog_pid &&
               (!ParseU64(watchdog_pid, &pid) || pid != static_cast<uint64_t>(self))) {
      e.ignored += (e.ignored.empty() ? "" : "; ") + std::string("WATCHDOG_PID=") + watchdog_pid +
                   " is not this process (" + std::to_string(self) + "): no watchdog";
    } else {
      e.watchdog_us = us;
    }
  }
  return e;
}

std::string NotifyMessage(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  std::string m;
  for (const auto& [k, v] : kv) {
    if (!m.empty()) m += '\n';
    m.append(k).append("=");
    for (char ch : v) m += ch == '\n' ? ' ' : ch;
  }
  return m;
}

Notifier Notifier::FromEnvironment() {
  NotifyEnv e = ParseNotifyEnv(getenv("NOTIFY_SOCKET"), getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  return Notifier(e);
}

bool Notifier::Send(std::string_view message) {
  if (!enabled()) return false;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ssize_t n = -1;
  int err = 0;
  if (fd >= 0) {
    n = sendto(fd, message.data(), message.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&env_.addr),
               env_.addr_len);
    err = errno;
    close(fd);
  } else {
    err = errno;
  }
  if (n == static_cast<ssize_t>(message.size())) return true;
  if (!warned_) {
    warned_ = true;
    LOG_WARN("systemd notification not sent (%s): %s (logged once)", std::strerror(err),
             std::string(message.substr(0, message.find('\n'))).c_str());
  }
  return false;
}

void Notifier::Reloading() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  std::string now = std::to_string(uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000);
  Send(NotifyMessage({{"RELOADING", "1"}, {"MONOTONIC_USEC", now}, {"STATUS", "reloading the configuration"}}));
}

}  // namespace proc
