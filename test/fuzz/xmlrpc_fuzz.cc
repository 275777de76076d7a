// perfcached — libFuzzer target for the XML-RPC codec (modules/mi/xmlrpc.cc): the input is a request body.
// Copyright (c) 2026 the perfcached authors.
//
// Properties: no crash and nothing thrown; a request that parses has a
// string method and array or object params; each param, written back as
// an XML-RPC <value> and read again, is the same value (checked against an
// independent model of what the writer must change: integers outside 32
// bits become doubles, integral doubles inside them become ints, text XML
// cannot carry is replaced, so a struct with such member names is only
// written); every response document the door can send
// for this input (the result echoed, or a fault carrying the input's
// bytes) is well-formed XML with a <methodResponse> root.
#include <tinyxml2.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "mi/mi.h"
#include "modules/mi/xmlrpc.h"

namespace {

using mi::Json;

// Text the writer must carry unchanged: UTF-8 that XML 1.0 allows.
bool XmlSafe(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    size_t n;
    if (c < 0x80) {
      cp = c;
      n = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return false;
    if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') return false;
    i += n;
  }
  return true;
}

bool InInt32(double d) { return d >= -2147483648.0 && d <= 2147483647.0; }

// Is `back` what writing `a` and reading it again must give?
bool Same(const Json& a, const Json& back) {
  switch (a.type()) {
    case Json::value_t::string:
      return back.is_string() && (!XmlSafe(a.get<std::string>()) || back == a);
    case Json::value_t::number_integer: {
      int64_t x = a.get<int64_t>();
      if (InInt32(static_cast<double>(x))) return back.is_number_integer() && back.get<int64_t>() == x;
      return back.is_number_float() && back.get<double>() == static_cast<double>(x);
    }
    case Json::value_t::number_float: {
      double d = a.get<double>();
      if (d == std::trunc(d) && InInt32(d)) return back.is_number_integer() && back.get<int64_t>() == d;
      return back.is_number_float() && back.get<double>() == d;
    }
    case Json::value_t::array: {
      if (!back.is_array() || back.size() != a.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!Same(a[i], back[i])) return false;
      }
      return true;
    }
    case Json::value_t::object: {
      if (!back.is_object() || back.size() != a.size()) return false;
      for (const auto& [k, v] : a.items()) {
        auto it = back.find(k);
        if (it == back.end() || !Same(v, *it)) return false;
      }
      return true;
    }
    default:
      return a == back;
  }
}

// Member names the writer must replace could come back equal (a member
// named twice, refused on reading): such values are only written.
bool KeysSafe(const Json& v) {
  if (v.is_array()) {
    for (const Json& x : v) {
      if (!KeysSafe(x)) return false;
    }
  }
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) {
      if (!XmlSafe(k) || !KeysSafe(x)) return false;
    }
  }
  return true;
}

bool WellFormedResponse(const std::string& doc) {
  tinyxml2::XMLDocument d;
  return d.Parse(doc.data(), doc.size()) == tinyxml2::XML_SUCCESS && d.RootElement() &&
         std::string(d.RootElement()->Name()) == "methodResponse";
}

// Write v as a <value>, wrap it as the only param of a call, read it back.
Json RoundTrip(const Json& v) {
  std::string call = "<methodCall><methodName>m</methodName><params><param>";
  modules::mi_door::AppendXmlRpcValue(v, &call);
  call += "</param></params></methodCall>";
  Json req;
  int code;
  std::string why;
  if (!modules::mi_door::XmlRpcToJsonRpc(call, &req, &code, &why)) std::abort();
  const Json& p = req["params"];
  return p.is_object() ? p : p.at(0);  // a struct comes back as the named params
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Json req;
  int code = 0;
  std::string why;
  if (!modules::mi_door::XmlRpcToJsonRpc(in, &req, &code, &why)) {
    if (code != mi::kParseError && code != mi::kInvalidRequest) std::abort();
    std::string fault = modules::mi_door::XmlRpcResponse(mi::ErrorReply(nullptr, code, "x", why));
    if (!WellFormedResponse(fault)) std::abort();
    return 0;
  }
  if (!req["method"].is_string()) std::abort();
  const Json& params = req["params"];
  if (!params.is_array() && !params.is_object()) std::abort();
  if (params.is_object()) {
    if (KeysSafe(params) && !Same(params, RoundTrip(params))) std::abort();
  } else {
    for (const Json& v : params) {
      if (KeysSafe(v) && !Same(v, RoundTrip(v))) std::abort();
    }
  }
  if (!WellFormedResponse(modules::mi_door::XmlRpcResponse(Json{{"result", params}}))) std::abort();
  // The input's bytes in a fault's text (the method name, as an error's data).
  std::string fault = modules::mi_door::XmlRpcResponse(
      mi::ErrorReply(1, 404, req["method"].get<std::string>(), req["method"].get<std::string>()));
  if (!WellFormedResponse(fault)) std::abort();
  return 0;
}
