// perfcached — unit tests for net/resp_client's reply parser.
// Copyright (c) 2026 the perfcached authors.
#include <string>

#include "net/resp_client.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

TEST_GROUP(RespClientReply){};

TEST(RespClientReply, EveryKind) {
  using namespace std::string_literals;
  std::string buf = "+OK\r\n-ERR no\r\n:-42\r\n$3\r\na\0b\r\n$-1\r\n*2\r\n$1\r\nx\r\n*1\r\n:1\r\n*-1\r\n"s;
  size_t pos = 0;
  net::Reply r;
  std::string err;
  auto next = [&] { return net::ParseReply(buf, &pos, &r, &err) == net::ParseResult::kOk; };
  CHECK(next() && r.kind == net::Reply::kStatus && r.str == "OK");
  CHECK(next() && r.kind == net::Reply::kError && r.str == "ERR no");
  CHECK(next() && r.kind == net::Reply::kInt && r.num == -42);
  CHECK(next() && r.kind == net::Reply::kBulk && r.str == std::string("a\0b", 3));
  CHECK(next() && r.kind == net::Reply::kNil);
  CHECK(next() && r.kind == net::Reply::kArray && r.items.size() == 2 && r.items[1].items[0].num == 1);
  CHECK(next() && r.kind == net::Reply::kNil);
  LONGS_EQUAL(buf.size(), pos);
}

TEST(RespClientReply, IncompleteConsumesNothing) {
  const std::string full = "*2\r\n$5\r\nhello\r\n:7\r\n";
  for (size_t n = 0; n < full.size(); ++n) {
    size_t pos = 0;
    net::Reply r;
    std::string err;
    CHECK(net::ParseReply(full.substr(0, n), &pos, &r, &err) == net::ParseResult::kMore);
    LONGS_EQUAL(0, pos);
  }
}

TEST(RespClientReply, RefusesWhatIsNotRESP) {
  const char* bad[] = {"HTTP/1.1 400\r\n", ":12x\r\n", "$-2\r\n", "$2\r\nabc\r\n", "*-5\r\n", "$99999999999\r\n",
                       "*2000000\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"};
  for (const char* b : bad) {
    size_t pos = 0;
    net::Reply r;
    std::string err;
    CHECK_TEXT(net::ParseReply(b, &pos, &r, &err, 1 << 20) == net::ParseResult::kBad, b);
    CHECK(!err.empty());
  }
}
