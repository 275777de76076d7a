// perfcached — what the MI process's HTTP listeners share: evhttp set-up, the Host and token checks, replies.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Two doors are served this way, both inside the MI process's event loop
// (never on a worker): the HTTP door (http_door.cc: /metrics, /stats,
// /health, /reset-stats, /mi) and the XML-RPC door (xmlrpc_door.cc). Each
// is an evhttp on a listening socket the supervisor claimed and bound
// before forking (OpenHttpListener), with the same limits (body 64 KiB,
// headers 16 KiB, 10 s, GET and POST only) and the same guards: the
// `[secrets] http` bearer token (constant-time compare, libsodium) and the
// Host header check against DNS rebinding.

#include <event2/event.h>
#include <event2/http.h>

#include <string>

#include "mi/mi.h"
#include "proc/daemon.h"

namespace modules::mi_door {

struct HttpServer;
// Answers one request; may throw (StartHttpServer's callback catches).
using HttpServe = void (*)(evhttp_request* req, HttpServer& h);

struct HttpServer {
  evhttp* http = nullptr;
  proc::ModuleProcContext* pc = nullptr;
  const mi::Registry* reg = nullptr;
  const char* name = "";            // "HTTP door" (logs)
  const char* error_type = "";      // Content-Type of this door's own error bodies
  std::string host;                 // the listener's (Host header check)
  int port = 0;
  HttpServe serve = nullptr;
};

inline constexpr size_t kHttpMaxBody = 64 * 1024;  // above: 413 (evhttp)

// Serve `hostport` on the listening socket `fd` inside `base`. nullptr
// (logged) when it cannot; libevent closes this process's copy of fd when
// the server is stopped.
HttpServer* StartHttpServer(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg, int fd,
                            const std::string& hostport, const char* name, const char* error_type,
                            HttpServe serve);
void StopHttpServer(HttpServer* h);

void SendReply(evhttp_request* req, int code, const char* reason, const std::string& body, const char* type);
// An error in this door's style: {"error":"why"} (JSON) or "why\n" (text).
void SendError(const HttpServer& h, evhttp_request* req, int code, const char* reason, const std::string& why);
// The Host header names this listener, and the bearer token (when one is
// configured) is given; otherwise 421 or 401 is sent and false returned.
bool Admit(const HttpServer& h, evhttp_request* req);
// The request's path ("" when the URI does not parse) and body.
std::string RequestPath(evhttp_request* req);
std::string RequestBody(evhttp_request* req);
// The request's Content-Type header, "" when absent.
const char* RequestContentType(evhttp_request* req);

}  // namespace modules::mi_door
