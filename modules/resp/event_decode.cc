// perfcached — decoding an event datagram into RESP pub/sub publications.
// Copyright (c) 2026 the perfcached authors.
#include "modules/resp/event_decode.h"

#include "mi/mi.h"

namespace modules::resp {

bool DecodeEvent(std::string_view datagram, const std::vector<std::string>& db_names,
                 std::vector<Publication>* out) {
  // No exceptions: parse errors give a discarded value, and every member is
  // type-checked before it is read (get<> on the wrong type would throw).
  mi::Json ev = mi::Json::parse(datagram.begin(), datagram.end(), nullptr, false);
  if (ev.is_discarded() || !ev.is_object()) return false;
  auto m = ev.find("method");
  if (m == ev.end() || !m->is_string()) return false;
  const std::string& name = m->get_ref<const std::string&>();
  if (name.empty() || name.size() > 64) return false;
  mi::Json params = mi::Json::object();
  if (auto p = ev.find("params"); p != ev.end()) {
    if (!p->is_object()) return false;
    params = *p;
  }
  if (name == "E_PERF_EXPIRED" || name == "E_PERF_EVICTED") {
    const char* what = name == "E_PERF_EXPIRED" ? "expired" : "evicted";
    auto c = params.find("collection");
    auto k = params.find("key");
    if (c == params.end() || k == params.end() || !c->is_string() || !k->is_string()) return false;
    const std::string& coll = c->get_ref<const std::string&>();
    const std::string& key = k->get_ref<const std::string&>();
    std::string db = coll;
    for (size_t i = 0; i < db_names.size(); ++i) {
      if (db_names[i] == coll) {
        db = std::to_string(i);
        break;
      }
    }
    // Redis's order (notifyKeyspaceEvent): the keyspace channel, then the keyevent one.
    out->push_back({"__keyspace@" + db + "__:" + key, what});
    out->push_back({"__keyevent@" + db + "__:" + what, key});
    return true;
  }
  out->push_back({"__perfcached__:" + name, mi::Serialize(params)});
  return true;
}

}  // namespace modules::resp
