// perfcached — unit tests of automove (cache/automove.h): sparse pages are
// emptied into the rest of their class, nothing is lost, readers and
// optimistic writers stay correct.
// Copyright (c) 2026 the perfcached authors.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <cstring>
#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cache/audit.h"
#include "cache/automove.h"
#include "cache/bucket.h"
#include "cache/dict.h"
#include "cache/hash_ops.h"
#include "cache/internal.h"
#include "cache/ops.h"
#include "mem/slab.h"
#include "test/unit/cache/fixture.h"

#include "CppUTest/TestHarness.h"
#include "CppUTest/MemoryLeakWarningPlugin.h"

using mem::Status;

namespace {

// A value that says which key and generation it belongs to, 1000 bytes.
std::string ValueOf(uint64_t i, uint32_t gen = 0) {
  std::string v = "v" + std::to_string(i) + "/" + std::to_string(gen) + ":";
  v.resize(1000, static_cast<char>('a' + (i + gen) % 26));
  return v;
}

// The class of key 0's record (every value is 1000 bytes).
int ClassOfValues(cache::Ctx& c, const cache::TableRef& t) {
  cache::ReadInfo ri;
  (void)cache::Probe(c, t, testing::Key(0), &ri);
  return mem::ClassFor(cache::RecordBytes(cache::kTypeString, testing::Key(0).size(), ri.vlen));
}

uint64_t SeqSum(const mem::Arena& a, const cache::TableHeader& h, bool* all_even) {
  uint64_t sum = 0;
  *all_even = true;
  uint64_t nb = cache::detail::RouteBuckets(h.route.load());
  for (uint64_t i = 0; i < nb; ++i) {
    const cache::Bucket* b = cache::detail::BucketAt(a, h, i);
    if (!b) continue;
    uint32_t s = b->seq.load();
    sum += s;
    if (s & 1) *all_even = false;
  }
  return sum;
}

void RunPass(cache::Automover& m, cache::Ctx& c) {
  for (int i = 0; i < 1000 && m.active(); ++i) (void)m.Step(c, 1u << 20);
}

// A reader's check: `got` is the value of a generation between g0 (seen
// before the read) and g1 + 1 (the writer may be writing the next one).
bool OfAGeneration(const std::string& got, uint32_t g0, uint32_t g1, const std::function<std::string(uint32_t)>& value) {
  for (uint32_t g = g0; g <= g1 + 1; ++g) {
    if (got == value(g)) return true;
  }
  return false;
}

// Readers and a writer race six passes: the readers get going first (a
// loaded machine may not schedule them for a while), then the passes run
// in steps of `step` buckets with a pause between them, so that reads land
// inside the passes; then the writer ends, and the readers stop. Checks a
// pass ran with reads inside it.
void PassesDuringReads(cache::Ctx& c, uint32_t step, std::atomic<uint64_t>& reads, std::atomic<bool>& stop,
                       std::thread& writer, std::thread& r1, std::thread& r2) {
  for (int i = 0; i < 10000 && reads.load() < 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cache::Automover m;
  int passes = 0;
  uint64_t reads_before = reads.load();
  for (int k = 0; k < 6; ++k) {
    if (m.Start(c, true)) {
      ++passes;
      for (int i = 0; i < 10000 && m.active(); ++i) {
        (void)m.Step(c, step);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  uint64_t reads_during = reads.load() - reads_before;
  writer.join();
  stop.store(true);
  r1.join();
  r2.join();
  CHECK(passes >= 1);
  CHECK(reads_during > 100);
}

}  // namespace

TEST_GROUP(Automove) {
  testing::EngineFixture* f = nullptr;
  cache::Ctx* c = nullptr;
  void setup() override {
    f = new testing::EngineFixture(64);
    c = f->ctx;
  }
  void teardown() override { delete f; }

  // 20,000 keys of 1000 bytes, then three of every four deleted: every
  // page of their class is a quarter full, and none can be given back.
  cache::TableRef Sparse() {
    cache::TableRef t = f->Table("t", 4096);
    for (uint64_t i = 0; i < 20000; ++i) CHECK(cache::Set(*c, t, testing::Key(i), ValueOf(i)) == Status::kOk);
    for (uint64_t i = 0; i < 20000; ++i) {
      if (i % 4 != 0) CHECK(cache::Del(*c, t, testing::Key(i)) == Status::kOk);
    }
    c->alloc.FlushToGlobal();
    return t;
  }
};

TEST(Automove, EmptiesSparsePagesAndLosesNothing) {
  cache::TableRef t = Sparse();
  int cls = ClassOfValues(*c, t);
  uint64_t pages_before = mem::PoolAt(*f->arena, cls)->pages.load();
  CHECK(pages_before > 40);
  bool even = false;
  uint64_t seq_before = SeqSum(*f->arena, *t.h, &even);
  std::vector<uint64_t> versions(20000);
  for (uint64_t i = 0; i < 20000; i += 4) {
    cache::ReadInfo ri;
    CHECK(cache::Probe(*c, t, testing::Key(i), &ri) == Status::kOk);
    versions[i] = ri.version;
  }

  cache::Automover m;
  CHECK(m.Start(*c, /*force=*/true));
  CHECK(m.marked() > pages_before / 2);
  RunPass(m, *c);
  CHECK_FALSE(m.active());

  cache::AutomoveStats s = cache::GetAutomoveStats(*c);
  CHECK_EQUAL(1u, s.passes);
  CHECK(s.moved > 2000);
  CHECK(s.pages_freed > pages_before / 2);
  uint64_t pages_after = mem::PoolAt(*f->arena, cls)->pages.load();
  CHECK(pages_after * 2 < pages_before);
  // Every key is there with its value; every moved record has a new version.
  uint64_t moved_versions = 0;
  std::string got;
  for (uint64_t i = 0; i < 20000; ++i) {
    Status st = cache::GetString(*c, t, testing::Key(i), &got);
    if (i % 4 != 0) {
      CHECK(st == Status::kNotFound);
      continue;
    }
    CHECK(st == Status::kOk);
    CHECK(got == ValueOf(i));
    cache::ReadInfo ri;
    CHECK(cache::Probe(*c, t, testing::Key(i), &ri) == Status::kOk);
    if (ri.version != versions[i]) ++moved_versions;
  }
  CHECK_EQUAL(s.moved, moved_versions);
  // The swaps were made inside seqlock brackets.
  uint64_t seq_after = SeqSum(*f->arena, *t.h, &even);
  CHECK(even);
  CHECK(seq_after >= seq_before + 2 * 500);
  cache::AuditReport r = cache::Audit(*c);
  if (!r.clean()) FAIL(r.Summary().c_str());
  CHECK_EQUAL(0u, r.cells_leaked);
}

TEST(Automove, FreedPagesServeAnotherSize) {
  cache::TableRef t = Sparse();
  cache::TableRef u = f->Table("u", 4096);
  // 100-byte values until the arena is full: before the pass ...
  auto fill = [&](const char* prefix) {
    uint64_t n = 0;
    for (; n < 2000000; ++n) {
      if (cache::Set(*c, u, prefix + std::to_string(n), std::string(100, 'x')) != Status::kOk) break;
    }
    return n;
  };
  uint64_t before = fill("a:");
  CHECK(cache::ClearCollection(*c, u, nullptr) == Status::kOk);
  c->alloc.FlushToGlobal();
  (void)mem::TidyPages(*f->arena);
  cache::Automover m;
  CHECK(m.Start(*c, true));
  RunPass(m, *c);
  uint64_t after = fill("b:");
  // the 1000-byte pages emptied by the pass (~3/4 of 20 MB) now hold 100-byte values
  CHECK(after > before + before / 8);
  for (uint64_t i = 0; i < 20000; i += 4) {
    std::string got;
    CHECK(cache::GetString(*c, t, testing::Key(i), &got) == Status::kOk);
    CHECK(got == ValueOf(i));
  }
}

TEST(Automove, MarkedPagesGetNoNewCells) {
  cache::TableRef t = Sparse();
  int cls = ClassOfValues(*c, t);
  cache::Automover m;
  CHECK(m.Start(*c, true));
  // Another process allocates cells of the class: none from a marked page.
  cache::Ctx other(*f->arena, 1);
  std::vector<mem::Off> cells;
  for (int i = 0; i < 2000; ++i) {
    mem::Off cell;
    CHECK(other.alloc.Alloc(mem::kClassSize[cls], &cell) == Status::kOk);
    CHECK_FALSE(mem::CellDraining(*f->arena, cell, cls));
    cells.push_back(cell);
  }
  for (mem::Off cell : cells) mem::FreeGlobal(*f->arena, cell);
  RunPass(m, *c);
}

TEST(Automove, AWriteThatReadBeforeAMoveRetries) {
  cache::TableRef t = Sparse();
  std::vector<uint64_t> before(20000);
  for (uint64_t i = 0; i < 20000; i += 4) {
    cache::ReadInfo ri;
    CHECK(cache::Probe(*c, t, testing::Key(i), &ri) == Status::kOk);
    before[i] = ri.version;
  }
  cache::Automover m;
  CHECK(m.Start(*c, true));
  RunPass(m, *c);
  // An optimistic write (an aggregate's, INCR on a string) that read before
  // the move compares versions: it must see every moved record as changed.
  uint64_t refused = 0;
  for (uint64_t i = 0; i < 20000; i += 4) {
    cache::StoreOpts o;
    o.check_version = true;
    o.expect_version = before[i];
    if (cache::Set(*c, t, testing::Key(i), "new", o) == Status::kVersion) ++refused;
  }
  CHECK(refused > 0);
  CHECK_EQUAL(cache::GetAutomoveStats(*c).moved, refused);
}

TEST(Automove, StaleMarksAreClearedByTheNextMover) {
  (void)Sparse();
  {
    cache::Automover dead;
    CHECK(dead.Start(*c, true));  // marks pages, then "dies" without a step
  }
  cache::Automover m;
  CHECK(m.Start(*c, true));
  RunPass(m, *c);
  // No page is left marked once the pass is over.
  for (int cls = 0; cls < mem::kNumClasses; ++cls) {
    std::vector<mem::PageLoad> pages;
    mem::ClassPages(*f->arena, cls, &pages);
    for (const auto& p : pages) {
      const auto* h = reinterpret_cast<const mem::PageHeader*>(f->arena->base() + p.page);
      CHECK_EQUAL(0u, h->draining.load());
    }
  }
}

// Free cells another process keeps on its private stack hold their pages:
// only it can give them back. A pass asks it, and it answers at its next
// tick (mem::Allocator::AnswerGiveBack). Unanswered, the pages stay.
namespace {

// One pass over 20,000 keys of 1000 bytes, most deleted, where another
// process deleted one key in each of 32 pages and keeps their cells on its
// stack. `answer`: it answers at every
// step of the pass, as at its tick. Returns the class's pages after the
// pass and checks that both processes then write on with no cell handed
// out twice.
uint64_t PassWithCellsHeld(bool answer, uint32_t* stacked_before, uint32_t* stacked_after) {
  testing::EngineFixture fx(64);
  cache::Ctx& c = *fx.ctx;
  cache::TableRef t = fx.Table("t", 4096);
  for (uint64_t i = 0; i < 20000; ++i) CHECK(cache::Set(c, t, testing::Key(i), ValueOf(i)) == Status::kOk);
  cache::Ctx other(*fx.arena, 1);
  int cls = ClassOfValues(c, t);
  // The keys of each page of the class, in page order.
  std::map<size_t, std::vector<uint64_t>> by_page;
  for (uint64_t i = 0; i < 20000; ++i) {
    std::string k = testing::Key(i);
    cache::detail::KeyLock kl;
    CHECK(cache::detail::LockKey(c, *t.h, cache::detail::HashOf(c, k), k, &kl));
    by_page[mem::PageOfByte(size_t{kl.rec} * mem::kUnit, mem::PageOrder(cls))].push_back(i);
    cache::detail::UnlockKey(*t.h, kl);
  }
  // 32 pages spread over the class keep one key and one cell the other
  // process freed (on its stack: the sparsest pages, marked first); the
  // others keep one key in four.
  std::vector<std::vector<uint64_t>> pages;
  for (auto& [page, keys] : by_page) pages.push_back(keys);
  std::set<uint64_t> kept;
  for (size_t p = 0; p < pages.size(); ++p) {
    bool pinned = p % (pages.size() / 32) == 0 && p / (pages.size() / 32) < 32 && pages[p].size() > 2;
    for (size_t j = 0; j < pages[p].size(); ++j) {
      uint64_t i = pages[p][j];
      if (pinned ? j == 1 : i % 4 == 0) {
        kept.insert(i);
      } else {
        CHECK(cache::Del(pinned && j == 0 ? other : c, t, testing::Key(i)) == Status::kOk);
      }
    }
  }
  c.alloc.FlushToGlobal();
  const mem::ClassCache& held = mem::SlotAt(*fx.arena, 1)->cls[cls];
  *stacked_before = held.stack_n;
  cache::Automover m;
  m.give_back_wait_ms = answer ? 60000 : 0;
  CHECK(m.Start(c, true));
  for (int i = 0; i < 1000 && m.active(); ++i) {
    (void)m.Step(c, 2048);
    if (answer) (void)other.alloc.AnswerGiveBack();
  }
  CHECK_FALSE(m.active());
  *stacked_after = held.stack_n;
  uint64_t pages_after = mem::PoolAt(*fx.arena, cls)->pages.load();
  // Both processes write on: no cell is handed out twice.
  for (uint64_t i = 0; i < 20000; i += 3) {
    if (kept.count(i)) continue;
    cache::Ctx& w = i % 2 ? other : c;
    CHECK(cache::Set(w, t, testing::Key(i), ValueOf(i, 1)) == Status::kOk);
  }
  std::string got;
  for (uint64_t i = 0; i < 20000; ++i) {
    Status st = cache::GetString(c, t, testing::Key(i), &got);
    if (kept.count(i)) {
      CHECK(st == Status::kOk && got == ValueOf(i));
    } else if (i % 3 == 0) {
      CHECK(st == Status::kOk && got == ValueOf(i, 1));
    } else {
      CHECK(st == Status::kNotFound);
    }
  }
  other.alloc.FlushToGlobal();
  cache::AuditReport r = cache::Audit(c);
  if (!r.clean()) FAIL(r.Summary().c_str());
  CHECK_EQUAL(0u, r.cells_leaked);
  return pages_after;
}

}  // namespace

TEST(Automove, CellsAnotherProcessHoldsComeBackWhenAsked) {
  uint32_t before = 0, after = 0;
  uint64_t unanswered = PassWithCellsHeld(false, &before, &after);
  CHECK_EQUAL(mem::StackCells(1000), before);
  CHECK_EQUAL(before, after);  // never answered: still held
  uint64_t answered = PassWithCellsHeld(true, &before, &after);
  CHECK_EQUAL(0u, after);
  CHECK_TEXT(answered + before * 3 / 4 <= unanswered,
             ("pages " + std::to_string(unanswered) + " -> " + std::to_string(answered)).c_str());
}

TEST(Automove, NoPassWithoutSparsePages) {
  cache::TableRef t = f->Table("t", 4096);
  for (uint64_t i = 0; i < 5000; ++i) CHECK(cache::Set(*c, t, testing::Key(i), ValueOf(i)) == Status::kOk);
  cache::Automover m;
  CHECK_FALSE(m.Start(*c, true));    // full pages: nothing worth moving
  CHECK_FALSE(m.Start(*c, false));   // and no memory pressure
}

// Readers never see a value that is not the key's, and writers lose
// nothing, while the mover empties pages under them (threads: TSan sees
// every access; make check-tsan).
TEST_GROUP(AutomoveThreads) {
  testing::EngineFixture* f = nullptr;
  void setup() override {
    MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads();
    f = new testing::EngineFixture(64, 0, 8);
  }
  void teardown() override {
    delete f;
    MemoryLeakWarningPlugin::restoreNewDeleteOverloads();
  }
};

TEST(AutomoveThreads, ReadersAndWritersDuringPasses) {
  cache::TableRef t = f->Table("t", 4096);
  cache::Ctx& c0 = *f->ctx;
  constexpr uint64_t kKeys = 16000;
  for (uint64_t i = 0; i < kKeys; ++i) CHECK(cache::Set(c0, t, testing::Key(i), ValueOf(i)) == Status::kOk);
  for (uint64_t i = 0; i < kKeys; ++i) {
    if (i % 4 != 0) CHECK(cache::Del(c0, t, testing::Key(i)) == Status::kOk);
  }
  c0.alloc.FlushToGlobal();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  std::atomic<uint32_t> gen[kKeys / 4];
  for (auto& g : gen) g.store(0);
  // Writer: rewrites keys 0, 4, 8 ... with a new generation (same size).
  std::thread writer([&] {
    cache::Ctx c(*f->arena, 1);
    for (uint32_t round = 1; round < 4 && !stop.load(); ++round) {
      for (uint64_t i = 0; i < kKeys; i += 4) {
        if (cache::Set(c, t, testing::Key(i), ValueOf(i, round)) != Status::kOk) bad.fetch_add(1);
        gen[i / 4].store(round);
        if (i % 1024 == 0) (void)c.alloc.AnswerGiveBack();  // a worker's tick
      }
    }
    c.alloc.Release();  // a thread's slot: given back, not left to an adopter
  });
  auto reader = [&](uint32_t slot) {
    cache::Ctx c(*f->arena, slot);
    std::string got;
    for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
      uint64_t i = (n * 4 * 7919) % kKeys;
      uint32_t g0 = gen[i / 4].load();
      if (cache::GetString(c, t, testing::Key(i), &got) != Status::kOk) {
        bad.fetch_add(1);
        continue;
      }
      if (!OfAGeneration(got, g0, gen[i / 4].load(), [&](uint32_t g) { return ValueOf(i, g); })) bad.fetch_add(1);
      reads.fetch_add(1, std::memory_order_relaxed);
    }
    c.alloc.Release();
  };
  std::thread r1(reader, 2), r2(reader, 3);
  PassesDuringReads(c0, 256, reads, stop, writer, r1, r2);
  CHECK_EQUAL(0u, bad.load());
  CHECK(cache::GetAutomoveStats(c0).moved > 0);
  for (uint64_t i = 0; i < kKeys; i += 4) {
    std::string got;
    CHECK(cache::GetString(c0, t, testing::Key(i), &got) == Status::kOk);
    CHECK(got == ValueOf(i, gen[i / 4].load()));
  }
  cache::AuditReport r = cache::Audit(c0);
  if (!r.clean()) FAIL(r.Summary().c_str());
}

// Overflow nodes move too (session 18): a table that cannot grow (no timer
// here) keeps most of its keys in overflow chains; with three keys in four
// deleted, the pages of the nodes' class are a quarter full, and they come
// free only if the nodes move. Every chain is relinked whole: every kept
// key reads back, the audit is clean and nothing leaked.
TEST(Automove, OverflowNodesMoveAndTheirPagesComeFree) {
  cache::TableRef t = f->Table("o", 64);
  const uint64_t n = 40000;
  std::string v(100, 'o');
  for (uint64_t i = 0; i < n; ++i) CHECK(cache::Set(*c, t, testing::Key(i), v + std::to_string(i)) == Status::kOk);
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(*c, t, &ci));
  CHECK(ci.overflow > n * 9 / 10);
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 4 != 0) CHECK(cache::Del(*c, t, testing::Key(i)) == Status::kOk);
  }
  c->alloc.FlushToGlobal();
  int node_cls = mem::ClassFor(cache::detail::kNodeBytes);
  int rec_cls = mem::ClassFor(cache::RecordBytes(cache::kTypeString, testing::Key(n - 1).size(), v.size() + 5));
  CHECK(node_cls != rec_cls);
  uint64_t pages_before = mem::PoolAt(*f->arena, node_cls)->pages.load();
  CHECK(pages_before >= 4);
  CHECK(cache::CollectionInfoOf(*c, t, &ci));
  uint64_t ovf_before = ci.overflow;

  cache::Automover m;
  CHECK(m.Start(*c, /*force=*/true));
  RunPass(m, *c);
  CHECK_FALSE(m.active());
  uint64_t pages_after = mem::PoolAt(*f->arena, node_cls)->pages.load();
  CHECK_TEXT(pages_after * 2 < pages_before,
             ("node pages " + std::to_string(pages_before) + " -> " + std::to_string(pages_after)).c_str());
  CHECK(cache::CollectionInfoOf(*c, t, &ci));
  CHECK_EQUAL(ovf_before, ci.overflow);
  std::string got;
  for (uint64_t i = 0; i < n; ++i) {
    Status st = cache::GetString(*c, t, testing::Key(i), &got);
    if (i % 4 != 0) {
      CHECK(st == Status::kNotFound);
      continue;
    }
    CHECK(st == Status::kOk);
    CHECK(got == v + std::to_string(i));
  }
  CHECK_EQUAL(0u, t.h->ovf.seq.load() & 1);  // the bracket closed
  cache::AuditReport r = cache::Audit(*c);
  if (!r.clean()) FAIL(r.Summary().c_str());
  CHECK_EQUAL(0u, r.cells_leaked);
}

// The tries of hashes and sets (session 20): 32 hashes of 600 fields with
// 200-byte values, three fields in four removed, leave the entry cells'
// pages a quarter full. A pass copies each trie out of the marked pages
// and swaps in a record naming the copy, with the next version: the pages
// come free, every field keeps its value, and an optimistic writer that
// read before the move must run again (the old trie is freed).
namespace {

// The cells of a hash's trie (its record's raw value is the tree value).
std::set<mem::Off> TrieCells(cache::Ctx& c, const cache::TableRef& t, const std::string& key) {
  char raw[64];
  cache::ReadInfo ri;
  std::set<mem::Off> cells;
  if (cache::Get(c, t, key, std::span<char>(raw, sizeof raw), &ri) != Status::kOk) return cells;
  std::string err;
  uint64_t entries = 0;
  CHECK(cache::WalkDictCells(c, std::string_view(raw, ri.vlen), [&](mem::Off o) { cells.insert(o); }, &err,
                             &entries));
  return cells;
}

// 32 hashes of 600 fields with 200-byte values, three fields in four
// removed; `filler` string keys first (a 64-bucket table that never grows
// then holds the hashes in its overflow table).
void TrieMoves(testing::EngineFixture* f, cache::TableRef t, int filler) {
  cache::Ctx* c = f->ctx;
  for (int i = 0; i < filler; ++i) CHECK(cache::Set(*c, t, "s" + std::to_string(i), "x") == Status::kOk);
  constexpr int kHashes = 32, kFields = 600;
  auto field = [](int j) { return "f" + std::to_string(10000 + j); };
  auto value = [](int h, int j) {
    std::string v = "h" + std::to_string(h) + "f" + std::to_string(j) + ":";
    v.resize(200, static_cast<char>('a' + (h + j) % 26));
    return v;
  };
  for (int h = 0; h < kHashes; ++h) {
    std::vector<std::string> st;
    for (int j = 0; j < kFields; ++j) st.push_back(field(j)), st.push_back(value(h, j));
    std::vector<std::string_view> fv(st.begin(), st.end());
    uint64_t added = 0;
    CHECK(cache::HSet(*c, t, "h" + std::to_string(h), fv, &added) == Status::kOk);
    CHECK_EQUAL(static_cast<uint64_t>(kFields), added);
  }
  for (int h = 0; h < kHashes; ++h) {
    std::vector<std::string> gone;
    for (int j = 0; j < kFields; ++j) {
      if (j % 4 != 0) gone.push_back(field(j));
    }
    std::vector<std::string_view> gv(gone.begin(), gone.end());
    uint64_t removed = 0;
    CHECK(cache::HDel(*c, t, "h" + std::to_string(h), gv, &removed) == Status::kOk);
  }
  c->alloc.FlushToGlobal();
  int entry_cls = mem::ClassFor(12 + field(0).size() + 200);
  uint64_t pages_before = mem::PoolAt(*f->arena, entry_cls)->pages.load();
  CHECK_TEXT(pages_before >= 8, ("entry pages " + std::to_string(pages_before) + " of " +
                                 std::to_string(mem::kClassTables.geo[entry_cls].ncells) + " cells").c_str());
  std::vector<uint64_t> versions(kHashes);
  for (int h = 0; h < kHashes; ++h) {
    cache::ReadInfo ri;
    CHECK(cache::Probe(*c, t, "h" + std::to_string(h), &ri) == Status::kOk);
    versions[h] = ri.version;
  }
  std::vector<std::set<mem::Off>> cells_before;
  for (int h = 0; h < kHashes; ++h) cells_before.push_back(TrieCells(*c, t, "h" + std::to_string(h)));
  // An optimistic write of each hash that read before the pass.
  std::vector<std::unique_ptr<cache::Dict>> late;
  for (int h = 0; h < kHashes; ++h) {
    late.push_back(std::make_unique<cache::Dict>(*c, t, "h" + std::to_string(h), cache::kTypeHash));
    CHECK(late.back()->Load() == Status::kOk);
    CHECK(late.back()->Put("late", "x"));
  }

  cache::Automover m;
  CHECK(m.Start(*c, /*force=*/true));
  RunPass(m, *c);
  CHECK_FALSE(m.active());
  uint64_t pages_after = mem::PoolAt(*f->arena, entry_cls)->pages.load();
  CHECK_TEXT(pages_after * 2 < pages_before,
             ("entry pages " + std::to_string(pages_before) + " -> " + std::to_string(pages_after)).c_str());
  int moved = 0;
  size_t moved_cells = 0, moved_shared = 0;
  for (int h = 0; h < kHashes; ++h) {
    std::string key = "h" + std::to_string(h);
    cache::FieldValues all;
    CHECK(cache::HGetAll(*c, t, key, cache::HPart::kBoth, &all) == Status::kOk);
    CHECK_EQUAL(static_cast<size_t>(kFields / 4), all.size());
    for (const auto& [fl, v] : all) {
      int j = std::stoi(fl.substr(1)) - 10000;
      CHECK(j % 4 == 0);
      CHECK(v == value(h, j));
    }
    cache::ReadInfo ri;
    CHECK(cache::Probe(*c, t, key, &ri) == Status::kOk);
    bool was_moved = ri.version != versions[h];
    moved += was_moved;
    // A path copy: a moved trie shares the cells that were not in marked
    // pages and not above one (a whole copy would share none).
    std::set<mem::Off> now = TrieCells(*c, t, key), shared;
    std::set_intersection(now.begin(), now.end(), cells_before[h].begin(), cells_before[h].end(),
                          std::inserter(shared, shared.begin()));
    if (was_moved) {
      moved_cells += now.size();
      moved_shared += shared.size();
    } else {
      CHECK_EQUAL(now.size(), shared.size());
    }
    // The write that read before: refused when its trie moved (the cells it
    // read are freed), committed when it did not.
    CHECK(late[h]->Commit() == (was_moved ? Status::kVersion : Status::kOk));
  }
  CHECK_TEXT(moved >= kHashes / 2, ("tries moved: " + std::to_string(moved)).c_str());
  CHECK_TEXT(moved_shared > 0 && moved_shared < moved_cells,
             ("cells shared " + std::to_string(moved_shared) + " of " + std::to_string(moved_cells)).c_str());
  late.clear();
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(*c, t, &ci));
  if (filler > 0) CHECK(ci.overflow >= static_cast<uint64_t>(kHashes));  // the hashes were in the overflow table
  cache::AuditReport r = cache::Audit(*c);
  if (!r.clean()) FAIL(r.Summary().c_str());
  CHECK_EQUAL(0u, r.cells_leaked);
}

}  // namespace

TEST(Automove, TrieCellsMoveAndTheirPagesComeFree) { TrieMoves(f, f->Table("h", 4096), 0); }

// The same with the hashes in the overflow table (their records move under
// its lock, swapped in its bracket).
TEST(Automove, TrieCellsOfOverflowKeysMove) { TrieMoves(f, f->Table("o", 64), 2000); }

// Readers and writers of hashes while passes move their tries: every read
// sees a value the field had (a reader that walked a trie the mover freed
// fails its version check and reads again), every HINCRBY counts (a write
// that read before a move runs again), nothing is lost.
TEST(AutomoveThreads, HashReadersAndWritersDuringTrieMoves) {
  cache::TableRef t = f->Table("h", 4096);
  cache::Ctx& c0 = *f->ctx;
  constexpr int kHashes = 16, kFields = 600, kKept = kFields / 4;
  auto key = [](int h) { return "h" + std::to_string(h); };
  auto field = [](int j) { return "f" + std::to_string(10000 + j); };
  auto value = [](int h, int j, uint32_t g) {
    std::string v = "h" + std::to_string(h) + "f" + std::to_string(j) + "g" + std::to_string(g) + ":";
    v.resize(200, static_cast<char>('a' + (h + j + g) % 26));
    return v;
  };
  for (int h = 0; h < kHashes; ++h) {
    std::vector<std::string> st{"n", "0"};
    for (int j = 0; j < kFields; ++j) st.push_back(field(j)), st.push_back(value(h, j, 0));
    std::vector<std::string_view> fv(st.begin(), st.end());
    uint64_t added = 0;
    CHECK(cache::HSet(c0, t, key(h), fv, &added) == Status::kOk);
  }
  for (int h = 0; h < kHashes; ++h) {
    std::vector<std::string> gone;
    for (int j = 0; j < kFields; ++j) {
      if (j % 4 != 0) gone.push_back(field(j));
    }
    std::vector<std::string_view> gv(gone.begin(), gone.end());
    uint64_t removed = 0;
    CHECK(cache::HDel(c0, t, key(h), gv, &removed) == Status::kOk);
  }
  c0.alloc.FlushToGlobal();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0}, incrs{0};
  std::vector<std::atomic<uint32_t>> gen(kHashes * kKept);
  for (auto& g : gen) g.store(0);
  std::thread writer([&] {
    cache::Ctx c(*f->arena, 1);
    for (uint32_t round = 1; round < 4 && !stop.load(); ++round) {
      for (int h = 0; h < kHashes; ++h) {
        for (int k = 0; k < kKept; k += 3) {
          std::string fl = field(4 * k), v = value(h, 4 * k, round);
          std::string_view fv[2] = {fl, v};
          uint64_t added = 0;
          if (cache::HSet(c, t, key(h), fv, &added) != Status::kOk || added != 0) bad.fetch_add(1);
          gen[h * kKept + k].store(round);
        }
        int64_t n = 0;
        if (cache::HIncrBy(c, t, key(h), "n", 1, &n) != Status::kOk) bad.fetch_add(1);
        incrs.fetch_add(1);
        (void)c.alloc.AnswerGiveBack();  // a worker's tick
      }
    }
    c.alloc.Release();
  });
  auto reader = [&](uint32_t slot) {
    cache::Ctx c(*f->arena, slot);
    std::string got;
    for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
      int h = static_cast<int>(n % kHashes), k = static_cast<int>((n * 7919) % kKept);
      uint32_t g0 = gen[h * kKept + k].load();
      uint64_t len = 0;
      if (cache::HGet(c, t, key(h), field(4 * k), &got) != Status::kOk ||
          cache::HLen(c, t, key(h), &len) != Status::kOk || len != kKept + 1) {
        bad.fetch_add(1);
        continue;
      }
      uint32_t g1 = gen[h * kKept + k].load();
      if (!OfAGeneration(got, g0, g1, [&](uint32_t g) { return value(h, 4 * k, g); })) bad.fetch_add(1);
      reads.fetch_add(1, std::memory_order_relaxed);
    }
    c.alloc.Release();
  };
  std::thread r1(reader, 2), r2(reader, 3);
  PassesDuringReads(c0, 4, reads, stop, writer, r1, r2);
  CHECK_EQUAL(0u, bad.load());
  CHECK(cache::GetAutomoveStats(c0).moved > 0);
  uint64_t total = 0;
  for (int h = 0; h < kHashes; ++h) {
    std::string got;
    for (int k = 0; k < kKept; ++k) {
      CHECK(cache::HGet(c0, t, key(h), field(4 * k), &got) == Status::kOk);
      CHECK(got == value(h, 4 * k, gen[h * kKept + k].load()));
    }
    CHECK(cache::HGet(c0, t, key(h), "n", &got) == Status::kOk);
    total += std::stoull(got);
  }
  CHECK_EQUAL(incrs.load(), total);  // no lost update
  cache::AuditReport r = cache::Audit(c0);
  if (!r.clean()) FAIL(r.Summary().c_str());
}

// Readers of overflow chains while passes move their nodes and records:
// every read finds its key with its value (a reader that raced a relink
// retries on the overflow sequence; it never follows a freed node).
TEST(AutomoveThreads, ChainReadersDuringNodeMoves) {
  cache::TableRef t = f->Table("o", 64);
  cache::Ctx& c0 = *f->ctx;
  constexpr uint64_t kKeys = 24000;
  std::string v(100, 'o');
  for (uint64_t i = 0; i < kKeys; ++i) CHECK(cache::Set(c0, t, testing::Key(i), v + std::to_string(i)) == Status::kOk);
  for (uint64_t i = 0; i < kKeys; ++i) {
    if (i % 4 != 0) CHECK(cache::Del(c0, t, testing::Key(i)) == Status::kOk);
  }
  c0.alloc.FlushToGlobal();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  auto reader = [&](uint32_t slot) {
    cache::Ctx c(*f->arena, slot);
    std::string got;
    for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
      uint64_t i = (n * 4 * 7919) % kKeys;
      if (cache::GetString(c, t, testing::Key(i), &got) != Status::kOk || got != v + std::to_string(i)) {
        bad.fetch_add(1);
      }
      reads.fetch_add(1, std::memory_order_relaxed);
    }
    c.alloc.Release();
  };
  std::thread r1(reader, 2), r2(reader, 3);
  for (int i = 0; i < 10000 && reads.load() < 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int node_cls = mem::ClassFor(cache::detail::kNodeBytes);
  uint64_t pages_before = mem::PoolAt(*f->arena, node_cls)->pages.load();
  cache::Automover m;
  uint64_t reads_before = reads.load();
  for (int k = 0; k < 4; ++k) {
    if (m.Start(c0, true)) {
      for (int i = 0; i < 10000 && m.active(); ++i) {
        (void)m.Step(c0, 16);  // the overflow table is walked whole at the end of each table
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  uint64_t reads_during = reads.load() - reads_before;
  stop.store(true);
  r1.join();
  r2.join();
  CHECK(reads_during > 100);
  CHECK_EQUAL(0u, bad.load());
  CHECK(mem::PoolAt(*f->arena, node_cls)->pages.load() * 2 < pages_before);
  cache::AuditReport r = cache::Audit(c0);
  if (!r.clean()) FAIL(r.Summary().c_str());
}
