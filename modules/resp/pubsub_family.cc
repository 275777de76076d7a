// perfcached — RESP pub/sub for the daemon's events (Redis keyspace-notification style).
// Copyright (c) 2026 the perfcached authors.
//
// SUBSCRIBE / PSUBSCRIBE / UNSUBSCRIBE / PUNSUBSCRIBE with Redis's RESP2
// replies and subscribed-mode rules. What is published is the daemon's own
// events, on Redis's keyspace channels where one exists:
//   E_PERF_EXPIRED  ->  __keyevent@<db>__:expired  (message: the key)
//                       __keyspace@<db>__:<key>    (message: "expired")
//   E_PERF_EVICTED  ->  __keyevent@<db>__:evicted, __keyspace@<db>__:<key> ("evicted")
//   other events    ->  __perfcached__:<EVENT>     (message: the JSON params)
// <db> is the SELECT index of the collection (its name if it has none).
// Events reach the workers as datagrams on each worker's event channel, a
// socketpair only the daemon's processes can write to (proc/events.h); a worker is subscribed to them only while one of its
// connections is in subscribed mode, so with no subscriber nothing is sent.
// Not built: PUBLISH between clients (unknown command, as before).
#include <algorithm>

#include "cache/glob.h"
#include "mi/mi.h"
#include "modules/resp/command.h"
#include "modules/resp/event_decode.h"
#include "proc/events.h"

namespace modules::resp {
namespace {

size_t Count(const net::Conn& c) { return c.channels.size() + c.patterns.size(); }

void SetWorkerSubscribed(Env& e, bool on) {
  if (e.event_rank <= 0) return;
  for (uint32_t ev = 1; ev < proc::kEvCount; ++ev) {
    if (on) {
      (void)proc::SubscribeWorker(e.procs->events, static_cast<proc::EventId>(ev), e.event_rank);
    } else {
      proc::UnsubscribeWorker(e.procs->events, static_cast<proc::EventId>(ev), e.event_rank);
    }
  }
}

void Enter(Env& e, net::Conn& c, bool was) {
  if (!was && c.subscribed() && e.pubsub_conns++ == 0) SetWorkerSubscribed(e, true);
}

void Ack(CmdCtx& c, const char* kind, std::string_view name, bool null_name = false) {
  c.r.Array(3);
  c.r.Bulk(kind);
  if (null_name) {
    c.r.Null();
  } else {
    c.r.Bulk(name);
  }
  c.r.Int(static_cast<long long>(Count(c.conn)));
}

void SubscribeGeneric(CmdCtx& c, bool pattern) {
  bool was = c.conn.subscribed();
  auto& list = pattern ? c.conn.patterns : c.conn.channels;
  for (size_t i = 1; i < c.argc(); ++i) {
    std::string n(c.arg(i));
    if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
    Ack(c, pattern ? "psubscribe" : "subscribe", n);
  }
  Enter(c.env, c.conn, was);
}

void UnsubscribeGeneric(CmdCtx& c, bool pattern) {
  bool was = c.conn.subscribed();
  auto& list = pattern ? c.conn.patterns : c.conn.channels;
  const char* kind = pattern ? "punsubscribe" : "unsubscribe";
  if (c.argc() == 1) {
    if (list.empty()) Ack(c, kind, "", true);
    std::vector<std::string> all = list;
    for (const auto& n : all) {
      list.erase(std::find(list.begin(), list.end(), n));
      Ack(c, kind, n);
    }
  } else {
    for (size_t i = 1; i < c.argc(); ++i) {
      auto it = std::find(list.begin(), list.end(), c.arg(i));
      if (it != list.end()) list.erase(it);
      Ack(c, kind, c.arg(i));
    }
  }
  if (was && !c.conn.subscribed()) PubSubLeave(c.env, c.conn);
}

void CmdSubscribe(CmdCtx& c) { SubscribeGeneric(c, false); }
void CmdPSubscribe(CmdCtx& c) { SubscribeGeneric(c, true); }
void CmdUnsubscribe(CmdCtx& c) { UnsubscribeGeneric(c, false); }
void CmdPUnsubscribe(CmdCtx& c) { UnsubscribeGeneric(c, true); }

constexpr CommandSpec kPubSubCommands[] = {
    {"subscribe", -2, kPubSub, &CmdSubscribe},
    {"psubscribe", -2, kPubSub, &CmdPSubscribe},
    {"unsubscribe", -1, kPubSub, &CmdUnsubscribe},
    {"punsubscribe", -1, kPubSub, &CmdPUnsubscribe},
};

void Publish(Env& e, const std::string& channel, const std::string& message) {
  if (!e.server) return;
  e.server->ForEachMutable([&](net::Conn& c) {
    if (!c.subscribed()) return;
    std::string out;
    net::Reply r(&out);
    if (std::find(c.channels.begin(), c.channels.end(), channel) != c.channels.end()) {
      r.Array(3);
      r.Bulk("message");
      r.Bulk(channel);
      r.Bulk(message);
    }
    for (const auto& p : c.patterns) {
      if (!cache::GlobMatch(p, channel)) continue;
      r.Array(4);
      r.Bulk("pmessage");
      r.Bulk(p);
      r.Bulk(channel);
      r.Bulk(message);
    }
    if (!out.empty()) e.server->Push(c, out);
  });
}

}  // namespace

void RegisterPubSubFamily(Env& e) { Register(e, kPubSubCommands); }

void PubSubLeave(Env& e, net::Conn& c) {
  (void)c;
  if (e.pubsub_conns > 0 && --e.pubsub_conns == 0) SetWorkerSubscribed(e, false);
}

void PubSubDeliver(Env& e, std::string_view datagram) {
  std::vector<Publication> pubs;
  if (!DecodeEvent(datagram, e.db_names, &pubs)) return;
  for (const auto& p : pubs) Publish(e, p.channel, p.message);
}

}  // namespace modules::resp
