// perfcached — the HTTP door's request checks, connection-free.
// Copyright (c) 2026 the perfcached authors.
#include "modules/mi/http_checks.h"

#include <arpa/inet.h>

#include <cctype>

namespace modules::mi_door {

bool EqNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool HostHeaderAllowed(std::string_view host, std::string_view listener_host, int listener_port,
                       const std::vector<std::string>& names) {
  if (host.empty() || host.size() > 255) return false;
  std::string_view port;
  bool bracketed = host.front() == '[';
  if (bracketed) {
    size_t rb = host.find(']');
    if (rb == std::string_view::npos) return false;
    if (rb + 1 < host.size()) {
      if (host[rb + 1] != ':') return false;
      port = host.substr(rb + 2);
      if (port.empty()) return false;
    }
    host = host.substr(1, rb - 1);
  } else if (size_t c = host.rfind(':'); c != std::string_view::npos) {
    port = host.substr(c + 1);
    host = host.substr(0, c);
    if (port.empty()) return false;
  }
  if (port.empty() ? listener_port != 80 : port != std::to_string(listener_port)) return false;
  if (host.empty()) return false;
  std::string hs(host);
  unsigned char addr[16];
  if (bracketed) return inet_pton(AF_INET6, hs.c_str(), addr) == 1;
  if (inet_pton(AF_INET, hs.c_str(), addr) == 1) return true;
  if (EqNoCase(host, "localhost") || EqNoCase(host, listener_host)) return true;
  for (const auto& n : names) {
    if (EqNoCase(host, n)) return true;
  }
  return false;
}

namespace {

// The media type of a Content-Type value: before any ';', blanks trimmed.
std::string_view MediaType(std::string_view v) {
  v = v.substr(0, v.find(';'));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return v;
}

}  // namespace

bool IsJsonContentType(std::string_view v) { return EqNoCase(MediaType(v), "application/json"); }

bool IsXmlContentType(std::string_view v) {
  return EqNoCase(MediaType(v), "text/xml") || EqNoCase(MediaType(v), "application/xml");
}

bool BearerToken(std::string_view a, std::string_view* token) {
  if (a.size() <= 7 || !EqNoCase(a.substr(0, 7), "Bearer ")) return false;
  *token = a.substr(7);
  return true;
}

}  // namespace modules::mi_door
