// perfcached — per-worker connection handling over libevent.
// Copyright (c) 2026 the perfcached authors.
#include "net/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>

namespace net {
namespace {

bool PeerIsLoopback(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    auto* s4 = reinterpret_cast<const sockaddr_in*>(&ss);
    return (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) return s6->sin6_addr.s6_addr[12] == 127;
  }
  return ss.ss_family == AF_UNIX;
}

bool CidrMatch(const Cidr& c, const sockaddr_storage& ss) {
  uint8_t a[16];
  bool v6;
  if (ss.ss_family == AF_INET) {
    std::memcpy(a, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, 4);
    v6 = false;
  } else if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
      std::memcpy(a, s6->sin6_addr.s6_addr + 12, 4);
      v6 = false;
    } else {
      std::memcpy(a, s6->sin6_addr.s6_addr, 16);
      v6 = true;
    }
  } else {
    return false;
  }
  if (v6 != c.v6) return false;
  int bits = c.bits;
  for (int i = 0; bits > 0; ++i, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xFF : static_cast<uint8_t>(0xFF << (8 - bits));
    if ((a[i] & mask) != (c.addr[i] & mask)) return false;
  }
  return true;
}

std::string AddrString(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* s4 = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
    port = ntohs(s4->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
    port = ntohs(s6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

int64_t WallMs() {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return int64_t{tv.tv_sec} * 1000 + tv.tv_usec / 1000;
}

bool ParseCidr(std::string_view s, Cidr* out) {
  std::string_view addr = s;
  int bits = -1;
  if (size_t slash = s.find('/'); slash != std::string_view::npos) {
    addr = s.substr(0, slash);
    std::string_view b = s.substr(slash + 1);
    auto r = std::from_chars(b.data(), b.data() + b.size(), bits);
    if (r.ec != std::errc() || r.ptr != b.data() + b.size()) return false;
  }
  std::string a(addr);
  Cidr c;
  if (inet_pton(AF_INET, a.c_str(), c.addr) == 1) {
    c.v6 = false;
    if (bits < 0) bits = 32;
    if (bits > 32) return false;
  } else if (inet_pton(AF_INET6, a.c_str(), c.addr) == 1) {
    c.v6 = true;
    if (bits < 0) bits = 128;
    if (bits > 128) return false;
  } else {
    return false;
  }
  c.bits = bits;
  *out = c;
  return true;
}

Server::Server(event_base* base, int listen_fd, const ServerOptions& o, DispatchFn dispatch,
               std::atomic<uint64_t>* counters)
    : base_(base),
      lfd_(listen_fd),
      opt_(o),
      dispatch_(std::move(dispatch)),
      counters_(counters),
      next_id_(o.id_base) {
  accept_ev_ = event_new(base_, lfd_, EV_READ | EV_PERSIST, &Server::OnAccept, this);
  event_add(accept_ev_, nullptr);
  flush_ev_ = event_new(base_, -1, 0, &Server::OnFlushAll, this);
  if (o.commit) {
    commit_ev_ = event_new(base_, -1, 0, &Server::OnCommit, this);
    commit_again_ev_ = evtimer_new(base_, &Server::OnCommitAgain, this);
  }
}

Server::~Server() {
  if (accept_ev_) event_free(accept_ev_);
  // A loop broken in the middle of a round (the worker's forced stop) left
  // the round's replies queued: send what the sockets take before closing.
  if (!to_flush_.empty()) OnFlushAll(-1, 0, this);
  if (flush_ev_) event_free(flush_ev_);
  if (commit_ev_) event_free(commit_ev_);
  if (commit_again_ev_) event_free(commit_again_ev_);
  for (Conn* c : all_) {
    if (c) Close(c);
  }
}

void Server::Count(int stat, uint64_t n) {
  if (!counters_) return;
  auto& v = counters_[stat];
  v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

void Server::StopAccepting() {
  if (accept_ev_) {
    event_free(accept_ev_);
    accept_ev_ = nullptr;
  }
  if (lfd_ >= 0) {
    close(lfd_);
    lfd_ = -1;
  }
}

bool Server::DrainIdle() {
  for (Conn* c : all_) {
    if (c && c->pending() == 0) Close(c);
  }
  return conns_ == 0;
}


void Server::ForEach(const std::function<void(const Conn&)>& fn) const {
  for (const Conn* c : all_) {
    if (c) fn(*c);
  }
}

void Server::Push(Conn& c, std::string_view bytes) {
  const OutputLimit& l = opt_.output[kClassPubSub];
  if (l.hard && c.pending() + bytes.size() > l.hard) {
    c.out_over = true;
    (void)OverOutputLimit(&c, WallMs());  // closes it
    return;
  }
  c.out.append(bytes);
  if (OverOutputLimit(&c, WallMs())) return;
  (void)Flush(&c);
}

void Server::set_limits(size_t max_bulk, size_t query_buf_max, const OutputLimit* output) {
  opt_.limits.max_bulk = max_bulk;
  opt_.query_buf_max = query_buf_max;
  for (int k = 0; k < kOutputClasses; ++k) opt_.output[k] = output[k];
}

bool Server::OverOutputLimit(Conn* c, int64_t now_ms) {
  const OutputLimit& l = opt_.output[c->subscribed() ? kClassPubSub : kClassNormal];
  size_t pending = c->pending();
  bool over = c->out_over || (l.hard && pending > l.hard);
  if (!over && l.soft && pending > l.soft) {
    if (c->soft_since_ms == 0) {
      c->soft_since_ms = now_ms;
    } else if (now_ms - c->soft_since_ms >= int64_t{l.soft_s} * 1000) {
      over = true;
    }
  } else if (pending <= l.soft) {
    c->soft_since_ms = 0;
  }
  if (!over) return false;
  Count(kCtrOutputLimit);
  // Reset, not FIN: what the kernel still holds for this client is dropped
  // with it instead of trickling out to a reader that is not reading.
  linger lg{1, 0};
  setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  Close(c);
  return true;
}

void Server::CheckOutputLimits(int64_t now_ms) {
  for (Conn* c : all_) {
    if (c && c->pending() > 0) (void)OverOutputLimit(c, now_ms);
  }
}

bool Server::OverQueryLimit(const Conn* c) const {
  return c->in.size() - c->in_pos + c->parser.table_bytes() > opt_.query_buf_max;
}

void Server::ForEachMutable(const std::function<void(Conn&)>& fn) {
  // Copy first: fn may close (and free) a connection.
  std::vector<Conn*> live;
  for (Conn* c : all_) {
    if (c) live.push_back(c);
  }
  for (Conn* c : live) fn(*c);
}

void Server::CloseIdle(int64_t now_ms) {
  if (opt_.timeout_s <= 0) return;
  for (Conn* c : all_) {
    // Subscribers are never idle-closed (as in Redis).
    if (c && !c->subscribed() && c->pending() == 0 &&
        now_ms - c->last_ms > int64_t{opt_.timeout_s} * 1000) {
      Close(c);
    }
  }
}

size_t Conn::Memory() const {
  size_t n = sizeof(Conn) + in.capacity() + out.capacity() + argv.capacity() * sizeof(argv[0]) +
             parser.table_bytes() + name.capacity();
  for (const auto* v : {&channels, &patterns}) {
    for (const std::string& ch : *v) n += sizeof ch + ch.capacity();
  }
  return n;
}

namespace {
bool Evictable(const Conn* c) { return c && !c->no_evict && c->hold_until == 0 && !c->closing; }
}  // namespace

uint64_t Server::ClientMemory(uint64_t* biggest) const {
  uint64_t all = 0;
  *biggest = 0;
  for (const Conn* c : all_) {
    if (!c) continue;
    uint64_t m = c->Memory();
    all += m;
    if (Evictable(c)) *biggest = std::max(*biggest, m);
  }
  return all;
}

size_t Server::EvictLargest(const std::function<bool(uint64_t)>& go) {
  std::vector<std::pair<uint64_t, Conn*>> by_size;
  for (Conn* c : all_) {
    if (Evictable(c)) by_size.emplace_back(c->Memory(), c);
  }
  std::sort(by_size.begin(), by_size.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  size_t n = 0;
  for (const auto& [m, c] : by_size) {  // Close frees only that connection
    if (!go(m)) break;
    Count(kCtrEvictedClients);
    Close(c);
    ++n;
  }
  return n;
}

void Server::Kill(uint64_t id) {
  for (Conn* c : all_) {
    if (c && c->id == id) {
      c->close_after_write = true;
      if (c->pending() == 0) Close(c);
      return;
    }
  }
}

// maxclients over the whole daemon: take a place in the shared counter
// unless it is full (compare-and-swap: two workers never both take the last).
bool Server::Admit() {
  if (!opt_.clients) return conns_ < static_cast<size_t>(opt_.maxclients);
  int32_t cur = opt_.clients->load(std::memory_order_relaxed);
  do {
    if (cur >= opt_.maxclients) return false;
  } while (!opt_.clients->compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed));
  return true;
}

void Server::OnAccept(evutil_socket_t, short, void* arg) {
  auto* s = static_cast<Server*>(arg);
  for (int i = 0; i < 64 && s->lfd_ >= 0; ++i) {
    sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(s->lfd_, reinterpret_cast<sockaddr*>(&ss), &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN (another worker took it), EMFILE, ...
    bool loop = PeerIsLoopback(ss);
    bool allowed = loop || !s->opt_.require_allow;
    for (const Cidr& c : s->opt_.allow) allowed = allowed || CidrMatch(c, ss);
    if (!allowed) {
      s->Count(kCtrRejected);
      close(fd);
      continue;
    }
    if (!s->Admit()) {
      static const char kMax[] = "-ERR max number of clients reached\r\n";
      (void)!write(fd, kMax, sizeof kMax - 1);
      s->Count(kCtrRejected);
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto* c = new Conn();
    c->fd = fd;
    c->id = ++s->next_id_;
    c->srv = s;
    c->parser = RespParser(s->opt_.limits);
    c->addr = AddrString(ss);
    sockaddr_storage ls;
    socklen_t ll = sizeof ls;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ls), &ll) == 0) c->laddr = AddrString(ls);
    c->created_ms = c->last_ms = WallMs();
    c->authed = !s->opt_.auth_required;
    c->rev = event_new(s->base_, fd, EV_READ | EV_PERSIST, &Server::OnRead, c);
    c->wev = event_new(s->base_, fd, EV_WRITE | EV_PERSIST, &Server::OnWrite, c);
    event_add(c->rev, nullptr);
    if (static_cast<size_t>(fd) >= s->all_.size()) s->all_.resize(static_cast<size_t>(fd) + 64);
    s->all_[static_cast<size_t>(fd)] = c;
    ++s->conns_;
    s->Count(kCtrAccepted);
    s->Count(kCtrOpen);
  }
}

void Server::OnRead(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  Server* s = c->srv;
  // Read a large bulk in big steps straight into the connection's buffer;
  // otherwise into a per-worker scratch buffer and append only what came
  // (growing a std::string by 16 KiB per read would zero 16 KiB each time).
  static char scratch[16384];
  size_t remaining = c->parser.bulk_remaining();
  ssize_t n;
  if (remaining > sizeof scratch) {
    size_t want = remaining > (1u << 20) ? (1u << 20) : remaining;
    size_t old = c->in.size();
    c->in.resize(old + want);
    n = read(c->fd, c->in.data() + old, want);
    c->in.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
  } else {
    n = read(c->fd, scratch, sizeof scratch);
    if (n > 0) c->in.append(scratch, static_cast<size_t>(n));
  }
  if (n <= 0) {
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) s->Close(c);
    return;
  }
  s->Count(kCtrBytesIn, static_cast<uint64_t>(n));
  c->last_ms = WallMs();
  if (s->OverQueryLimit(c)) {
    s->Count(kCtrQueryLimit);
    s->Close(c);  // client-query-buffer-limit
    return;
  }
  if (!c->cont && !c->hold_until) s->Guarded(c, [](Server* sv, Conn* cn) { sv->Process(cn); });
}

// Nothing thrown by a handler (std::bad_alloc, a library's exception) may
// leave a libevent callback: the connection that caused it is closed.
template <typename F>
void Server::Guarded(Conn* c, F fn) {
  try {
    fn(this, c);
  } catch (const std::exception&) {
    Count(kCtrErrors);
    Close(c);
  }
}

// The loop stops when a client has kOutPause unsent. If the Flush at the
// end sends it all, nothing would run the commands already buffered (the
// client sends nothing more: it waits for their replies), so the step is
// run again; when the socket is full instead, reading stops and OnWrite
// resumes (a redis-py pipeline of 30 GETs of 100 KB stalled here).
void Server::Process(Conn* c) {
  while (ProcessStep(c)) {
  }
}

bool Server::ProcessStep(Conn* c) {
  while (!c->cont && !c->close_after_write && c->in_pos < c->in.size() &&
         c->pending() < kOutPause) {
    size_t before = c->in_pos;
    c->parser.set_limits(opt_.limits);
    c->parser.set_unauthenticated(!c->authed);
    RespParser::Result r = c->parser.Parse(c->in.data(), c->in.size(), &c->in_pos);
    if (r == RespParser::Result::kNeedMore) break;
    if (r == RespParser::Result::kError) {
      Reply(&c->out).Error("ERR " + c->parser.error());
      Count(kCtrErrors);
      c->close_after_write = true;
      c->parser.Reset();
      break;
    }
    (void)before;
    size_t argc = c->parser.argc();
    if (argc == 0) continue;
    c->argv.clear();
    for (size_t i = 0; i < argc; ++i) c->argv.push_back(c->parser.arg(c->in.data(), i));
    Count(kCtrCommands);
    size_t out_before = c->out.size();
    const OutputLimit& ol = opt_.output[c->subscribed() ? kClassPubSub : kClassNormal];
    c->out_cap = ol.hard ? c->out_pos + ol.hard : SIZE_MAX;
    dispatch_(*c);
    if (c->out.size() > out_before && c->out[out_before] == '-') Count(kCtrErrors);
    if (OverOutputLimit(c, c->last_ms)) return false;  // closed
    if (c->cont) {
      if (!c->cont_ev) c->cont_ev = evtimer_new(base_, &Server::OnCont, c);
      timeval zero{0, 0};
      evtimer_add(c->cont_ev, &zero);
      break;
    }
  }
  bool out_paused = c->pending() >= kOutPause && !c->cont && !c->close_after_write && c->in_pos < c->in.size();
  // Drop consumed input (the parser keeps offsets relative to in_pos).
  if (c->in_pos == c->in.size()) {
    c->in.clear();
    c->in_pos = 0;
    if (c->in.capacity() > (1u << 20)) c->in.shrink_to_fit();
  } else if (c->in_pos > (64u << 10)) {
    c->in.erase(0, c->in_pos);
    c->in_pos = 0;
  }
  if (OverQueryLimit(c)) {  // the argument table of an unfinished command counts too
    Count(kCtrQueryLimit);
    Close(c);
    return false;
  }
  if (c->hold_until && opt_.durable) {
    // "Waiting" is visible before the last look at durability (the WAL
    // process publishes, then looks at it): no wake-up is missed.
    if (held_.empty() && opt_.waiting) opt_.waiting(true);
    if (!opt_.durable(c->hold_until)) {
      if (!c->in_held) {  // a KEYS continuation may run Process again while held
        c->in_held = true;
        c->hold_since_ms = WallMs();
        held_.emplace_back(c->fd, c->id);
      }
      // This round's records: committed at its end (ServerOptions::commit).
      if (commit_ev_ && !event_pending(commit_ev_, EV_TIMEOUT, nullptr)) event_active(commit_ev_, EV_TIMEOUT, 0);
      event_del(c->wev);  // nothing to send until ReleaseHeld (no busy OnWrite)
      return false;
    }
    if (held_.empty() && opt_.waiting) opt_.waiting(false);
  }
  if (c->in_held) return false;  // listed: ReleaseHeld sends it
  c->hold_until = 0;
  if (!out_paused && !c->close_after_write && c->pending() > 0) {
    QueueFlush(c);  // sent when every ready connection of this round has run
    return false;
  }
  if (!Flush(c)) return false;  // closed
  return out_paused && c->reading && c->pending() < kOutPause;
}

Conn* Server::Live(int fd, uint64_t id) const {
  Conn* c = static_cast<size_t>(fd) < all_.size() ? all_[static_cast<size_t>(fd)] : nullptr;
  return c && c->id == id ? c : nullptr;
}

size_t Server::DropHeld(int64_t now_ms, int64_t max_ms) {
  std::vector<Conn*> old;
  for (const auto& [fd, id] : held_) {
    Conn* c = Live(fd, id);
    if (c && c->hold_until && now_ms - c->hold_since_ms > max_ms) old.push_back(c);
  }
  for (Conn* c : old) Close(c);  // ReleaseHeld drops the closed ones from the list
  if (!old.empty()) ReleaseHeld();
  return old.size();
}

void Server::ReleaseHeld() {
  std::vector<std::pair<int, uint64_t>> still, ready;
  for (const auto& [fd, id] : held_) {
    Conn* c = Live(fd, id);
    if (!c) continue;  // closed meanwhile
    if (c->hold_until && opt_.durable && !opt_.durable(c->hold_until)) {
      still.emplace_back(fd, id);
    } else {
      c->in_held = false;
      ready.emplace_back(fd, id);
    }
  }
  held_ = std::move(still);
  if (held_.empty() && opt_.waiting) opt_.waiting(false);
  for (const auto& [fd, id] : ready) {
    Conn* c = Live(fd, id);
    if (!c || c->in_held) continue;  // closed, or held again by an earlier one's Process
    c->hold_until = 0;
    if (!Flush(c)) continue;  // closed
    if (c->reading && c->in_pos < c->in.size() && !c->cont) {
      Guarded(c, [](Server* sv, Conn* cn) { sv->Process(cn); });
    }
  }
}

bool Server::Flush(Conn* c) {
  if (c->hold_until) {  // the replies wait for durability (ReleaseHeld)
    event_del(c->wev);
    return true;
  }
  while (c->pending() > 0) {
    ssize_t n = write(c->fd, c->out.data() + c->out_pos, c->pending());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      Close(c);
      return false;
    }
    Count(kCtrBytesOut, static_cast<uint64_t>(n));
    c->out_pos += static_cast<size_t>(n);
  }
  if (c->pending() == 0) {
    c->out.clear();
    c->out_pos = 0;
    if (c->out.capacity() > (4u << 20)) c->out.shrink_to_fit();
    if (c->close_after_write) {
      Close(c);
      return false;
    }
    event_del(c->wev);
  } else {
    event_add(c->wev, nullptr);
  }
  // Backpressure: stop reading while the client is not reading its replies.
  bool want_read = c->pending() < kOutPause && !c->close_after_write;
  if (want_read != c->reading) {
    c->reading = want_read;
    if (want_read) {
      event_add(c->rev, nullptr);
    } else {
      event_del(c->rev);
    }
  }
  return true;
}

// Replies are written at the end of the event-loop round, after the
// commands of every connection that was ready in it, as redis-server writes
// them before it sleeps: libevent runs an event activated during the round
// after the ones already active. A worker that answered each client at once
// went back to epoll_wait sooner, found nothing and slept, and every next
// request then paid a wake-up; at pipeline 1 with 50 clients on two cores
// that cost lands in the client's send (docs/daemon.md, "Replies at the end
// of the round").
void Server::QueueFlush(Conn* c) {
  if (c->flush_queued) return;
  c->flush_queued = true;
  to_flush_.emplace_back(c->fd, c->id);
  if (to_flush_.size() == 1) event_active(flush_ev_, EV_TIMEOUT, 0);
}

void Server::OnFlushAll(evutil_socket_t, short, void* arg) {
  Server* s = static_cast<Server*>(arg);
  s->flushing_.swap(s->to_flush_);
  for (const auto& [fd, id] : s->flushing_) {
    Conn* c = s->Live(fd, id);
    if (!c) continue;  // closed meanwhile
    c->flush_queued = false;
    (void)s->Flush(c);
  }
  s->flushing_.clear();
}

// The round's commit (ServerOptions::commit) runs after its replies went
// out: an event activated during the round runs after those already
// active, so one activated before the flush event goes round again.
void Server::OnCommit(evutil_socket_t, short, void* arg) {
  Server* s = static_cast<Server*>(arg);
  if (!s->to_flush_.empty()) {
    event_active(s->commit_ev_, EV_TIMEOUT, 0);
    return;
  }
  if (!s->held_.empty()) s->Commit();
}

// Another worker's records wait for a turn this worker promised (it found
// the lock taken by this one): a zero timer, so this worker's sockets are
// read first and its new writes go in the same turn.
void Server::OnCommitAgain(evutil_socket_t, short, void* arg) { static_cast<Server*>(arg)->Commit(); }

void Server::Commit() {
  int r;
  try {
    r = opt_.commit();
  } catch (const std::exception&) {  // the replies stay held: the WAL process or the tick
    Count(kCtrErrors);
    return;
  }
  if (r == kCommitAgain && !evtimer_pending(commit_again_ev_, nullptr)) {
    timeval zero{0, 0};
    evtimer_add(commit_again_ev_, &zero);
  }
  if (r != kCommitNone && !held_.empty()) ReleaseHeld();
}

void Server::OnWrite(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  Server* s = c->srv;
  bool was_paused = !c->reading;
  if (!s->Flush(c)) return;  // closed
  // Resume parsing what was buffered while paused.
  if (was_paused && c->reading && !c->hold_until && c->in_pos < c->in.size()) {
    s->Guarded(c, [](Server* sv, Conn* cn) { sv->Process(cn); });
  }
}

void Server::OnCont(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  Server* s = c->srv;
  if (!c->cont) return;
  bool done = true;
  try {
    done = c->cont(*c);
  } catch (const std::exception&) {
    s->Count(kCtrErrors);
    s->Close(c);
    return;
  }
  if (done) {
    c->cont = nullptr;
    if (s->OverOutputLimit(c, WallMs())) return;  // closed
    s->Guarded(c, [](Server* sv, Conn* cn) { sv->Process(cn); });  // flushes, then goes on
  } else {
    if (!s->Flush(c)) return;
    timeval zero{0, 0};
    evtimer_add(c->cont_ev, &zero);
  }
}

void Server::Close(Conn* c) {
  if (opt_.on_close) opt_.on_close(*c);
  if (c->fd >= 0 && static_cast<size_t>(c->fd) < all_.size()) all_[static_cast<size_t>(c->fd)] = nullptr;
  if (c->rev) event_free(c->rev);
  if (c->wev) event_free(c->wev);
  if (c->cont_ev) event_free(c->cont_ev);
  if (c->fd >= 0) close(c->fd);
  --conns_;
  if (opt_.clients) opt_.clients->fetch_sub(1, std::memory_order_relaxed);
  if (counters_) {
    auto& v = counters_[kCtrOpen];
    uint64_t cur = v.load(std::memory_order_relaxed);
    v.store(cur ? cur - 1 : 0, std::memory_order_relaxed);
  }
  delete c;
}

}  // namespace net
