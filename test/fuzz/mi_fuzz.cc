// perfcached — libFuzzer target for the MI core: FIFO framing + JSON-RPC dispatch.
// Copyright (c) 2026 the perfcached authors.
//
// Properties: framing always makes progress or asks for more (never loops,
// never reads out of bounds); every request gets either no reply (a
// notification) or exactly one well-formed JSON-RPC 2.0 reply object with
// "result" xor "error", serialized on one line.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "mi/mi.h"

namespace {

mi::Registry& Reg() {
  static mi::Registry r = [] {
    mi::Registry x;
    mi::Command a;
    a.name = "perf_keys";
    a.module = "perfcached";
    a.recipes = {{"glob"}, {"glob", "collection", "limit"}, {"glob", "limit"}};
    a.handler = [](const mi::Params& p) {
      std::string g, err;
      int64_t l;
      std::vector<std::string> arr;
      (void)p.GetString("glob", &g, &err);
      (void)p.GetInt("limit", &l, &err);
      (void)p.GetArray("collection", &arr, &err);
      return mi::MiOk();
    };
    x.Add(a);
    mi::Command b;
    b.name = "which";
    b.module = "core";
    b.recipes = {{}, {"command"}};
    b.handler = [](const mi::Params&) { return mi::MiError(404, "unknown MI command"); };
    x.Add(b);
    return x;
  }();
  return r;
}

void CheckReply(const mi::Json& reply) {
  if (reply.is_null()) return;
  if (!reply.is_object() || reply.value("jsonrpc", "") != "2.0") std::abort();
  if (reply.contains("result") == reply.contains("error")) std::abort();
  if (!reply.contains("id")) std::abort();
  std::string s = mi::Serialize(reply);
  if (s.find('\n') != std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  CheckReply(mi::ProcessText(Reg(), in));
  size_t pos = 0;
  for (int guard = 0; guard < 10000 && pos < in.size(); ++guard) {
    mi::Frame f;
    size_t before = pos;
    mi::FrameResult r = mi::ParseFifoFrame(in, &pos, &f);
    if (pos > in.size()) std::abort();
    if (r == mi::FrameResult::kNeedMore) {
      if (pos != before && pos != in.size()) std::abort();
      break;
    }
    if (pos <= before) std::abort();  // every other result consumes bytes
    if (r == mi::FrameResult::kRequest) CheckReply(mi::Dispatch(Reg(), f.request));
  }
  // The helpers the MI process uses on a held / oversize request.
  std::string name;
  if (mi::HeldReplyName(in, &name) && name.size() >= in.size()) std::abort();
  size_t js = mi::FrameJsonStart(in);
  if (js != std::string_view::npos && js > in.size()) std::abort();
  // JsonScanner fed in two pieces finds the same end as in one.
  mi::JsonScanner one, two;
  size_t whole = one.Feed(in);
  size_t cut = in.size() / 2;
  size_t a = two.Feed(in.substr(0, cut));
  size_t b = a == std::string_view::npos ? two.Feed(in.substr(cut)) : std::string_view::npos;
  size_t split = a != std::string_view::npos ? a : (b == std::string_view::npos ? b : cut + b);
  if (whole != split || (whole != std::string_view::npos && whole > in.size())) std::abort();
  return 0;
}
