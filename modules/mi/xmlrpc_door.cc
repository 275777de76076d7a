// perfcached — the XML-RPC door: MI over XML-RPC as OpenSIPS's mi_xmlrpc_ng serves it.
// Copyright (c) 2026 the perfcached authors.
//
// `[mi] xmlrpc = host:port` (off by default), served by an evhttp in the MI
// process's event loop beside the HTTP door (http_server.h: the same
// limits, the same `[secrets] http` bearer token, the same Host check).
// POST /<xmlrpc_root> (default RPC2, mi_xmlrpc_ng's http_root) with an XML
// body (text/xml or application/xml: a cross-site form cannot send it);
// every MI command, through mi::Dispatch as on every other MI transport
// (xmlrpc.h converts). As mi_xmlrpc_ng: 405 for another method, 400 for
// an empty body, 200 and a <methodResponse> (result or <fault>) for the
// rest; 404 for another path, 413 above 64 KiB.
#include <event2/http.h>

#include <string>

#include "modules/mi/http_checks.h"
#include "modules/mi/http_server.h"
#include "modules/mi/mi_module.h"
#include "modules/mi/xmlrpc.h"
#include "proc/config.h"

namespace modules::mi_door {
namespace {

void ServeXmlRpc(evhttp_request* req, HttpServer& h) {
  if (!Admit(h, req)) return;
  const std::string& root = h.pc->cfg->mi_xmlrpc_root;
  if (!XmlRpcPathMatches(RequestPath(req), root)) {
    SendError(h, req, 404, "Not Found", "not found (XML-RPC: POST /" + root + ")");
  } else if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
    SendError(h, req, 405, "Method Not Allowed", "XML-RPC takes POST only");
  } else if (!IsXmlContentType(RequestContentType(req))) {
    SendError(h, req, 415, "Unsupported Media Type", "XML-RPC needs Content-Type: text/xml");
  } else if (std::string body = RequestBody(req); body.empty()) {
    SendError(h, req, 400, "Bad Request", "empty request");
  } else {
    SendReply(req, 200, "OK", ProcessXmlRpc(*h.reg, body), "text/xml");
  }
}

}  // namespace

void* StartXmlRpc(event_base* base, proc::ModuleProcContext& pc, const mi::Registry& reg, int fd) {
  return StartHttpServer(base, pc, reg, fd, pc.cfg->mi_xmlrpc, "XML-RPC door", "text/plain", &ServeXmlRpc);
}

}  // namespace modules::mi_door
