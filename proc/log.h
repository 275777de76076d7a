// perfcached — logging: levels, stderr in the foreground (the journal under systemd), syslog when daemonized.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstdarg>
#include <string_view>

namespace proc {

enum class LogLevel : int { kError = 0, kWarning, kNotice, kInfo, kDebug };

void LogInit(bool to_syslog, LogLevel level);
void LogSetRole(const char* role);  // shown in every line ("supervisor", "worker 3")
// Daemonizing: until the daemon serves, every line goes to stderr as well
// as syslog (a start-up failure is seen where it was started, with or
// without a syslog daemon).
void LogAlsoStderr(bool on);
bool LogLevelFromName(std::string_view name, LogLevel* out);
const char* LogLevelName(LogLevel l);
LogLevel CurrentLogLevel();
void SetLogLevel(LogLevel l);

void Log(LogLevel l, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace proc

#define LOG_ERR(...) ::proc::Log(::proc::LogLevel::kError, __VA_ARGS__)
#define LOG_WARN(...) ::proc::Log(::proc::LogLevel::kWarning, __VA_ARGS__)
#define LOG_NOTICE(...) ::proc::Log(::proc::LogLevel::kNotice, __VA_ARGS__)
#define LOG_INFO(...) ::proc::Log(::proc::LogLevel::kInfo, __VA_ARGS__)
#define LOG_DEBUG(...) ::proc::Log(::proc::LogLevel::kDebug, __VA_ARGS__)
