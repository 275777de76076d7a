// perfcached — libFuzzer target for the HTTP doors' request checks
// (modules/mi/http_checks.cc): Host (DNS rebinding), Content-Type (JSON
// for /mi, XML for the XML-RPC door), Authorization. The input is a raw
// request head; its header lines are split out the way a server would and
// each check runs on them.
// Copyright (c) 2026 the perfcached authors.
//
// Properties: no crash; a Host that is accepted names the listener's port
// and is an IP literal, "localhost", the listener's host or a listed name
// (checked against an independent, slower model); a JSON content type is
// exactly application/json plus parameters, an XML one text/xml or
// application/xml; a bearer token is the rest of the header after the
// scheme.
#include <arpa/inet.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "modules/mi/http_checks.h"

namespace {

std::string Lower(std::string_view s) {
  std::string o;
  for (char ch : s) o += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return o;
}

// The model: split host and port at the last ':' outside brackets.
bool ModelHost(std::string_view h, int port, const std::vector<std::string>& names) {
  if (h.empty() || h.size() > 255) return false;
  std::string host, p;
  bool v6 = false;
  if (h[0] == '[') {
    size_t rb = h.find(']');
    if (rb == std::string_view::npos) return false;
    host = std::string(h.substr(1, rb - 1));
    std::string_view rest = h.substr(rb + 1);
    if (!rest.empty()) {
      if (rest[0] != ':' || rest.size() == 1) return false;
      p = std::string(rest.substr(1));
    }
    v6 = true;
  } else {
    size_t c = h.rfind(':');
    host = std::string(h.substr(0, c));
    if (c != std::string_view::npos) {
      p = std::string(h.substr(c + 1));
      if (p.empty()) return false;
    }
  }
  if (p.empty() ? port != 80 : p != std::to_string(port)) return false;
  if (host.empty()) return false;
  unsigned char a[16];
  if (v6) return inet_pton(AF_INET6, host.c_str(), a) == 1;
  if (inet_pton(AF_INET, host.c_str(), a) == 1) return true;
  std::string l = Lower(host);
  if (l == "localhost" || l == "127.0.0.1") return true;
  for (const auto& n : names) {
    if (l == Lower(n)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> names = {"cache.example", "perf-01"};
  int port = size && (data[0] & 1) ? 80 : 8080;
  size_t at = 0;
  for (int guard = 0; guard < 256 && at < in.size(); ++guard) {
    size_t nl = in.find('\n', at);
    std::string_view line = in.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? in.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name = Lower(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    if (name == "host") {
      bool got = modules::mi_door::HostHeaderAllowed(value, "127.0.0.1", port, names);
      if (got != ModelHost(value, port, names)) std::abort();
    } else if (name == "content-type") {
      bool got = modules::mi_door::IsJsonContentType(value);
      std::string v = Lower(value.substr(0, value.find(';')));
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
      if (got != (v == "application/json")) std::abort();
      if (modules::mi_door::IsXmlContentType(value) != (v == "text/xml" || v == "application/xml")) std::abort();
    } else if (name == "authorization") {
      std::string_view tok;
      bool got = modules::mi_door::BearerToken(value, &tok);
      if (got && (tok.empty() || tok.data() != value.data() + 7 || Lower(value.substr(0, 7)) != "bearer ")) {
        std::abort();
      }
    }
  }
  return 0;
}
