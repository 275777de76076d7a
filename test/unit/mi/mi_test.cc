// perfcached — unit tests for the MI core: recipes, JSON-RPC errors, FIFO framing.
// Copyright (c) 2026 the perfcached authors.
#include <string>

#include "mi/mi.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mi::Json;

namespace {

mi::Registry MakeRegistry() {
  mi::Registry r;
  mi::Command keys;
  keys.name = "perf_keys";
  keys.module = "perfcached";
  keys.help = "list keys";
  keys.recipes = {{"glob"}, {"glob", "collection", "limit"}, {"glob", "limit"}};
  keys.handler = [](const mi::Params& p) {
    std::string g, err;
    int64_t limit = 1000;
    if (!p.GetString("glob", &g, &err)) return mi::MiParamError(err);
    if (p.Has("limit") && !p.GetInt("limit", &limit, &err)) return mi::MiParamError(err);
    return mi::MiResult(Json{{"glob", g}, {"limit", limit}, {"n", p.size()}});
  };
  CHECK(r.Add(keys));
  mi::Command set;
  set.name = "perf_set";
  set.module = "perfcached";
  set.recipes = {{"key", "value"}, {"key", "value", "ttl"}, {"key", "value", "collection"}};
  set.handler = [](const mi::Params&) { return mi::MiOk(); };
  CHECK(r.Add(set));
  mi::Command up;
  up.name = "uptime";
  up.module = "core";
  up.recipes = {{}};
  up.handler = [](const mi::Params&) { return mi::MiError(404, "Statistics Not Found"); };
  CHECK(r.Add(up));
  return r;
}

std::string Call(const mi::Registry& r, const std::string& text) {
  return mi::Serialize(mi::ProcessText(r, text));
}

}  // namespace

TEST_GROUP(MiCore){};

TEST(MiCore, NamesBareAndQualified) {
  mi::Registry r = MakeRegistry();
  CHECK(r.Find("perf_keys") != nullptr);
  CHECK(r.Find("perfcached:perf_keys") == r.Find("perf_keys"));
  CHECK(r.Find("core:uptime") != nullptr);
  CHECK(r.Find("nope") == nullptr);
  CHECK_EQUAL(6u, r.Names().size());
  mi::Command dup;
  dup.name = "uptime";
  dup.module = "other";
  CHECK_FALSE(r.Add(dup));
}

TEST(MiCore, PositionalNamedAndNone) {
  mi::Registry r = MakeRegistry();
  STRCMP_EQUAL(R"({"id":"1","jsonrpc":"2.0","result":{"glob":"s*","limit":1000,"n":1}})",
               Call(r, R"({"jsonrpc":"2.0","id":"1","method":"perf_keys","params":["s*"]})").c_str());
  // opensips-cli sends numbers as strings.
  STRCMP_EQUAL(R"({"id":2,"jsonrpc":"2.0","result":{"glob":"s*","limit":50,"n":3}})",
               Call(r, R"({"jsonrpc":"2.0","id":2,"method":"perf_keys","params":["s*","th","50"]})").c_str());
  STRCMP_EQUAL(R"({"id":3,"jsonrpc":"2.0","result":{"glob":"x","limit":7,"n":2}})",
               Call(r, R"({"jsonrpc":"2.0","id":3,"method":"perfcached:perf_keys","params":{"limit":7,"glob":"x"}})").c_str());
  STRCMP_EQUAL(R"({"error":{"code":404,"message":"Statistics Not Found"},"id":4,"jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"2.0","id":4,"method":"uptime","params":{}})").c_str());
  STRCMP_EQUAL(R"({"error":{"code":404,"message":"Statistics Not Found"},"id":5,"jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"2.0","id":5,"method":"uptime","params":[]})").c_str());
  STRCMP_EQUAL(R"({"error":{"code":404,"message":"Statistics Not Found"},"id":6,"jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"2.0","id":6,"method":"uptime"})").c_str());
}

TEST(MiCore, ParamErrors) {
  mi::Registry r = MakeRegistry();
  STRCMP_EQUAL(
      R"({"error":{"code":-32602,"data":"Ambiguous call, use named parameters instead","message":"Invalid params"},"id":1,"jsonrpc":"2.0"})",
      Call(r, R"({"jsonrpc":"2.0","id":1,"method":"perf_set","params":["k","v","60"]})").c_str());
  STRCMP_EQUAL(
      R"({"error":{"code":-32602,"data":"Too few or too many parameters","message":"Invalid params"},"id":1,"jsonrpc":"2.0"})",
      Call(r, R"({"jsonrpc":"2.0","id":1,"method":"perf_keys","params":["a","b","c","d"]})").c_str());
  STRCMP_EQUAL(
      R"({"error":{"code":-32602,"data":"Named parameters do not match","message":"Invalid params"},"id":1,"jsonrpc":"2.0"})",
      Call(r, R"({"jsonrpc":"2.0","id":1,"method":"perf_keys","params":{"pattern":"x"}})").c_str());
  STRCMP_EQUAL(
      R"({"error":{"code":-32602,"data":"Bad type for parameter 'limit'","message":"Invalid params"},"id":1,"jsonrpc":"2.0"})",
      Call(r, R"({"jsonrpc":"2.0","id":1,"method":"perf_keys","params":{"glob":"x","limit":"ten"}})").c_str());
  STRCMP_EQUAL(
      R"({"error":{"code":-32602,"data":"Too few or too many parameters","message":"Invalid params"},"id":1,"jsonrpc":"2.0"})",
      Call(r, R"({"jsonrpc":"2.0","id":1,"method":"perf_keys"})").c_str());
}

TEST(MiCore, ProtocolErrors) {
  mi::Registry r = MakeRegistry();
  STRCMP_EQUAL(R"({"error":{"code":-32700,"message":"Parse error"},"id":null,"jsonrpc":"2.0"})",
               Call(r, "{not json").c_str());
  STRCMP_EQUAL(R"({"error":{"code":-32600,"message":"Invalid Request"},"id":1,"jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"1.0","id":1,"method":"uptime"})").c_str());
  STRCMP_EQUAL(R"({"error":{"code":-32600,"message":"Invalid Request"},"id":null,"jsonrpc":"2.0"})",
               Call(r, R"([1,2])").c_str());
  STRCMP_EQUAL(R"({"error":{"code":-32600,"message":"Invalid Request"},"id":1,"jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"2.0","id":1,"method":7})").c_str());
  STRCMP_EQUAL(R"({"error":{"code":-32600,"message":"Invalid Request"},"id":1,"jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"2.0","id":1,"method":"uptime","params":"x"})").c_str());
  STRCMP_EQUAL(R"({"error":{"code":-32601,"message":"Method not found"},"id":"9","jsonrpc":"2.0"})",
               Call(r, R"({"jsonrpc":"2.0","id":"9","method":"nope"})").c_str());
  // A notification (no id) gets no reply at all.
  CHECK(mi::ProcessText(r, R"({"jsonrpc":"2.0","method":"uptime"})").is_null());
}

TEST(MiCore, SerializeIsOneLineAndSurvivesBinary) {
  std::string s = mi::Serialize(Json{{"key", std::string("a\xff\nb", 4)}});
  CHECK(s.find('\n') == std::string::npos);
  CHECK(s.find("\\n") != std::string::npos);
}

TEST_GROUP(FifoFrame){};

TEST(FifoFrame, SeveralRequestsPerReadInOrder) {
  std::string buf =
      R"(:r1:{"jsonrpc": "2.0", "id": "266", "method": "which", "params": {}})"
      "\n"
      R"(:r2:{"jsonrpc":"2.0","id":1,"method":"x","params":["a}b\"{"]}:r3:{"jsonrpc")";
  size_t pos = 0;
  mi::Frame f;
  CHECK(mi::ParseFifoFrame(buf, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("r1", f.reply_name.c_str());
  STRCMP_EQUAL("which", f.request["method"].get<std::string>().c_str());
  CHECK(mi::ParseFifoFrame(buf, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("r2", f.reply_name.c_str());
  STRCMP_EQUAL("a}b\"{", f.request["params"][0].get<std::string>().c_str());
  size_t before = pos;
  CHECK(mi::ParseFifoFrame(buf, &pos, &f) == mi::FrameResult::kNeedMore);
  CHECK_EQUAL(before, pos);
  buf += R"(:"2.0","id":3,"method":"y"})";
  CHECK(mi::ParseFifoFrame(buf, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("r3", f.reply_name.c_str());
  CHECK_EQUAL(buf.size(), pos);
}

TEST(FifoFrame, BadNamesAndBadJson) {
  size_t pos = 0;
  mi::Frame f;
  std::string a = R"(:../etc/x:{"jsonrpc":"2.0","id":1,"method":"which"})";
  CHECK(mi::ParseFifoFrame(a, &pos, &f) == mi::FrameResult::kBadName);
  CHECK_EQUAL(a.size(), pos);
  pos = 0;
  std::string b = ":reply:not json at all\n:r2:{}";
  CHECK(mi::ParseFifoFrame(b, &pos, &f) == mi::FrameResult::kBadJson);
  STRCMP_EQUAL("reply", f.reply_name.c_str());
  CHECK(mi::ParseFifoFrame(b, &pos, &f) == mi::FrameResult::kRequest);
  pos = 0;
  std::string c = R"(:reply:{"a":tru})";
  CHECK(mi::ParseFifoFrame(c, &pos, &f) == mi::FrameResult::kBadJson);
  pos = 0;
  std::string g = ":early:{not json";  // wrong already: answered now, not waited on
  CHECK(mi::ParseFifoFrame(g, &pos, &f) == mi::FrameResult::kBadJson);
  CHECK_EQUAL(g.size(), pos);
  pos = 0;
  std::string h = ":wait:{\"jsonrpc\":\"2.";  // merely unfinished
  CHECK(mi::ParseFifoFrame(h, &pos, &f) == mi::FrameResult::kNeedMore);
  CHECK_EQUAL(0u, pos);
  pos = 0;
  std::string t = "xxxx\"]}:next:{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"which\"}";
  CHECK(mi::ParseFifoFrame(t, &pos, &f) == mi::FrameResult::kGarbage);  // resync at ':'
  CHECK(mi::ParseFifoFrame(t, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("next", f.reply_name.c_str());
  pos = 0;
  std::string d = "garbage line\n";
  CHECK(mi::ParseFifoFrame(d, &pos, &f) == mi::FrameResult::kGarbage);
  CHECK_EQUAL(d.size(), pos);
  pos = 0;
  std::string e = "::{\"jsonrpc\":\"2.0\",\"method\":\"which\"}";
  CHECK(mi::ParseFifoFrame(e, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("", f.reply_name.c_str());  // no reply wanted
  CHECK_FALSE(mi::ValidReplyName("a.b"));
  CHECK_FALSE(mi::ValidReplyName("a\\b"));
  CHECK(mi::ValidReplyName("opensips_fifo_reply_11893_1796014809_224671"));
}

// Issue 8 item 7: an unfinished request ends where the next frame starts.
TEST(FifoFrame, UnfinishedRequestNeverSwallowsTheNextFrame) {
  mi::Frame f;
  size_t pos = 0;
  std::string b = ":first:{\"jsonrpc\": \"2.0\", \"id\": \"1\", \"method\": "
                  ":second:{\"jsonrpc\":\"2.0\",\"id\":\"2\",\"method\":\"which\"}";
  CHECK(mi::ParseFifoFrame(b, &pos, &f) == mi::FrameResult::kBadJson);
  STRCMP_EQUAL("first", f.reply_name.c_str());
  CHECK(mi::ParseFifoFrame(b, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("second", f.reply_name.c_str());
  pos = 0;  // cut inside a string: the new frame's '{"' closes it
  std::string c = ":first:{\"jsonrpc\": \"2.0\", \"method\": \"ver"
                  ":second:{\"jsonrpc\":\"2.0\",\"id\":\"2\",\"method\":\"which\"}";
  CHECK(mi::ParseFifoFrame(c, &pos, &f) == mi::FrameResult::kBadJson);
  CHECK(mi::ParseFifoFrame(c, &pos, &f) == mi::FrameResult::kRequest);
  STRCMP_EQUAL("second", f.reply_name.c_str());
  pos = 0;  // a value that merely contains ":x:" is not a frame start
  std::string d = ":r:{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"perf_set\",\"params\":[\"a:x:b\"";
  CHECK(mi::ParseFifoFrame(d, &pos, &f) == mi::FrameResult::kNeedMore);
}

TEST(FifoFrame, JsonScannerFollowsAValue) {
  mi::JsonScanner s;
  CHECK_EQUAL(std::string_view::npos, s.Feed("{\"a\":\"}:x:{"));
  CHECK_EQUAL(std::string_view::npos, s.Feed("\\\"\",\"b\":[1,{}"));
  CHECK_EQUAL(2u, s.Feed("]}:next:{}"));
}
