// perfcached — shared fixture for cache/ unit tests: a small private arena.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <random>
#include <string>

#include "cache/table.h"
#include "mem/arena.h"

namespace testing {

// A fresh arena + catalog + Ctx (slot 0), 4 KiB pages for speed.
struct EngineFixture {
  explicit EngineFixture(size_t mb = 64, size_t cap_mb = 0, uint32_t procs = 8) {
    mem::ArenaOptions o;
    o.arena_mb = mb;
    o.arena_cap_mb = cap_mb;
    o.best_tier = mem::Tier::kSmall;
    o.max_procs = procs;
    std::string err;
    arena = mem::Arena::Create(o, &err);
    if (!arena) {
      std::fprintf(stderr, "arena: %s\n", err.c_str());
      std::abort();
    }
    (void)cache::InitCatalog(*arena, 0x1234567890abcdefull);
    ctx = new cache::Ctx(*arena, 0);
  }
  ~EngineFixture() {
    delete ctx;
    mem::Arena::Destroy(arena);
  }
  cache::TableRef Table(const char* name, uint32_t buckets = 1024, uint32_t load = 400) {
    cache::CollectionOptions co;
    co.buckets = buckets;
    co.load_x100 = load;
    cache::TableRef t;
    if (cache::CreateCollection(*ctx, name, co, &t) != mem::Status::kOk) std::abort();
    return t;
  }
  mem::Arena* arena = nullptr;
  cache::Ctx* ctx = nullptr;
};

inline std::string Key(uint64_t i) { return "key:" + std::to_string(i); }

}  // namespace testing
