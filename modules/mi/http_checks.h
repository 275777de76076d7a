// perfcached — the HTTP and XML-RPC doors' request checks, connection-free (fuzzed: test/fuzz/http_fuzz.cc).
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace modules::mi_door {

// DNS rebinding: does a Host header name this listener? Accepted: an IP
// literal ("[v6]" bracketed), "localhost", the listener's own host, or one
// of `names` (case-insensitive) — with the listener's port, or no port
// when the listener is on 80.
bool HostHeaderAllowed(std::string_view host_header, std::string_view listener_host, int listener_port,
                       const std::vector<std::string>& names);
// Content-Type is application/json (parameters such as charset allowed).
bool IsJsonContentType(std::string_view content_type);
// Content-Type is text/xml or application/xml (parameters allowed): what
// XML-RPC clients send, and what a cross-site form cannot.
bool IsXmlContentType(std::string_view content_type);
// "Bearer <token>" -> token; false for any other scheme or an empty token.
bool BearerToken(std::string_view authorization, std::string_view* token);
bool EqNoCase(std::string_view a, std::string_view b);

}  // namespace modules::mi_door
