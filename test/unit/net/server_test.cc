// net::Server on a real loopback socket and a real libevent loop.
#include "net/server.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "CppUTest/TestHarness.h"

namespace {

int Listen(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 ||
      listen(fd, 16) != 0)
    return -1;
  socklen_t sl = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &sl);
  *port = ntohs(sa.sin_port);
  return fd;
}

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
    return -1;
  return fd;
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

// Run loop rounds until `done` or 200 rounds of at most 10 ms.
template <typename F> void LoopUntil(event_base *base, F done) {
  for (int i = 0; i < 200 && !done(); ++i) {
    timeval tv{0, 10 * 1000};
    event_base_loopexit(base, &tv);
    event_base_loop(base, EVLOOP_ONCE);
  }
}

} // namespace

TEST_GROUP(Server){};

// The replies of one loop round go out after every connection that was
// ready in it has run its commands (as redis-server writes before it
// sleeps): when the second client's command runs, the first one's reply is
// not on its socket yet. Both arrive by the end of the round.
TEST(Server, RepliesOfARoundGoOutAfterEveryReadyCommandRan) {
  event_base *base = event_base_new();
  uint16_t port = 0;
  int lfd = Listen(&port);
  CHECK(lfd >= 0);
  std::vector<int> clients;
  std::vector<std::string>
      seen; // "<fd of the other client>:<readable?>" at each command
  net::ServerOptions o;
  {
    net::Server srv(
        base, lfd, o,
        [&](net::Conn &c) {
          // Which client is this? The other one's reply must not be readable
          // yet when this command runs in the same round.
          std::string who;
          for (int fd : clients) {
            who += Readable(fd) ? "R" : "-";
          }
          seen.push_back(who);
          c.out += "+PONG\r\n";
        },
        nullptr);
    for (int i = 0; i < 2; ++i)
      clients.push_back(Connect(port));
    CHECK(clients[0] >= 0 && clients[1] >= 0);
    LoopUntil(base, [&] { return srv.connections() == 2; });
    CHECK_EQUAL(2u, srv.connections());
    // Both requests wait in the kernel before the round starts: one
    // epoll_wait reports both connections ready.
    for (int fd : clients)
      CHECK_EQUAL(6, write(fd, "PING\r\n", 6));
    usleep(20 * 1000);
    event_base_loop(base, EVLOOP_ONCE);
    CHECK_EQUAL(2u, seen.size());
    STRCMP_EQUAL("--", seen[0].c_str());
    STRCMP_EQUAL(
        "--", seen[1].c_str()); // the first reply was held to the round's end
    usleep(20 * 1000);
    for (int fd : clients) {
      CHECK(Readable(fd));
      char buf[16];
      CHECK_EQUAL(7, read(fd, buf, sizeof buf));
      MEMCMP_EQUAL("+PONG\r\n", buf, 7);
    }
    for (int fd : clients)
      close(fd);
    LoopUntil(base, [&] { return srv.connections() == 0; });
    CHECK_EQUAL(0u, srv.connections());
  }
  close(lfd);
  event_base_free(base);
}

// The worker's forced stop breaks the loop in the middle of a round: the
// replies that round queued are still sent when the server goes away (a
// command that ran is answered, not cut off with its reply unsent).
TEST(Server, RepliesQueuedWhenTheLoopBreaksAreSentAtDestruction) {
  event_base* base = event_base_new();
  uint16_t port = 0;
  int lfd = Listen(&port);
  CHECK(lfd >= 0);
  int cl = -1;
  {
    net::ServerOptions o;
    net::Server srv(
        base, lfd, o,
        [&](net::Conn& c) {
          c.out += "+PONG\r\n";
          event_base_loopbreak(base);  // as the stop deadline does from the tick
        },
        nullptr);
    cl = Connect(port);
    CHECK(cl >= 0);
    LoopUntil(base, [&] { return srv.connections() == 1; });
    CHECK_EQUAL(6, write(cl, "PING\r\n", 6));
    usleep(20 * 1000);
    event_base_loop(base, EVLOOP_ONCE);
    CHECK_FALSE(Readable(cl));  // queued, not sent: the loop broke first
  }
  char buf[16];
  CHECK_EQUAL(7, read(cl, buf, sizeof buf));
  MEMCMP_EQUAL("+PONG\r\n", buf, 7);
  close(cl);
  close(lfd);
  event_base_free(base);
}
