// perfcached — the audit (see audit.h for what it checks).
// Copyright (c) 2026 the perfcached authors.
#include "cache/audit.h"
#include "cache/internal.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "cache/dict.h"
#include "mem/atomic_copy.h"
#include "mem/page.h"
#include "mem/slab.h"

namespace cache {

using namespace detail;

namespace {

struct Auditor {
  Ctx& c;
  const mem::Arena& a;
  const AuditOptions& o;
  AuditReport r;
  // Cell -> 1 live, 2 free (quiescent mode only).
  std::unordered_map<Off, uint8_t> cells;

  void Error(const std::string& m) {
    if (r.errors.size() < o.max_errors) r.errors.push_back(m);
    ++r.error_count;
  }

  void DeadCheck(const mem::ShmLock& l, const std::string& what) {
    uint32_t h = mem::LockHolder(l);
    if (h != 0 && mem::TidIsDead(h)) {
      ++r.dead_holders;
      if (r.errors.size() < o.max_errors) r.errors.push_back(what + ": held by dead " + std::to_string(h));
    }
  }

  // Mark a cell; a second mark is the double-reference defect.
  void Mark(Off cell, uint8_t state, const char* what) {
    if (o.live) return;
    auto [it, fresh] = cells.emplace(cell, state);
    if (!fresh) {
      Error(std::string(what) + ": cell " + std::to_string(cell) + " referenced twice (" +
            (it->second == 1 ? "live" : "free") + " and " + (state == 1 ? "live" : "free") + ")");
    }
  }

  // An aggregate record (hash, set): check its value's structure and mark
  // the cells of a tree encoding live.
  void Aggregate(Off rec, uint8_t type, const std::string& where) {
    if (type != kTypeHash && type != kTypeSet) return;
    RecView v{a.At(rec)};
    size_t klen = v.klen(), vlen = v.vlen();
    std::string val(vlen, '\0');
    mem::AtomicCopyOut(val.data(), v.value(type, klen), vlen);
    if (val.empty() || val[0] < 1 || val[0] > 3) {
      Error(where + ": aggregate with a bad encoding byte");
      return;
    }
    std::string err;
    uint64_t entries = 0;
    ++r.aggregates;
    if (!WalkDictCells(c, val, [&](Off cell) { Mark(cell, 1, "aggregate cell"); }, &err, &entries)) {
      Error(where + ": " + err);
    }
    r.aggregate_entries += entries;
  }

  // A sane record: its key (copied) or false.
  bool Record(Off rec, std::string* key, uint8_t* type, int64_t* expire) {
    size_t bound = mem::CellBound(a, rec);
    if (bound < kRecHdr) return false;
    RecView v{a.At(rec)};
    size_t klen = v.klen();
    *type = v.type();
    if (klen > bound - kRecHdr || *type > kTypeMax) return false;
    size_t voff = ValueOffset(*type, klen);
    if (voff > bound || v.vlen() > bound - voff) return false;
    key->resize(klen);
    mem::AtomicCopyOut(key->data(), v.key(), klen);
    *expire = v.expire();
    return true;
  }

  void Bucket1(TableHeader& h, uint64_t route, uint64_t idx, Bucket& b,
               std::unordered_set<std::string>* keys, const std::string& tn) {
    if (o.live) LockBucket(c, h, idx, b);
    std::string where = tn + " bucket " + std::to_string(idx);
    if (!o.live) DeadCheck(b.lock, where);
    if (b.seq.load(std::memory_order_acquire) & 1) Error(where + ": odd seqlock");
    uint32_t used = Used(TagsHi(b));
    bool reachable = idx < RouteBuckets(route);
    if (used > static_cast<uint32_t>(kLive)) {
      Error(where + ": used " + std::to_string(used));
      used = kLive;
    }
    if (JournalDst(TagsHi(b)) != 0) Error(where + ": a slot copy left in flight");
    if (!reachable && used != 0) Error(where + ": unreachable bucket holds " + std::to_string(used));
    uint32_t hint = 0;
    if (uint32_t* hp = HintAt(a, h, idx)) hint = mem::LoadRelaxed32(hp);
    std::string key;
    for (uint32_t i = 0; i < static_cast<uint32_t>(kSlots); ++i) {
      Off rec = SlotAt(b, static_cast<int>(i));
      if (i >= used) {
        if (rec != 0) Error(where + ": slot " + std::to_string(i) + " above used is set");
        continue;
      }
      uint8_t type;
      int64_t exp;
      if (rec == 0 || !Record(rec, &key, &type, &exp)) {
        Error(where + ": slot " + std::to_string(i) + " is not a sane record");
        continue;
      }
      ++r.records;
      Mark(rec, 1, "record");
      Aggregate(rec, type, where);
      uint64_t hash = HashOf(c, key);
      if (RouteIdx(route, hash) != idx) Error(where + ": key routes elsewhere");
      if (GetTag(b, static_cast<int>(i)) != TagOf(hash)) Error(where + ": wrong tag");
      uint32_t e = ExpireHint(exp);
      if (e != 0 && (hint == 0 || hint > e)) Error(where + ": expiry hint above a record's expiry");
      if (keys && !keys->insert(key).second) Error(where + ": key twice in the table");
    }
    if (o.live) mem::Unlock(b.lock);
  }

  void Overflow1(TableHeader& h, uint64_t route, std::unordered_set<std::string>* keys,
                 const std::string& tn) {
    if (o.live) LockOverflow(c, h);
    else DeadCheck(h.ovf.lock, tn + " overflow");
    if (h.ovf.seq.load() & 1) Error(tn + " overflow: odd seqlock");
    Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
    uint64_t nodes = 0;
    std::string key;
    for (uint32_t j = 0; j < kOvfHeads && h.ovf.heads != 0; ++j) {
      uint32_t guard = 1u << 20;
      for (Off node = mem::LoadOff(&heads[j]); node != 0; --guard) {
        if (guard == 0 || mem::CellBound(a, node) < kNodeBytes) {
          Error(tn + " overflow: broken chain at head " + std::to_string(j));
          break;
        }
        ++nodes;
        Mark(node, 1, "overflow node");
        Off rec = mem::LoadOff(a.At(node) + kNodeRec);
        uint8_t type;
        int64_t exp;
        if (!Record(rec, &key, &type, &exp)) {
          Error(tn + " overflow: node with a bad record");
        } else {
          ++r.records;
          Mark(rec, 1, "record");
          Aggregate(rec, type, tn + " overflow");
          uint64_t hash = HashOf(c, key);
          if ((hash & (kOvfHeads - 1)) != j) Error(tn + " overflow: node in the wrong head");
          if (mem::LoadRelaxed32(a.At(node) + kNodeHash) != static_cast<uint32_t>(hash >> 32)) {
            Error(tn + " overflow: wrong hash in node");
          }
          if (keys && !keys->insert(key).second) Error(tn + " overflow: key also elsewhere");
          if (!o.live) {
            Bucket* b = BucketAt(a, h, RouteIdx(route, hash));
            Off dummy;
            if (b && FindInBucket(a, *b, TagOf(hash), key, &dummy) >= 0) {
              Error(tn + " overflow: key also in its bucket");
            }
          }
        }
        node = mem::LoadOff(a.At(node) + kNodeNext);
      }
    }
    r.overflow_nodes += nodes;
    if (h.ovf.count.load() != nodes) {
      Error(tn + " overflow: count " + std::to_string(h.ovf.count.load()) + " != nodes " +
            std::to_string(nodes));
    }
    if (o.live) mem::Unlock(h.ovf.lock);
  }

  void Table1(TableHeader& h, uint32_t ti) {
    std::string tn = "table " + std::to_string(ti);
    ++r.tables;
    std::unordered_set<std::string> keyset;
    std::unordered_set<std::string>* keys = o.live ? nullptr : &keyset;
    if (!o.live) DeadCheck(h.admin, tn + " admin");
    uint64_t span = uint64_t{h.nsegs} << kSegShift;
    for (uint64_t start = 0; start < span; start += kAuditStep) {
      if (o.live) (void)mem::Lock(h.admin, c.tid);
      uint64_t route = h.route.load(std::memory_order_acquire);
      uint64_t end = std::min<uint64_t>(span, start + kAuditStep);
      for (uint64_t idx = start; idx < end; ++idx) {
        Bucket* b = BucketAt(a, h, idx);
        if (!b) continue;
        ++r.buckets;
        Bucket1(h, route, idx, *b, keys, tn);
      }
      if (o.live) mem::Unlock(h.admin);
    }
    if (o.live) (void)mem::Lock(h.admin, c.tid);
    Overflow1(h, h.route.load(std::memory_order_acquire), keys, tn);
    if (o.live) mem::Unlock(h.admin);
  }

  void Catalog1() {
    Catalog& cat = *c.catalog;
    DeadCheck(cat.lock, "catalog");
    if (cat.pending_index != 0 && mem::LockHolder(cat.lock) == 0) Error("catalog: rename left pending");
    for (uint32_t i = 0; i < kMaxCollections; ++i) {
      TableHeader& h = cat.tables[i];
      uint32_t st = h.state.load();
      if (st > kTableDropping) Error("table " + std::to_string(i) + ": bad state");
      if (st != kTableLive) continue;
      if (h.name_seq.load() & 1) Error("table " + std::to_string(i) + ": odd name seqlock");
      char name[64];
      mem::AtomicCopyOut(name, h.name, sizeof name);
      size_t n = strnlen(name, sizeof name);
      if (n == 0 || n > kMaxName) Error("table " + std::to_string(i) + ": bad name");
      Table1(h, i);
    }
  }

  void Memory() {
    mem::ArenaHeader* ah = a.hdr();
    DeadCheck(ah->group_lock, "group lock");

    // Claims: cells a process may hand out (bits set, no record).
    std::unordered_set<Off> claimed;
    for (uint32_t s = 0; s < ah->max_procs; ++s) {
      mem::ProcSlot* ps = mem::SlotAt(a, s);
      if (mem::SlotOwnerDead(*ps)) {
        ++r.dead_holders;
        if (r.errors.size() < o.max_errors) r.errors.push_back("slot " + std::to_string(s) + ": owner dead, not adopted");
      }
      if (o.live) continue;
      for (int cls = 0; cls < mem::kNumClasses; ++cls) {
        // The private stack: cells this process freed, bits still set.
        uint32_t guard = ps->cls[cls].stack_n + 1;
        for (Off cur = ps->cls[cls].stack; cur != 0; cur = mem::LoadOff(a.At(cur) + 8)) {
          if (guard-- == 0 || mem::CellClass(a, cur) != cls) {
            Error("slot " + std::to_string(s) + " class " + std::to_string(cls) + ": bad private stack");
            break;
          }
          if (!claimed.insert(cur).second) Error("cell " + std::to_string(cur) + " on a stack twice");
        }
        uint64_t m = ps->cls[cls].mask;
        Off base = ps->cls[cls].base;
        if (m == 0) continue;
        size_t page = mem::PageOfByte(size_t{base} * mem::kUnit, mem::PageOrder(cls));
        if (!mem::PageInUse(a, page, cls)) {
          Error("slot " + std::to_string(s) + " class " + std::to_string(cls) + ": claim outside its pages");
          continue;
        }
        for (; m; m &= m - 1) {
          Off cell = base + static_cast<Off>(__builtin_ctzll(m) * (mem::kClassSize[cls] / mem::kUnit));
          if (!claimed.insert(cell).second) Error("cell " + std::to_string(cell) + " claimed twice");
        }
      }
    }
    for (int cls = 0; cls < mem::kNumClasses; ++cls) DeadCheck(mem::PoolAt(a, cls)->lock, "pool " + std::to_string(cls));
    if (o.live) return;
    r.memory_checked = true;
    // Pages: every live cell's bit is set; a set bit is live, claimed or leaked.
    uint64_t in_pages = 0;
    for (int cls = 0; cls < mem::kNumClasses; ++cls) {
      const mem::PageGeometry& geo = mem::ClassGeometry(cls);
      mem::ForEachPage(a, mem::PageOrder(cls), ah->meta_groups, [&](size_t page) {
        auto* h = reinterpret_cast<const mem::PageHeader*>(a.base() + page);
        if (h->magic != mem::kPageMagic || h->cls != cls) return false;
        const uint64_t* bm = mem::PageBitmap(a.base() + page);
        for (uint32_t i = 0; i < geo.ncells; ++i) {
          Off cell = static_cast<Off>((page + geo.first + size_t{i} * mem::kClassSize[cls]) / mem::kUnit);
          bool set = (bm[i / 64] >> (i % 64)) & 1;
          auto it = cells.find(cell);
          bool live = it != cells.end() && it->second == 1;
          if (live) {
            ++in_pages;
            ++r.cells_live;
            if (!set) Error("class " + std::to_string(cls) + ": live cell " + std::to_string(cell) + " marked free");
            if (claimed.count(cell)) Error("live cell " + std::to_string(cell) + " also in a claim");
          } else if (!set || claimed.count(cell)) {
            ++r.cells_free;
          } else {
            ++r.cells_leaked;
          }
        }
        return false;
      });
    }
    uint64_t slab_live = 0;
    for (auto& [cell, st] : cells) {
      if (st == 1 && mem::CellClass(a, cell) != mem::kLargeClass) ++slab_live;  // kNoClass counts: outside every page
    }
    if (slab_live != in_pages) {
      Error(std::to_string(slab_live - in_pages) + " live cells outside every slab page");
    }
    // Large objects (mem/large.h): every head's run well formed and its
    // units used; no used unit outside a run; a head no record holds leaked.
    uint64_t covered_to = 0;  // units below this belong to the last head's run
    for (uint32_t g = ah->meta_groups; g < ah->hwm_groups; ++g) {
      if (mem::Arena::EntryKind(a.GroupEntry(g)) != mem::GroupKind::kLarge) continue;
      const mem::UnitMasks& m = a.UnitsOf(g);
      uint64_t used = m.used.load(std::memory_order_relaxed), heads = m.heads.load(std::memory_order_relaxed);
      if (used == 0) Error("large group " + std::to_string(g) + " with no unit used");
      if (heads & ~used) Error("large group " + std::to_string(g) + ": a head on an unused unit");
      for (uint32_t u = 0; u < mem::kUnitsPerGroup; ++u) {
        uint64_t bit = uint64_t{1} << u, unit = uint64_t{g} * mem::kUnitsPerGroup + u;
        if (heads & bit) {
          const auto* lh = reinterpret_cast<const mem::LargeHeader*>(a.base() + unit * mem::kLargeUnit);
          uint64_t n = lh->units;
          if (lh->magic.load(std::memory_order_relaxed) != mem::kLargeMagic || n == 0 || unit < covered_to) {
            Error("large object at unit " + std::to_string(unit) + ": bad header or overlapping run");
            continue;
          }
          covered_to = unit + n;
          for (uint64_t v = unit; v < unit + n; ++v) {
            uint32_t vg = static_cast<uint32_t>(v / mem::kUnitsPerGroup);
            if (vg >= ah->hwm_groups || mem::Arena::EntryKind(a.GroupEntry(vg)) != mem::GroupKind::kLarge ||
                !((a.UnitsOf(vg).used.load(std::memory_order_relaxed) >> (v % mem::kUnitsPerGroup)) & 1)) {
              Error("large object at unit " + std::to_string(unit) + ": run broken at +" +
                    std::to_string(v - unit));
              break;
            }
          }
          Off head = a.OffOf(a.base() + unit * mem::kLargeUnit + mem::kLargeHdr);
          if (cells.count(head)) ++r.large_live;
          else ++r.large_leaked;
        } else if ((used & bit) && unit >= covered_to) {
          Error("large unit " + std::to_string(unit) + " used by no object");
        }
      }
    }
  }
};

}  // namespace

std::string AuditReport::Summary() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "tables=%llu buckets=%llu records=%llu overflow=%llu dead_holders=%llu errors=%llu",
                static_cast<unsigned long long>(tables), static_cast<unsigned long long>(buckets),
                static_cast<unsigned long long>(records), static_cast<unsigned long long>(overflow_nodes),
                static_cast<unsigned long long>(dead_holders), static_cast<unsigned long long>(error_count));
  std::string s = buf;
  if (memory_checked) {
    std::snprintf(buf, sizeof buf, " cells: live=%llu free=%llu leaked=%llu large: live=%llu leaked=%llu",
                  static_cast<unsigned long long>(cells_live), static_cast<unsigned long long>(cells_free),
                  static_cast<unsigned long long>(cells_leaked), static_cast<unsigned long long>(large_live),
                  static_cast<unsigned long long>(large_leaked));
    s += buf;
  }
  for (const auto& e : errors) s += "\n  " + e;
  return s;
}

AuditReport Audit(Ctx& c, const AuditOptions& o) {
  Auditor au{c, c.arena, o, {}, {}};
  au.Catalog1();
  au.Memory();
  return au.r;
}

}  // namespace cache
