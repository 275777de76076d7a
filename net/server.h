// perfcached — one worker's event loop door: accept, read, parse, dispatch, write.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A Server owns one pre-bound listening socket (SO_REUSEPORT, one per
// worker) inside the worker's libevent loop. For each connection it reads
// into the connection's input buffer, parses as many RESP commands as are
// complete (pipelining), hands each to the dispatch function, and writes
// the replies. Backpressure: when a client's unsent output passes
// kOutPause, the server stops reading and parsing that client until it
// drains, so a client that never reads its replies holds at most about
// kOutPause + one reply of memory and slows only itself.

#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/resp.h"

namespace net {

inline constexpr size_t kOutPause = 1u << 20;       // stop reading above 1 MiB unsent
inline constexpr size_t kQueryBufMax = 1u << 30;    // client-query-buffer-limit (1 GiB)

// client-output-buffer-limit of one class (Redis): a connection whose
// unsent output passes `hard` is closed at once; one that stays above
// `soft` for `soft_s` seconds is closed too. 0 = no limit.
struct OutputLimit {
  size_t hard = 0;
  size_t soft = 0;
  int soft_s = 0;
};
enum OutputClass { kClassNormal = 0, kClassPubSub = 1, kOutputClasses };

struct Cidr {
  bool v6 = false;
  uint8_t addr[16] = {};
  int bits = 0;
};
bool ParseCidr(std::string_view s, Cidr* out);

class Server;

struct Conn {
  int fd = -1;
  uint64_t id = 0;
  event* rev = nullptr;
  event* wev = nullptr;
  Server* srv = nullptr;
  std::string in;
  size_t in_pos = 0;
  std::string out;
  size_t out_pos = 0;
  // The output limit while a reply is built (Reply's cap, see net/resp.h);
  // out_over is set when a reply hit it.
  size_t out_cap = SIZE_MAX;
  bool out_over = false;
  int64_t soft_since_ms = 0;      // above the soft output limit since
  RespParser parser;
  bool reading = true;
  bool close_after_write = false;
  bool closing = false;
  // Session state used by the command handlers.
  int db = 0;
  bool authed = false;
  std::string name;
  std::string addr;       // "ip:port"
  std::string laddr;
  int64_t created_ms = 0;
  int64_t last_ms = 0;
  const char* last_cmd = "NULL";  // static string (a command row's name)
  std::vector<std::string_view> argv;  // current command
  // A long command (KEYS over a big table) runs in slices: the handler sets
  // `cont`; the server calls it again from the event loop (other clients
  // are served in between) until it returns true, and only then reads the
  // next command of this client.
  std::function<bool(Conn&)> cont;
  // Pub/sub: in subscribed mode while either list is non-empty.
  std::vector<std::string> channels;
  std::vector<std::string> patterns;
  bool subscribed() const { return !channels.empty() || !patterns.empty(); }
  event* cont_ev = nullptr;
  // Durability (the WAL under fsync = always): while non-zero, the replies
  // are not sent and no further command is read, until the server's
  // `durable` check passes for this position (Server::ReleaseHeld).
  uint64_t hold_until = 0;
  int64_t hold_since_ms = 0;  // when the hold began (DropHeld)
  bool in_held = false;       // listed in the server's held_ (once)
  bool flush_queued = false;  // listed in the server's to_flush_ (once)
  bool no_evict = false;      // CLIENT NO-EVICT on: never closed by maxmemory-clients
  size_t pending() const { return out.size() - out_pos; }
  // What this client holds (Redis's tot-mem): its buffers as allocated,
  // the argument table, its name and subscriptions, and the Conn itself.
  size_t Memory() const;
};

struct ServerOptions {
  int maxclients = 10000;          // for the whole daemon (see `clients`)
  // Connections open across every worker (a counter in shared memory):
  // maxclients is exact however the kernel spreads connections.
  std::atomic<int32_t>* clients = nullptr;
  int timeout_s = 0;
  RespLimits limits;
  size_t query_buf_max = kQueryBufMax;  // input + argument table per client
  OutputLimit output[kOutputClasses] = {{128u << 20, 0, 0}, {32u << 20, 8u << 20, 60}};
  std::vector<Cidr> allow;         // empty = loopback only off-loopback checks
  bool require_allow = false;      // non-loopback peers need an allow match
  bool auth_required = false;
  uint64_t id_base = 0;            // client ids: unique across workers
  std::function<void(Conn&)> on_close;  // told before a connection goes away
  // Held replies (Conn::hold_until): is this position durable yet; and
  // "some connection waits" on / off (whoever publishes durability then
  // wakes the loop, which calls ReleaseHeld).
  std::function<bool(uint64_t)> durable;
  std::function<void(bool)> waiting;
  // Called once at the end of an event-loop round in which replies were
  // newly held (after that round's replies went out): the worker commits
  // the round's records itself (fsync = always, [wal] commit = worker).
  // kCommitted: it did, and the held replies that are durable now are
  // sent; kCommitAgain: and another worker asked for a turn meanwhile:
  // called again on the next loop iteration (after its sockets are read).
  std::function<int()> commit;
};

enum CommitResult { kCommitNone = 0, kCommitted = 1, kCommitAgain = 2 };

// Handle argv (c.argv), append the reply to c.out. May set close_after_write.
using DispatchFn = std::function<void(Conn& c)>;

class Server {
 public:
  Server(event_base* base, int listen_fd, const ServerOptions& o, DispatchFn dispatch,
         std::atomic<uint64_t>* counters);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Stop accepting (SIGTERM); existing connections finish their replies.
  void StopAccepting();
  // Close every connection with nothing left to send; true when none left.
  bool DrainIdle();
  size_t connections() const { return conns_; }
  void ForEach(const std::function<void(const Conn&)>& fn) const;
  // Append bytes to a connection's output and send what the socket takes
  // (pub/sub messages). A subscriber over the pubsub output limit is
  // closed, as Redis's client-output-buffer-limit does.
  void Push(Conn& c, std::string_view bytes);
  void ForEachMutable(const std::function<void(Conn&)>& fn);
  void CloseIdle(int64_t now_ms);  // timeout enforcement
  void Kill(uint64_t id);          // CLIENT KILL ID
  // maxmemory-clients: the memory of every client of this server, and
  // (*biggest) of its largest one that may be evicted (not NO-EVICT, not
  // waiting for durability; 0 = none).
  uint64_t ClientMemory(uint64_t* biggest) const;
  // Close evictable clients largest first while go(its memory) says yes
  // (each counted in kDoorEvictedClients); how many were closed. One pass
  // over the connections and one sort, however many go.
  size_t EvictLargest(const std::function<bool(uint64_t)>& go);
  const ServerOptions& options() const { return opt_; }
  void set_timeout(int s) { opt_.timeout_s = s; }
  // A reload (SIGHUP): who may connect and whether AUTH is required, for
  // the connections accepted from now on (open ones keep their state).
  void set_access(std::vector<Cidr> allow, bool auth_required) {
    opt_.allow = std::move(allow);
    opt_.auth_required = auth_required;
  }
  // Live limits (CONFIG SET): applied to the next command of every client.
  void set_limits(size_t max_bulk, size_t query_buf_max, const OutputLimit* output);
  // Soft output limits are also checked here, for clients that send nothing.
  void CheckOutputLimits(int64_t now_ms);
  // Send the replies whose records became durable, and go on reading
  // those connections' commands.
  void ReleaseHeld();
  size_t held() const { return held_.size(); }
  // Close every connection whose replies have waited longer than max_ms
  // (their records cannot be made durable: a full disk, a hung one): the
  // clients get no acknowledgement. Returns how many.
  size_t DropHeld(int64_t now_ms, int64_t max_ms);

 private:
  static void OnAccept(evutil_socket_t fd, short, void* arg);
  static void OnRead(evutil_socket_t fd, short, void* arg);
  static void OnWrite(evutil_socket_t fd, short, void* arg);
  static void OnCont(evutil_socket_t fd, short, void* arg);
  static void OnCommit(evutil_socket_t, short, void* arg);
  static void OnCommitAgain(evutil_socket_t, short, void* arg);
  void Commit();
  static void OnFlushAll(evutil_socket_t fd, short, void* arg);
  void QueueFlush(Conn* c);
  // The connection listed as (fd, id), or null if it was closed (its fd
  // may be another connection's by now).
  Conn* Live(int fd, uint64_t id) const;
  void Process(Conn* c);
  bool ProcessStep(Conn* c);  // one pass of Process; true: run it again
  bool Admit();
  template <typename F>
  void Guarded(Conn* c, F fn);
  bool Flush(Conn* c);  // false: the connection was closed
  void Close(Conn* c);
  void Count(int stat, uint64_t n = 1);
  // True (and the connection closed and counted) when c is over its output limit.
  bool OverOutputLimit(Conn* c, int64_t now_ms);
  bool OverQueryLimit(const Conn* c) const;

  event_base* base_;
  int lfd_;
  event* accept_ev_ = nullptr;
  ServerOptions opt_;
  DispatchFn dispatch_;
  std::atomic<uint64_t>* counters_;
  std::vector<Conn*> all_;  // index = fd (sparse)
  std::vector<std::pair<int, uint64_t>> held_;  // (fd, id) of connections waiting for durability
  // (fd, id) of connections whose replies go out at the end of this loop
  // round (QueueFlush), and the list being sent.
  std::vector<std::pair<int, uint64_t>> to_flush_, flushing_;
  event* flush_ev_ = nullptr;
  event* commit_ev_ = nullptr;        // ServerOptions::commit, at the end of the round
  event* commit_again_ev_ = nullptr;  // ... on the next loop iteration (kCommitAgain)
  size_t conns_ = 0;
  uint64_t next_id_ = 0;
};

// Door counter indices (match proc::DoorStat).
enum : int { kCtrOpen = 0, kCtrAccepted, kCtrRejected, kCtrCommands, kCtrErrors, kCtrBytesIn,
             kCtrBytesOut, kCtrOutputLimit, kCtrQueryLimit, kCtrEvictedClients };

int64_t WallMs();

}  // namespace net
