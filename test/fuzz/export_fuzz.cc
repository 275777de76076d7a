// perfcached — libFuzzer target for the portable record form (cache/export.h)
// and the database url parser (db/backend.h): what a load reads from a
// database or a file it does not control.
// Copyright (c) 2026 the perfcached authors.
//
// Input: byte 0 picks the type (string, counter, hash, set, or one
// without an exported form), the rest is the value. Checks, and abort()s
// on the first violation:
//   * DecodeItems never reads out of bounds (ASan) and, when it accepts,
//     re-encoding its items gives back the input exactly;
//   * ImportEntry of an accepted value stores it; ExportKey reads back the
//     same items (as a multiset) / the same string / the same number;
//   * a refused value (kInvalid) leaves the key as it was;
//   * ParseUrl / ValidTableName never crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "cache/export.h"
#include "cache/key_ops.h"
#include "db/backend.h"
#include "mem/arena.h"

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "export_fuzz: %s\n", what);
  std::abort();
}

struct Engine {
  mem::Arena* arena = nullptr;
  cache::Ctx* ctx = nullptr;
  cache::TableRef t;
  Engine() {
    mem::ArenaOptions o;
    o.arena_mb = 32;
    o.best_tier = mem::Tier::kSmall;
    std::string err;
    arena = mem::Arena::Create(o, &err);
    if (!arena) Die(err.c_str());
    (void)cache::InitCatalog(*arena, 42);
    ctx = new cache::Ctx(*arena, 0);
    if (cache::CreateCollection(*ctx, "f", cache::CollectionOptions{}, &t) != mem::Status::kOk) Die("collection");
  }
};

std::map<std::string, int> Multiset(std::string_view enc, bool pairs) {
  std::map<std::string, int> m;
  std::string err;
  (void)cache::DecodeItems(enc, pairs, [&](std::string_view a, std::string_view b) {
    ++m[std::string(a) + (pairs ? "\x01" + std::string(b) : std::string())];
  }, &err);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Engine e;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  db::Url u;
  std::string err;
  (void)db::ParseUrl(in, &u, &err);
  (void)db::ValidTableName(in, &err);
  if (size == 0) return 0;
  static const uint8_t kTypes[] = {cache::kTypeString, cache::kTypeInt, cache::kTypeHash, cache::kTypeSet,
                                   cache::kTypeList};
  uint8_t type = kTypes[data[0] % 5];
  std::string_view value = in.substr(1);
  bool pairs = type == cache::kTypeHash;
  if (type == cache::kTypeHash || type == cache::kTypeSet) {
    std::string re;
    bool ok = cache::DecodeItems(value, pairs, [&](std::string_view a, std::string_view b) {
      cache::AppendItem(&re, a);
      if (pairs) cache::AppendItem(&re, b);
    }, &err);
    // A length may be written with more bytes than it needs (0x80 0x00 for
    // 0): accepted, so only the canonical form round-trips byte for byte.
    if (ok && re.size() == value.size() && re != value) Die("re-encoding differs from the input");
  }
  // The key holds a string before each import.
  if (cache::Set(*e.ctx, e.t, "k", "before") != mem::Status::kOk) Die("set");
  cache::Entry in_e;
  in_e.key = "k";
  in_e.type = type;
  in_e.value.assign(value);
  mem::Status s = cache::ImportEntry(*e.ctx, e.t, in_e, &err);
  cache::Entry out;
  if (s == mem::Status::kInvalid) {
    std::string v;
    if (cache::GetString(*e.ctx, e.t, "k", &v) != mem::Status::kOk || v != "before") Die("a refused import changed the key");
    return 0;
  }
  if (s != mem::Status::kOk) return 0;  // kTooBig / kNoMem: a fuzzer's huge value
  mem::Status r = cache::ExportKey(*e.ctx, e.t, "k", &out);
  if ((type == cache::kTypeHash || type == cache::kTypeSet) && Multiset(value, pairs).empty()) {
    if (r != mem::Status::kNotFound) Die("an empty aggregate left a key");
    return 0;
  }
  if (r != mem::Status::kOk) Die("an imported key does not read back");
  if (out.type != type) Die("the type changed");
  if (type == cache::kTypeString && out.value != value) Die("the string changed");
  if (type == cache::kTypeInt) {
    int64_t a = 0, b = 0;
    if (std::sscanf(std::string(value).c_str(), "%ld", &a) != 1 || std::sscanf(out.value.c_str(), "%ld", &b) != 1 ||
        a != b) {
      Die("the counter changed");
    }
  }
  if ((type == cache::kTypeHash || type == cache::kTypeSet)) {
    // A hash keeps the last value of a field given twice; a set dedups.
    std::map<std::string, int> want, got = Multiset(out.value, pairs);
    std::map<std::string, std::string> last;
    std::string e2;
    (void)cache::DecodeItems(value, pairs, [&](std::string_view a, std::string_view b) { last[std::string(a)] = b; }, &e2);
    for (auto& [f, v] : last) ++want[f + (pairs ? "\x01" + v : std::string())];
    if (want != got) Die("the aggregate's items changed");
  }
  (void)cache::Del(*e.ctx, e.t, "k");
  return 0;
}
