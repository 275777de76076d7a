// perfcached — the systemd notification protocol (sd_notify), without libsystemd.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// systemd (Type=notify) passes NOTIFY_SOCKET, the address of a datagram
// socket, and, with WatchdogSec=, WATCHDOG_USEC (and WATCHDOG_PID, the pid
// meant). The service sends it datagrams of newline-separated assignments:
//
//   READY=1            serving (the unit is "active")
//   STATUS=text        one line for `systemctl status`
//   RELOADING=1        re-reading the configuration (MONOTONIC_USEC=now, as
//                      systemd >= 253's Type=notify-reload wants); READY=1 ends it
//   STOPPING=1         shutting down
//   WATCHDOG=1         alive (at least once per WATCHDOG_USEC, or systemd
//                      kills and, with Restart=, restarts the service)
//
// Only the supervisor notifies: Notifier::FromEnvironment() removes the
// three variables from the environment, so no child (nor anything one
// might exec) inherits the duty, and the children never call it. Without
// NOTIFY_SOCKET every call does nothing. A send that fails is logged once
// and never stops the daemon.

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace proc {

// The environment's request, parsed (no side effects).
struct NotifyEnv {
  sockaddr_un addr{};
  socklen_t addr_len = 0;     // 0: do not notify
  uint64_t watchdog_us = 0;   // 0: no watchdog
  std::string ignored;        // why a variable that was set is not used (for the log)
};
// NOTIFY_SOCKET: an absolute path, or "@name" (abstract namespace: the '@'
// becomes a NUL, the length is exact). WATCHDOG_USEC: a positive decimal;
// it is ours only when WATCHDOG_PID is unset or equals `self`. Null
// pointers stand for unset variables.
NotifyEnv ParseNotifyEnv(const char* notify_socket, const char* watchdog_usec, const char* watchdog_pid,
                         pid_t self);

// "KEY=value\n..." (no final newline). A value's newlines become spaces:
// a STATUS= never injects another assignment.
std::string NotifyMessage(std::initializer_list<std::pair<std::string_view, std::string_view>> kv);

class Notifier {
 public:
  Notifier() = default;
  explicit Notifier(const NotifyEnv& env) : env_(env) {}
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID for this process
  // and unsets them.
  static Notifier FromEnvironment();

  bool enabled() const { return env_.addr_len != 0; }
  uint64_t watchdog_us() const { return enabled() ? env_.watchdog_us : 0; }
  const std::string& ignored() const { return env_.ignored; }

  // One datagram. False when it could not be sent (logged the first time).
  bool Send(std::string_view message);
  void Ready(std::string_view status) { Send(NotifyMessage({{"READY", "1"}, {"STATUS", status}})); }
  void Status(std::string_view status) { Send(NotifyMessage({{"STATUS", status}})); }
  void Reloading();
  void Stopping(std::string_view status) { Send(NotifyMessage({{"STOPPING", "1"}, {"STATUS", status}})); }
  void Watchdog() { Send("WATCHDOG=1"); }

 private:
  NotifyEnv env_;
  bool warned_ = false;
};

}  // namespace proc
