// perfcached — MI core: recipes, dispatch, JSON-RPC errors, FIFO framing.
// Copyright (c) 2026 the perfcached authors.
#include "mi/mi.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace mi {

bool Params::GetString(const std::string& name, std::string* out, std::string* err) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    *err = "Missing parameter '" + name + "'";
    return false;
  }
  const Json& v = it->second;
  if (v.is_string()) {
    *out = v.get<std::string>();
  } else if (v.is_number_integer()) {
    *out = std::to_string(v.get<int64_t>());
  } else {
    *err = "Bad type for parameter '" + name + "'";
    return false;
  }
  return true;
}

bool Params::GetInt(const std::string& name, int64_t* out, std::string* err) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    *err = "Missing parameter '" + name + "'";
    return false;
  }
  const Json& v = it->second;
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    if (!s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size()) return true;
  }
  *err = "Bad type for parameter '" + name + "'";
  return false;
}

bool Params::GetArray(const std::string& name, std::vector<std::string>* out,
                      std::string* err) const {
  auto it = values_.find(name);
  if (it == values_.end() || !it->second.is_array()) {
    *err = "Bad type for parameter '" + name + "'";
    return false;
  }
  out->clear();
  for (const Json& e : it->second) {
    if (!e.is_string()) {
      *err = "Bad type for parameter '" + name + "'";
      return false;
    }
    out->push_back(e.get<std::string>());
  }
  return true;
}

bool Registry::Add(Command c) {
  std::string q = c.module + ":" + c.name;
  if (index_.count(c.name) || index_.count(q)) return false;
  for (const auto& a : c.aliases) {
    if (index_.count(a)) return false;
  }
  size_t i = cmds_.size();
  index_[c.name] = i;
  index_[q] = i;
  for (const auto& a : c.aliases) index_[a] = i;
  cmds_.push_back(std::move(c));
  return true;
}

const Command* Registry::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &cmds_[it->second];
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> v;
  for (const auto& [k, i] : index_) v.push_back(k);
  return v;
}

bool ResolveParams(const Command& c, const Json& params, Params* out, std::string* err) {
  bool none = params.is_null() || (params.is_array() && params.empty()) ||
              (params.is_object() && params.empty());
  if (none) {
    for (const auto& r : c.recipes) {
      if (r.empty()) {
        *out = Params();
        return true;
      }
    }
    *err = "Too few or too many parameters";
    return false;
  }
  if (params.is_array()) {
    if (c.named_only) {
      *err = "Command only supports named parameters";
      return false;
    }
    const std::vector<std::string>* match = nullptr;
    for (const auto& r : c.recipes) {
      if (r.size() != params.size()) continue;
      if (match) {
        *err = "Ambiguous call, use named parameters instead";
        return false;
      }
      match = &r;
    }
    if (!match) {
      *err = "Too few or too many parameters";
      return false;
    }
    std::map<std::string, Json> v;
    for (size_t i = 0; i < match->size(); ++i) v[(*match)[i]] = params[i];
    *out = Params(std::move(v));
    return true;
  }
  if (params.is_object()) {
    bool count_seen = false;
    for (const auto& r : c.recipes) {
      if (r.size() != params.size()) continue;
      count_seen = true;
      bool all = std::all_of(r.begin(), r.end(), [&](const std::string& n) { return params.contains(n); });
      if (!all) continue;
      std::map<std::string, Json> v;
      for (const auto& n : r) v[n] = params[n];
      *out = Params(std::move(v));
      return true;
    }
    *err = count_seen ? "Named parameters do not match" : "Too few or too many parameters";
    return false;
  }
  *err = "Failed to handle parameter";
  return false;
}

Json ErrorReply(const Json& id, int code, const std::string& message, const std::string& data) {
  Json e = {{"code", code}, {"message", message}};
  if (!data.empty()) e["data"] = data;
  return Json{{"jsonrpc", "2.0"}, {"error", std::move(e)}, {"id", id}};
}

Json Dispatch(const Registry& r, const Json& req) {
  if (!req.is_object()) return ErrorReply(nullptr, kInvalidRequest, "Invalid Request", "");
  Json id = req.contains("id") ? req["id"] : Json();
  bool notification = !req.contains("id");
  auto jv = req.find("jsonrpc");
  auto mv = req.find("method");
  if (jv == req.end() || !jv->is_string() || *jv != "2.0" || mv == req.end() || !mv->is_string() ||
      (req.contains("params") && !req["params"].is_array() && !req["params"].is_object() &&
       !req["params"].is_null()) ||
      (!id.is_null() && !id.is_string() && !id.is_number())) {
    return ErrorReply(id.is_string() || id.is_number() ? id : Json(), kInvalidRequest,
                      "Invalid Request", "");
  }
  const Command* c = r.Find(mv->get_ref<const std::string&>());
  Json reply;
  if (!c) {
    reply = ErrorReply(id, kMethodNotFound, "Method not found", "");
  } else {
    Params p;
    std::string err;
    if (!ResolveParams(*c, req.contains("params") ? req["params"] : Json(), &p, &err)) {
      reply = ErrorReply(id, kInvalidParams, "Invalid params", err);
    } else {
      Response resp = c->handler(p);
      if (resp.ok) {
        reply = Json{{"jsonrpc", "2.0"}, {"result", std::move(resp.result)}, {"id", id}};
      } else {
        reply = ErrorReply(id, resp.code, resp.message, resp.data);
      }
    }
  }
  return notification ? Json() : reply;
}

Json ProcessText(const Registry& r, std::string_view text) {
  Json req = Json::parse(text.begin(), text.end(), nullptr, false);
  if (req.is_discarded()) return ErrorReply(nullptr, kParseError, "Parse error", "");
  return Dispatch(r, req);
}

std::string Serialize(const Json& reply) {
  // Invalid UTF-8 in a value (binary keys) is replaced, never an exception.
  return reply.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool ValidReplyName(std::string_view name) {
  if (name.size() > 100) return false;
  return name.find_first_of("./\\") == std::string_view::npos;
}

namespace {

// Where does the JSON value starting at buf[i] end? Scans strings and
// brackets without building anything; returns npos when incomplete. The
// caller then parses exactly that span (the mi_fifo rule: the parser, not a
// terminator, finds the end of a request).
size_t JsonEnd(std::string_view buf, size_t i, bool* garbage) {
  *garbage = false;
  if (i >= buf.size()) return std::string_view::npos;
  if (buf[i] != '{' && buf[i] != '[') {
    *garbage = true;
    return std::string_view::npos;
  }
  int depth = 0;
  bool in_str = false;
  for (size_t k = i; k < buf.size(); ++k) {
    char ch = buf[k];
    if (in_str) {
      if (ch == '\\') {
        ++k;
      } else if (ch == '"') {
        in_str = false;
      }
      continue;
    }
    if (ch == '"') {
      in_str = true;
    } else if (ch == '{' || ch == '[') {
      if (++depth > 512) {
        *garbage = true;
        return std::string_view::npos;
      }
    } else if (ch == '}' || ch == ']') {
      if (--depth == 0) return k + 1;
    }
  }
  return std::string_view::npos;
}

// Does buf hold the start of a JSON value that is already wrong (as
// opposed to merely unfinished)? A SAX pass stops at the first error; an
// error at the end of the input means "need more".
struct ErrorProbe : nlohmann::json_sax<Json> {
  explicit ErrorProbe(size_t n) : size(n) {}
  size_t size;
  bool broken = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // An error found before the last byte is real; one at the end (an
    // unterminated string or number, a missing bracket) may be completed
    // by the next read.
    broken = position < size &&
             std::string_view(ex.what()).find("unexpected end of input") == std::string_view::npos;
    return false;
  }
};

bool AlreadyBroken(std::string_view json) {
  ErrorProbe probe(json.size());
  (void)Json::sax_parse(json.begin(), json.end(), &probe, Json::input_format_t::json, false);
  return probe.broken;
}

}  // namespace

namespace {

bool NameChar(char ch) {
  return ch != ':' && ch != '.' && ch != '/' && ch != '\\' && ch != '"' && ch != '{' &&
         ch != '}' && ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t';
}

// Is there a frame start ":name:" + blanks + '{' at buf[q]?
bool FrameStartAt(std::string_view buf, size_t q) {
  if (buf[q] != ':') return false;
  size_t k = q + 1;
  while (k < buf.size() && k - q <= 101 && NameChar(buf[k])) ++k;
  if (k >= buf.size() || buf[k] != ':') return false;
  ++k;
  while (k < buf.size() && (buf[k] == ' ' || buf[k] == '\n' || buf[k] == '\t')) ++k;
  return k < buf.size() && buf[k] == '{';
}

// The first place after `from` where another frame starts inside an
// unfinished request. Outside a JSON string, ":name:{" can never continue
// a JSON value; inside one, ':name:{"' closes the string and what follows
// cannot continue it either, so both end the unfinished request.
size_t NextFrameStart(std::string_view buf, size_t from) {
  bool in_str = false;
  for (size_t k = from; k < buf.size(); ++k) {
    char ch = buf[k];
    if (in_str) {
      if (ch == '\\') {
        ++k;
      } else if (ch == '"') {
        in_str = false;
      } else if (ch == ':' && FrameStartAt(buf, k)) {
        size_t brace = buf.find('{', k);
        if (brace + 1 < buf.size() && buf[brace + 1] == '"') return k;
      }
      continue;
    }
    if (ch == '"') {
      in_str = true;
    } else if (ch == ':' && FrameStartAt(buf, k)) {
      return k;
    }
  }
  return std::string_view::npos;
}

}  // namespace

size_t JsonScanner::Feed(std::string_view s) {
  for (size_t k = 0; k < s.size(); ++k) {
    char ch = s[k];
    if (esc) {
      esc = false;
    } else if (in_str) {
      if (ch == '\\') {
        esc = true;
      } else if (ch == '"') {
        in_str = false;
      }
    } else if (ch == '"') {
      in_str = true;
    } else if (ch == '{' || ch == '[') {
      ++depth;
    } else if (ch == '}' || ch == ']') {
      if (--depth <= 0) {
        depth = 0;
        return k + 1;
      }
    }
  }
  return std::string_view::npos;
}

bool HeldReplyName(std::string_view buf, std::string* name) {
  size_t i = 0;
  while (i < buf.size() && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) ++i;
  if (i >= buf.size() || buf[i] != ':') return false;
  size_t colon = buf.find(':', i + 1);
  if (colon == std::string_view::npos) return false;
  *name = std::string(buf.substr(i + 1, colon - i - 1));
  return true;
}

size_t FrameJsonStart(std::string_view buf) {
  size_t i = 0;
  while (i < buf.size() && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) ++i;
  if (i >= buf.size() || buf[i] != ':') return std::string_view::npos;
  size_t colon = buf.find(':', i + 1);
  if (colon == std::string_view::npos) return std::string_view::npos;
  size_t js = colon + 1;
  while (js < buf.size() && (buf[js] == ' ' || buf[js] == '\n' || buf[js] == '\t')) ++js;
  return js;
}

FrameResult ParseFifoFrame(std::string_view buf, size_t* pos, Frame* out) {
  size_t i = *pos;
  while (i < buf.size() && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) ++i;
  if (i >= buf.size()) {
    *pos = i;
    return FrameResult::kNeedMore;
  }
  if (buf[i] != ':') {
    // Not a frame (e.g. the tail of a dropped oversize request): skip to the
    // next ':' where a frame may start. Clients send no separator between
    // requests, so resyncing on a newline would swallow the next request.
    size_t colon = buf.find(':', i);
    *pos = colon == std::string_view::npos ? buf.size() : colon;
    return FrameResult::kGarbage;
  }
  size_t colon = buf.find(':', i + 1);
  if (colon == std::string_view::npos) {
    if (buf.size() - i > 256) {
      *pos = buf.size();
      return FrameResult::kGarbage;
    }
    return FrameResult::kNeedMore;
  }
  out->reply_name = std::string(buf.substr(i + 1, colon - i - 1));
  size_t js = colon + 1;
  while (js < buf.size() && (buf[js] == ' ' || buf[js] == '\n' || buf[js] == '\t')) ++js;
  bool garbage;
  size_t end = JsonEnd(buf, js, &garbage);
  if (end == std::string_view::npos && !garbage) {
    // Unfinished, or already wrong ("{not json")? Either way it ends where
    // the next frame starts: it is answered (-32700) and the next request
    // is served. A wrong one with no frame after it takes the rest of this
    // read with it; an unfinished one is held for more bytes.
    size_t next = NextFrameStart(buf, js);
    if (next != std::string_view::npos) {
      *pos = next;
    } else {
      if (!AlreadyBroken(buf.substr(js))) return FrameResult::kNeedMore;
      *pos = buf.size();
    }
    return ValidReplyName(out->reply_name) ? FrameResult::kBadJson : FrameResult::kBadName;
  }
  bool name_ok = ValidReplyName(out->reply_name);
  if (garbage) {
    // Not JSON after the name: consume the line, answer -32700 if we can.
    size_t nl = buf.find('\n', js);
    *pos = nl == std::string_view::npos ? buf.size() : nl + 1;
    return name_ok ? FrameResult::kBadJson : FrameResult::kBadName;
  }
  *pos = end;
  if (!name_ok) return FrameResult::kBadName;
  out->request = Json::parse(buf.begin() + static_cast<std::ptrdiff_t>(js),
                             buf.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
  return out->request.is_discarded() ? FrameResult::kBadJson : FrameResult::kRequest;
}

}  // namespace mi
