// perfcached — automove: moving live records out of sparse slab pages (see automove.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/automove.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "cache/dict.h"
#include "cache/internal.h"
#include "cache/record.h"
#include "cache/table.h"
#include "mem/canary.h"
#include "mem/crash_point.h"
#include "mem/slab.h"

namespace cache {

using namespace detail;

AutomoveStats GetAutomoveStats(const Ctx& c) {
  const Catalog& cat = *c.catalog;
  AutomoveStats s;
  s.passes = cat.automove_passes.load(std::memory_order_relaxed);
  s.moved = cat.automove_moved.load(std::memory_order_relaxed);
  s.pages_freed = cat.automove_freed.load(std::memory_order_relaxed);
  s.given_back = mem::GivenBackCells(c.arena);
  s.enabled = cat.automove_off.load(std::memory_order_relaxed) == 0;
  s.active = cat.automove_active.load(std::memory_order_relaxed) != 0;
  return s;
}

void SetAutomoveEnabled(Ctx& c, bool on) { c.catalog->automove_off.store(on ? 0 : 1, std::memory_order_relaxed); }

void RequestAutomove(Ctx& c) { c.catalog->automove_request.store(1, std::memory_order_release); }

namespace {

// Memory is short: the arena refused a cell since the last look, its groups
// are 7/8 handed out, or used memory is within 10% of maxmemory.
bool UnderPressure(const Ctx& c, uint64_t* last_nomem) {
  const mem::Arena& a = c.arena;
  uint64_t nomem = a.hdr()->nomem_events.load(std::memory_order_relaxed);
  bool refused = nomem != *last_nomem;
  *last_nomem = nomem;
  if (refused) return true;
  if (a.used_bytes() >= a.cap_bytes() / 8 * 7) return true;
  uint64_t max = c.catalog->maxmemory.load(std::memory_order_relaxed);
  return max != 0 && mem::UsedMemory(a) >= max / 10 * 9;
}

// Pages of `cls` worth emptying: at most half full, sparsest first, as many
// as the free cells of the class's other pages can take.
std::vector<size_t> PickPages(const mem::Arena& a, int cls, size_t max_pages) {
  std::vector<mem::PageLoad> pages;
  mem::ClassPages(a, cls, &pages);
  int64_t n = mem::kClassTables.geo[cls].ncells;
  int64_t free_cells = 0;
  for (const auto& p : pages) free_cells += n - std::clamp<int64_t>(p.live, 0, n);
  std::vector<size_t> out;
  if (free_cells < 2 * n || free_cells * 4 < n * static_cast<int64_t>(pages.size())) return out;
  std::sort(pages.begin(), pages.end(), [](const mem::PageLoad& x, const mem::PageLoad& y) { return x.live < y.live; });
  int64_t moving = 0;
  for (const auto& p : pages) {
    int64_t live = std::clamp<int64_t>(p.live, 0, n);
    if (out.size() >= max_pages || live * 2 > n) break;
    // The cells left to move into: free cells outside the marked pages.
    int64_t room = free_cells - (n - live);
    if (moving + live > room) break;
    free_cells = room;
    moving += live;
    out.push_back(p.page);
  }
  return out;
}

}  // namespace

size_t Automover::marked() const {
  size_t n = 0;
  for (const auto& p : plan_) n += p.pages.size();
  return n;
}

bool Automover::Start(Ctx& c, bool force) {
  if (active()) return false;
  mem::Arena& a = c.arena;
  if (!cleared_) {
    (void)mem::ClearDrainMarks(a);  // a mover before us died mid-pass
    c.catalog->automove_active.store(0, std::memory_order_relaxed);
    cleared_ = true;
  }
  if (!force && !UnderPressure(c, &last_nomem_)) return false;
  constexpr size_t kMaxPages = 256;
  size_t budget = kMaxPages;
  for (int cls = 0; cls < mem::kNumClasses && budget > 0; ++cls) {
    if (mem::PoolAt(a, cls)->pages.load(std::memory_order_relaxed) < 3) continue;
    std::vector<size_t> pages = PickPages(a, cls, budget);
    if (pages.empty()) continue;
    if (mem::MarkDrain(a, cls, pages) == 0) continue;
    budget -= std::min(budget, pages.size());
    plan_.push_back({cls, std::move(pages)});
  }
  if (plan_.empty()) return false;
  draining_cls_.assign(mem::kNumClasses, 0);
  for (const auto& p : plan_) draining_cls_[p.cls] = 1;
  // Our own claims and stack may lie in marked pages: give them back, so
  // that the cells we move records into come from unmarked ones. Other
  // processes give theirs back when they see the request (their tick).
  c.alloc.FlushToGlobal();
  mem::AskGiveBack(a, c.alloc.slot(), draining_cls_, &asked_);
  asked_end_ = false;
  tables_.clear();
  for (const auto& ci : ListCollections(c)) tables_.push_back(ci.name);
  table_ = 0;
  bucket_ = 0;
  c.catalog->automove_passes.fetch_add(1, std::memory_order_relaxed);
  c.catalog->automove_active.store(1, std::memory_order_relaxed);
  return true;
}

namespace {
int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}
}  // namespace

bool Automover::GaveBack(Ctx& c) {
  int64_t now = MonoMs();
  if (!asked_end_) {
    // Ask again: cells freed onto private stacks during the walk (a DEL
    // of a record in a marked page) hold their pages too; ours as well.
    c.alloc.FlushToGlobal();
    mem::AskGiveBack(c.arena, c.alloc.slot(), draining_cls_, &asked_);
    asked_end_ = true;
    asked_ms_ = now;
  }
  return mem::GiveBackAnswered(c.arena, asked_) || now - asked_ms_ >= give_back_wait_ms;
}

void Automover::Finish(Ctx& c) {
  mem::Arena& a = c.arena;
  c.alloc.FlushToGlobal();  // what we freed while waiting (expiry, splits) may lie in marked pages
  uint64_t freed = 0;
  for (const auto& p : plan_) {
    std::vector<size_t> still;
    for (size_t page : p.pages) {
      if (mem::PageInUse(a, page, p.cls)) {
        still.push_back(page);
      } else {
        ++freed;
      }
    }
    mem::EndDrain(a, p.cls, still);
  }
  c.catalog->automove_freed.fetch_add(freed, std::memory_order_relaxed);
  plan_.clear();
  tables_.clear();
  c.catalog->automove_active.store(0, std::memory_order_relaxed);
}

namespace {

// Under the lock of whatever links `rec`: a copy of it in a new cell of its
// class outside every marked page, with the next version. 0 when the
// record is not in a marked page or no cell could be had.
// The class's `moved` counts a copy once it is linked (CountMoved).
void CountMoved(mem::Arena& a, Off fresh) {
  uint8_t cls = mem::CellClass(a, fresh);
  if (cls < mem::kNumClasses) mem::PoolAt(a, cls)->moved.fetch_add(1, std::memory_order_relaxed);
}
// A copy of cell `cell` (a record or an overflow node) in a new cell of its
// class outside every marked page; 0 when no cell could be had (or the
// cell is a large object's: those are not moved).
Off CopyCell(Ctx& c, Off cell, std::vector<Off>* spare) {
  mem::Arena& a = c.arena;
  uint8_t cls = mem::CellClass(a, cell);
  if (cls >= mem::kNumClasses) return 0;
  Off fresh = 0;
  for (int tries = 0; tries < 4 && fresh == 0; ++tries) {
    Off got;
    if (c.alloc.Alloc(mem::kClassSize[cls], &got) != Status::kOk) return 0;
    if (mem::CellClass(a, got) == cls && !mem::CellDraining(a, got, cls)) {
      fresh = got;
    } else {
      spare->push_back(got);  // a cell of a marked page: freed after the unlock
    }
  }
  if (fresh == 0) return 0;
  mem::AtomicCopyIn(a.At(fresh), a.At(cell), mem::kClassSize[cls]);
  return fresh;
}

// CopyCell of a cell in a marked page; 0 for any other.
Off MoveCell(Ctx& c, Off cell, const std::vector<uint8_t>& draining_cls, std::vector<Off>* spare) {
  mem::Arena& a = c.arena;
  uint8_t cls = mem::CellClass(a, cell);
  if (cls >= mem::kNumClasses || !draining_cls[cls] || !mem::CellDraining(a, cell, cls)) return 0;
  return CopyCell(c, cell, spare);
}

// A record's copy (CopyCell) with the next version.
Off RecordCopy(Ctx& c, Off rec, std::vector<Off>* spare) {
  Off fresh = CopyCell(c, rec, spare);
  if (fresh == 0) return 0;
  RecView v{c.arena.At(fresh)};
  v.set_meta(v.expire(), NextVersion(v.version()));
  return fresh;
}

// A record's copy (MoveCell) with the next version.
Off MoveCopy(Ctx& c, Off rec, const std::vector<uint8_t>& draining_cls, std::vector<Off>* spare) {
  Off fresh = MoveCell(c, rec, draining_cls, spare);
  if (fresh == 0) return 0;
  RecView v{c.arena.At(fresh)};
  if (!PC_CANARY(11)) v.set_meta(v.expire(), NextVersion(v.version()));
  PC_CRASH_POINT();
  return fresh;
}

// ---- the tries of hashes and sets ----
// A tree-encoded hash or set (cache/dict.h) is a record naming a trie of
// immutable cells that readers walk with no lock, checking the record's
// version after. A trie with cells in marked pages is path-copied, as a
// write to the key copies the path it changes: each such cell and every
// node above one get fresh cells outside the marked pages, the rest is
// shared, and a new record naming the new root, with the next version,
// replaces the old one like any moved record. The cells the copy replaced
// are freed after the unlock: a reader that walked them fails its version
// check, as after a write.

// The 16-byte tree value of record `rec`, or empty (not a hash or set, or
// a small one: its entries live in the record). With no lock the read may
// be torn; the look that uses it only guides the copy made under the lock.
std::string TreeValueOf(const mem::Arena& a, Off rec) {
  size_t bound = mem::CellBound(a, rec);
  if (rec == 0 || bound < kRecHdr) return {};
  RecView v{const_cast<char*>(a.At(rec))};
  uint8_t t = v.type();
  if (t != kTypeHash && t != kTypeSet) return {};
  size_t kl = v.klen(), vl = v.vlen(), off = ValueOffset(t, kl);
  if (vl != kTreeValue || off > bound || vl > bound - off) return {};
  std::string out(vl, '\0');
  mem::AtomicCopyOut(out.data(), v.value(t, kl), vl);
  return IsTreeValue(t, out) ? out : std::string{};
}

bool InMarkedPage(const mem::Arena& a, Off cell, const std::vector<uint8_t>& draining_cls) {
  uint8_t cls = mem::CellClass(a, cell);
  return cls < mem::kNumClasses && draining_cls[cls] && mem::CellDraining(a, cell, cls);
}

// The look, with no lock: the cells of rec's trie in marked pages and the
// nodes above them. False when there are none (or the look was torn).
bool LookAtTrie(const Ctx& c, Off rec, const std::vector<uint8_t>& draining_cls, std::unordered_set<Off>* path) {
  std::string val = TreeValueOf(c.arena, rec);
  if (val.empty()) return false;
  uint64_t count = 0;
  std::memcpy(&count, val.data() + 8, 8);
  // A trie of n entries has fewer than n nodes; a torn count stays bounded.
  uint64_t max_cells = 2 * std::min<uint64_t>(count, uint64_t{1} << 32) + 64;
  return FindTreeCells(c, val, [&](Off cell) { return InMarkedPage(c.arena, cell, draining_cls); }, max_cells,
                       path) &&
         !path->empty();
}

// A trie move (MoveTrie): the key's tree value now, and the old cells to
// free once the key has a new version.
struct TrieMove {
  bool done = false;
  std::string value;
  std::vector<Off> replaced;
};

// Under the lock of whatever links `rec`, with the look's path: the cells
// of its trie in marked pages get copies outside them, linked in place of
// the old ones (dict.h RelocateTreeCells). Nothing moves when the copies
// cannot all be had (a later pass tries again). The caller then publishes
// the key's next version in its seqlock bracket (PublishTrieMove, or a
// moved record carrying tm.value).
// The root of the trie moves only when the caller has a new record ready
// to carry it (root_may_move): a root written into the live record in
// place would take several stores, and a kill between them would leave a
// torn root (review, session 20).
TrieMove MoveTrie(Ctx& c, Off rec, const std::unordered_set<Off>& path, const std::vector<uint8_t>& draining_cls,
                  bool root_may_move, std::vector<Off>* spare) {
  mem::Arena& a = c.arena;
  TrieMove m;
  std::string val = TreeValueOf(a, rec);
  if (val.empty()) return m;
  Off root = 0;
  std::memcpy(&root, val.data() + 1, 7);
  // Cells this process freed sit on its private stack, maybe in marked
  // pages: give them back, so the copies take cells of unmarked pages.
  c.alloc.FlushToGlobal();
  auto alloc = [&](size_t bytes, Off* out) {
    for (int tries = 0; tries < 4; ++tries) {
      Off got;
      Status s = c.alloc.Alloc(bytes, &got);
      if (s != Status::kOk) return s;
      if (!InMarkedPage(a, got, draining_cls)) {
        *out = got;
        return Status::kOk;
      }
      spare->push_back(got);  // a cell of a marked page: freed after the unlock
    }
    return Status::kNoMem;
  };
  std::vector<Off> made;
  auto moving = [&](Off cell) { return InMarkedPage(a, cell, draining_cls) && (root_may_move || cell != root); };
  if (RelocateTreeCells(c, val, path, moving, alloc, &m.value, &made, &m.replaced) != Status::kOk) return m;
  m.done = true;
  PC_CRASH_POINT();
  return m;
}

// Inside the bracket: the key's record, kept (its root did not move),
// gets its next version, so that readers and optimistic writers that
// walked the old cells see a change before those are freed.
void PublishTrieMove(mem::Arena& a, Off rec) {
  RecView v{a.At(rec)};
  if (!PC_CANARY(20)) v.set_meta(v.expire(), NextVersion(v.version()));
  PC_CRASH_POINT();
}

// Is the root of rec's trie in a marked page?
bool RootMarked(const mem::Arena& a, Off rec, const std::vector<uint8_t>& draining_cls) {
  std::string val = TreeValueOf(a, rec);
  if (val.empty()) return false;
  Off root = 0;
  std::memcpy(&root, val.data() + 1, 7);
  return InMarkedPage(a, root, draining_cls);
}

// A moved record (MoveCopy, private) takes the trie's value.
void CarryTrieMove(mem::Arena& a, Off fresh, const TrieMove& m) {
  RecView v{a.At(fresh)};
  std::memcpy(v.value(v.type(), v.klen()), m.value.data(), kTreeValue);
}

// Free what the moves left behind, after the unlock (as a SET frees the
// record it replaced): old records (their copies share the rest), the
// trie cells path copies replaced, and the spare cells.
void FreeMoved(Ctx& c, std::vector<Off>* records, std::vector<Off>* cells, std::vector<Off>* spare) {
  for (std::vector<Off>* v : {records, cells, spare}) {
    for (Off o : *v) mem::FreeGlobal(c.arena, o);
    v->clear();
  }
}

}  // namespace

uint64_t Automover::WalkTable(Ctx& c, TableHeader& h, uint32_t budget, uint32_t* walked) {
  mem::Arena& a = c.arena;
  uint64_t moved = 0;
  std::vector<Off> spare, replaced;
  std::unordered_map<Off, std::unordered_set<Off>> looks;  // a record's trie: the path to its marked cells
  uint64_t nb = RouteBuckets(h.route.load(std::memory_order_acquire));
  for (; bucket_ < nb && *walked < budget; ++bucket_, ++*walked) {
    Bucket* b = BucketAt(a, h, bucket_);
    if (!b) continue;
    // A look with no lock first: most buckets have nothing to move.
    bool any = false;
    uint32_t used = UsedOf(*b);
    looks.clear();
    for (uint32_t i = 0; i < used && i < kLive; ++i) {
      Off rec = SlotAt(*b, static_cast<int>(i));
      any |= InMarkedPage(a, rec, draining_cls_);
      std::unordered_set<Off> path;
      if (LookAtTrie(c, rec, draining_cls_, &path)) {
        looks[rec] = std::move(path);
        any = true;
      }
    }
    if (!any) continue;
    LockBucket(c, h, bucket_, *b);
    used = UsedOf(*b);
    Off fresh[kLive] = {};
    TrieMove tm[kLive];
    bool changed = false;
    for (uint32_t i = 0; i < used; ++i) {
      Off rec = SlotAt(*b, static_cast<int>(i));
      // The look's path is a guide: the copy reads the trie as it is now.
      auto it = looks.find(rec);
      fresh[i] = MoveCopy(c, rec, draining_cls_, &spare);
      // A root that moves needs a new record to carry it.
      if (fresh[i] == 0 && it != looks.end() && RootMarked(a, rec, draining_cls_)) fresh[i] = RecordCopy(c, rec, &spare);
      if (fresh[i] != 0 && !CanReplaceSlot(*b, static_cast<int>(i), fresh[i])) {
        // A full bucket, and the copy landed in another 32 GiB: left for
        // a later pass (bucket.h ReplaceSlot).
        spare.push_back(fresh[i]);
        fresh[i] = 0;
      }
      if (it != looks.end()) tm[i] = MoveTrie(c, rec, it->second, draining_cls_, fresh[i] != 0, &spare);
      if (fresh[i] && tm[i].done) CarryTrieMove(a, fresh[i], tm[i]);
      changed |= fresh[i] != 0 || tm[i].done;
    }
    if (changed) {
      if (!PC_CANARY(12)) WriteBegin(*b);
      for (uint32_t i = 0; i < used; ++i) {
        if (tm[i].done) replaced.insert(replaced.end(), tm[i].replaced.begin(), tm[i].replaced.end());
        if (fresh[i] == 0) {
          if (tm[i].done) {
            PublishTrieMove(a, SlotAt(*b, static_cast<int>(i)));
            ++moved;  // the key's trie moved, its record stays
          }
          continue;
        }
        Off old = SlotAt(*b, static_cast<int>(i));
        ReplaceSlot(*b, static_cast<int>(i), fresh[i]);
        CountMoved(a, fresh[i]);
        PC_CRASH_POINT();
        c.dead.push_back(old);
      }
      if (!PC_CANARY(12)) WriteEnd(*b);
    }
    mem::Unlock(b->lock);
    // After the unlock, as a SET frees the record it replaced.
    moved += c.dead.size();
    FreeMoved(c, &c.dead, &replaced, &spare);
  }
  if (bucket_ < nb || h.ovf.count.load(std::memory_order_acquire) == 0) return moved;
  // The overflow table: small, walked whole under its lock. Its records
  // move as the buckets' do, and so do its nodes (24-byte cells, which
  // would otherwise keep a page of their class from ever coming free).
  // Its tries are looked at first, with no lock (a torn chain is bounded).
  looks.clear();
  {
    const Off* heads = reinterpret_cast<const Off*>(a.At(h.ovf.heads));
    for (uint32_t i = 0; i < kOvfHeads; ++i) {
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(&heads[i]); node != 0 && guard-- > 0;
           node = mem::LoadOff(a.At(node) + kNodeNext)) {
        if (mem::CellBound(a, node) < kNodeBytes) break;
        std::unordered_set<Off> path;
        Off rec = mem::LoadOff(a.At(node) + kNodeRec);
        if (LookAtTrie(c, rec, draining_cls_, &path)) looks[rec] = std::move(path);
      }
    }
  }
  LockOverflow(c, h);
  Off* heads = reinterpret_cast<Off*>(a.At(h.ovf.heads));
  std::vector<std::pair<Off, Off>> swaps;  // node, new record
  std::vector<Off> bumps;  // kept records whose tries moved
  std::vector<std::pair<Off, Off>> nodes;  // node, its copy (sorted by node below)
  std::vector<uint32_t> chains;            // the chains with a node to move
  for (uint32_t i = 0; i < kOvfHeads; ++i) {
    uint32_t guard = 1u << 16;
    size_t moving = nodes.size();
    for (Off node = mem::LoadOff(&heads[i]); node != 0 && guard-- > 0;
         node = mem::LoadOff(a.At(node) + kNodeNext)) {
      Off rec = mem::LoadOff(a.At(node) + kNodeRec);
      TrieMove m;
      auto it = looks.find(rec);
      Off fresh = MoveCopy(c, rec, draining_cls_, &spare);
      if (fresh == 0 && it != looks.end() && RootMarked(a, rec, draining_cls_)) fresh = RecordCopy(c, rec, &spare);
      if (it != looks.end()) m = MoveTrie(c, rec, it->second, draining_cls_, fresh != 0, &spare);
      if (fresh && m.done) CarryTrieMove(a, fresh, m);
      if (fresh) swaps.emplace_back(node, fresh);
      if (m.done) {
        replaced.insert(replaced.end(), m.replaced.begin(), m.replaced.end());  // published below in any case
        if (!fresh) bumps.push_back(rec);
      }
      if (Off copy = MoveCell(c, node, draining_cls_, &spare)) nodes.emplace_back(node, copy);
    }
    if (nodes.size() > moving) chains.push_back(i);
  }
  if (!swaps.empty() || !nodes.empty() || !bumps.empty()) {
    PC_CRASH_POINT();
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    for (Off rec : bumps) PublishTrieMove(a, rec);
    moved += bumps.size();
    for (const auto& [node, fresh] : swaps) {
      c.dead.push_back(mem::LoadOff(a.At(node) + kNodeRec));
      mem::StoreOff(a.At(node) + kNodeRec, fresh);
      CountMoved(a, fresh);
      PC_CRASH_POINT();
    }
    // Relink each chain in order: a moved node's copy takes its record
    // (after the swaps above) and its next, then the link that pointed at
    // the node (the head, or the next of the node before it, or of that
    // node's copy) points at the copy. Every store leaves a whole chain; a
    // crash leaks at most the node just replaced.
    std::sort(nodes.begin(), nodes.end());
    for (uint32_t i : chains) {
      Off* link = &heads[i];
      uint32_t guard = 1u << 16;
      for (Off node = mem::LoadOff(link); node != 0 && guard-- > 0;) {
        Off next = mem::LoadOff(a.At(node) + kNodeNext);
        auto it = std::lower_bound(nodes.begin(), nodes.end(), std::make_pair(node, Off{0}));
        if (it != nodes.end() && it->first == node) {
          Off copy = it->second;
          mem::StoreOff(a.At(copy) + kNodeRec, mem::LoadOff(a.At(node) + kNodeRec));
          mem::StoreOff(a.At(copy) + kNodeNext, next);
          if (!PC_CANARY(19)) mem::StoreOff(link, copy);
          CountMoved(a, copy);
          PC_CRASH_POINT();
          c.dead.push_back(node);
          it->second = 0;  // linked
          link = reinterpret_cast<Off*>(a.At(PC_CANARY(19) ? node : copy) + kNodeNext);
        } else {
          link = reinterpret_cast<Off*>(a.At(node) + kNodeNext);
        }
        node = next;
      }
    }
    h.ovf.seq.fetch_add(1, std::memory_order_acq_rel);
    for (const auto& [node, copy] : nodes) {
      if (copy != 0) spare.push_back(copy);  // not found in its chain again (cannot happen: lock held)
    }
  }
  mem::Unlock(h.ovf.lock);
  moved += c.dead.size();
  FreeMoved(c, &c.dead, &replaced, &spare);
  return moved;
}

uint64_t Automover::Step(Ctx& c, uint32_t budget) {
  if (!active()) {
    bool asked = c.catalog->automove_request.exchange(0, std::memory_order_acq_rel) != 0;
    if (!asked) {
      if (c.catalog->automove_off.load(std::memory_order_relaxed) != 0) return 0;
      int64_t now = NowMs(c);
      if (now - last_check_ms_ < 1000) return 0;  // a look a second at most
      last_check_ms_ = now;
    }
    if (!Start(c, asked)) return 0;
  }
  uint64_t moved = 0;
  uint32_t walked = 0;
  while (walked < budget && table_ < tables_.size()) {
    TableRef t;
    if (OpenCollection(c, tables_[table_], &t) == Status::kOk) {
      moved += WalkTable(c, *t.h, budget, &walked);
      if (bucket_ < RouteBuckets(t.h->route.load(std::memory_order_acquire)) && walked >= budget) break;
    }
    ++table_;
    bucket_ = 0;
  }
  if (moved) c.catalog->automove_moved.fetch_add(moved, std::memory_order_relaxed);
  if (table_ >= tables_.size() && GaveBack(c)) Finish(c);
  return moved;
}

}  // namespace cache
