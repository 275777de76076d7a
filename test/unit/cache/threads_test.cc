// perfcached — concurrency test with threads (the TSan target, `make check-tsan`).
// Copyright (c) 2026 the perfcached authors.
//
// Processes are what the daemon runs, but ThreadSanitizer only sees threads:
// this drives the same seqlock protocol from threads of one process (each
// with its own Ctx / allocator slot), so TSan checks that every access the
// protocol makes to shared memory is atomic and the bumps are ordered.
#include <atomic>
#include <thread>
#include <vector>

#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"
#include "CppUTest/MemoryLeakWarningPlugin.h"

using mem::Status;

TEST_GROUP(Threads) {
  testing::EngineFixture* f;
  // CppUTest's leak detector is not thread-safe: threads allocating at the
  // same time corrupt its books, so it is off for this group.
  void setup() override {
    MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
    f = new testing::EngineFixture(64, 0, 8);
  }
  void teardown() override {
    delete f;
    MemoryLeakWarningPlugin::restoreNewDeleteOverloads();
  }
};

TEST(Threads, ReadersWritersAndSplitterAgree) {
  cache::TableRef t = f->Table("t", 16);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0}, hits{0}, incr_ok{0}, errors{0};
  for (int i = 0; i < 200; ++i) {
    CHECK(cache::Set(*f->ctx, t, "imm:" + std::to_string(i), std::string(100, 'i')) == Status::kOk);
  }
  auto worker = [&](uint32_t slot, uint64_t seed) {
    cache::Ctx c(*f->arena, slot);
    char buf[512];
    uint64_t s = seed;
    for (int n = 0; n < 60000 && !stop.load(std::memory_order_relaxed); ++n) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      std::string k = "k:" + std::to_string((s >> 33) % 2000);
      switch ((s >> 20) % 4) {
        case 0: {
          std::string v(1 + (s >> 40) % 200, static_cast<char>('a' + (s >> 50) % 26));
          if (cache::Set(c, t, k, v) != Status::kOk) errors.fetch_add(1);
          break;
        }
        case 1:
          (void)cache::Del(c, t, k);
          break;
        case 2: {
          int64_t r;
          if (cache::IncrBy(c, t, "ctr", 1, &r) == Status::kOk) incr_ok.fetch_add(1);
          break;
        }
        default: {
          cache::ReadInfo ri;
          std::string ik = "imm:" + std::to_string((s >> 30) % 200);
          bool imm = (s >> 10) % 2;
          Status st = cache::Get(c, t, imm ? ik : k, std::span<char>(buf, sizeof buf), &ri);
          if (st == Status::kOk) {
            hits.fetch_add(1);
            for (uint32_t i = 1; i < ri.vlen; ++i) {
              if (buf[i] != buf[0]) {
                torn.fetch_add(1);
                break;
              }
            }
          } else if (imm) {
            errors.fetch_add(1);
          }
        }
      }
    }
  };
  std::thread splitter([&] {
    cache::Ctx c(*f->arena, 3);
    while (!stop.load()) {
      cache::GrowStep(c, t, 8);
      (void)cache::SweepExpired(c, t, 1024, {});
      std::this_thread::yield();
    }
  });
  std::thread a(worker, 1, 11), b(worker, 2, 22);
  a.join();
  b.join();
  stop.store(true);
  splitter.join();
  std::string v;
  CHECK(cache::GetString(*f->ctx, t, "ctr", &v) == Status::kOk);
  CHECK_EQUAL(incr_ok.load(), std::stoull(v));
  CHECK_EQUAL(0u, torn.load());
  CHECK_EQUAL(0u, errors.load());
  CHECK(hits.load() > 0);
  for (int i = 0; i < 200; ++i) {
    CHECK(cache::GetString(*f->ctx, t, "imm:" + std::to_string(i), &v) == Status::kOk);
  }
}
