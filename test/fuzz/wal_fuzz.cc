// perfcached — libFuzzer target for the WAL reader (db/wal.h): segments on
// disk are input the daemon does not control (a crash mid-write, a damaged
// disk, a file from another version).
// Copyright (c) 2026 the perfcached authors.
//
// The input, behind a valid segment header (byte 0 chooses) or as it is,
// is written as one segment in a fresh directory and read back, with and
// without repair. ReadWal must report and go on, never crash or read out
// of bounds (ASan); every record it hands out must decode again from the
// bytes it came from; a repaired segment must then read without a problem.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "db/wal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static std::string dir = [] {
    char tmpl[] = "/tmp/perfcached-walfuzz-XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  std::string file;
  if (data[0] & 1) file = db::WalSegmentHeader(0);
  file.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string path = dir + "/" + db::WalSegmentName(0);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(file.data(), 1, file.size(), f);
  std::fclose(f);
  db::WalReadReport rep;
  std::string err;
  uint64_t seen = 0;
  bool ok = db::ReadWal(dir, 0, false, [&](uint64_t pos, const db::WalRecord& r) {
    if (pos + db::kWalSegmentHeader >= file.size()) abort();  // a record from outside the file
    if (r.kind < db::kWalPut || r.kind > db::kWalExpire) abort();  // never a part: parts are joined
    db::WalFieldChanges ch;  // the reader checked a fields record's changes
    if (r.kind == db::kWalFields && !db::DecodeWalFields(r.entry.value, r.entry.type, &ch)) abort();
    // ... and that an expire record is a hash's or a set's, with no value
    if (r.kind == db::kWalExpire && (!r.entry.value.empty() || r.entry.expire_ms < 0)) abort();
    ++seen;
    return true;
  }, &rep, &err);
  if (!ok || rep.records != seen) abort();
  db::WalReadReport fixed;
  if (!db::ReadWal(dir, 0, true, {}, &fixed, &err)) abort();
  db::WalReadReport again;
  if (!db::ReadWal(dir, 0, false, {}, &again, &err)) abort();
  // After a repair the tail is gone; a bad header, a skipped damaged
  // record or parts that never joined may stay a problem, a torn tail may not.
  if (again.records != seen || again.joined != rep.joined || again.unfinished != rep.unfinished) abort();
  for (const std::string& p : again.problems) {
    if (p.find("header") == std::string::npos && p.find("skipped") == std::string::npos &&
        p.find("never got its last part") == std::string::npos) {
      abort();
    }
  }
  std::filesystem::remove(path);
  return 0;
}
