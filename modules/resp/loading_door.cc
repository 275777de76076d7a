// perfcached — the RESP door while recovery runs: -LOADING, as redis-server answers.
// Copyright (c) 2026 the perfcached authors.
//
// The listening sockets are bound before recovery (a start that cannot
// bind fails before any work), and workers accept only once the data is
// loaded. Meanwhile a client that connects is answered by this small
// door in a thread of the supervisor: every command gets
//   -LOADING perfcached is loading the dataset in memory
// (PING too, as redis-server answers it), except INFO, which reports
// loading:1 as Redis does. When recovery ends the thread stops and closes
// these connections (a client reconnects and lands on a worker); the
// thread is joined before any fork.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "modules/resp/command.h"
#include "net/resp.h"
#include "proc/version.h"

namespace modules::resp {
namespace {

struct LoadingConn {
  int fd;
  std::string in;
  size_t pos = 0;
  net::RespParser parser;
};

struct LoadingDoor {
  std::vector<int> lfds;
  std::atomic<bool> stop{false};
  int64_t started_ms = 0;
  std::thread th;
};

std::string InfoWhileLoading(int64_t started_ms) {
  std::string body = std::string("# Server\r\nredis_version:") + kRedisCompatVersion +
                     "\r\nperfcached_version:" + proc::kVersion +
                     "\r\n\r\n# Persistence\r\nloading:1\r\nasync_loading:0\r\nloading_start_time:" +
                     std::to_string(started_ms / 1000) + "\r\n";
  return "$" + std::to_string(body.size()) + "\r\n" + body + "\r\n";
}

void Serve(LoadingDoor* d) {
  std::vector<std::unique_ptr<LoadingConn>> conns;
  const std::string loading = "-LOADING perfcached is loading the dataset in memory\r\n";
  char buf[16384];
  while (!d->stop.load()) {
    std::vector<pollfd> p;
    bool full = conns.size() >= 1024;  // at the cap, leave new ones in the backlog (no busy poll)
    for (int fd : d->lfds) p.push_back({fd, static_cast<short>(full ? 0 : POLLIN), 0});
    for (auto& c : conns) p.push_back({c->fd, POLLIN, 0});
    if (poll(p.data(), p.size(), 50) <= 0) continue;
    for (size_t i = 0; i < d->lfds.size(); ++i) {
      if (!(p[i].revents & POLLIN) || conns.size() >= 1024) continue;
      int fd = accept4(d->lfds[i], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) conns.push_back(std::make_unique<LoadingConn>(LoadingConn{fd, {}, 0, net::RespParser()}));
    }
    for (size_t i = d->lfds.size(); i < p.size(); ++i) {
      if (!p[i].revents) continue;
      LoadingConn* c = conns[i - d->lfds.size()].get();
      ssize_t n = read(c->fd, buf, sizeof buf);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      bool drop = n <= 0 || c->in.size() > (1u << 20);
      if (n > 0) c->in.append(buf, static_cast<size_t>(n));
      std::string out;
      while (!drop) {
        net::RespParser::Result r = c->parser.Parse(c->in.data(), c->in.size(), &c->pos);
        if (r == net::RespParser::Result::kNeedMore) break;
        if (r == net::RespParser::Result::kError) {
          out += "-ERR " + c->parser.error() + "\r\n";
          drop = true;
          break;
        }
        if (c->parser.argc() == 0) continue;
        out += EqNoCase(c->parser.arg(c->in.data(), 0), "info") ? InfoWhileLoading(d->started_ms) : loading;
      }
      if (c->pos == c->in.size()) {
        c->in.clear();
        c->pos = 0;
      }
      if (!out.empty()) {
        ssize_t w = send(c->fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;  // a client that does not read its errors loses some
      }
      if (drop) c->fd = -1 - c->fd;  // closed below
    }
    for (size_t i = conns.size(); i-- > 0;) {
      if (conns[i]->fd < 0) {
        close(-1 - conns[i]->fd);
        conns.erase(conns.begin() + static_cast<long>(i));
      }
    }
  }
  for (auto& c : conns) close(c->fd);
}

}  // namespace

void* LoadingBegin(const std::vector<int>& lfds) {
  if (lfds.empty()) return nullptr;
  auto* d = new LoadingDoor();
  d->lfds = lfds;
  d->started_ms = net::WallMs();
  d->th = std::thread(Serve, d);
  return d;
}

void LoadingEnd(void* p) {
  auto* d = static_cast<LoadingDoor*>(p);
  if (!d) return;
  d->stop.store(true);
  d->th.join();
  delete d;
}

}  // namespace modules::resp
