// perfcached — XML-RPC <-> MI JSON-RPC, connection-free (see xmlrpc.h).
// Copyright (c) 2026 the perfcached authors.
#include "modules/mi/xmlrpc.h"

#include <strings.h>
#include <tinyxml2.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace modules::mi_door {
namespace {

using mi::Json;
using tinyxml2::XMLElement;
using tinyxml2::XMLNode;
using tinyxml2::XMLText;

constexpr int kMaxDepth = 16;  // nested arrays / structs in a request (tinyxml2 stops at 100 elements, ~32)

bool Is(const XMLElement* e, const char* name) { return strcasecmp(e->Name(), name) == 0; }

// The first child element called `name` (any case), as mi_xmlrpc_ng looks one up.
const XMLElement* Child(const XMLElement* e, const char* name) {
  for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
    if (Is(c, name)) return c;
  }
  return nullptr;
}

// The element's own text: its text and CDATA children, joined.
std::string Text(const XMLElement* e) {
  std::string s;
  for (const XMLNode* n = e->FirstChild(); n; n = n->NextSibling()) {
    if (const XMLText* t = n->ToText()) s += t->Value();
  }
  return s;
}

bool Blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && Blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && Blank(s.back())) s.remove_suffix(1);
  return s;
}

bool StartsNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

// A number's text: blanks around it and one leading '+' (XML-RPC allows
// it, from_chars does not) dropped.
std::string_view NumberText(std::string_view s) {
  s = Trim(s);
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);
  return s;
}

// tinyxml2 9 (Debian 12) drops text made only of blanks, so
// "<string> </string>" would read as "". Such a run right between
// <string> and </string> (or <value> and </value>) is rewritten as
// character references, read as a conforming parser reads it (CR LF or a
// lone CR: one LF). Comments and CDATA sections are copied untouched.
std::string KeepBlankStrings(std::string_view in) {
  static constexpr std::pair<std::string_view, std::string_view> kTags[] = {{"<string>", "</string>"},
                                                                            {"<value>", "</value>"}};
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] != '<') {
      out += in[i++];
      continue;
    }
    std::string_view rest = in.substr(i);
    std::string_view skip_to;
    if (rest.starts_with("<!--")) skip_to = "-->";
    if (rest.starts_with("<![CDATA[")) skip_to = "]]>";
    if (!skip_to.empty()) {
      size_t e = in.find(skip_to, i + 4);
      e = e == std::string_view::npos ? in.size() : e + skip_to.size();
      out.append(in.substr(i, e - i));
      i = e;
      continue;
    }
    bool rewritten = false;
    for (const auto& [open, close] : kTags) {
      if (!StartsNoCase(rest, open)) continue;
      size_t j = i + open.size(), k = j;
      while (k < in.size() && Blank(in[k])) ++k;
      if (k == j || !StartsNoCase(in.substr(k), close)) break;
      out.append(in.substr(i, open.size()));
      for (size_t p = j; p < k; ++p) {
        if (in[p] == '\r') {
          out += "&#10;";
          if (p + 1 < k && in[p + 1] == '\n') ++p;
        } else {
          out += "&#" + std::to_string(static_cast<int>(in[p])) + ";";
        }
      }
      i = k;
      rewritten = true;
      break;
    }
    if (!rewritten) out += in[i++];
  }
  return out;
}

bool ParseValue(const XMLElement* value, int depth, Json* out, std::string* why);

bool ParseArray(const XMLElement* array, int depth, Json* out, std::string* why) {
  const XMLElement* data = Child(array, "data");
  if (!data) {
    *why = "an <array> without <data>";
    return false;
  }
  *out = Json::array();
  for (const XMLElement* v = data->FirstChildElement(); v; v = v->NextSiblingElement()) {
    if (!Is(v, "value")) continue;
    Json x;
    if (!ParseValue(v, depth + 1, &x, why)) return false;
    out->push_back(std::move(x));
  }
  return true;
}

bool ParseStruct(const XMLElement* st, int depth, Json* out, std::string* why) {
  *out = Json::object();
  for (const XMLElement* m = st->FirstChildElement(); m; m = m->NextSiblingElement()) {
    if (!Is(m, "member")) continue;
    const XMLElement* name = Child(m, "name");
    const XMLElement* value = Child(m, "value");
    if (!name || !value) {
      *why = name ? "a <member> without <value>" : "a <member> without <name>";
      return false;
    }
    std::string key = Text(name);
    if (key.empty()) {
      *why = "a <member> with an empty <name>";
      return false;
    }
    if (out->contains(key)) {
      *why = "member '" + key + "' given twice";
      return false;
    }
    Json x;
    if (!ParseValue(value, depth + 1, &x, why)) return false;
    (*out)[key] = std::move(x);
  }
  return true;
}

bool ParseValue(const XMLElement* value, int depth, Json* out, std::string* why) {
  if (depth > kMaxDepth) {
    *why = "values nested more than " + std::to_string(kMaxDepth) + " deep";
    return false;
  }
  const XMLElement* t = value->FirstChildElement();
  if (!t) {  // no type: a string (the XML-RPC spec)
    *out = Text(value);
    return true;
  }
  if (Is(t, "string")) {
    *out = Text(t);
    return true;
  }
  if (Is(t, "int") || Is(t, "i4") || Is(t, "i8")) {
    std::string s = Text(t);
    std::string_view n = NumberText(s);
    int64_t x;
    auto r = std::from_chars(n.data(), n.data() + n.size(), x);
    if (n.empty() || r.ec != std::errc() || r.ptr != n.data() + n.size()) {
      *why = "<" + std::string(t->Name()) + "> '" + s + "' is not a 64-bit integer";
      return false;
    }
    *out = x;
    return true;
  }
  if (Is(t, "boolean")) {
    std::string s = Text(t);
    std::string_view b = Trim(s);
    if (b != "0" && b != "1") {
      *why = "<boolean> '" + s + "' is not 0 or 1";
      return false;
    }
    *out = b == "1";
    return true;
  }
  if (Is(t, "double")) {
    std::string s = Text(t);
    std::string_view n = NumberText(s);
    double d;
    auto r = std::from_chars(n.data(), n.data() + n.size(), d);
    if (n.empty() || r.ec != std::errc() || r.ptr != n.data() + n.size() || !std::isfinite(d)) {
      *why = "<double> '" + s + "' is not a finite number";
      return false;
    }
    *out = d;
    return true;
  }
  if (Is(t, "nil")) {
    *out = nullptr;
    return true;
  }
  if (Is(t, "array")) return ParseArray(t, depth, out, why);
  if (Is(t, "struct")) return ParseStruct(t, depth, out, why);
  *why = "type <" + std::string(t->Name()) +
         "> is not taken (string, int, i4, i8, boolean, double, nil, array, struct)";
  return false;
}

// The length of the well-formed UTF-8 sequence at s[i] that XML 1.0 may
// carry (no U+FFFE / U+FFFF), or 0.
size_t XmlCharLen(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  unsigned c = b(0);
  auto cont = [&](size_t k, unsigned lo, unsigned hi) { return b(k) >= lo && b(k) <= hi; };
  if (c < 0x80) return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
  if (c >= 0xC2 && c <= 0xDF) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2, 0x80, 0xBF)) return 0;
    if (c == 0xEF && b(1) == 0xBF && b(2) >= 0xBE) return 0;  // U+FFFE, U+FFFF
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

// Character data: & < > " ' escaped (as mi_xmlrpc_ng does), CR as a
// reference (a parser would read a bare one as LF), anything XML 1.0
// cannot carry as U+FFFD.
void AppendText(std::string_view s, std::string* out) {
  for (size_t i = 0; i < s.size();) {
    size_t n = XmlCharLen(s, i);
    if (n == 0) {
      *out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    switch (s[i]) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      case '\'': *out += "&#39;"; break;
      case '\r': *out += "&#13;"; break;
      default: out->append(s.substr(i, n));
    }
    i += n;
  }
}

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

void AppendValue(const Json& v, std::string* out, int depth) {
  *out += "<value>";
  switch (v.type()) {
    case Json::value_t::boolean:
      *out += v.get<bool>() ? "<boolean>1</boolean>" : "<boolean>0</boolean>";
      break;
    case Json::value_t::number_integer: {
      int64_t x = v.get<int64_t>();
      bool small = x >= kInt32Min && x <= kInt32Max;
      *out += (small ? "<int>" : "<double>") + std::to_string(x) + (small ? "</int>" : "</double>");
      break;
    }
    case Json::value_t::number_unsigned: {
      uint64_t x = v.get<uint64_t>();
      bool small = x <= static_cast<uint64_t>(kInt32Max);
      *out += (small ? "<int>" : "<double>") + std::to_string(x) + (small ? "</int>" : "</double>");
      break;
    }
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (!std::isfinite(d)) {
        *out += "<nil/>";  // what the JSON doors print (null)
      } else if (d == std::trunc(d) && d >= static_cast<double>(kInt32Min) && d <= static_cast<double>(kInt32Max)) {
        *out += "<int>" + std::to_string(static_cast<int64_t>(d)) + "</int>";  // as mi_xmlrpc_ng (cJSON)
      } else {
        char buf[400];  // fixed notation of any finite double fits
        auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
        *out += "<double>" + std::string(buf, r.ptr) + "</double>";
      }
      break;
    }
    case Json::value_t::string:
      *out += "<string>";
      AppendText(v.get_ref<const std::string&>(), out);
      *out += "</string>";
      break;
    case Json::value_t::array:
      *out += "<array><data>";
      for (const Json& x : v) {
        if (depth < 64) AppendValue(x, out, depth + 1);
      }
      *out += "</data></array>";
      break;
    case Json::value_t::object:
      *out += "<struct>";
      for (const auto& [k, x] : v.items()) {
        if (depth >= 64) break;
        *out += "<member><name>";
        AppendText(k, out);
        *out += "</name>";
        AppendValue(x, out, depth + 1);
        *out += "</member>";
      }
      *out += "</struct>";
      break;
    default:  // null, and nothing MI answers (binary, discarded)
      *out += "<nil/>";
  }
  *out += "</value>";
}

// mi_xmlrpc_ng's fault for each standard JSON-RPC code (the strings of the
// xmlrpc-epi fault code interoperability spec). It writes 32700 for the
// parse error, a sign dropped by mistake; the spec's -32700 is sent here.
struct FaultRow {
  int code;
  const char* text;
};
constexpr FaultRow kFaults[] = {
    {mi::kParseError, "parse error. not well formed"},
    {mi::kInvalidRequest, "server error. invalid xml-rpc. not conforming to spec."},
    {mi::kMethodNotFound, "server error. requested method not found"},
    {mi::kInvalidParams, "server error. invalid method parameters"},
    {mi::kServerError, "server error"},
};

std::string Fault(int64_t code, const std::string& text) {
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<methodResponse>\r\n<fault><value>\r\n<struct>\r\n"
      "<member>\r\n<name>faultCode</name>\r\n<value><int>" + std::to_string(code) +
      "</int></value>\r\n</member>\r\n<member>\r\n<name>faultString</name>\r\n<value><string>";
  AppendText(text, &out);
  out += "</string></value>\r\n</member>\r\n</struct>\r\n</value>\r\n</fault>\r\n</methodResponse>\r\n";
  return out;
}

std::string StringOr(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

bool XmlRpcToJsonRpc(std::string_view xml, Json* request, int* code, std::string* why) {
  std::string text = KeepBlankStrings(xml);
  tinyxml2::XMLDocument doc(/*processEntities=*/true, tinyxml2::PRESERVE_WHITESPACE);
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    *code = mi::kParseError;
    *why = std::string(doc.ErrorName()) + " at line " + std::to_string(doc.ErrorLineNum());
    return false;
  }
  *code = mi::kInvalidRequest;
  const XMLElement* call = doc.RootElement();
  if (!call || !Is(call, "methodCall")) {
    *why = "no <methodCall>";
    return false;
  }
  const XMLElement* name = Child(call, "methodName");
  if (!name) {
    *why = "no <methodName>";
    return false;
  }
  Json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", Text(name)}};
  Json positional = Json::array();
  bool named = false;
  if (const XMLElement* params = Child(call, "params")) {
    for (const XMLElement* p = params->FirstChildElement(); p; p = p->NextSiblingElement()) {
      if (!Is(p, "param")) continue;
      const XMLElement* v = Child(p, "value");
      if (!v) {
        *why = "a <param> without <value>";
        return false;
      }
      if (named) {
        *why = "named params (a <struct>) must be the only <param>";
        return false;
      }
      Json x;
      if (!ParseValue(v, 0, &x, why)) return false;
      const XMLElement* type = v->FirstChildElement();
      if (positional.empty() && type && Is(type, "struct")) {
        named = true;
        req["params"] = std::move(x);
      } else {
        positional.push_back(std::move(x));
      }
    }
  }
  if (!named) req["params"] = std::move(positional);
  *request = std::move(req);
  return true;
}

void AppendXmlRpcValue(const Json& v, std::string* out) { AppendValue(v, out, 0); }

std::string XmlRpcResponse(const Json& reply) {
  auto err = reply.is_object() ? reply.find("error") : reply.end();
  if (reply.is_object() && err != reply.end() && err->is_object()) {
    auto c = err->find("code");
    int64_t code = c != err->end() && c->is_number_integer() ? c->get<int64_t>() : mi::kServerError;
    std::string text = StringOr(*err, "message");
    for (const FaultRow& f : kFaults) {
      if (f.code == code) text = f.text;
    }
    std::string data = StringOr(*err, "data");
    if (!data.empty()) text += " (" + data + ")";
    return Fault(code, text);
  }
  auto res = reply.is_object() ? reply.find("result") : reply.end();
  if (!reply.is_object() || res == reply.end()) return Fault(mi::kServerError, "server error");
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<methodResponse>\r\n<params><param>\r\n";
  AppendValue(*res, &out, 0);
  out += "</param></params>\r\n</methodResponse>\r\n";
  return out;
}

std::string ProcessXmlRpc(const mi::Registry& r, std::string_view xml) {
  Json req;
  int code;
  std::string why;
  if (!XmlRpcToJsonRpc(xml, &req, &code, &why)) {
    return XmlRpcResponse(
        mi::ErrorReply(nullptr, code, code == mi::kParseError ? "Parse error" : "Invalid Request", why));
  }
  return XmlRpcResponse(mi::Dispatch(r, req));
}

bool XmlRpcPathMatches(std::string_view path, std::string_view root) {
  if (path.size() < root.size() + 1 || path[0] != '/' || path.substr(1, root.size()) != root) return false;
  return path.size() == root.size() + 1 || path[root.size() + 1] == '/';
}

}  // namespace modules::mi_door
