// perfcached — XML-RPC <-> MI JSON-RPC, connection-free: the XML-RPC door's codec (fuzzed: test/fuzz/xmlrpc_fuzz.cc).
// Copyright (c) 2026 the perfcached authors.
#pragma once

// What OpenSIPS's mi_xmlrpc_ng does (modules/mi_xmlrpc_ng/http_fnc.c and
// mi_xmlrpc_http.c, 3.x) and where this differs: docs/mi.md "XML-RPC
// door". In short: a <methodCall> becomes a JSON-RPC 2.0 request that
// mi::Dispatch handles exactly as it handles one from the FIFO, the
// datagram socket or POST /mi; its reply becomes a <methodResponse>.
//
// Request: <methodName> is the command. One <param> whose <value> holds a
// <struct> gives named params (its members, an object); otherwise every
// <param> in order gives positional params (an array). Values: <string>
// (and a <value> with no type, as the XML-RPC spec says), <int> / <i4> /
// <i8> (64-bit), <boolean> (0 or 1), <double> (finite), <nil/>, <array>
// and <struct>, nested at most 16 deep. Element names are matched without
// regard to case (as mi_xmlrpc_ng does). tinyxml2 expands no entity but
// the five predefined ones and character references, and reads no DTD.
//
// Response: a JSON object is a <struct> (its members in order), an array
// an <array>, a string a <string>, true/false a <boolean>, null a <nil/>;
// a number that is an integer in the 32-bit range an <int>, any other a
// <double> (an integer outside that range as its exact decimal digits; a
// fraction in the fewest fixed-point digits that read back to the same
// double). A JSON-RPC error is a <fault>: the standard codes with
// mi_xmlrpc_ng's fault strings, an application error (404 "Statistics Not
// Found") with its own code and message; an error's data follows in
// parentheses. Text that XML 1.0 cannot carry (bytes that are not UTF-8,
// control characters other than tab, newline and carriage return) is sent
// as U+FFFD, as the JSON doors send bytes that are not UTF-8.

#include <string>
#include <string_view>

#include "mi/mi.h"

namespace modules::mi_door {

// A <methodCall> document as a JSON-RPC 2.0 request:
// {"jsonrpc":"2.0","id":1,"method":NAME[,"params":[...] or {...}]}. False
// with *code = mi::kParseError (not well-formed XML) or
// mi::kInvalidRequest (no <methodCall> or <methodName>, a <param> without
// a <value>, a type not taken, a <struct> of named params with other
// params beside it, a member named twice, ...) and *why saying which.
bool XmlRpcToJsonRpc(std::string_view xml, mi::Json* request, int* code, std::string* why);

// The <value>...</value> of a JSON value, appended to *out.
void AppendXmlRpcValue(const mi::Json& v, std::string* out);

// A JSON-RPC reply (result or error) as a whole <methodResponse> document.
std::string XmlRpcResponse(const mi::Json& reply);

// The door: a request body in, a <methodResponse> out, through
// mi::Dispatch (the path every other MI transport takes).
std::string ProcessXmlRpc(const mi::Registry& r, std::string_view xml);

// Does the request path name the door? "/<root>" or anything under
// "/<root>/" (what OpenSIPS's httpd routes to mi_xmlrpc_ng).
bool XmlRpcPathMatches(std::string_view path, std::string_view root);

}  // namespace modules::mi_door
