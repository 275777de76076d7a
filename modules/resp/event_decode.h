// perfcached — decoding an event datagram into RESP pub/sub publications.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Connection-free and allocation-bounded by its input, so the fuzz target
// (test/fuzz/event_fuzz.cc) calls exactly what a worker runs. Never throws
// on any input (only std::bad_alloc can leave it).

#include <string>
#include <string_view>
#include <vector>

namespace modules::resp {

struct Publication {
  std::string channel;
  std::string message;
};

// A JSON-RPC notification {"method": EVENT, "params": {...}}:
//   E_PERF_EXPIRED {collection, key} -> __keyevent@<db>__:expired (key),
//                                       __keyspace@<db>__:<key> ("expired")
//   any other event                  -> __perfcached__:<EVENT> (the params as JSON)
// <db> is the index of the collection in db_names, else its name. False (and
// nothing appended) when the datagram is not such a notification.
bool DecodeEvent(std::string_view datagram, const std::vector<std::string>& db_names,
                 std::vector<Publication>* out);

}  // namespace modules::resp
