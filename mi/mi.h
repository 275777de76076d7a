// perfcached — MI core: JSON-RPC 2.0 requests, the command registry with recipes, replies.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Transport-free, as OpenSIPS's mi/ is: transports (FIFO, datagram, HTTP, XML-RPC)
// hand a request's bytes to Process() and send back what it returns.
//
// Commands follow OpenSIPS MI (../shared/reference/opensips-mi.md §2):
// each has recipes (ordered parameter-name lists). Positional params pick
// the recipe with that many names (two such recipes = "Ambiguous call");
// named params pick the recipe whose name set is exactly the object's keys;
// missing / [] / {} mean no params. Integer getters accept numeric strings
// (opensips-cli sends every value as a string). Every command is findable
// as NAME and as MODULE:NAME and `which` lists both.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mi {

using Json = nlohmann::json;

// JSON-RPC protocol error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kServerError = -32000;

// What a handler returns: a result, or an error (code, message, data).
struct Response {
  bool ok = true;
  Json result;
  int code = 0;
  std::string message;
  std::string data;
};
inline Response MiOk() { return Response{true, "OK", 0, {}, {}}; }
inline Response MiResult(Json j) { return Response{true, std::move(j), 0, {}, {}}; }
inline Response MiError(int code, std::string message, std::string data = {}) {
  return Response{false, nullptr, code, std::move(message), std::move(data)};
}
inline Response MiParamError(std::string data) {
  return MiError(kInvalidParams, "Invalid params", std::move(data));
}

// The parameters of one call, resolved through the chosen recipe.
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, Json> v) : values_(std::move(v)) {}
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  // False (and *err set to the -32602 data) when absent or of a bad type.
  bool GetString(const std::string& name, std::string* out, std::string* err) const;
  // Accepts JSON integers and decimal strings ("60", "-1").
  bool GetInt(const std::string& name, int64_t* out, std::string* err) const;
  bool GetArray(const std::string& name, std::vector<std::string>* out, std::string* err) const;
  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, Json> values_;
};

using Handler = std::function<Response(const Params&)>;

struct Command {
  std::string name;                              // bare name, e.g. "perf_stats"
  std::string module;                            // "perfcached", "core", ...
  std::string help;
  std::vector<std::vector<std::string>> recipes; // {} = no params
  Handler handler;
  bool named_only = false;
  std::vector<std::string> aliases;              // extra names, e.g. "statistics:get"
};

class Registry {
 public:
  // False when the name is already taken.
  bool Add(Command c);
  // NAME or MODULE:NAME; nullptr when unknown.
  const Command* Find(std::string_view name) const;
  // Every callable name: bare and qualified, sorted.
  std::vector<std::string> Names() const;
  const std::vector<Command>& commands() const { return cmds_; }

 private:
  std::vector<Command> cmds_;
  std::map<std::string, size_t, std::less<>> index_;
};

// Match params against the command's recipes (OpenSIPS rules). On failure
// returns false with the -32602 data string in *err.
bool ResolveParams(const Command& c, const Json& params, Params* out, std::string* err);

// A JSON-RPC error reply: {"jsonrpc":"2.0","error":{"code","message"[,"data"]},"id"}.
Json ErrorReply(const Json& id, int code, const std::string& message, const std::string& data = {});
// Handle one JSON-RPC request (already parsed). Returns the reply object,
// or a null Json for a notification (no "id": nothing to send).
Json Dispatch(const Registry& r, const Json& request);
// Parse and handle the bytes of one request; unparseable JSON gets -32700.
Json ProcessText(const Registry& r, std::string_view text);
// The reply as one compact line, no trailing newline (what opensips-cli reads).
std::string Serialize(const Json& reply);

// FIFO framing: ":reply_name:" + one JSON object, several per read, in
// order. Parses one frame from buf[*pos..]. A frame's JSON end is found by
// parsing (as mi_fifo does).
enum class FrameResult { kNeedMore, kRequest, kBadName, kBadJson, kGarbage };
struct Frame {
  std::string reply_name;  // empty = no reply wanted
  Json request;            // valid for kRequest
};
//
// A request whose JSON is unfinished is held (kNeedMore) only until the
// start of another frame shows up after it (":name:{" at a place where the
// unfinished JSON cannot continue): then it is answered as kBadJson /
// kBadName and parsing goes on at that frame. The caller also bounds the
// time a request is held (modules/mi/mi_process.cc).
FrameResult ParseFifoFrame(std::string_view buf, size_t* pos, Frame* out);
// The reply name of the (unfinished) frame at the start of buf, if any.
bool HeldReplyName(std::string_view buf, std::string* name);
// Where the JSON of the frame at the start of buf begins (npos: not known yet).
size_t FrameJsonStart(std::string_view buf);

// Follows one JSON value through its bytes without keeping them: used to
// skip the rest of a request too large to hold. Feed() returns how many
// bytes of s belong to the value when its end is in s, else npos (all of s
// belongs to it).
struct JsonScanner {
  int depth = 0;
  bool in_str = false, esc = false;
  size_t Feed(std::string_view s);
};
// A reply basename is refused if it contains '.', '/' or '\\' (or is too long).
bool ValidReplyName(std::string_view name);

}  // namespace mi
