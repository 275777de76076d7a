// perfcached — events (OpenSIPS EVI style): subscribers in shm, delivery as datagrams.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A subscriber registers over MI (event_subscribe EVENT unix:/path [expire])
// and receives each event as one datagram holding a JSON-RPC 2.0
// notification: {"jsonrpc":"2.0","method":"E_PERF_GROWN","params":{...}}
// (the event_datagram format). Any process may raise an event; it first
// reads the per-event subscriber count (one relaxed load), so an event
// nobody subscribed to costs nothing more — no formatting, no syscall.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mem/lock.h"

namespace proc {

enum EventId : uint32_t {
  kEvNone = 0, kEvExpired, kEvNomem, kEvGrown, kEvMemDegraded, kEvEvicted, kEvCount
};
const char* EventName(EventId e);
EventId EventFromName(std::string_view name);

inline constexpr int kMaxSubscribers = 32;

struct EventSub {
  std::atomic<uint32_t> event;     // EventId, 0 = free slot
  uint32_t pad;
  std::atomic<int64_t> expire_ms;  // wall clock; 0 = never
  char path[112];                  // AF_UNIX datagram socket
};

struct EventTable {
  mem::ShmLock lock;               // subscribe / unsubscribe / expiry cleanup
  std::atomic<uint32_t> count[kEvCount];  // live subscribers per event (the fast check)
  std::atomic<uint32_t> degraded_sent;    // E_PERF_MEM_DEGRADED is one-shot
  EventSub subs[kMaxSubscribers];
};

// One event parameter (string or number), already JSON-formatted.
struct EventParam {
  std::string name;
  std::string json;
};
EventParam P(std::string name, std::string_view s);
EventParam P(std::string name, int64_t v);

inline bool HasSubscribers(const EventTable& t, EventId e) {
  return t.count[e].load(std::memory_order_relaxed) != 0;
}
// Send the event to every live subscriber (expired ones are dropped).
void RaiseEvent(EventTable& t, EventId e, const std::vector<EventParam>& params, int64_t now_ms);
// Returns false with *err when the table is full or the socket is bad.
// Only "unix:/path" and "unix:@abstract" sockets: the workers' channels
// ("worker:N") are not for MI clients.
bool Subscribe(EventTable& t, EventId e, const std::string& socket, int64_t expire_ms,
               std::string* err);
// Remove one subscription (event, socket); false when there was none.
bool Unsubscribe(EventTable& t, EventId e, const std::string& socket);

// Workers receive events for their RESP subscribers on a datagram
// socketpair the supervisor makes before forking: the read end goes to
// worker N only, the write ends are inherited by the daemon's processes and
// by nobody else, so no other local user can deliver (or forge) an event.
// SetWorkerChannels() records the write ends (index = rank - 1) in every
// process; a worker subscribes its channel as "worker:N".
void SetWorkerChannels(std::vector<int> write_fds);
bool SubscribeWorker(EventTable& t, EventId e, int rank);
void UnsubscribeWorker(EventTable& t, EventId e, int rank);
struct SubscriberInfo {
  std::string event, socket;
  int64_t expire_ms;
};
std::vector<SubscriberInfo> Subscribers(EventTable& t, int64_t now_ms);

}  // namespace proc
