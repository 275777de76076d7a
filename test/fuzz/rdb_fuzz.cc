// perfcached — libFuzzer target for RESTORE's payload reader (db/rdb.h): the
// payload is a client's bytes, sent over the RESP door.
// Copyright (c) 2026 the perfcached authors.
//
// Byte 0 chooses: odd, the rest is sealed with a good trailer (version 10
// and its CRC-64) so the fuzzer reaches the object readers; even, the rest
// is the payload as it is. RdbRestore must answer, never crash or read out
// of bounds (ASan); a value it accepts must decode as its type's items,
// and dumping it again must give a payload that restores to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cache/export.h"
#include "db/rdb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string p(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    p.push_back(10);
    p.push_back(0);
    uint64_t crc = db::Crc64Jones(p.data(), p.size());
    for (int s = 0; s < 64; s += 8) p.push_back(static_cast<char>((crc >> s) & 0xff));
  }
  cache::Entry e;
  std::string err, why;
  if (!db::RdbRestore(p, &e, &err, &why)) {
    if (err.empty() || why.empty()) abort();  // a refusal always says why
    return 0;
  }
  if (e.type == cache::kTypeHash || e.type == cache::kTypeSet) {
    size_t n = 0;
    if (!cache::DecodeItems(e.value, e.type == cache::kTypeHash, [&](std::string_view, std::string_view) { ++n; },
                            &why) || n == 0) {
      abort();
    }
  }
  std::string again;
  if (!db::RdbDump(e, &again, &err)) abort();
  cache::Entry back;
  if (!db::RdbRestore(again, &back, &err, &why) || back.value != e.value) abort();
  return 0;
}
