// perfcached — slab classes, per-process allocator, global pools.
// Copyright (c) 2026 the perfcached authors.
#include "mem/slab.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mem/atomic_copy.h"
#include "mem/canary.h"
#include "mem/crash_point.h"
#include "mem/page.h"

namespace mem {
namespace {

// Private-stack link: cell bytes 8..15 (bytes 0..1 belong to a record: its
// access byte and type; a free cell's are left alone). Cells are at least
// 16 bytes and 8-aligned.
constexpr size_t kLinkOffset = 8;
inline Off GetLink(const Arena& a, Off cell) { return LoadRelaxed64(a.At(cell) + kLinkOffset); }
inline void SetLink(const Arena& a, Off cell, Off next) { StoreRelaxed64(a.At(cell) + kLinkOffset, next); }

// Owner-only counter bump: a plain load + store, no locked RMW.
inline void Bump(std::atomic<uint64_t>& c, uint64_t by = 1) {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

constexpr const ClassTables& kTables = kClassTables;

PageHeader* HdrAt(const Arena& a, size_t page) { return reinterpret_cast<PageHeader*>(a.base() + page); }
size_t PageOfCell(Off cell, int cls) { return PageOfByte(size_t{cell} * kUnit, kTables.order[cls]); }

// Bits set in a page's bitmap, the never-used tail bits excluded.
uint32_t CountUsed(const Arena& a, size_t page, int cls) {
  const PageGeometry& geo = kTables.geo[cls];
  const uint64_t* bm = PageBitmap(a.base() + page);
  uint32_t n = 0;
  for (uint32_t w = 0; w < geo.nwords; ++w) n += static_cast<uint32_t>(__builtin_popcountll(__atomic_load_n(bm + w, __ATOMIC_ACQUIRE)));
  uint32_t tail = geo.nwords * 64 - geo.ncells;
  return n - tail;
}

// Clear the bits of `mask` in the word whose bit 0 is cell `base` (cells of
// class `cls`). Returns the bits that were set (the rest were already free:
// a double free, refused).
uint64_t ClearBits(Arena& a, Off base, int cls, uint64_t mask, size_t* page_out) {
  size_t page = PageOfCell(base, cls);
  const PageGeometry& geo = kTables.geo[cls];
  size_t idx = (size_t{base} * kUnit - page - geo.first) / kClassSize[cls];
  uint64_t* word = PageBitmap(a.base() + page) + idx / 64;
  uint64_t old = __atomic_fetch_and(word, ~mask, __ATOMIC_ACQ_REL);
  *page_out = page;
  return old & mask;
}

// Give `n` claimed or live cells of a page back to its live hint; a page
// that comes back from full is a candidate for claims again, one whose hint
// reaches 0 may be given back.
void Unclaim(Arena& a, int cls, size_t page, uint32_t n) {
  PageHeader* h = HdrAt(a, page);
  int32_t prev = h->live.fetch_sub(static_cast<int32_t>(n), std::memory_order_acq_rel);
  if (prev >= static_cast<int32_t>(kTables.geo[cls].ncells) &&
      prev - static_cast<int32_t>(n) < static_cast<int32_t>(kTables.geo[cls].ncells)) {
    PoolAt(a, cls)->partial.fetch_add(1, std::memory_order_relaxed);
  }
  if (prev - static_cast<int32_t>(n) <= 0) MaybeReleasePage(a, cls, page);
}

// Where a slab cell's bit is; false (and logged) if `cell` is not a cell of
// a page of class `cls` in use.
bool LocateCell(const Arena& a, Off cell, int cls, size_t* page_out, uint64_t** word, uint64_t* bit) {
  size_t page = PageOfCell(cell, cls);
  const PageGeometry& geo = kTables.geo[cls];
  size_t off = size_t{cell} * kUnit - page;
  if (!PageInUse(a, page, cls) || off < geo.first || (off - geo.first) % kClassSize[cls] != 0 ||
      (off - geo.first) / kClassSize[cls] >= geo.ncells) {
    std::fprintf(stderr, "perfcached: free of cell %llu outside a page of class %d (leaked)\n", static_cast<unsigned long long>(cell), cls);
    return false;
  }
  size_t idx = (off - geo.first) / kClassSize[cls];
  *page_out = page;
  *word = PageBitmap(a.base() + page) + idx / 64;
  *bit = uint64_t{1} << (idx % 64);
  return true;
}

// Free one slab cell of class `cls`. False if it was not in use (refused).
bool FreeCell(Arena& a, Off cell, int cls) {
  size_t page;
  uint64_t *word, bit;
  if (!LocateCell(a, cell, cls, &page, &word, &bit)) return false;
  uint64_t old = __atomic_fetch_and(word, ~bit, __ATOMIC_ACQ_REL);
  if (!(old & bit)) {
    std::fprintf(stderr, "perfcached: double free of cell %llu (refused)\n", static_cast<unsigned long long>(cell));
    return false;
  }
  PC_CRASH_POINT();
  Unclaim(a, cls, page, 1);
  return true;
}

}  // namespace

int PageOrder(int cls) { return kTables.order[cls]; }
const PageGeometry& ClassGeometry(int cls) { return kTables.geo[cls]; }

int ClassFor(size_t bytes) {
  if (bytes <= 256) {
    if (bytes < kMinCell) bytes = kMinCell;
    return static_cast<int>((bytes - kMinCell + 7) / 8);
  }
  if (bytes > kMaxCell) return -1;
  int b = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes - 1));  // 2^b < bytes <= 2^(b+1)
  size_t base = size_t{1} << b, step = base / 8;
  int k = static_cast<int>((bytes - base + step - 1) / step);  // 1..8
  return 31 + (b - 8) * 8 + (k - 1);
}

size_t ChunkBytes(int cls) { return PageBytes(kTables.order[cls]); }

size_t SlabMetaBytes(uint32_t max_procs) {
  return sizeof(SlabPool) * kNumClasses + sizeof(ProcSlot) * max_procs;
}

SlabPool* PoolAt(const Arena& a, int cls) {
  return reinterpret_cast<SlabPool*>(a.base() + a.hdr()->pools_off) + cls;
}
ProcSlot* SlotAt(const Arena& a, uint32_t slot) {
  return reinterpret_cast<ProcSlot*>(a.base() + a.hdr()->slots_off) + slot;
}

namespace {

std::atomic<const Arena*> g_token_arena{nullptr};  // the arena whose slots issue tokens

bool TokenDead(uint32_t token) {
  const Arena* a = g_token_arena.load(std::memory_order_acquire);
  if (!a) return false;
  uint32_t slot = (token >> 22) & 0xFF;
  if (slot >= a->hdr()->max_procs) return true;
  const ProcSlot* ps = SlotAt(*a, slot);
  if ((ps->gen.load(std::memory_order_acquire) & kTokenGenMask) != (token & kTokenGenMask)) {
    return true;  // the slot was claimed again since: its old owner is gone
  }
  return ps->owner_tid.load(std::memory_order_acquire) == 0 || SlotOwnerDead(*ps);
}

}  // namespace

bool SlotOwnerDead(const ProcSlot& ps) {
  uint32_t o = ps.owner_tid.load(std::memory_order_acquire);
  if (o == 0) return false;
  if (o & kSlotBusy) return TidIsDead(o & ~kSlotBusy, 0);
  return TidIsDead(o, ps.owner_start.load(std::memory_order_acquire));
}

Allocator::Allocator(Arena& a, uint32_t slot)
    : arena_(&a), ps_(SlotAt(a, slot)), pools_(PoolAt(a, 0)), slot_(slot) {
  if (slot >= a.hdr()->max_procs) {
    std::fprintf(stderr, "perfcached: process slot %u out of range\n", slot);
    std::abort();
  }
  uint32_t self = SelfTid();
  uint64_t start = TidStartTime(self);
  for (int waited_ms = 0;;) {
    uint32_t prev = ps_->owner_tid.load();
    uint32_t prev_tid = prev & ~kSlotBusy;
    if (prev != 0 && prev_tid != self && !SlotOwnerDead(*ps_) && !PC_CANARY(4)) {
      if ((prev & kSlotBusy) && waited_ms < 30000) {
        // Another process is adopting this slot (the timer after our
        // predecessor died): wait for it to finish, then claim.
        usleep(1000);
        ++waited_ms;
        continue;
      }
      // Another live process owns this slot: using it would hand the same
      // cells out twice (the fork bug). Refuse loudly.
      std::fprintf(stderr, "perfcached: process slot %u is owned by live tid %u\n", slot,
                   prev_tid);
      std::abort();
    }
    // Claim with a CAS so that a concurrent AdoptDeadSlot cannot drain the
    // same state twice; busy until the start time is recorded.
    PC_CRASH_POINT();
    if (ps_->owner_tid.compare_exchange_strong(prev, self | kSlotBusy)) {
      if (prev != 0) DrainSlot(a, ps_);
      PC_CRASH_POINT();
      ps_->owner_start.store(start, std::memory_order_release);
      uint32_t gen = ps_->gen.load(std::memory_order_relaxed) + 1;
      PC_CRASH_POINT();
      ps_->gen.store(gen, std::memory_order_release);
      PC_CRASH_POINT();
      ps_->owner_tid.store(self, std::memory_order_release);
      g_token_arena.store(&a, std::memory_order_release);
      SetTokenJudge(&TokenDead);
      BindLockToken(SlotToken(slot, gen));
      return;
    }
  }
}

Allocator::~Allocator() {
  if (SelfLockId() == SlotToken(slot_, ps_->gen.load(std::memory_order_relaxed))) BindLockToken(0);
}

void ForgetTokenArena(const Arena* a) {
  const Arena* expected = a;
  g_token_arena.compare_exchange_strong(expected, nullptr);
}

Status Allocator::Alloc(size_t bytes, Off* out) {
  int cls = ClassFor(bytes);
  if (cls < 0) return AllocLarge(bytes, out);
  ClassCache& c = ps_->cls[cls];
  if (c.stack != 0) {
    Off cell = c.stack;
    PC_CRASH_POINT();
    c.stack = GetLink(*arena_, cell);  // the cell leaves the stack before it is handed out
    PC_CRASH_POINT();
    if (c.stack_n > 0) --c.stack_n;
    Bump(ps_->allocs);
    Bump(ps_->alloc_bytes, kClassSize[cls]);
    *out = cell;
    return Status::kOk;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    uint64_t m = c.mask;
    if (m != 0) {
      Off cell = c.base + static_cast<Off>(__builtin_ctzll(m) * (kClassSize[cls] / kUnit));
      PC_CRASH_POINT();
      c.mask = m & (m - 1);  // the cell leaves the claim before it is handed out
      Bump(ps_->allocs);
      Bump(ps_->alloc_bytes, kClassSize[cls]);
      *out = cell;
      return Status::kOk;
    }
    if (Status s = Refill(cls, c); s != Status::kOk) return s;
  }
  return Status::kNoMem;
}

namespace {

// Pool lock held, claim empty: claim up to ClaimCells free cells of one
// bitmap word of `page` into `c`. False when the page has no free cell.
bool ClaimFrom(Arena& a, size_t page, int cls, ClassCache& c) {
  PageHeader* h = HdrAt(a, page);
  const PageGeometry& geo = kTables.geo[cls];
  uint64_t* bm = PageBitmap(a.base() + page);
  uint32_t want = ClaimCells(kClassSize[cls]);
  uint32_t start = h->cursor < geo.nwords ? h->cursor : 0;
  for (uint32_t k = 0; k < geo.nwords; ++k) {
    uint32_t w = start + k < geo.nwords ? start + k : start + k - geo.nwords;
    uint64_t old = __atomic_load_n(bm + w, __ATOMIC_ACQUIRE);
    while (~old != 0) {
      uint64_t take = 0, free_bits = ~old;
      for (uint32_t i = 0; i < want && free_bits; ++i) {
        take |= free_bits & (~free_bits + 1);
        free_bits &= free_bits - 1;
      }
      int32_t n = __builtin_popcountll(take);
      // live first: the hint is never below the bits set (but for a free in flight)
      h->live.fetch_add(n, std::memory_order_acq_rel);
      PC_CRASH_POINT();
      c.base = static_cast<Off>((page + geo.first + size_t{w} * 64 * kClassSize[cls]) / kUnit);
      if (__atomic_compare_exchange_n(bm + w, &old, old | take, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        PC_CRASH_POINT();  // killed here: the claim leaks (bits set, in no slot)
        c.mask = take;
        h->cursor = w;
        return true;
      }
      h->live.fetch_sub(n, std::memory_order_acq_rel);  // a free changed the word: again
    }
  }
  return false;
}

// Pool lock held: a page of `cls` with room other than `skip`, or 0.
size_t FindPartial(Arena& a, int cls, SlabPool& p, size_t skip) {
  if (p.partial.load(std::memory_order_relaxed) == 0) return 0;
  size_t found = 0;
  uint32_t ncells = kTables.geo[cls].ncells;
  uint32_t at = ForEachPage(a, kTables.order[cls], p.scan, [&](size_t page) {
    PageHeader* h = HdrAt(a, page);
    if (page == skip || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kPageMagic || h->cls != cls) return false;
    if (h->live.load(std::memory_order_relaxed) >= static_cast<int32_t>(ncells)) return false;
    if (!PC_CANARY(10) && h->draining.load(std::memory_order_relaxed) != 0) return false;
    found = page;
    return true;
  });
  if (found == 0) {
    p.partial.store(0, std::memory_order_relaxed);
  } else {
    p.scan = at;
    uint32_t n = p.partial.load(std::memory_order_relaxed);
    if (n > 0) p.partial.store(n - 1, std::memory_order_relaxed);
  }
  return found;
}

}  // namespace

Status Allocator::Refill(int cls, ClassCache& c) {
  SlabPool& p = pools_[cls];
  (void)Lock(p.lock);  // a dead holder leaves at most a leaked claim or page (page.h)
  Status st = Status::kNoMem;
  for (int tries = 0; tries < 4; ++tries) {
    size_t cur = size_t{p.current} * kUnit;
    if (p.current != 0 && PageInUse(*arena_, cur, cls) && ClaimFrom(*arena_, cur, cls, c)) {
      st = Status::kOk;
      break;
    }
    size_t next = FindPartial(*arena_, cls, p, cur);
    if (next == 0) {
      next = NewPage(*arena_, cls);
      if (next == 0) break;
      p.pages.fetch_add(1, std::memory_order_relaxed);
      p.cells_total.fetch_add(kTables.geo[cls].ncells, std::memory_order_relaxed);
    }
    PC_CRASH_POINT();
    p.current = static_cast<Off>(next / kUnit);
  }
  Unlock(p.lock);
  return st;
}

Status Allocator::AllocLarge(size_t bytes, Off* out) {
  if (bytes > arena_->hdr()->max_value + kMaxRecordOverhead) return Status::kTooBig;
  return AllocLargeRun(*arena_, bytes, out);
}

void Allocator::Free(Off cell) {
  if (cell == 0) return;
  uint8_t cls = CellClass(*arena_, cell);
  if (cls == kLargeClass) {
    FreeGlobal(*arena_, cell);
    return;
  }
  if (cls >= kNumClasses) {
    // Hardened: an impossible class means a corrupted link; leak, never
    // corrupt a page (the overflow-node bug of cachedb_perf).
    std::fprintf(stderr, "perfcached: free of cell %llu with bad class %u (leaked)\n", static_cast<unsigned long long>(cell), cls);
    return;
  }
  ClassCache& c = ps_->cls[cls];
  if (c.stack_n < StackCells(kClassSize[cls])) {
    // The fast path trusts the caller as the old private stacks did: no
    // page or bit check here (they would cost two cache misses on a
    // replace); a cell that leaves the stack for good is checked then.
    SetLink(*arena_, cell, c.stack);
    PC_CRASH_POINT();
    c.stack = cell;
    PC_CRASH_POINT();
    ++c.stack_n;
  } else if (!FreeCell(*arena_, cell, cls)) {
    return;
  }
  Bump(ps_->frees);
  Bump(ps_->free_bytes, kClassSize[cls]);
}

namespace {

// Give one claim back: the mask empties first (crash: the claim leaks).
// `half`: stop after the first step, as a process killed there would.
size_t ReturnClaim(Arena& a, ClassCache& c, int cls, bool half = false) {
  uint64_t m = c.mask;
  if (m == 0) return 0;
  Off base = c.base;
  size_t page = PageOfCell(base, cls);
  if (!PageInUse(a, page, cls)) {  // a damaged slot: drop the claim, touch nothing
    c.mask = 0;
    return 0;
  }
  uint64_t had = 0;
  if (PC_CANARY(5)) {  // the defect-1 order: the cells are free while the slot still holds them
    had = ClearBits(a, base, cls, m, &page);
    if (half) return 0;
  }
  PC_CRASH_POINT();
  c.mask = 0;
  if (half) return 0;
  PC_CRASH_POINT();
  if (!PC_CANARY(5)) had = ClearBits(a, base, cls, m, &page);
  uint32_t n = static_cast<uint32_t>(__builtin_popcountll(had));
  if (n > 0) Unclaim(a, cls, page, n);
  return n;
}

// Free the cells of a private stack, each leaving the stack before its bit
// is cleared (crash: that cell leaks). Trusts nothing: every cell must lie
// in a page of the class, and the walk is bounded. Stops after `budget`.
size_t ReturnStack(Arena& a, ClassCache& c, int cls, size_t budget) {
  size_t moved = 0;
  uint32_t limit = c.stack_n + 2;
  while (c.stack != 0 && limit-- > 0 && moved < budget) {
    Off cell = c.stack;
    if (CellClass(a, cell) != cls) break;
    Off next = GetLink(a, cell);
    PC_CRASH_POINT();
    c.stack = next;
    PC_CRASH_POINT();
    if (c.stack_n > 0) --c.stack_n;
    if (FreeCell(a, cell, cls)) ++moved;
  }
  if (moved == budget && c.stack != 0) return moved;
  PC_CRASH_POINT();
  c.stack = 0;
  c.stack_n = 0;
  return moved;
}

// Free the cells of a private stack that lie in draining pages; the others
// stay, in their order. Each leaves the stack (its predecessor's link, or
// the top) before its bit is cleared (crash: that cell leaks). Bounded and
// trusting nothing, as ReturnStack.
size_t ReturnDrainingStack(Arena& a, ClassCache& c, int cls) {
  size_t freed = 0;
  Off prev = 0;
  uint32_t limit = c.stack_n + 2;
  for (Off cell = c.stack; cell != 0 && limit-- > 0;) {
    if (CellClass(a, cell) != cls) break;
    Off next = GetLink(a, cell);
    if (!CellDraining(a, cell, cls)) {
      prev = cell;
      cell = next;
      continue;
    }
    if (PC_CANARY(21)) {  // the cell is freed while the stack still holds it
      if (FreeCell(a, cell, cls)) ++freed;
      prev = cell;
      cell = next;
      continue;
    }
    PC_CRASH_POINT();
    if (prev == 0) {
      c.stack = next;
    } else {
      SetLink(a, prev, next);
    }
    PC_CRASH_POINT();
    if (c.stack_n > 0) --c.stack_n;
    if (FreeCell(a, cell, cls)) ++freed;
    cell = next;
  }
  return freed;
}

}  // namespace

size_t Allocator::AnswerGiveBack() {
  uint32_t asked = ps_->give_back_asked.load(std::memory_order_acquire);
  if (asked == ps_->give_back_done.load(std::memory_order_relaxed)) return 0;
  size_t n = 0;
  for (int cls = 0; cls < kNumClasses; ++cls) {
    ClassCache& c = ps_->cls[cls];
    if (c.stack != 0) n += ReturnDrainingStack(*arena_, c, cls);
    if (c.mask != 0 && PageInUse(*arena_, PageOfCell(c.base, cls), cls) && CellDraining(*arena_, c.base, cls)) {
      n += ReturnClaim(*arena_, c, cls);
    }
  }
  Bump(ps_->given_back, n);
  PC_CRASH_POINT();
  ps_->give_back_done.store(asked, std::memory_order_release);
  return n;
}

uint64_t GivenBackCells(const Arena& a) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < a.hdr()->max_procs; ++i) n += SlotAt(a, i)->given_back.load(std::memory_order_relaxed);
  return n;
}

void AskGiveBack(Arena& a, uint32_t self_slot, const std::vector<uint8_t>& draining_cls,
                 std::vector<GiveBackAsk>* out) {
  out->clear();
  for (uint32_t i = 0; i < a.hdr()->max_procs; ++i) {
    ProcSlot* ps = SlotAt(a, i);
    uint32_t tid = ps->owner_tid.load(std::memory_order_acquire);
    if (i == self_slot || tid == 0 || (tid & kSlotBusy) != 0 || SlotOwnerDead(*ps)) continue;
    bool holds = false;
    for (int cls = 0; cls < kNumClasses && !holds; ++cls) {
      if (cls >= static_cast<int>(draining_cls.size()) || draining_cls[cls] == 0) continue;
      // Owner-only fields, read as a hint: a claim or a stack that appears
      // after this look comes from no draining page (no claims there), or
      // is a cell freed since (asked again at the pass's end).
      const ClassCache& c = ps->cls[cls];
      if (__atomic_load_n(&c.stack_n, __ATOMIC_RELAXED) != 0) holds = true;
      Off base = __atomic_load_n(&c.base, __ATOMIC_RELAXED);
      if (__atomic_load_n(&c.mask, __ATOMIC_RELAXED) != 0 && a.ReadableFrom(base) != 0 && CellDraining(a, base, cls)) holds = true;
    }
    if (!holds) continue;
    uint32_t seq = ps->give_back_asked.fetch_add(1, std::memory_order_acq_rel) + 1;
    out->push_back({i, tid, seq});
  }
}

bool GiveBackAnswered(const Arena& a, const std::vector<GiveBackAsk>& asked) {
  for (const GiveBackAsk& q : asked) {
    const ProcSlot* ps = SlotAt(a, q.slot);
    if (static_cast<int32_t>(ps->give_back_done.load(std::memory_order_acquire) - q.seq) >= 0) continue;
    if (ps->owner_tid.load(std::memory_order_acquire) != q.owner_tid || SlotOwnerDead(*ps)) continue;
    return false;
  }
  return true;
}

void Allocator::FlushToGlobal() {
  for (int cls = 0; cls < kNumClasses; ++cls) {
    (void)ReturnStack(*arena_, ps_->cls[cls], cls, ~size_t{0});
    (void)ReturnClaim(*arena_, ps_->cls[cls], cls);
  }
}

void Allocator::Release() {
  FlushToGlobal();
  BindLockToken(0);
  PC_CRASH_POINT();
  ps_->owner_start.store(0, std::memory_order_relaxed);
  PC_CRASH_POINT();
  ps_->owner_tid.store(0, std::memory_order_release);
}

namespace {

// The header of the large object at `cell`, or nullptr.
LargeHeader* LargeOf(const Arena& a, Off cell) {
  return const_cast<LargeHeader*>(LargeAt(a, size_t{cell} * kUnit));
}

void FreeLargeNow(Arena& a, Off cell) {
  if (!FreeLargeRun(a, cell)) std::fprintf(stderr, "perfcached: free of bad large object %llu (leaked)\n", static_cast<unsigned long long>(cell));
}

}  // namespace

bool PinLarge(Arena& a, Off cell) {
  LargeHeader* lh = LargeOf(a, cell);
  if (lh == nullptr) return false;
  PC_CRASH_POINT();
  lh->pins.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void UnpinLarge(Arena& a, Off cell) {
  LargeHeader* lh = LargeOf(a, cell);
  if (lh == nullptr) return;
  PC_CRASH_POINT();
  uint32_t left = lh->pins.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (left == kPinZombie) {  // freed meanwhile and we were the last reader
    uint32_t z = kPinZombie;
    if (lh->pins.compare_exchange_strong(z, 0, std::memory_order_acq_rel)) FreeLargeNow(a, cell);
  }
}

void FreeGlobal(Arena& a, Off cell) {
  if (cell == 0) return;
  uint8_t cls = CellClass(a, cell);
  if (cls == kLargeClass) {
    LargeHeader* lh = LargeOf(a, cell);
    if (lh == nullptr) {
      std::fprintf(stderr, "perfcached: free of bad large object %llu (leaked)\n", static_cast<unsigned long long>(cell));
      return;
    }
    PC_CRASH_POINT();
    if (lh->pins.fetch_or(kPinZombie, std::memory_order_acq_rel) != 0) return;  // the last reader frees
    PC_CRASH_POINT();
    lh->pins.store(0, std::memory_order_release);
    FreeLargeNow(a, cell);
    return;
  }
  if (cls >= kNumClasses) {
    std::fprintf(stderr, "perfcached: free of cell %llu with bad class %u (leaked)\n", static_cast<unsigned long long>(cell), cls);
    return;
  }
  if (FreeCell(a, cell, cls)) a.hdr()->freed_bytes.fetch_add(kClassSize[cls], std::memory_order_relaxed);
}

bool AdoptDeadSlot(Arena& a, uint32_t slot) {
  ProcSlot* ps = SlotAt(a, slot);
  uint32_t prev = ps->owner_tid.load();
  if (prev == 0 || !SlotOwnerDead(*ps)) return false;
  // Busy under our tid while we drain: a restarted owner waits for us, and
  // if we die mid-drain the next adopter goes on where we stopped.
  PC_CRASH_POINT();
  if (!ps->owner_tid.compare_exchange_strong(prev, SelfTid() | kSlotBusy)) return false;
  DrainSlot(a, ps);
  PC_CRASH_POINT();
  ps->owner_start.store(0, std::memory_order_relaxed);
  PC_CRASH_POINT();
  ps->owner_tid.store(0, std::memory_order_release);
  return true;
}

size_t DrainSlot(Arena& a, ProcSlot* ps, size_t budget) {
  size_t moved = 0;
  for (int cls = 0; cls < kNumClasses; ++cls) {
    ClassCache& c = ps->cls[cls];
    // The dead owner may have stopped anywhere; trust nothing: the claim
    // must lie in a page of this class (ReturnClaim checks).
    moved += ReturnStack(a, c, cls, budget - moved);
    if (moved == budget && c.stack != 0) return moved;
    size_t n = static_cast<size_t>(__builtin_popcountll(c.mask));
    if (n == 0) continue;
    if (moved + n > budget) {  // "killed" inside this claim
      (void)ReturnClaim(a, c, cls, /*half=*/true);
      return moved;
    }
    moved += ReturnClaim(a, c, cls);
  }
  return moved;
}

void MaybeReleasePage(Arena& a, int cls, size_t page) {
  SlabPool& p = *PoolAt(a, cls);
  (void)Lock(p.lock);
  // Claims happen under this lock and frees only clear bits: a clear bitmap
  // stays clear while we hold it.
  if (size_t{p.current} * kUnit != page && PageInUse(a, page, cls) && CountUsed(a, page, cls) == 0) {
    PC_CRASH_POINT();
    ReleasePage(a, page);
    p.pages.fetch_sub(1, std::memory_order_relaxed);
    p.cells_total.fetch_sub(kTables.geo[cls].ncells, std::memory_order_relaxed);
    p.pages_returned.fetch_add(1, std::memory_order_relaxed);
  }
  Unlock(p.lock);
}

size_t TidyPages(Arena& a, size_t max_pages) {
  size_t released = 0, seen = 0;
  for (int cls = 0; cls < kNumClasses && seen < max_pages; ++cls) {
    SlabPool& p = *PoolAt(a, cls);
    if (p.pages.load(std::memory_order_relaxed) == 0) continue;
    (void)Lock(p.lock);
    std::vector<size_t> empty;
    int32_t ncells = static_cast<int32_t>(kTables.geo[cls].ncells);
    ForEachPage(a, kTables.order[cls], a.hdr()->meta_groups, [&](size_t page) {
      PageHeader* h = HdrAt(a, page);
      if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kPageMagic || h->cls != cls) return false;
      if (++seen > max_pages) return true;
      int32_t used = static_cast<int32_t>(CountUsed(a, page, cls));
      int32_t hint = h->live.load(std::memory_order_relaxed);
      if (used == 0 && size_t{p.current} * kUnit != page) {
        empty.push_back(page);
      } else if (hint != used) {
        if (hint >= ncells && used < ncells) p.partial.fetch_add(1, std::memory_order_relaxed);
        h->live.fetch_add(used - hint, std::memory_order_relaxed);
      }
      return false;
    });
    for (size_t page : empty) {
      if (CountUsed(a, page, cls) != 0) continue;
      ReleasePage(a, page);
      p.pages.fetch_sub(1, std::memory_order_relaxed);
      p.cells_total.fetch_sub(kTables.geo[cls].ncells, std::memory_order_relaxed);
      p.pages_returned.fetch_add(1, std::memory_order_relaxed);
      ++released;
    }
    Unlock(p.lock);
  }
  return released;
}

void ClassPages(const Arena& a, int cls, std::vector<PageLoad>* out) {
  out->clear();
  SlabPool& p = *PoolAt(a, cls);
  if (p.pages.load(std::memory_order_relaxed) == 0) return;
  size_t cur = size_t{__atomic_load_n(&p.current, __ATOMIC_RELAXED)} * kUnit;
  ForEachPage(a, kTables.order[cls], a.hdr()->meta_groups, [&](size_t page) {
    const PageHeader* h = HdrAt(a, page);
    if (page == cur || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kPageMagic || h->cls != cls) return false;
    out->push_back({page, h->live.load(std::memory_order_relaxed)});
    return false;
  });
}

size_t MarkDrain(Arena& a, int cls, const std::vector<size_t>& pages) {
  SlabPool& p = *PoolAt(a, cls);
  size_t n = 0;
  (void)Lock(p.lock);
  for (size_t page : pages) {
    if (size_t{p.current} * kUnit == page || !PageInUse(a, page, cls)) continue;
    PC_CRASH_POINT();
    HdrAt(a, page)->draining.store(1, std::memory_order_relaxed);
    ++n;
  }
  p.drained.fetch_add(n, std::memory_order_relaxed);
  Unlock(p.lock);
  return n;
}

void EndDrain(Arena& a, int cls, const std::vector<size_t>& pages) {
  SlabPool& p = *PoolAt(a, cls);
  (void)Lock(p.lock);
  for (size_t page : pages) {
    if (PageInUse(a, page, cls)) HdrAt(a, page)->draining.store(0, std::memory_order_relaxed);
  }
  // Pages that now have room are candidates for claims again.
  p.partial.fetch_add(static_cast<uint32_t>(pages.size()), std::memory_order_relaxed);
  Unlock(p.lock);
}

size_t ClearDrainMarks(Arena& a) {
  size_t n = 0;
  std::vector<PageLoad> pages;
  std::vector<size_t> marked;
  for (int cls = 0; cls < kNumClasses; ++cls) {
    ClassPages(a, cls, &pages);
    marked.clear();
    for (const PageLoad& pl : pages) {
      if (HdrAt(a, pl.page)->draining.load(std::memory_order_relaxed) != 0) marked.push_back(pl.page);
    }
    if (marked.empty()) continue;
    EndDrain(a, cls, marked);
    n += marked.size();
  }
  return n;
}

void UsageAll(const Arena& a, bool exact, ClassUsage out[kNumClasses]) {
  for (int c = 0; c < kNumClasses; ++c) out[c] = ClassUsage{};
  const ArenaHeader* h = a.hdr();
  uint32_t hi = __atomic_load_n(&h->hwm_groups, __ATOMIC_ACQUIRE);
  for (uint32_t g = h->meta_groups; g < hi; ++g) {
    uint32_t e = a.GroupEntry(g);
    if (Arena::EntryKind(e) != GroupKind::kSlab || Arena::EntryRun(e) >= kPageOrders) continue;
    int order = static_cast<int>(Arena::EntryRun(e));
    uint32_t mask = a.PageMaskOf(g).load(std::memory_order_acquire);
    for (uint32_t p = 0; p < kGroupSize / PageBytes(order); ++p) {
      if (!(mask & (1u << p))) continue;
      size_t page = size_t{g} * kGroupSize + size_t{p} * PageBytes(order);
      const PageHeader* ph = HdrAt(a, page);
      int cls = ph->cls;
      if (__atomic_load_n(&ph->magic, __ATOMIC_ACQUIRE) != kPageMagic || cls >= kNumClasses ||
          kTables.order[cls] != order) {
        continue;
      }
      ClassUsage& u = out[cls];
      ++u.pages;
      u.cells += kTables.geo[cls].ncells;
      int32_t live = ph->live.load(std::memory_order_relaxed);
      u.used += exact ? CountUsed(a, page, cls) : static_cast<uint64_t>(live < 0 ? 0 : live);
      u.page_bytes += PageBytes(order);
    }
  }
}

ClassUsage UsageOf(const Arena& a, int cls) {
  std::vector<ClassUsage> all(kNumClasses);
  UsageAll(a, /*exact=*/true, all.data());
  return all[cls];
}

uint64_t CellBytesInUse(const Arena& a) {
  const ArenaHeader* h = a.hdr();
  uint64_t in = 0, out = h->freed_bytes.load(std::memory_order_relaxed);
  for (uint32_t s = 0; s < h->max_procs; ++s) {
    const ProcSlot* ps = SlotAt(a, s);
    in += ps->alloc_bytes.load(std::memory_order_relaxed);
    out += ps->free_bytes.load(std::memory_order_relaxed);
  }
  return in > out ? in - out : 0;
}

uint64_t MetaBytes(const Arena& a) { return a.hdr()->user_off + 4096; }

uint64_t NoteUsedPeak(Arena& a) {
  uint64_t now = UsedMemory(a);
  std::atomic<uint64_t>& peak = a.hdr()->used_peak;
  uint64_t p = peak.load(std::memory_order_relaxed);
  while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
  return now > p ? now : p;
}

uint64_t UsedMemory(const Arena& a) {
  const ArenaHeader* h = a.hdr();
  return CellBytesInUse(a) + h->large_bytes.load(std::memory_order_relaxed) +
         h->region_used.load(std::memory_order_relaxed) + MetaBytes(a);
}

}  // namespace mem
