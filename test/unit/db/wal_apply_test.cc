// perfcached — unit tests for db/wal_apply (replay of whole and fields records in any order).
// Copyright (c) 2026 the perfcached authors.
#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "cache/dict.h"
#include "cache/encoding.h"
#include "cache/export.h"
#include "cache/hash_ops.h"
#include "cache/key_ops.h"
#include "cache/maint.h"
#include "cache/ops.h"
#include "cache/set_ops.h"
#include "db/wal.h"
#include "db/wal_apply.h"
#include "db/wal_ring.h"
#include "test/unit/cache/fixture.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"

using mem::Status;

namespace {

// The state of a key as a client sees it: type, expiry, entries (sorted).
struct Seen {
  bool present = false;
  uint8_t type = 0;
  int64_t expire_ms = 0;
  std::string scalar;
  std::set<std::pair<std::string, std::string>> items;
  bool operator==(const Seen&) const = default;
};

Seen Look(cache::Ctx& c, const cache::TableRef& t, const std::string& key) {
  Seen s;
  cache::Entry e;
  Status st = cache::ExportKey(c, t, key, &e);
  if (st != Status::kOk) return s;
  s.present = true;
  s.type = e.type;
  s.expire_ms = e.expire_ms;
  if (e.type == cache::kTypeHash || e.type == cache::kTypeSet) {
    std::string why;
    (void)cache::DecodeItems(e.value, e.type == cache::kTypeHash,
                             [&](std::string_view a, std::string_view b) { s.items.emplace(a, b); }, &why);
  } else {
    s.scalar = e.value;
  }
  return s;
}

std::string Describe(const Seen& s) {
  if (!s.present) return "absent";
  std::string d = "type " + std::to_string(s.type) + " exp " + std::to_string(s.expire_ms) + " {" + s.scalar;
  for (const auto& [a, b] : s.items) d += " " + a + "=" + b;
  return d + " }";
}

// Records a writer logged: the real logger (db/wal_ring.h) on ring 0, read
// back as the WAL process would.
struct Log {
  db::WalLogger logger;
  Log() {
    std::string err;
    if (!db::MapWal(1, uint64_t{64} << 20, db::WalPolicy::kNo, &err)) std::abort();
    if (!logger.Attach(0)) std::abort();
    db::WalRing* r = db::WalRingAt(0);
    r->tail.store(r->head.load());
  }
  std::vector<db::WalRecord> Take() {
    db::WalRing* r = db::WalRingAt(0);
    uint64_t head = r->head.load();
    std::string bytes;
    db::WalRingCopy(0, head, &bytes);
    r->tail.store(head);
    std::vector<db::WalRecord> out;
    size_t off = 0;
    while (off < bytes.size()) {
      db::WalRecord rec;
      size_t used = 0;
      std::string err;
      if (db::DecodeWalRecord(std::string_view(bytes).substr(off), &rec, &used, &err) != db::WalDecode::kOk) {
        std::abort();
      }
      out.push_back(std::move(rec));
      off += used;
    }
    return out;
  }
};

struct Applied {
  std::map<std::string, uint64_t> top;
  std::unordered_map<std::string, uint64_t> tomb;
  std::map<std::string, uint64_t> snap_floor;
  std::unordered_set<std::string> snap_expired;
};

}  // namespace

TEST_GROUP(WalApply) {
  testing::EngineFixture f{64};
  Log log;  // per test: CppUTest counts a buffer kept across tests as a leak
  cache::TableRef src;
  void setup() override {
    src = f.Table("src");
    cache::DictLimits l = cache::GetDictLimits(*f.ctx);
    l.hash_pack_entries = 4;  // small trees: most writes log fields
    l.set_pack_entries = 4;
    l.set_intset_entries = 4;
    cache::SetDictLimits(*f.ctx, l);
  }
  // Run one write the way the RESP door does (cache::Ctx::dict_journal,
  // then WalLogger::LogKey for the key).
  template <class Op>
  void Write(const std::string& key, Op op) {
    std::vector<cache::DictChange> journal;
    f.ctx->dict_journal = &journal;
    op();
    f.ctx->dict_journal = nullptr;
    std::string err;
    CHECK_TEXT(log.logger.LogKey(*f.ctx, src, "src", key, &err, &journal), err.c_str());
  }
  // A snapshot of src as recovery loads one: the entries with their
  // versions, and the floor.
  struct Snap {
    std::vector<cache::Entry> entries;
    uint64_t floor = 0;
  };
  Snap TakeSnap(const std::vector<std::string>& keys) {
    Snap sn;
    sn.floor = cache::VersionFloor(src);
    for (const std::string& k : keys) {
      cache::Entry e;
      if (cache::ExportKey(*f.ctx, src, k, &e) == Status::kOk) sn.entries.push_back(e);
    }
    return sn;
  }
  // Replay `recs` into a fresh collection `name` (after loading `snap`
  // when given) and compare every key.
  void ReplayAndCompare(const std::vector<db::WalRecord>& recs, const std::string& name,
                        const std::vector<std::string>& keys, const Snap* snap = nullptr,
                        const std::function<void()>& before_release = {}) {
    cache::TableRef dst = f.Table(name.c_str());
    Applied a;
    // As modules/db RecoverFromSnapshots: the clock held for the load and
    // the replay, given back (and what expired swept) before comparing.
    db::RecoveryClock clock(*f.ctx);
    if (snap) {
      for (const cache::Entry& e : snap->entries) {
        std::string why;
        Status st = clock.Gone(e) ? Status::kNotFound : cache::ImportEntry(*f.ctx, dst, e, &why);
        if (st == Status::kNotFound) {  // expired by the load: a tombstone at its version
          std::string tk = name + '\0' + e.key;
          a.tomb[tk] = e.version;
          a.snap_expired.insert(tk);
          continue;
        }
        CHECK_TEXT(st == Status::kOk, why.c_str());
      }
      a.snap_floor[name] = snap->floor;
      cache::RaiseVersionFloor(dst, snap->floor);
    }
    db::WalApplier ap(*f.ctx, db::WalApplier::Known{&a.top, &a.tomb, &a.snap_floor, &a.snap_expired, &clock}, {},
                      [](const std::string& line) { FAIL(line.c_str()); });
    for (db::WalRecord r : recs) {
      r.collection = name;
      std::string err;
      CHECK_TEXT(ap.Apply(r, &err), err.c_str());
    }
    if (before_release) before_release();
    clock.Release();
    for (const std::string& k : keys) {
      Seen want = Look(*f.ctx, src, k), got = Look(*f.ctx, dst, k);
      if (!(want == got)) {
        FAIL((name + " key " + k + ": want " + Describe(want) + ", got " + Describe(got)).c_str());
      }
    }
  }
};

TEST(WalApply, ALargeHashLogsOnlyTheFieldsAWriteChanged) {
  std::vector<std::string_view> fv;
  std::vector<std::string> own;
  for (int i = 0; i < 50; ++i) {
    own.push_back("f" + std::to_string(i));
    own.push_back(std::string(100, 'x'));
  }
  for (auto& s : own) fv.push_back(s);
  uint64_t added = 0;
  Write("h", [&] { CHECK(cache::HSet(*f.ctx, src, "h", fv, &added) == Status::kOk); });
  auto made = log.Take();
  LONGS_EQUAL(1, made.size());
  LONGS_EQUAL(db::kWalPut, made[0].kind);  // made by this write: whole
  std::string_view one[] = {"f7", "new"};
  Write("h", [&] { CHECK(cache::HSet(*f.ctx, src, "h", one, &added) == Status::kOk); });
  auto recs = log.Take();
  LONGS_EQUAL(1, recs.size());
  LONGS_EQUAL(db::kWalFields, recs[0].kind);
  CHECK(recs[0].entry.value.size() < 16);
  db::WalFieldChanges ch;
  CHECK(db::DecodeWalFields(recs[0].entry.value, cache::kTypeHash, &ch));
  LONGS_EQUAL(1, ch.size());
  STRCMP_EQUAL("f7", ch[0].first.c_str());
  STRCMP_EQUAL("new", ch[0].second->c_str());
  // Nothing changed: nothing logged.
  std::string_view absent[] = {"nope"};
  uint64_t removed = 0;
  Write("h", [&] { CHECK(cache::HDel(*f.ctx, src, "h", absent, &removed) == Status::kOk); });
  LONGS_EQUAL(0, log.Take().size());
  // A removal is a fields record whose change has no value.
  std::string_view gone[] = {"f1", "f1"};
  Write("h", [&] { CHECK(cache::HDel(*f.ctx, src, "h", gone, &removed) == Status::kOk); });
  recs = log.Take();
  LONGS_EQUAL(1, recs.size());
  CHECK(db::DecodeWalFields(recs[0].entry.value, cache::kTypeHash, &ch));
  LONGS_EQUAL(1, ch.size());
  CHECK(!ch[0].second.has_value());
}

TEST(WalApply, ASmallHashAndAKeyRemovedByItsLastFieldAreLoggedWhole) {
  std::string_view fv[] = {"a", "1"};
  uint64_t n = 0;
  Write("s", [&] { CHECK(cache::HSet(*f.ctx, src, "s", fv, &n) == Status::kOk); });
  std::string_view fv2[] = {"b", "2"};
  Write("s", [&] { CHECK(cache::HSet(*f.ctx, src, "s", fv2, &n) == Status::kOk); });
  auto recs = log.Take();
  LONGS_EQUAL(2, recs.size());
  LONGS_EQUAL(db::kWalPut, recs[1].kind);  // listpack: whole
  std::string_view all[] = {"a", "b"};
  Write("s", [&] { CHECK(cache::HDel(*f.ctx, src, "s", all, &n) == Status::kOk); });
  recs = log.Take();
  LONGS_EQUAL(1, recs.size());
  LONGS_EQUAL(db::kWalTombstone, recs[0].kind);
}

// The rings of several writers are merged in any order (db/wal_apply.h):
// a random history of writes to a few hashes and sets, from two writers,
// replayed in many orders, must rebuild exactly what the table holds.
TEST(WalApply, ReplayInAnyOrderRebuildsTheTable) {
  const std::vector<std::string> keys = {"h0", "h1", "s0", "s1"};
  std::mt19937_64 rng(20261201);
  std::vector<std::vector<db::WalRecord>> ring(2);
  int64_t now = cache::NowMs(*f.ctx);
  auto field = [&] { return "f" + std::to_string(rng() % 12); };
  int by_field = 0, by_expire = 0;
  Snap snap;
  std::vector<db::WalRecord> tail;  // logged from step 450 on (the snapshot is at 500)
  for (int step = 0; step < 800; ++step) {
    if (step == 500) snap = TakeSnap(keys);
    const std::string& key = keys[rng() % keys.size()];
    // Mostly the key's own kind; now and then the other (WRONGTYPE, or
    // after a DEL a new life of the other type).
    bool hash = (key[0] == 'h') != (rng() % 8 == 0);
    // The last 200 writes only write fields: many fields records newer
    // than each key's last whole record, out of order with each other,
    // and now and then an EXPIRE (an expire record of a large one).
    int what = step < 600 ? static_cast<int>(rng() % 20)
               : rng() % 6 == 0 ? 1
                                : 4 + static_cast<int>(rng() % 16);
    uint64_t n = 0;
    bool changed = false;
    Write(key, [&] {
      if (what == 0) {
        (void)cache::Del(*f.ctx, src, key);
      } else if (what == 1) {
        // Near (passed by the late replays below) or far, under any
        // condition: expire records that move a TTL on or back.
        static constexpr cache::ExpireCond kConds[] = {cache::ExpireCond::kAlways, cache::ExpireCond::kNx,
                                                       cache::ExpireCond::kXx, cache::ExpireCond::kGt,
                                                       cache::ExpireCond::kLt};
        int64_t when = now + (rng() % 2 ? 1000000 : 3000000) + static_cast<int64_t>(rng() % 1000);
        (void)cache::Expire(*f.ctx, src, key, when, kConds[rng() % 5], &changed);
      } else if (what == 2) {
        (void)cache::Persist(*f.ctx, src, key, &changed);
      } else if (what == 3) {
        (void)cache::Set(*f.ctx, src, key, "a string");  // another type: a new life
      } else if (hash && what < 12) {
        std::vector<std::string> own = {field(), std::to_string(rng() % 1000), field(), "v" + std::to_string(step)};
        std::vector<std::string_view> fv(own.begin(), own.end());
        (void)cache::HSet(*f.ctx, src, key, fv, &n);
      } else if (hash && what < 15) {
        int64_t r = 0;
        (void)cache::HIncrBy(*f.ctx, src, key, field(), 7, &r);
      } else if (hash) {
        std::string a = field(), b = field();
        std::string_view fs[] = {a, b};
        (void)cache::HDel(*f.ctx, src, key, fs, &n);
      } else if (what < 12) {
        std::string a = field(), b = std::to_string(rng() % 9);
        std::string_view ms[] = {a, b};
        (void)cache::SAdd(*f.ctx, src, key, ms, &n);
      } else if (what < 16) {
        std::string a = field(), b = std::to_string(rng() % 9);
        std::string_view ms[] = {a, b};
        (void)cache::SRem(*f.ctx, src, key, ms, &n);
      } else {
        std::vector<std::string> popped;
        (void)cache::SPop(*f.ctx, src, key, 1, &popped);
      }
    });
    for (db::WalRecord& r : log.Take()) {
      by_field += r.kind == db::kWalFields;
      by_expire += r.kind == db::kWalExpire;
      if (step >= 450) tail.push_back(r);
      ring[rng() % 2].push_back(std::move(r));
    }
  }
  CHECK_TEXT(by_field > 60, ("only " + std::to_string(by_field) + " fields records").c_str());
  CHECK_TEXT(by_expire > 10, ("only " + std::to_string(by_expire) + " expire records").c_str());
  // In the order written (one writer, then the other), interleaved as the
  // WAL process drains two rings, and in wholly random orders.
  std::vector<db::WalRecord> a = ring[0];
  a.insert(a.end(), ring[1].begin(), ring[1].end());
  ReplayAndCompare(a, "dst_concat", keys);
  std::vector<db::WalRecord> b = ring[1];
  b.insert(b.end(), ring[0].begin(), ring[0].end());
  ReplayAndCompare(b, "dst_reverse", keys);
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<db::WalRecord> mix;
    size_t i = 0, j = 0;
    while (i < ring[0].size() || j < ring[1].size()) {
      bool first = j == ring[1].size() || (i < ring[0].size() && rng() % 2);
      mix.push_back(first ? ring[0][i++] : ring[1][j++]);
    }
    ReplayAndCompare(mix, "dst_mix" + std::to_string(trial), keys);
  }
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<db::WalRecord> all = a;
    std::shuffle(all.begin(), all.end(), rng);
    ReplayAndCompare(all, "dst_any" + std::to_string(trial), keys);
  }
  // After a snapshot taken at step 500, from a position 50 writes before
  // it (records the snapshot already holds come again), in any order.
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<db::WalRecord> t = tail;
    if (trial) std::shuffle(t.begin(), t.end(), rng);
    ReplayAndCompare(t, "dst_snap" + std::to_string(trial), keys, &snap);
  }
  // Twice over (a segment written again): the same.
  std::vector<db::WalRecord> twice = a;
  twice.insert(twice.end(), a.begin(), a.end());
  ReplayAndCompare(twice, "dst_twice", keys);
  // Later, with the near expiries passed and the far ones not: a key whose
  // TTL was moved on is back whole, one whose last TTL passed is gone.
  f.ctx->clock_skew_ms += 2000000;
  std::vector<db::WalRecord> late_twice = a;
  late_twice.insert(late_twice.end(), b.begin(), b.end());
  ReplayAndCompare(late_twice, "dst_late_twice", keys);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<db::WalRecord> t = tail;
    std::shuffle(t.begin(), t.end(), rng);
    ReplayAndCompare(t, "dst_late_snap" + std::to_string(trial), keys, &snap);
  }
  ReplayAndCompare(a, "dst_late", keys);
  std::vector<db::WalRecord> late = a;
  std::shuffle(late.begin(), late.end(), rng);
  ReplayAndCompare(late, "dst_late_any", keys);
  f.ctx->clock_skew_ms -= 2000000;
}

// Regression (the narrow window, docs/persistence.md): a key written with a
// 1 ms TTL that the timer's sweep removes between the logger's floor read
// and its read-back was logged as a tombstone at the floor read before,
// below the key's older put: replay brought the old value back.
namespace {
cache::Ctx* g_sweep_ctx = nullptr;
cache::TableRef g_sweep_table;
void SweepNow() {
  g_sweep_ctx->clock_skew_ms += 1000;
  (void)cache::SweepExpired(*g_sweep_ctx, g_sweep_table, 1u << 20, {});
  g_sweep_ctx->clock_skew_ms -= 1000;
}
}  // namespace

TEST(WalApply, AKeyTheSweepRemovesDuringItsReadBackStaysGone) {
  Write("k", [&] { CHECK(cache::Set(*f.ctx, src, "k", "old") == Status::kOk); });
  cache::StoreOpts o;
  o.expire_ms = cache::NowMs(*f.ctx) + 1;
  uint64_t v = 0;
  o.stored_version = &v;
  CHECK(cache::Set(*f.ctx, src, "k", "new", o) == Status::kOk);
  g_sweep_ctx = f.ctx;
  g_sweep_table = src;
  db::g_wal_test_after_floor = SweepNow;
  std::string err;
  bool ok = log.logger.LogKey(*f.ctx, src, "src", "k", &err);
  db::g_wal_test_after_floor = nullptr;
  CHECK_TEXT(ok, err.c_str());
  auto recs = log.Take();
  LONGS_EQUAL(2, recs.size());
  LONGS_EQUAL(db::kWalTombstone, recs[1].kind);
  CHECK(recs[1].entry.version >= v);
  ReplayAndCompare(recs, "dst_swept", {"k"});
}

// Regressions found by review (session 11): orders the WAL process really
// writes (one drain copies the rings in index order).
TEST(WalApply, ALifeOfAnotherTypeDoesNotEraseANewerOne) {
  std::vector<std::string> own;
  std::vector<std::string_view> fv, ms;
  for (int i = 0; i < 200; ++i) {
    own.push_back("f" + std::to_string(i));
    own.push_back("v");
  }
  for (auto& x : own) fv.push_back(x);
  uint64_t n = 0;
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", fv, &n) == Status::kOk); });  // P1
  std::string_view one[] = {"f", "x"};
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", one, &n) == Status::kOk); });  // F2
  Write("K", [&] { CHECK(cache::Del(*f.ctx, src, "K") == Status::kOk); });            // T
  std::vector<std::string> mem;
  for (int i = 0; i < 200; ++i) mem.push_back("m" + std::to_string(i));
  for (auto& x : mem) ms.push_back(x);
  Write("K", [&] { CHECK(cache::SAdd(*f.ctx, src, "K", ms, &n) == Status::kOk); });   // P3
  std::string_view m[] = {"m"};
  Write("K", [&] { CHECK(cache::SAdd(*f.ctx, src, "K", m, &n) == Status::kOk); });    // F4
  auto r = log.Take();
  LONGS_EQUAL(5, r.size());
  LONGS_EQUAL(db::kWalFields, r[1].kind);
  LONGS_EQUAL(db::kWalFields, r[4].kind);
  ReplayAndCompare({r[0], r[4], r[1], r[2], r[3]}, "dst_types", {"K"});
  ReplayAndCompare({r[4], r[3], r[2], r[1], r[0]}, "dst_types_rev", {"K"});
}

TEST(WalApply, ATtlSetBeforeAnOlderPutIsKept) {
  std::vector<std::string> own;
  std::vector<std::string_view> fv;
  for (int i = 0; i < 200; ++i) {
    own.push_back("f" + std::to_string(i));
    own.push_back("v");
  }
  for (auto& x : own) fv.push_back(x);
  uint64_t n = 0;
  bool changed = false;
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", fv, &n) == Status::kOk); });  // P9
  Write("K", [&] {
    CHECK(cache::Expire(*f.ctx, src, "K", cache::NowMs(*f.ctx) + 1000000, cache::ExpireCond::kAlways, &changed) ==
          Status::kOk);
  });  // P10
  std::string_view g[] = {"f7"};
  Write("K", [&] { CHECK(cache::HDel(*f.ctx, src, "K", g, &n) == Status::kOk); });  // F11
  auto r = log.Take();
  LONGS_EQUAL(3, r.size());
  LONGS_EQUAL(db::kWalFields, r[2].kind);
  ReplayAndCompare({r[2], r[0], r[1]}, "dst_ttl", {"K"});
  ReplayAndCompare({r[2], r[1], r[0]}, "dst_ttl2", {"K"});
  ReplayAndCompare({r[1], r[2], r[0]}, "dst_ttl3", {"K"});
}

// Regression (review, session 11): a key the snapshot held with a TTL that
// passed while the daemon was down, whose TTL a write after the walk began
// moved later (a put at a version below the walk's floor: an update, not a
// create), was dropped as "removed before the walk reached it".
TEST(WalApply, AKeyTheSnapshotHeldExpiredIsBroughtBackByANewerTtl) {
  int64_t now = cache::NowMs(*f.ctx);
  cache::StoreOpts o;
  o.expire_ms = now + 1000;
  CHECK(cache::Set(*f.ctx, src, "K", "v", o) == Status::kOk);
  for (int i = 0; i < 50; ++i) CHECK(cache::Set(*f.ctx, src, "X", std::to_string(i)) == Status::kOk);
  CHECK(cache::Del(*f.ctx, src, "X") == Status::kOk);  // the floor passes K's next version
  Snap snap = TakeSnap({"K"});
  (void)log.Take();
  bool changed = false;
  Write("K", [&] {
    CHECK(cache::Expire(*f.ctx, src, "K", now + 1000000, cache::ExpireCond::kAlways, &changed) == Status::kOk);
  });
  auto r = log.Take();
  LONGS_EQUAL(1, r.size());
  CHECK(r[0].entry.version <= snap.floor);
  f.ctx->clock_skew_ms += 10000;  // the restart: the first TTL has passed, the second not
  ReplayAndCompare(r, "dst_snapexp", {"K"}, &snap);
  f.ctx->clock_skew_ms -= 10000;
}

// Regression (session 22, found by review): a key's updates take its
// version + 1, which the floor can pass. The snapshot's K@s, then in the
// tail `EXPIRE K 1` (s+1) and `PERSIST K` (s+2, at or below the floor),
// and a restart after the first TTL: the expired put removed K, and the
// PERSIST was then taken for a key the snapshot had dropped and skipped
// (K lost, the PERSIST acknowledged).
TEST(WalApply, AWriteAfterATailPutThatExpiredIsNotTakenForOneTheSnapshotDropped) {
  int64_t now = cache::NowMs(*f.ctx);
  CHECK(cache::Set(*f.ctx, src, "K", "v") == Status::kOk);
  CHECK(cache::Set(*f.ctx, src, "L", "w") == Status::kOk);
  for (int i = 0; i < 50; ++i) CHECK(cache::Set(*f.ctx, src, "X", std::to_string(i)) == Status::kOk);
  CHECK(cache::Del(*f.ctx, src, "X") == Status::kOk);  // the floor passes K's next versions
  Snap snap = TakeSnap({"K", "L"});
  (void)log.Take();
  bool changed = false;
  Write("K", [&] {
    CHECK(cache::Expire(*f.ctx, src, "K", now + 1000, cache::ExpireCond::kAlways, &changed) == Status::kOk);
  });
  Write("K", [&] { CHECK(cache::Persist(*f.ctx, src, "K", &changed) == Status::kOk && changed); });
  // The same with a SET after a SET PX that expired.
  cache::StoreOpts px;
  px.expire_ms = now + 1000;
  Write("L", [&] { CHECK(cache::Set(*f.ctx, src, "L", "short", px) == Status::kOk); });
  Write("L", [&] { CHECK(cache::Set(*f.ctx, src, "L", "kept") == Status::kOk); });
  auto r = log.Take();
  LONGS_EQUAL(4, r.size());
  for (const db::WalRecord& w : r) CHECK(w.entry.version <= snap.floor);
  f.ctx->clock_skew_ms += 10000;  // the restart: the TTLs have passed
  ReplayAndCompare(r, "dst_ended", {"K", "L"}, &snap);
  f.ctx->clock_skew_ms -= 10000;
}

// ---- expire records (kind 6) -------------------------------------------------

namespace {
// `n` fields (or members) named p0.., enough for a tree under the group's limits.
std::vector<std::string> Items(const std::string& p, int n, bool pairs) {
  std::vector<std::string> own;
  for (int i = 0; i < n; ++i) {
    own.push_back(p + std::to_string(i));
    if (pairs) own.push_back("v" + std::to_string(i));
  }
  return own;
}
std::vector<std::string_view> Views(const std::vector<std::string>& own) {
  return std::vector<std::string_view>(own.begin(), own.end());
}
}  // namespace

TEST(WalApply, AnExpiryOfALargeAggregateLogsOneExpireRecord) {
  auto hf = Items("f", 20, true), sm = Items("m", 20, false);
  uint64_t n = 0;
  bool changed = false;
  Write("h", [&] { CHECK(cache::HSet(*f.ctx, src, "h", Views(hf), &n) == Status::kOk); });
  Write("s", [&] { CHECK(cache::SAdd(*f.ctx, src, "s", Views(sm), &n) == Status::kOk); });
  LONGS_EQUAL(2, log.Take().size());
  const int64_t t1 = cache::NowMs(*f.ctx) + 100000;
  for (const char* key : {"h", "s"}) {
    Write(key, [&] { CHECK(cache::Expire(*f.ctx, src, key, t1, cache::ExpireCond::kAlways, &changed) == Status::kOk); });
    auto r = log.Take();
    LONGS_EQUAL(1, r.size());
    LONGS_EQUAL(db::kWalExpire, r[0].kind);
    LONGS_EQUAL(t1, r[0].entry.expire_ms);
    CHECK(r[0].entry.value.empty());
    cache::ReadInfo ri;
    CHECK(cache::Probe(*f.ctx, src, key, &ri) == Status::kOk);
    LONGS_EQUAL(ri.version, r[0].entry.version);
    // Nothing changed: EXPIRE NX on a key with a TTL logs nothing.
    Write(key, [&] { CHECK(cache::Expire(*f.ctx, src, key, t1 + 5, cache::ExpireCond::kNx, &changed) == Status::kOk); });
    CHECK(!changed);
    LONGS_EQUAL(0, log.Take().size());
    Write(key, [&] { CHECK(cache::Persist(*f.ctx, src, key, &changed) == Status::kOk); });
    r = log.Take();
    LONGS_EQUAL(1, r.size());
    LONGS_EQUAL(db::kWalExpire, r[0].kind);
    LONGS_EQUAL(0, r[0].entry.expire_ms);
    Write(key, [&] { CHECK(cache::Persist(*f.ctx, src, key, &changed) == Status::kOk); });  // none to remove
    LONGS_EQUAL(0, log.Take().size());
  }
  // A small hash and a string are logged whole; an expiry in the past
  // removes the key: a tombstone.
  std::string_view small[] = {"a", "1"};
  Write("small", [&] { CHECK(cache::HSet(*f.ctx, src, "small", small, &n) == Status::kOk); });
  Write("str", [&] { CHECK(cache::Set(*f.ctx, src, "str", "v") == Status::kOk); });
  (void)log.Take();
  for (const char* key : {"small", "str"}) {
    Write(key, [&] { CHECK(cache::Expire(*f.ctx, src, key, t1, cache::ExpireCond::kAlways, &changed) == Status::kOk); });
    auto r = log.Take();
    LONGS_EQUAL(1, r.size());
    LONGS_EQUAL(db::kWalPut, r[0].kind);
  }
  Write("h", [&] { CHECK(cache::Expire(*f.ctx, src, "h", 1000, cache::ExpireCond::kAlways, &changed) == Status::kOk); });
  auto r = log.Take();
  LONGS_EQUAL(1, r.size());
  LONGS_EQUAL(db::kWalTombstone, r[0].kind);
}

// The case that needs the held clock: a hash's TTL moved later by an
// expire record after an earlier TTL that has passed by the restart. Every
// order of the records, and each twice.
TEST(WalApply, AnExpiryMovedLaterKeepsEveryEntryInEveryOrder) {
  auto hf = Items("f", 20, true);
  uint64_t n = 0;
  bool changed = false;
  const int64_t now = cache::NowMs(*f.ctx), t1 = now + 5000, t2 = now + 1000000;
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", Views(hf), &n) == Status::kOk); });                       // P1
  Write("K", [&] { CHECK(cache::Expire(*f.ctx, src, "K", t1, cache::ExpireCond::kAlways, &changed) == Status::kOk); });  // E2
  std::string_view one[] = {"f0", "new"};
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", one, &n) == Status::kOk); });                              // F3
  Write("K", [&] { CHECK(cache::Expire(*f.ctx, src, "K", t2, cache::ExpireCond::kGt, &changed) == Status::kOk); });  // E4
  auto r = log.Take();
  LONGS_EQUAL(4, r.size());
  LONGS_EQUAL(db::kWalExpire, r[1].kind);
  LONGS_EQUAL(db::kWalFields, r[2].kind);
  LONGS_EQUAL(db::kWalExpire, r[3].kind);
  f.ctx->clock_skew_ms += 10000;  // the restart: t1 has passed, t2 not
  std::vector<int> order = {0, 1, 2, 3};
  int i = 0;
  do {
    std::vector<db::WalRecord> recs;
    for (int k : order) recs.push_back(r[static_cast<size_t>(k)]);
    ReplayAndCompare(recs, "dst_moved" + std::to_string(i), {"K"});
    recs.insert(recs.end(), recs.begin(), recs.end());
    ReplayAndCompare(recs, "dst_moved_twice" + std::to_string(i), {"K"});
    ++i;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(Look(*f.ctx, src, "K").present);
  LONGS_EQUAL(t2, Look(*f.ctx, src, "K").expire_ms);
  f.ctx->clock_skew_ms -= 10000;
}

// The same with the first TTL in the snapshot (it passed in the downtime:
// the loader keeps the key until the tail is read) and the move in the tail.
TEST(WalApply, AnExpiryInTheTailMovesOnASnapshotKeyThatExpiredInTheDowntime) {
  auto hf = Items("f", 20, true), sm = Items("m", 20, false);
  uint64_t n = 0;
  bool changed = false;
  const int64_t now = cache::NowMs(*f.ctx), t1 = now + 5000, t2 = now + 1000000;
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", Views(hf), &n) == Status::kOk); });
  Write("S", [&] { CHECK(cache::SAdd(*f.ctx, src, "S", Views(sm), &n) == Status::kOk); });
  for (const char* key : {"K", "S"}) {
    Write(key, [&] { CHECK(cache::Expire(*f.ctx, src, key, t1, cache::ExpireCond::kAlways, &changed) == Status::kOk); });
  }
  auto before = log.Take();
  Snap snap = TakeSnap({"K", "S"});
  std::string_view one[] = {"f0", "new"};
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", one, &n) == Status::kOk); });
  Write("K", [&] { CHECK(cache::Expire(*f.ctx, src, "K", t2, cache::ExpireCond::kAlways, &changed) == Status::kOk); });
  Write("S", [&] { CHECK(cache::Persist(*f.ctx, src, "S", &changed) == Status::kOk); });
  auto tail = log.Take();
  LONGS_EQUAL(3, tail.size());
  f.ctx->clock_skew_ms += 10000;
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 8; ++trial) {
    // From a position before the snapshot: records it holds come again.
    std::vector<db::WalRecord> t = tail;
    if (trial >= 4) t.insert(t.end(), before.begin(), before.end());
    std::shuffle(t.begin(), t.end(), rng);
    ReplayAndCompare(t, "dst_snapmove" + std::to_string(trial), {"K", "S"}, &snap);
  }
  CHECK(Look(*f.ctx, src, "K").present && Look(*f.ctx, src, "S").present);
  f.ctx->clock_skew_ms -= 10000;
}

// An expiry of one life does not reach the next: EXPIRE, DEL, a new life
// without a TTL, in every order.
TEST(WalApply, ANewLifeDoesNotTakeTheOldLifesExpiry) {
  auto hf = Items("f", 20, true), hg = Items("g", 20, true);
  uint64_t n = 0;
  bool changed = false;
  const int64_t now = cache::NowMs(*f.ctx);
  for (int64_t ttl : {int64_t{5000}, int64_t{1000000}}) {
    const std::string key = "L" + std::to_string(ttl);
    Write(key, [&] { CHECK(cache::HSet(*f.ctx, src, key, Views(hf), &n) == Status::kOk); });
    Write(key, [&] { CHECK(cache::Expire(*f.ctx, src, key, now + ttl, cache::ExpireCond::kAlways, &changed) == Status::kOk); });
    Write(key, [&] { CHECK(cache::Del(*f.ctx, src, key) == Status::kOk); });
    Write(key, [&] { CHECK(cache::HSet(*f.ctx, src, key, Views(hg), &n) == Status::kOk); });
    std::string_view one[] = {"g0", "x"};
    Write(key, [&] { CHECK(cache::HSet(*f.ctx, src, key, one, &n) == Status::kOk); });
    auto r = log.Take();
    LONGS_EQUAL(5, r.size());
    LONGS_EQUAL(db::kWalExpire, r[1].kind);
    f.ctx->clock_skew_ms += 10000;
    std::vector<int> order = {0, 1, 2, 3, 4};
    int i = 0;
    do {
      if (i++ % 4) continue;  // 30 of the 120 orders
      std::vector<db::WalRecord> recs;
      for (int k : order) recs.push_back(r[static_cast<size_t>(k)]);
      ReplayAndCompare(recs, "dst_life" + key + "_" + std::to_string(i), {key});
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(Look(*f.ctx, src, key).present);
    LONGS_EQUAL(0, Look(*f.ctx, src, key).expire_ms);
    f.ctx->clock_skew_ms -= 10000;
  }
}

// A TTL that has passed by the restart, with no record moving it: the key
// is gone after the sweep, its tree's cells freed.
TEST(WalApply, AnAggregateWhoseLastExpiryPassedIsSweptAndFreed) {
  std::vector<std::string> hf;
  for (int i = 0; i < 400; ++i) {
    hf.push_back("f" + std::to_string(i));
    hf.push_back(std::string(100, 'v'));
  }
  uint64_t n = 0;
  bool changed = false;
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", Views(hf), &n) == Status::kOk); });
  Write("K", [&] {
    CHECK(cache::Expire(*f.ctx, src, "K", cache::NowMs(*f.ctx) + 5000, cache::ExpireCond::kAlways, &changed) ==
          Status::kOk);
  });
  auto r = log.Take();
  CHECK(cache::Del(*f.ctx, src, "K") == Status::kOk);  // the want: absent
  f.ctx->clock_skew_ms += 10000;
  uint64_t held = 0;
  ReplayAndCompare(r, "dst_swept_tree", {"K"}, nullptr, [&] { held = mem::UsedMemory(f.ctx->arena); });
  // The 40 KB tree was there under the held clock, and the sweep freed it.
  uint64_t after = mem::UsedMemory(f.ctx->arena);
  CHECK_TEXT(held > after + 40000, (std::to_string(held) + " -> " + std::to_string(after)).c_str());
  cache::TableRef dst;
  CHECK(cache::OpenCollection(*f.ctx, "dst_swept_tree", &dst) == Status::kOk);
  cache::CollectionInfo ci;
  CHECK(cache::CollectionInfoOf(*f.ctx, dst, &ci));
  LONGS_EQUAL(0, ci.entries);
  f.ctx->clock_skew_ms -= 10000;
}

// An expire record of a newer life of another type than the table holds:
// the older life's value goes (its whole record, lost in an everysec tail
// here, would bring the entries; a string must not stand in for them).
TEST(WalApply, AnExpireRecordOfANewerLifeRemovesAnOlderLifeOfAnotherType) {
  auto hf = Items("f", 20, true);
  uint64_t n = 0;
  bool changed = false;
  Write("K", [&] { CHECK(cache::Set(*f.ctx, src, "K", "a string") == Status::kOk); });  // S1
  Write("K", [&] { CHECK(cache::Del(*f.ctx, src, "K") == Status::kOk); });             // T2
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", Views(hf), &n) == Status::kOk); });  // P3
  Write("K", [&] {
    CHECK(cache::Expire(*f.ctx, src, "K", cache::NowMs(*f.ctx) + 1000000, cache::ExpireCond::kAlways, &changed) ==
          Status::kOk);
  });  // E4
  auto r = log.Take();
  LONGS_EQUAL(4, r.size());
  LONGS_EQUAL(db::kWalExpire, r[3].kind);
  ReplayAndCompare({r[0], r[3], r[2]}, "dst_life_tomb_lost", {"K"});
  cache::TableRef dst = f.Table("dst_life_only_expiry");
  Applied a;
  db::RecoveryClock clock(*f.ctx);
  db::WalApplier ap(*f.ctx, db::WalApplier::Known{&a.top, &a.tomb, &a.snap_floor, &a.snap_expired, &clock}, {},
                    [](const std::string& line) { FAIL(line.c_str()); });
  for (db::WalRecord x : {r[0], r[3]}) {
    x.collection = "dst_life_only_expiry";
    std::string err;
    CHECK_TEXT(ap.Apply(x, &err), err.c_str());
  }
  clock.Release();
  CHECK(!Look(*f.ctx, dst, "K").present);
}

// Regression (review, session 19): a key made again over its expired
// record that no sweep had removed yet took the old record's version + 1,
// which can lie at or below the table's floor; a snapshot whose walk began
// in between (and skipped the expired key) then made replay drop the new,
// acknowledged key as "removed before the walk reached it".
TEST(WalApply, AKeyMadeOverItsExpiredRecordOutranksTheSnapshotFloor) {
  auto hf = Items("f", 20, true);
  uint64_t n = 0;
  cache::StoreOpts o;
  o.expire_ms = cache::NowMs(*f.ctx) + 1000;
  CHECK(cache::Set(*f.ctx, src, "S", "old", o) == Status::kOk);
  CHECK(cache::Set(*f.ctx, src, "H", "old", o) == Status::kOk);
  for (int i = 0; i < 50; ++i) CHECK(cache::Set(*f.ctx, src, "X", std::to_string(i)) == Status::kOk);
  CHECK(cache::Del(*f.ctx, src, "X") == Status::kOk);  // the floor passes S's and H's versions
  f.ctx->clock_skew_ms += 5000;                        // S and H expired, not swept
  Snap snap = TakeSnap({"S", "H"});
  CHECK(snap.entries.empty());
  (void)log.Take();
  Write("S", [&] { CHECK(cache::Set(*f.ctx, src, "S", "new") == Status::kOk); });
  Write("H", [&] { CHECK(cache::HSet(*f.ctx, src, "H", Views(hf), &n) == Status::kOk); });
  auto r = log.Take();
  LONGS_EQUAL(2, r.size());
  CHECK(r[0].entry.version > snap.floor);
  CHECK(r[1].entry.version > snap.floor);
  ReplayAndCompare(r, "dst_over_expired", {"S", "H"}, &snap);
  f.ctx->clock_skew_ms -= 5000;
}

// Regression (review, session 19): perf_drop logs each key's tombstone and
// then the drop record in one ring; a put, fields or expire record of a key
// of that collection from another ring, merged after them, made the dropped
// collection again (empty, or with a key memory no longer held).
TEST(WalApply, ARecordMergedAfterItsCollectionsDropDoesNotMakeItAgain) {
  auto hf = Items("f", 20, true);
  uint64_t n = 0;
  bool changed = false;
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", Views(hf), &n) == Status::kOk); });
  std::string_view one[] = {"f0", "x"};
  Write("K", [&] { CHECK(cache::HSet(*f.ctx, src, "K", one, &n) == Status::kOk); });
  Write("K", [&] {
    CHECK(cache::Expire(*f.ctx, src, "K", cache::NowMs(*f.ctx) + 1000000, cache::ExpireCond::kAlways, &changed) ==
          Status::kOk);
  });
  auto r = log.Take();
  LONGS_EQUAL(3, r.size());
  cache::ReadInfo ri;
  CHECK(cache::Probe(*f.ctx, src, "K", &ri) == Status::kOk);
  db::WalRecord tomb, drop;
  tomb.kind = db::kWalTombstone;
  tomb.entry.key = "K";
  tomb.entry.version = ri.version;  // perf_drop: the dropped record's own version
  drop.kind = db::kWalDrop;
  for (size_t late = 0; late < r.size(); ++late) {
    const std::string name = "dst_dropped" + std::to_string(late);
    Applied a;
    db::RecoveryClock clock(*f.ctx);
    db::WalApplier ap(*f.ctx, db::WalApplier::Known{&a.top, &a.tomb, &a.snap_floor, &a.snap_expired, &clock}, {},
                      [](const std::string& line) { FAIL(line.c_str()); });
    // The records before `late` in their ring's order, then the drop's ring,
    // then the rest.
    std::vector<db::WalRecord> order(r.begin(), r.begin() + static_cast<long>(late));
    order.push_back(tomb);
    order.push_back(drop);
    order.insert(order.end(), r.begin() + static_cast<long>(late), r.end());
    for (db::WalRecord x : order) {
      x.collection = name;
      std::string err;
      CHECK_TEXT(ap.Apply(x, &err), err.c_str());
    }
    clock.Release();
    cache::TableRef t;
    CHECK_TEXT(cache::OpenCollection(*f.ctx, name, &t) != Status::kOk, (name + " was made again").c_str());
  }
}

// Regression (review, session 22): under everysec a worker's ring is
// drained before the MI's, so `perf_drop c`, `perf_create c` and a SET in
// the new c within one drain put the new key's record before the drop
// record; the drop emptied the collection whatever the versions, and the
// acknowledged key was lost at every restart. A drop now carries the
// version it was logged at (WalMaxVersion): it removes only what is at or
// below it, and the collection goes only if nothing newer is in it.
TEST(WalApply, AVersionedDropKeepsTheNewLifeMergedBeforeIt) {
  Write("K", [&] { CHECK(cache::Set(*f.ctx, src, "K", "old") == Status::kOk); });
  auto r = log.Take();
  LONGS_EQUAL(1, r.size());
  const uint64_t v = r[0].entry.version;
  db::WalRecord tomb, drop, fresh = r[0], stale = r[0];
  tomb.kind = db::kWalTombstone;
  tomb.entry.key = "K";
  tomb.entry.version = v;
  drop.kind = db::kWalDrop;
  fresh.entry.key = "N";
  fresh.entry.value = "new";
  fresh.entry.version = v + 6;  // made again: above the drop
  for (uint64_t at : {v + 5, uint64_t{0}}) {  // a versioned drop; an unversioned one (older segments)
    const std::string name = "dst_vdrop" + std::to_string(at);
    drop.entry.version = at;
    Applied a;
    db::RecoveryClock clock(*f.ctx);
    db::WalApplier ap(*f.ctx, db::WalApplier::Known{&a.top, &a.tomb, &a.snap_floor, &a.snap_expired, &clock}, {},
                      [](const std::string& line) { FAIL(line.c_str()); });
    // the worker's ring (the old put, the new life's put), then the MI's
    // (tombstone, drop), then the old put again, merged late
    for (db::WalRecord x : {r[0], fresh, tomb, drop, stale}) {
      x.collection = name;
      std::string err;
      CHECK_TEXT(ap.Apply(x, &err), err.c_str());
    }
    clock.Release();
    cache::TableRef t;
    if (at == 0) {
      CHECK_TEXT(cache::OpenCollection(*f.ctx, name, &t) != Status::kOk, "an unversioned drop drops it whole");
      continue;
    }
    CHECK(cache::OpenCollection(*f.ctx, name, &t) == Status::kOk);
    std::string got;
    CHECK(cache::GetString(*f.ctx, t, "N", &got) == Status::kOk);
    CHECK_EQUAL(std::string("new"), got);
    CHECK(cache::Probe(*f.ctx, t, "K", nullptr) == Status::kNotFound);
  }
}
