// perfcached — unit tests for proc/notify: NOTIFY_SOCKET / WATCHDOG_* parsing, messages, one datagram.
// Copyright (c) 2026 the perfcached authors.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "proc/notify.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using proc::NotifyEnv;
using proc::NotifyMessage;
using proc::ParseNotifyEnv;

namespace {
constexpr socklen_t kPathAt = offsetof(sockaddr_un, sun_path);
}  // namespace

TEST_GROUP(NotifyEnv) {};

TEST(NotifyEnv, UnsetMeansNothing) {
  NotifyEnv e = ParseNotifyEnv(nullptr, nullptr, nullptr, 42);
  LONGS_EQUAL(0, e.addr_len);
  CHECK_EQUAL(0u, e.watchdog_us);
  CHECK(e.ignored.empty());
  e = ParseNotifyEnv("", "", "", 42);
  LONGS_EQUAL(0, e.addr_len);
  CHECK(e.ignored.empty());
}

TEST(NotifyEnv, PathSocketCountsItsNul) {
  NotifyEnv e = ParseNotifyEnv("/run/systemd/notify", nullptr, nullptr, 42);
  LONGS_EQUAL(AF_UNIX, e.addr.sun_family);
  STRCMP_EQUAL("/run/systemd/notify", e.addr.sun_path);
  LONGS_EQUAL(kPathAt + 20, e.addr_len);
}

TEST(NotifyEnv, AbstractSocketHasExactLength) {
  NotifyEnv e = ParseNotifyEnv("@sd-notify/7", nullptr, nullptr, 42);
  LONGS_EQUAL(0, e.addr.sun_path[0]);
  CHECK(std::memcmp(e.addr.sun_path + 1, "sd-notify/7", 11) == 0);
  LONGS_EQUAL(kPathAt + 12, e.addr_len);  // '\0' + 11 bytes, no trailing NUL
}

TEST(NotifyEnv, RefusesRelativeShortAndLongAddresses) {
  NotifyEnv e = ParseNotifyEnv("run/notify", nullptr, nullptr, 42);
  LONGS_EQUAL(0, e.addr_len);
  STRCMP_CONTAINS("not an absolute path", e.ignored.c_str());
  e = ParseNotifyEnv("@", nullptr, nullptr, 42);
  LONGS_EQUAL(0, e.addr_len);
  std::string longpath = "/" + std::string(sizeof(sockaddr_un::sun_path), 'x');
  e = ParseNotifyEnv(longpath.c_str(), nullptr, nullptr, 42);
  LONGS_EQUAL(0, e.addr_len);
  STRCMP_CONTAINS("does not fit", e.ignored.c_str());
  // The longest that fits: sun_path minus its NUL.
  std::string fits = "/" + std::string(sizeof(sockaddr_un::sun_path) - 2, 'x');
  e = ParseNotifyEnv(fits.c_str(), nullptr, nullptr, 42);
  LONGS_EQUAL(static_cast<long>(sizeof(sockaddr_un)), e.addr_len);
}

TEST(NotifyEnv, Watchdog) {
  CHECK_EQUAL(30000000u, ParseNotifyEnv("/n", "30000000", nullptr, 42).watchdog_us);
  CHECK_EQUAL(30000000u, ParseNotifyEnv("/n", "30000000", "42", 42).watchdog_us);
  NotifyEnv e = ParseNotifyEnv("/n", "30000000", "43", 42);
  CHECK_EQUAL(0u, e.watchdog_us);
  STRCMP_CONTAINS("WATCHDOG_PID=43 is not this process (42)", e.ignored.c_str());
  for (const char* bad : {"0", "-5", "12x", "x", "99999999999999999999999"}) {
    e = ParseNotifyEnv("/n", bad, nullptr, 42);
    CHECK_EQUAL(0u, e.watchdog_us);
    STRCMP_CONTAINS("not a positive number", e.ignored.c_str());
  }
  // Both variables wrong: both reasons.
  e = ParseNotifyEnv("n", "0", nullptr, 42);
  STRCMP_CONTAINS("NOTIFY_SOCKET=n", e.ignored.c_str());
  STRCMP_CONTAINS("; WATCHDOG_USEC=0", e.ignored.c_str());
}

TEST_GROUP(NotifyMessage) {};

TEST(NotifyMessage, AssignmentsPerLineNewlinesInValuesFlattened) {
  STRCMP_EQUAL("READY=1\nSTATUS=serving", NotifyMessage({{"READY", "1"}, {"STATUS", "serving"}}).c_str());
  // A STATUS= must not smuggle in another assignment.
  STRCMP_EQUAL("STATUS=a READY=1", NotifyMessage({{"STATUS", "a\nREADY=1"}}).c_str());
  STRCMP_EQUAL("WATCHDOG=1", NotifyMessage({{"WATCHDOG", "1"}}).c_str());
}

TEST(NotifyMessage, NotifierSendsOneDatagramToTheSocket) {
  char dir[] = "/tmp/perfcached-notify-test-XXXXXX";
  CHECK(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/notify";
  int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  CHECK(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  proc::Notifier n(ParseNotifyEnv(path.c_str(), "1000000", nullptr, getpid()));
  CHECK(n.enabled());
  CHECK_EQUAL(1000000u, n.watchdog_us());
  n.Ready("serving: 1 worker(s)");
  char buf[256];
  ssize_t got = recv(s, buf, sizeof buf, MSG_DONTWAIT);
  CHECK(got > 0);
  STRCMP_EQUAL("READY=1\nSTATUS=serving: 1 worker(s)", std::string(buf, static_cast<size_t>(got)).c_str());
  close(s);
  unlink(path.c_str());
  rmdir(dir);
  // Nobody listens any more: false, never fatal.
  CHECK_FALSE(n.Send("WATCHDOG=1"));
  // Without NOTIFY_SOCKET nothing is sent.
  proc::Notifier off;
  CHECK_FALSE(off.enabled());
  CHECK_EQUAL(0u, off.watchdog_us());
  CHECK_FALSE(off.Send("READY=1"));
}
