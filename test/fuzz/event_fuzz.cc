// perfcached — libFuzzer target for the event datagrams a worker decodes
// (modules/resp/event_decode.cc, what OnEventDatagram runs).
// Copyright (c) 2026 the perfcached authors.
//
// Properties: no exception and no crash on any bytes; a decoded event is
// published on the channels its name allows and nowhere else: an
// E_PERF_EXPIRED event gives exactly its two keyspace channels, any other
// event exactly one __perfcached__:<EVENT> channel whose message is JSON.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mi/mi.h"
#include "modules/resp/event_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> dbs = {"0", "sessions", "", "counters"};
  std::vector<modules::resp::Publication> out;
  bool ok;
  try {
    ok = modules::resp::DecodeEvent(in, dbs, &out);
  } catch (...) {
    std::abort();  // would abort a worker (no exception may leave its callback)
  }
  if (!ok) {
    if (!out.empty()) std::abort();
    return 0;
  }
  mi::Json ev = mi::Json::parse(in.begin(), in.end(), nullptr, false);
  if (ev.is_discarded() || !ev.is_object()) std::abort();
  std::string name = ev["method"].get<std::string>();
  if (name == "E_PERF_EXPIRED") {
    if (out.size() != 2) std::abort();
    // Redis's order: the keyspace channel, then the keyevent one.
    if (out[0].channel.rfind("__keyspace@", 0) != 0 || out[1].channel.rfind("__keyevent@", 0) != 0) {
      std::abort();
    }
    if (out[0].message != "expired") std::abort();
  } else {
    if (out.size() != 1 || out[0].channel != "__perfcached__:" + name) std::abort();
    mi::Json m = mi::Json::parse(out[0].message, nullptr, false);
    if (m.is_discarded() || !m.is_object()) std::abort();
  }
  return 0;
}
