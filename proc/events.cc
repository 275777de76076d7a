// perfcached — event subscribers and datagram delivery.
// Copyright (c) 2026 the perfcached authors.
#include "proc/events.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstring>

namespace proc {
namespace {

constexpr const char* kNames[kEvCount] = {"", "E_PERF_EXPIRED", "E_PERF_NOMEM", "E_PERF_GROWN",
                                          "E_PERF_MEM_DEGRADED", "E_PERF_EVICTED"};

std::string JsonString(std::string_view s) {
  std::string o = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default:
        if (ch < 0x20 || ch >= 0x80) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", ch);  // bytes, not UTF-8: escaped one by one
          o += b;
        } else {
          o += static_cast<char>(ch);
        }
    }
  }
  return o + "\"";
}

// A worker's channel is stored as "%w<rank>" (no socket path starts with '%').
std::vector<int> g_worker_fds;

std::string WorkerPath(int rank) { return "%w" + std::to_string(rank); }

int WorkerFd(const char* path) {
  if (path[0] != '%' || path[1] != 'w') return -1;
  int rank = std::atoi(path + 2);
  if (rank < 1 || static_cast<size_t>(rank) > g_worker_fds.size()) return -1;
  return g_worker_fds[static_cast<size_t>(rank) - 1];
}

bool AddLocked(EventTable& t, EventId e, const std::string& path, int64_t expire_ms) {
  EventSub* slot = nullptr;
  for (auto& s : t.subs) {  // re-subscribing refreshes the expiry
    if (s.event.load() == e && path == s.path) slot = &s;
  }
  bool fresh = slot == nullptr;
  for (auto& s : t.subs) {
    if (!slot && s.event.load() == kEvNone) slot = &s;
  }
  if (!slot) return false;
  slot->expire_ms.store(expire_ms);
  if (fresh) {
    std::memset(slot->path, 0, sizeof slot->path);
    std::memcpy(slot->path, path.data(), path.size());
    slot->event.store(e);
    t.count[e].fetch_add(1);
  }
  return true;
}

bool RemoveLocked(EventTable& t, EventId e, const std::string& path) {
  bool found = false;
  for (auto& s : t.subs) {
    if (s.event.load() == e && path == s.path) {
      s.event.store(kEvNone);
      t.count[e].fetch_sub(1);
      found = true;
    }
  }
  return found;
}

// Drop expired subscribers (lock held).
void ExpireLocked(EventTable& t, int64_t now) {
  for (auto& s : t.subs) {
    uint32_t ev = s.event.load();
    int64_t x = s.expire_ms.load();
    if (ev != kEvNone && x != 0 && x <= now) {
      s.event.store(kEvNone);
      t.count[ev].fetch_sub(1);
    }
  }
}

}  // namespace

const char* EventName(EventId e) { return e < kEvCount ? kNames[e] : ""; }

EventId EventFromName(std::string_view name) {
  for (uint32_t i = 1; i < kEvCount; ++i) {
    if (name == kNames[i]) return static_cast<EventId>(i);
  }
  return kEvNone;
}

EventParam P(std::string name, std::string_view s) { return {std::move(name), JsonString(s)}; }
EventParam P(std::string name, int64_t v) { return {std::move(name), std::to_string(v)}; }

bool Subscribe(EventTable& t, EventId e, const std::string& socket, int64_t expire_ms,
               std::string* err) {
  if (socket.rfind("unix:", 0) != 0 || socket.size() <= 5 ||
      (socket[5] != '/' && socket[5] != '@')) {
    *err = "socket must be unix:/path/to/socket";
    return false;
  }
  std::string path = socket.substr(5);
  if (path.size() >= sizeof(EventSub::path) || path.size() >= sizeof(sockaddr_un::sun_path)) {
    *err = "socket path too long";
    return false;
  }
  if (path.find('\0') != std::string::npos) {
    *err = "socket path may not contain NUL";
    return false;
  }
  (void)mem::Lock(t.lock);  // a dead holder leaves each slot consistent
  bool ok = AddLocked(t, e, path, expire_ms);
  mem::Unlock(t.lock);
  if (!ok) *err = "too many subscribers";
  return ok;
}

bool Unsubscribe(EventTable& t, EventId e, const std::string& socket) {
  if (socket.rfind("unix:", 0) != 0) return false;
  (void)mem::Lock(t.lock);
  bool found = RemoveLocked(t, e, socket.substr(5));
  mem::Unlock(t.lock);
  return found;
}

void SetWorkerChannels(std::vector<int> write_fds) { g_worker_fds = std::move(write_fds); }

bool SubscribeWorker(EventTable& t, EventId e, int rank) {
  (void)mem::Lock(t.lock);
  bool ok = AddLocked(t, e, WorkerPath(rank), 0);
  mem::Unlock(t.lock);
  return ok;
}

void UnsubscribeWorker(EventTable& t, EventId e, int rank) {
  (void)mem::Lock(t.lock);
  (void)RemoveLocked(t, e, WorkerPath(rank));
  mem::Unlock(t.lock);
}

std::vector<SubscriberInfo> Subscribers(EventTable& t, int64_t now_ms) {
  std::vector<SubscriberInfo> v;
  (void)mem::Lock(t.lock);
  ExpireLocked(t, now_ms);
  for (auto& s : t.subs) {
    uint32_t ev = s.event.load();
    if (ev == kEvNone) continue;
    std::string where = s.path[0] == '%' ? std::string("worker:") + (s.path + 2) : std::string("unix:") + s.path;
    v.push_back({EventName(static_cast<EventId>(ev)), where, s.expire_ms.load()});
  }
  mem::Unlock(t.lock);
  return v;
}

void RaiseEvent(EventTable& t, EventId e, const std::vector<EventParam>& params, int64_t now_ms) {
  if (!HasSubscribers(t, e)) return;
  std::string msg = std::string("{\"jsonrpc\":\"2.0\",\"method\":\"") + EventName(e) + "\",\"params\":{";
  for (size_t i = 0; i < params.size(); ++i) {
    msg += (i ? "," : "") + JsonString(params[i].name) + ":" + params[i].json;
  }
  msg += "}}";
  static thread_local int fd = -1;
  if (fd < 0) fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool expired_any = false;
  for (auto& s : t.subs) {
    if (s.event.load(std::memory_order_acquire) != e) continue;
    int64_t x = s.expire_ms.load();
    if (x != 0 && x <= now_ms) {
      expired_any = true;
      continue;
    }
    if (s.path[0] == '%') {  // a worker's channel (inherited socketpair)
      int wfd = WorkerFd(s.path);
      if (wfd >= 0) (void)send(wfd, msg.data(), msg.size(), MSG_DONTWAIT);
      continue;
    }
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    size_t plen = strnlen(s.path, sizeof s.path);
    if (plen == 0 || plen >= sizeof sa.sun_path) continue;
    std::memcpy(sa.sun_path, s.path, plen);
    socklen_t sl = sizeof sa;
    if (s.path[0] == '@') {  // abstract namespace: no file, gone with the process
      sa.sun_path[0] = '\0';
      sl = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + plen);
    }
    (void)sendto(fd, msg.data(), msg.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&sa), sl);
  }
  if (expired_any) {
    (void)mem::Lock(t.lock);
    ExpireLocked(t, now_ms);
    mem::Unlock(t.lock);
  }
}

}  // namespace proc
