// perfcached — logging.
// Copyright (c) 2026 the perfcached authors.
#include "proc/log.h"

#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace proc {
namespace {

bool g_syslog = false;
bool g_stderr_too = false;  // daemonizing: until ready, stderr hears it too
bool g_journal = false;     // stderr is systemd's journal: "<N>" priority, no time stamp
LogLevel g_level = LogLevel::kNotice;
const char* g_role = "perfcached";
const char* kNames[] = {"error", "warning", "notice", "info", "debug"};
const int kSyslog[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};

// systemd sets JOURNAL_STREAM="DEVICE:INODE" of the stream it gives the
// service as stdout/stderr; it is ours only if stderr still is that stream.
bool StderrIsJournal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  struct stat st;
  return js && std::sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
         static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

}  // namespace

void LogInit(bool to_syslog, LogLevel level) {
  g_syslog = to_syslog;
  g_level = level;
  g_journal = !to_syslog && StderrIsJournal();
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
  if (g_journal) {  // the journal stamps the time; "<N>" is the line's priority
    std::fprintf(stderr, "<%d>%d %s %s: %s\n", kSyslog[static_cast<int>(l)], static_cast<int>(getpid()), g_role,
                 kNames[static_cast<int>(l)], msg);
    return;
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
