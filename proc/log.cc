// perfcached — logging.
// Copyright (c) 2026 the perfcached authors.
#include "proc/log.h"

#include <sys/time.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace proc {
namespace {

bool g_syslog = false;
bool g_stderr_too = false;  // daemonizing: until ready, stderr hears it too
LogLevel g_level = LogLevel::kNotice;
const char* g_role = "perfcached";
const char* kNames[] = {"error", "warning", "notice", "info", "debug"};
const int kSyslog[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};

}  // namespace

void LogInit(bool to_syslog, LogLevel level) {
  g_syslog = to_syslog;
  g_level = level;
  if (to_syslog) openlog("perfcached", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void LogSetRole(const char* role) { g_role = role; }
void LogAlsoStderr(bool on) { g_stderr_too = on; }
LogLevel CurrentLogLevel() { return g_level; }
void SetLogLevel(LogLevel l) { g_level = l; }
const char* LogLevelName(LogLevel l) { return kNames[static_cast<int>(l)]; }

bool LogLevelFromName(std::string_view name, LogLevel* out) {
  for (int i = 0; i < 5; ++i) {
    if (name == kNames[i]) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void Log(LogLevel l, const char* fmt, ...) {
  if (static_cast<int>(l) > static_cast<int>(g_level)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (g_syslog) {
    syslog(kSyslog[static_cast<int>(l)], "%s: %s", g_role, msg);
    if (!g_stderr_too) return;
  }
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &t);
  std::fprintf(stderr, "%s.%03ld %d %s %s: %s\n", ts, static_cast<long>(tv.tv_usec / 1000),
               static_cast<int>(getpid()), g_role, kNames[static_cast<int>(l)], msg);
}

}  // namespace proc
