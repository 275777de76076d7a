// perfcached — unit tests for the XML-RPC codec (modules/mi/xmlrpc.cc): requests, values, faults.
// Copyright (c) 2026 the perfcached authors.
#include <cstdint>
#include <limits>
#include <string>

#include "mi/mi.h"
#include "modules/mi/xmlrpc.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mi::Json;
using modules::mi_door::AppendXmlRpcValue;
using modules::mi_door::ProcessXmlRpc;
using modules::mi_door::XmlRpcPathMatches;
using modules::mi_door::XmlRpcResponse;
using modules::mi_door::XmlRpcToJsonRpc;

namespace {

// The request as compact JSON, or "E<code>: <why>".
std::string Req(const std::string& xml) {
  Json req;
  int code = 0;
  std::string why;
  if (!XmlRpcToJsonRpc(xml, &req, &code, &why)) return "E" + std::to_string(code) + ": " + why;
  return req.dump();
}

std::string Call(const std::string& method, const std::string& params) {
  return "<?xml version='1.0'?>\n<methodCall>\n<methodName>" + method + "</methodName>\n<params>\n" + params +
         "</params>\n</methodCall>\n";
}

std::string P(const std::string& value) { return "<param>\n<value>" + value + "</value>\n</param>\n"; }

std::string Value(const Json& v) {
  std::string out;
  AppendXmlRpcValue(v, &out);
  return out;
}

constexpr char kHead[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<methodResponse>\r\n";

std::string FaultDoc(int code, const std::string& text) {
  return std::string(kHead) +
         "<fault><value>\r\n<struct>\r\n<member>\r\n<name>faultCode</name>\r\n<value><int>" + std::to_string(code) +
         "</int></value>\r\n</member>\r\n<member>\r\n<name>faultString</name>\r\n<value><string>" + text +
         "</string></value>\r\n</member>\r\n</struct>\r\n</value>\r\n</fault>\r\n</methodResponse>\r\n";
}

mi::Registry MakeRegistry() {
  mi::Registry r;
  mi::Command keys;
  keys.name = "perf_keys";
  keys.module = "perfcached";
  keys.recipes = {{"glob"}, {"glob", "limit"}};
  keys.handler = [](const mi::Params& p) {
    std::string g, err;
    int64_t limit = 1000;
    if (!p.GetString("glob", &g, &err)) return mi::MiParamError(err);
    if (p.Has("limit") && !p.GetInt("limit", &limit, &err)) return mi::MiParamError(err);
    return mi::MiResult(Json{{"glob", g}, {"limit", limit}});
  };
  CHECK(r.Add(keys));
  mi::Command stats;
  stats.name = "get_statistics";
  stats.module = "core";
  stats.recipes = {{"statistics"}};
  stats.handler = [](const mi::Params&) { return mi::MiError(404, "Statistics Not Found"); };
  CHECK(r.Add(stats));
  return r;
}

}  // namespace

TEST_GROUP(XmlRpcRequest){};

TEST(XmlRpcRequest, PythonClientForms) {
  // What Python's xmlrpc.client sends for p.perf_stats(), p.perf_set("k", "v", 60), p.perf_keys({...}).
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"perf_stats","params":[]})",
               Req(Call("perf_stats", "")).c_str());
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"perf_set","params":["k","v",60]})",
               Req(Call("perf_set", P("<string>k</string>") + P("<string>v</string>") + P("<int>60</int>"))).c_str());
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"perf_keys","params":{"glob":"a*","limit":5}})",
               Req(Call("perf_keys", P("<struct>\n<member>\n<name>glob</name>\n<value><string>a*</string></value>\n"
                                       "</member>\n<member>\n<name>limit</name>\n<value><int>5</int></value>\n"
                                       "</member>\n</struct>")))
                   .c_str());
  // No <params> at all: no params.
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"which","params":[]})",
               Req("<methodCall><methodName>which</methodName></methodCall>").c_str());
  // get_statistics takes an array: ["all"].
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"get_statistics","params":[["all","resp:"]]})",
               Req(Call("get_statistics", P("<array><data>\n<value><string>all</string></value>\n"
                                            "<value><string>resp:</string></value>\n</data></array>")))
                   .c_str());
}

TEST(XmlRpcRequest, EveryValueType) {
  STRCMP_EQUAL(
      R"({"id":1,"jsonrpc":"2.0","method":"m","params":["plain",-7,9000000000,true,false,2.5,null,{"a":[1,"x"]},"a&b<c"]})",
      Req(Call("m", P("plain") + P("<i4> -7 </i4>") + P("<i8>+9000000000</i8>") + P("<boolean>1</boolean>") +
                        P("<boolean>0</boolean>") + P("<double>2.5</double>") + P("<nil/>") +
                        P("<struct><member><name>a</name><value><array><data><value><int>1</int></value>"
                          "<value>x</value></data></array></value></member></struct>") +
                        P("<string>a&amp;b&lt;c</string>")))
          .c_str());
  // Element names in any case (mi_xmlrpc_ng compares them so), CDATA is text.
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"m","params":["<x>",""]})",
               Req("<METHODCALL><MethodName>m</MethodName><Params><Param><Value><String><![CDATA[<x>]]></String>"
                   "</Value></Param><param><value><string/></value></param></Params></METHODCALL>")
                   .c_str());
}

TEST(XmlRpcRequest, BlankStringsKept) {
  // tinyxml2 9 drops blank-only text; the codec keeps it (CR LF reads as LF).
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"m","params":[" ","\t\n","\n"," \n"]})",
               Req(Call("m", P("<string> </string>") + P("<string>\t\n</string>") + P("<STRING>\r\n</STRING>") +
                                 P(" \r")))
                   .c_str());
  // Not inside a comment or CDATA.
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"m","params":["<string> </string>"]})",
               Req(Call("m", "<!-- <string> </string> -->" + P("<string><![CDATA[<string> </string>]]></string>")))
                   .c_str());
}

TEST(XmlRpcRequest, NamedOnlyAlone) {
  // A struct after a positional param is a positional value (the handler judges it).
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"m","params":["a",{"k":"v"}]})",
               Req(Call("m", P("a") + P("<struct><member><name>k</name><value>v</value></member></struct>"))).c_str());
  STRCMP_EQUAL("E-32600: named params (a <struct>) must be the only <param>",
               Req(Call("m", P("<struct><member><name>k</name><value>v</value></member></struct>") + P("a")))
                   .c_str());
}

TEST(XmlRpcRequest, Errors) {
  CHECK(Req("<methodCall><methodName>x").rfind("E-32700: XML_ERROR_", 0) == 0);
  CHECK(Req("").rfind("E-32700: XML_ERROR_EMPTY_DOCUMENT", 0) == 0);
  CHECK(Req(std::string("<a>\0</a>", 8)).rfind("E-32700: ", 0) == 0);
  STRCMP_EQUAL("E-32600: no <methodCall>", Req("<methodResponse/>").c_str());
  STRCMP_EQUAL("E-32600: no <methodName>", Req("<methodCall><params/></methodCall>").c_str());
  STRCMP_EQUAL("E-32600: a <param> without <value>", Req(Call("m", "<param><string>x</string></param>")).c_str());
  STRCMP_EQUAL("E-32600: type <base64> is not taken (string, int, i4, i8, boolean, double, nil, array, struct)",
               Req(Call("m", P("<base64>eA==</base64>"))).c_str());
  STRCMP_EQUAL("E-32600: <int> '12x' is not a 64-bit integer", Req(Call("m", P("<int>12x</int>"))).c_str());
  STRCMP_EQUAL("E-32600: <int> '99999999999999999999' is not a 64-bit integer",
               Req(Call("m", P("<int>99999999999999999999</int>"))).c_str());
  STRCMP_EQUAL("E-32600: <int> '+-1' is not a 64-bit integer", Req(Call("m", P("<int>+-1</int>"))).c_str());
  STRCMP_EQUAL("E-32600: <int> '' is not a 64-bit integer", Req(Call("m", P("<int></int>"))).c_str());
  STRCMP_EQUAL("E-32600: <boolean> 'true' is not 0 or 1", Req(Call("m", P("<boolean>true</boolean>"))).c_str());
  STRCMP_EQUAL("E-32600: <double> 'inf' is not a finite number", Req(Call("m", P("<double>inf</double>"))).c_str());
  STRCMP_EQUAL("E-32600: <double> '1e999' is not a finite number", Req(Call("m", P("<double>1e999</double>"))).c_str());
  STRCMP_EQUAL("E-32600: an <array> without <data>", Req(Call("m", P("<array/>"))).c_str());
  STRCMP_EQUAL("E-32600: a <member> without <name>",
               Req(Call("m", P("<struct><member><value>v</value></member></struct>"))).c_str());
  STRCMP_EQUAL("E-32600: a <member> without <value>",
               Req(Call("m", P("<struct><member><name>k</name></member></struct>"))).c_str());
  STRCMP_EQUAL("E-32600: a <member> with an empty <name>",
               Req(Call("m", P("<struct><member><name></name><value>v</value></member></struct>"))).c_str());
  STRCMP_EQUAL("E-32600: member 'k' given twice",
               Req(Call("m", P("<struct><member><name>k</name><value>v</value></member>"
                               "<member><name>k</name><value>w</value></member></struct>")))
                   .c_str());
  std::string deep;
  for (int i = 0; i < 17; ++i) deep += "<array><data><value>";
  deep += "x";
  for (int i = 0; i < 17; ++i) deep += "</value></data></array>";
  STRCMP_EQUAL("E-32600: values nested more than 16 deep", Req(Call("m", P(deep))).c_str());
  CHECK(Req(Call("m", P(deep.substr(std::string("<array><data><value>").size(),
                                    deep.size() - std::string("<array><data><value></value></data></array>").size()))))
            .rfind("{", 0) == 0);
  // Deeper than tinyxml2 goes: a parse error, never a crash.
  std::string deeper;
  for (int i = 0; i < 200; ++i) deeper += "<a>";
  CHECK(Req(deeper).rfind("E-32700: XML_ELEMENT_DEPTH_EXCEEDED", 0) == 0);
  // No entity is expanded but the predefined ones (no DTD is read).
  STRCMP_EQUAL(R"({"id":1,"jsonrpc":"2.0","method":"&x;","params":[]})",
               Req("<!DOCTYPE m [<!ENTITY x \"boom\">]><methodCall><methodName>&x;</methodName></methodCall>").c_str());
}

TEST_GROUP(XmlRpcResponse){};

TEST(XmlRpcResponse, Values) {
  STRCMP_EQUAL("<value><nil/></value>", Value(nullptr).c_str());
  STRCMP_EQUAL("<value><boolean>1</boolean></value>", Value(true).c_str());
  STRCMP_EQUAL("<value><int>-2147483648</int></value>", Value(int64_t{-2147483648}).c_str());
  STRCMP_EQUAL("<value><int>2147483647</int></value>", Value(uint64_t{2147483647}).c_str());
  // Outside 32 bits: a double, with every digit.
  STRCMP_EQUAL("<value><double>2147483648</double></value>", Value(int64_t{2147483648}).c_str());
  STRCMP_EQUAL("<value><double>-2147483649</double></value>", Value(int64_t{-2147483649}).c_str());
  STRCMP_EQUAL("<value><double>18446744073709551615</double></value>", Value(UINT64_MAX).c_str());
  // A double: an integral one in range is an <int> (as mi_xmlrpc_ng); fixed, shortest exact digits.
  STRCMP_EQUAL("<value><int>3</int></value>", Value(3.0).c_str());
  STRCMP_EQUAL("<value><double>0.1</double></value>", Value(0.1).c_str());
  STRCMP_EQUAL("<value><double>0.0000001</double></value>", Value(1e-7).c_str());
  STRCMP_EQUAL("<value><double>4294967296</double></value>", Value(4294967296.0).c_str());
  STRCMP_EQUAL("<value><nil/></value>", Value(std::numeric_limits<double>::quiet_NaN()).c_str());
  STRCMP_EQUAL("<value><string>a&amp;b&lt;c&gt;d&quot;e&#39;f&#13;\n\tg</string></value>",
               Value("a&b<c>d\"e'f\r\n\tg").c_str());
  // What XML 1.0 cannot carry: U+FFFD.
  STRCMP_EQUAL("<value><string>a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD" "c\xC3\xA9</string></value>",
               Value(std::string("a\x01" "b\xff\xfe" "c\xC3\xA9")).c_str());
  STRCMP_EQUAL("<value><string>\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD</string></value>",
               Value(std::string("\xEF\xBF\xBF")).c_str());  // U+FFFF
  STRCMP_EQUAL("<value><array><data><value><int>1</int></value><value><string>x</string></value></data></array></value>",
               Value(Json::array({1, "x"})).c_str());
  STRCMP_EQUAL(
      "<value><struct><member><name>a&lt;</name><value><struct></struct></value></member>"
      "<member><name>b</name><value><array><data></data></array></value></member></struct></value>",
      Value(Json{{"a<", Json::object()}, {"b", Json::array()}}).c_str());
}

TEST(XmlRpcResponse, ResultAndFaults) {
  STRCMP_EQUAL((std::string(kHead) +
                "<params><param>\r\n<value><string>OK</string></value></param></params>\r\n</methodResponse>\r\n")
                   .c_str(),
               XmlRpcResponse(Json{{"jsonrpc", "2.0"}, {"result", "OK"}, {"id", 1}}).c_str());
  STRCMP_EQUAL(FaultDoc(-32601, "server error. requested method not found").c_str(),
               XmlRpcResponse(mi::ErrorReply(1, mi::kMethodNotFound, "Method not found")).c_str());
  STRCMP_EQUAL(FaultDoc(-32602, "server error. invalid method parameters (Bad type for parameter &#39;x&#39;)").c_str(),
               XmlRpcResponse(mi::ErrorReply(1, mi::kInvalidParams, "Invalid params", "Bad type for parameter 'x'"))
                   .c_str());
  STRCMP_EQUAL(FaultDoc(-32700, "parse error. not well formed").c_str(),
               XmlRpcResponse(mi::ErrorReply(nullptr, mi::kParseError, "Parse error")).c_str());
  STRCMP_EQUAL(FaultDoc(-32600, "server error. invalid xml-rpc. not conforming to spec.").c_str(),
               XmlRpcResponse(mi::ErrorReply(nullptr, mi::kInvalidRequest, "Invalid Request")).c_str());
  STRCMP_EQUAL(FaultDoc(-32000, "server error").c_str(),
               XmlRpcResponse(mi::ErrorReply(1, mi::kServerError, "Server error", "")).c_str());
  // An application error keeps its own code and message.
  STRCMP_EQUAL(FaultDoc(404, "Statistics Not Found").c_str(),
               XmlRpcResponse(mi::ErrorReply(1, 404, "Statistics Not Found")).c_str());
  // Neither result nor error: a server error, never an exception.
  STRCMP_EQUAL(FaultDoc(-32000, "server error").c_str(), XmlRpcResponse(Json{{"id", 1}}).c_str());
  STRCMP_EQUAL(FaultDoc(-32000, "server error").c_str(), XmlRpcResponse(Json()).c_str());
  STRCMP_EQUAL(FaultDoc(-32000, "server error (d)").c_str(),
               XmlRpcResponse(Json{{"error", {{"code", "?"}, {"message", "x"}, {"data", "d"}}}}).c_str());
}

TEST(XmlRpcResponse, ThroughTheRegistry) {
  mi::Registry r = MakeRegistry();
  std::string ok = ProcessXmlRpc(r, Call("perf_keys", P("s*") + P("<string>50</string>")));
  STRCMP_EQUAL((std::string(kHead) +
                "<params><param>\r\n<value><struct><member><name>glob</name><value><string>s*</string></value></member>"
                "<member><name>limit</name><value><int>50</int></value></member></struct></value></param></params>"
                "\r\n</methodResponse>\r\n")
                   .c_str(),
               ok.c_str());
  CHECK(ProcessXmlRpc(r, Call("perfcached:perf_keys",
                              P("<struct><member><name>glob</name><value>g</value></member></struct>")))
            .find("<name>glob</name><value><string>g</string></value>") != std::string::npos);
  STRCMP_EQUAL(FaultDoc(-32602, "server error. invalid method parameters (Too few or too many parameters)").c_str(),
               ProcessXmlRpc(r, Call("perf_keys", "")).c_str());
  STRCMP_EQUAL(FaultDoc(-32602, "server error. invalid method parameters (Bad type for parameter &#39;limit&#39;)").c_str(),
               ProcessXmlRpc(r, Call("perf_keys", P("s") + P("<boolean>1</boolean>"))).c_str());
  STRCMP_EQUAL(FaultDoc(-32601, "server error. requested method not found").c_str(),
               ProcessXmlRpc(r, Call("nope", "")).c_str());
  STRCMP_EQUAL(FaultDoc(404, "Statistics Not Found").c_str(),
               ProcessXmlRpc(r, Call("get_statistics", P("<array><data><value>x</value></data></array>"))).c_str());
  STRCMP_EQUAL(FaultDoc(-32700, "parse error. not well formed (XML_ERROR_PARSING at line 1)").c_str(),
               ProcessXmlRpc(r, "<methodCall><").c_str());
  STRCMP_EQUAL(FaultDoc(-32600, "server error. invalid xml-rpc. not conforming to spec. (no &lt;methodName&gt;)").c_str(),
               ProcessXmlRpc(r, "<methodCall/>").c_str());
}

TEST_GROUP(XmlRpcPath){};

TEST(XmlRpcPath, RootAndBelow) {
  CHECK(XmlRpcPathMatches("/RPC2", "RPC2"));
  CHECK(XmlRpcPathMatches("/RPC2/", "RPC2"));
  CHECK(XmlRpcPathMatches("/RPC2/x", "RPC2"));
  CHECK_FALSE(XmlRpcPathMatches("/RPC22", "RPC2"));
  CHECK_FALSE(XmlRpcPathMatches("/rpc2", "RPC2"));
  CHECK_FALSE(XmlRpcPathMatches("/", "RPC2"));
  CHECK_FALSE(XmlRpcPathMatches("", "RPC2"));
  CHECK_FALSE(XmlRpcPathMatches("RPC2", "RPC2"));
  CHECK_FALSE(XmlRpcPathMatches("/x/RPC2", "RPC2"));
}
