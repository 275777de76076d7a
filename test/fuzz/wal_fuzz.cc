// perfcached — libFuzzer target for the WAL reader (db/wal.h): segments on
// disk are input the daemon does not control (a crash mid-write, a damaged
// disk, a file from another version).
// Copyright (c) 2026 the perfcached authors.
//
// The input, behind a valid segment header (byte 0 bit 0) or as it is, is
// written as one segment in a fresh directory — or as two, cut in the
// middle (bit 1: a record in parts across segments) — and read back, with
// and without repair, from 0 and from a later position (bit 2). Bit 3
// marks the header zero-filled (fsync = always) and bit 4 adds zeros laid
// down ahead after the body, as the WAL process does. ReadWal
// must report and go on, never crash or read out of bounds (ASan); every
// record it hands out lies inside the files, at or after the start, of a
// kind and shape the reader promises (never a part: parts are joined); a
// repaired directory must then read without a torn tail; the newest
// segment's end (WalEndPosition, where the next one starts) lies at or
// after every record read.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "db/wal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static char made[] = "/tmp/perfcached-walfuzz-XXXXXX";  // outlives every destructor
  static std::string dir = [] {
    std::string d = mkdtemp(made);
    // Gone when the fuzzer exits (a crash leaves it, with its input).
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return d;
  }();
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool two = (data[0] & 2) && in.size() >= 2;
  std::string_view first = two ? in.substr(0, in.size() / 2) : in, second = two ? in.substr(in.size() / 2) : "";
  std::vector<std::string> paths;
  uint64_t total = 0;  // record bytes in all files
  auto write = [&](uint64_t start, std::string_view body) {
    std::string file;
    if (data[0] & 1) file = db::WalSegmentHeader(start, (data[0] & 8) ? db::kWalSegmentZeroFilled : 0);
    file.append(body);
    if (data[0] & 16) file.append(4096 + (data[0] >> 5) * 3, '\0');
    std::string path = dir + "/" + db::WalSegmentName(start);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
    paths.push_back(path);
    total += body.size();
    return true;
  };
  if (!write(0, first) || (two && !write(first.size(), second))) return 0;
  uint64_t from = (data[0] & 4) ? total / 3 : 0;
  db::WalReadReport rep;
  std::string err;
  uint64_t seen = 0;
  bool ok = db::ReadWal(dir, from, false, [&](uint64_t pos, const db::WalRecord& r) {
    if (pos >= total || pos < from) abort();  // a record from outside the files, or before the start
    if (r.kind < db::kWalPut || r.kind > db::kWalExpire) abort();  // never a part: parts are joined
    db::WalFieldChanges ch;  // the reader checked a fields record's changes
    if (r.kind == db::kWalFields && !db::DecodeWalFields(r.entry.value, r.entry.type, &ch)) abort();
    // ... and that an expire record is a hash's or a set's, with no value
    if (r.kind == db::kWalExpire && (!r.entry.value.empty() || r.entry.expire_ms < 0)) abort();
    ++seen;
    return true;
  }, &rep, &err);
  if (!ok || rep.records != seen) abort();
  if (db::WalEndPosition(dir) < rep.end) abort();  // the next segment would overlap a record
  // ... and in a zero-filled segment the end is read from the records,
  // never taken from the zeros after them.
  uint64_t newest_start = two ? first.size() : 0;
  if ((data[0] & 25) == 25 && db::WalEndPosition(dir) > newest_start + (two ? second : first).size()) abort();
  db::WalReadReport fixed;
  if (!db::ReadWal(dir, from, true, {}, &fixed, &err)) abort();
  db::WalReadReport again;
  if (!db::ReadWal(dir, from, false, {}, &again, &err)) abort();
  // After a repair the tail is gone; a bad header, a skipped damaged
  // record or parts that never joined may stay a problem, a torn tail may not.
  if (again.records != seen || again.joined != rep.joined || again.unfinished != rep.unfinished) abort();
  for (const std::string& p : again.problems) {
    // A torn tail of the first of two segments is cut and reported again
    // ("not the newest segment": the repair cuts only what it reads).
    if (p.find("header") == std::string::npos && p.find("skipped") == std::string::npos &&
        p.find("never got its last part") == std::string::npos && p.find("not the newest") == std::string::npos) {
      abort();
    }
  }
  for (const std::string& p : paths) std::filesystem::remove(p);
  return 0;
}
