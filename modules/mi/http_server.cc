// perfcached — the MI process's HTTP listeners: evhttp set-up, guards, replies (see http_server.h).
// Copyright (c) 2026 the perfcached authors.
#include "modules/mi/http_server.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include <cstring>
#include <exception>

#include "modules/mi/http_checks.h"
#include "modules/mi/mi_module.h"
#include "proc/claim.h"
#include "proc/config.h"
#include "proc/log.h"
#include "proc/secret.h"

namespace modules::mi_door {
namespace {

// With a token configured, every request needs it, loopback included: a
// browser on this host, any local user and a proxy all come from loopback.
// Tokens are compared in constant time (libsodium), never with ==.
bool Authorized(const HttpServer& h, evhttp_request* req) {
  if (h.pc->cfg->http_tokens.empty()) return true;  // FinishConfig: loopback listeners only
  const char* auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
  std::string_view tok;
  if (!auth || !BearerToken(auth, &tok)) return false;
  bool ok = proc::SecretMatches(h.pc->cfg->http_tokens, tok);
  proc::Wipe(const_cast<char*>(auth), std::strlen(auth));  // libevent's copy of the header
  return ok;
}

// DNS rebinding: a page from evil.example that re-resolves to 127.0.0.1
// still sends "Host: evil.example" (http_checks.h says what is accepted).
bool HostAllowed(const HttpServer& h, evhttp_request* req) {
  const char* hv = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
  return hv && HostHeaderAllowed(hv, h.host, h.port, h.pc->cfg->http_hosts);
}

// No input may throw out of a libevent callback (it would abort the process).
void OnRequest(evhttp_request* req, void* arg) {
  auto* h = static_cast<HttpServer*>(arg);
  try {
    h->serve(req, *h);
  } catch (const std::exception& e) {
    LOG_ERR("%s: %s", h->name, e.what());
    SendError(*h, req, 500, "Internal Server Error", "internal error");
  }
}

}  // namespace

void SendReply(evhttp_request* req, int code, const char* reason, const std::string& body, const char* type) {
  evkeyvalq* hdr = evhttp_request_get_output_headers(req);
  evhttp_add_header(hdr, "Content-Type", type);
  evbuffer* b = evbuffer_new();
  evbuffer_add(b, body.data(), body.size());
  evhttp_send_reply(req, code, reason, b);
  evbuffer_free(b);
}

void SendError(const HttpServer& h, evhttp_request* req, int code, const char* reason, const std::string& why) {
  if (std::strcmp(h.error_type, "application/json") == 0) {
    SendReply(req, code, reason, mi::Serialize(mi::Json{{"error", why}}), h.error_type);
  } else {
    SendReply(req, code, reason, why + "\n", h.error_type);
  }
}

bool Admit(const HttpServer& h, evhttp_request* req) {
  if (!HostAllowed(h, req)) {
    SendError(h, req, 421, "Misdirected Request", "Host does not name this listener");
    return false;
  }
  if (!Authorized(h, req)) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
    SendError(h, req, 401, "Unauthorized", "a bearer token is required");
    return false;
  }
  return true;
}

std::string RequestPath(evhttp_request* req) {
  evhttp_uri* parsed = evhttp_uri_parse(evhttp_request_get_uri(req));
  std::string path = parsed && evhttp_uri_get_path(parsed) ? evhttp_uri_get_path(parsed) : "";
  if (parsed) evhttp_uri_free(parsed);
  return path;
}

std::string RequestBody(evhttp_request* req) {
  evbuffer* in = evhttp_request_get_input_buffer(req);
  size_t n = evbuffer_get_length(in);
  std::string body(n, '\0');
  evbuffer_copyout(in, body.data(), n);
  return body;
}

const char* RequestContentType(evhttp_request* req) {
  const char* ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
  return ct ? ct : "";
}

HttpServer* StartHttpServer(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg, int fd,
                            const std::string& hostport, const char* name, const char* error_type,
                            HttpServe serve) {
  std::string host;
  int port;
  if (fd < 0 || !proc::ParseHostPort(hostport, &host, &port)) return nullptr;
  auto* h = new HttpServer{evhttp_new(base), &pc, &reg, name, error_type, host, port, serve};
  evhttp_set_max_body_size(h->http, kHttpMaxBody);
  evhttp_set_max_headers_size(h->http, 16 * 1024);
  evhttp_set_timeout(h->http, 10);
  evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
  evhttp_set_gencb(h->http, &OnRequest, h);
  // The supervisor bound it (OpenHttpListener); libevent closes this
  // process's copy when the server is freed.
  if (!evhttp_accept_socket_with_handle(h->http, fd)) {
    LOG_ERR("%s: cannot serve %s", name, hostport.c_str());
    evhttp_free(h->http);
    delete h;
    return nullptr;
  }
  return h;
}

void StopHttpServer(HttpServer* h) {
  if (!h) return;
  evhttp_free(h->http);
  delete h;
}

int OpenHttpListener(const char* door, const std::string& hostport, const std::string& run_dir, std::string* err) {
  int fd = -1;
  if (proc::ClaimTcp(hostport, run_dir, err)) fd = proc::BindTcp(hostport, /*reuseport=*/false, 128, err);
  if (fd < 0) *err = std::string(door) + ": " + *err;
  return fd;
}

}  // namespace modules::mi_door
