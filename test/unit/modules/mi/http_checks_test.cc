// perfcached — unit tests for the HTTP and XML-RPC doors' request checks (modules/mi/http_checks.cc).
// Copyright (c) 2026 the perfcached authors.
#include <string>
#include <vector>

#include "modules/mi/http_checks.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using namespace modules::mi_door;

TEST_GROUP(HttpChecks){};

TEST(HttpChecks, ContentTypes) {
  CHECK(IsJsonContentType("application/json"));
  CHECK(IsJsonContentType(" Application/JSON ; charset=utf-8"));
  CHECK_FALSE(IsJsonContentType("text/xml"));
  CHECK(IsXmlContentType("text/xml"));
  CHECK(IsXmlContentType("TEXT/XML; charset=UTF-8"));
  CHECK(IsXmlContentType("application/xml"));
  CHECK_FALSE(IsXmlContentType("text/plain"));
  CHECK_FALSE(IsXmlContentType("application/x-www-form-urlencoded"));
  CHECK_FALSE(IsXmlContentType("text/xmlx"));
  CHECK_FALSE(IsXmlContentType(""));
}

TEST(HttpChecks, HostAndToken) {
  std::vector<std::string> names = {"cache.example"};
  CHECK(HostHeaderAllowed("127.0.0.1:8080", "127.0.0.1", 8080, names));
  CHECK(HostHeaderAllowed("Cache.Example:8080", "127.0.0.1", 8080, names));
  CHECK_FALSE(HostHeaderAllowed("evil.example:8080", "127.0.0.1", 8080, names));
  CHECK_FALSE(HostHeaderAllowed("127.0.0.1:8081", "127.0.0.1", 8080, names));
  std::string_view tok;
  CHECK(BearerToken("Bearer abc", &tok));
  STRCMP_EQUAL("abc", std::string(tok).c_str());
  CHECK_FALSE(BearerToken("Basic abc", &tok));
}
