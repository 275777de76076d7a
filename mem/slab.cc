// perfcached — slab classes, per-process allocator, global pools.
// Copyright (c) 2026 the perfcached authors.
#include "mem/slab.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mem/atomic_copy.h"
#include "mem/canary.h"
#include "mem/crash_point.h"

namespace mem {
namespace {

// Free-list link: cell bytes 4..7 (byte 0 is the class and is never written).
constexpr size_t kLinkOffset = 4;

inline Off GetLink(const Arena& a, Off cell) { return LoadRelaxed32(a.At(cell) + kLinkOffset); }
inline void SetLink(const Arena& a, Off cell, Off next) {
  StoreRelaxed32(a.At(cell) + kLinkOffset, next);
}
inline uint8_t ClassByte(const Arena& a, Off cell) { return LoadRelaxed8(a.At(cell)); }

// Owner-only counter bump: a plain load + store, no locked RMW.
inline void Bump(std::atomic<uint64_t>& c) {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Push a chain first..last (n cells, already linked) onto a global pool.
void PoolPushChain(SlabPool& p, const Arena& a, Off first, Off last, uint32_t n) {
  (void)Lock(p.lock);  // list is consistent at every store: a dead holder leaves no damage
  SetLink(a, last, p.head);
  PC_CRASH_POINT();
  p.head = first;
  PC_CRASH_POINT();
  p.count += n;
  Unlock(p.lock);
}

}  // namespace

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

size_t ChunkBytes(int cls) {
  size_t want = size_t{kClassSize[cls]} * 32;
  size_t c = 64u << 10;
  while (c < want && c < kGroupSize) c <<= 1;
  return c;
}

size_t SlabMetaBytes(uint32_t max_procs) {
  return sizeof(SlabPool) * kNumClasses + sizeof(ProcSlot) * max_procs;
}

SlabPool* PoolAt(const Arena& a, int cls) {
  return reinterpret_cast<SlabPool*>(a.base() + a.hdr()->pools_off) + cls;
}
ProcSlot* SlotAt(const Arena& a, uint32_t slot) {
  return reinterpret_cast<ProcSlot*>(a.base() + a.hdr()->slots_off) + slot;
}

size_t CellBound(const Arena& a, Off cell) {
  size_t readable = a.ReadableFrom(cell);
  if (readable == 0) return 0;
  uint8_t cls = ClassByte(a, cell);
  if (cls < kNumClasses) {
    size_t s = kClassSize[cls];
    return s <= readable ? s : 0;
  }
  if (cls != kLargeClass) return 0;
  size_t byte = size_t{cell} * kUnit;
  if (byte % kGroupSize != 0) return 0;
  uint32_t e = a.GroupEntry(static_cast<uint32_t>(byte / kGroupSize));
  if (Arena::EntryKind(e) != GroupKind::kLargeHead) return 0;
  size_t run = size_t{Arena::EntryRun(e)} * kGroupSize;
  return run <= readable ? run : readable;
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
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (c.free_head != 0) {
      Off cell = c.free_head;
      PC_CRASH_POINT();
      c.free_head = GetLink(*arena_, cell);
      PC_CRASH_POINT();
      --c.free_count;
      Bump(ps_->allocs);
      *out = cell;
      return Status::kOk;
    }
    uint64_t r = c.bump;
    if (BumpNext(r) != BumpEnd(r)) {
      Off cell = BumpNext(r);
      PC_CRASH_POINT();
      c.bump = BumpRange(cell + kClassSize[cls] / kUnit, BumpEnd(r));
      Bump(ps_->allocs);
      *out = cell;
      return Status::kOk;
    }
    if (Status s = Refill(cls, c); s != Status::kOk) return s;
  }
  return Status::kNoMem;
}

Status Allocator::Refill(int cls, ClassCache& c) {
  SlabPool& p = pools_[cls];
  if (__atomic_load_n(&p.count, __ATOMIC_RELAXED) > 0) {
    (void)Lock(p.lock);
    Off first = p.head, last = 0, cur = first;
    uint32_t n = 0;
    while (cur != 0 && n < kRefill) {
      last = cur;
      cur = GetLink(*arena_, cur);
      ++n;
    }
    PC_CRASH_POINT();
    p.head = cur;
    // count is advisory: a holder killed between the head and count stores
    // leaves it low; never let it wrap.
    PC_CRASH_POINT();
    p.count = p.count > n ? p.count - n : (cur != 0 ? 1 : 0);
    Unlock(p.lock);
    if (n > 0) {
      SetLink(*arena_, last, c.free_head);  // private stack is empty here
      PC_CRASH_POINT();
      c.free_count += n;
      PC_CRASH_POINT();
      c.free_head = first;
      return Status::kOk;
    }
  }
  size_t chunk = ChunkBytes(cls);
  Off ch = arena_->CarveChunk(chunk);
  if (ch == 0) return Status::kNoMem;
  size_t cell = kClassSize[cls], ncells = chunk / cell;
  char* base = arena_->At(ch);
  // Stamp every cell's class byte before any cell becomes reachable.
  // (One crash point for the loop: the chunk is private until the bump store.)
  PC_CRASH_POINT();
  for (size_t i = 0; i < ncells; ++i) {
    __atomic_store_n(reinterpret_cast<uint8_t*>(base + i * cell), static_cast<uint8_t>(cls), __ATOMIC_RELAXED);
  }
  p.chunks.fetch_add(1, std::memory_order_relaxed);
  p.cells_total.fetch_add(ncells, std::memory_order_relaxed);
  // next and end change in one 8-byte store, so a process killed here
  // leaves either the old (empty) range or the new one, never a mix.
  Off end = ch + static_cast<Off>(ncells * cell / kUnit);
  PC_CRASH_POINT();
  c.bump = BumpRange(ch, end);
  return Status::kOk;
}

Status Allocator::AllocLarge(size_t bytes, Off* out) {
  ArenaHeader* h = arena_->hdr();
  if (bytes > h->max_value + kMaxRecordOverhead) return Status::kTooBig;
  uint32_t n = static_cast<uint32_t>((bytes + kGroupSize - 1) / kGroupSize);
  int64_t g = arena_->AllocGroups(n, GroupKind::kLargeHead);
  if (g < 0) return Status::kNoMem;
  char* p = arena_->base() + size_t(g) * kGroupSize;
  StoreRelaxed8(p, kLargeClass);
  h->large_bytes.fetch_add(size_t{n} * kGroupSize, std::memory_order_relaxed);
  h->large_objects.fetch_add(1, std::memory_order_relaxed);
  *out = arena_->OffOf(p);
  return Status::kOk;
}

void Allocator::Free(Off cell) {
  if (cell == 0) return;
  uint8_t cls = ClassByte(*arena_, cell);
  if (cls == kLargeClass) {
    FreeGlobal(*arena_, cell);
    return;
  }
  if (cls >= kNumClasses) {
    // Hardened: an impossible class means a corrupted link; leak, never
    // corrupt a pool (the overflow-node bug of cachedb_perf).
    std::fprintf(stderr, "perfcached: free of cell %u with bad class %u (leaked)\n", cell, cls);
    return;
  }
  ClassCache& c = ps_->cls[cls];
  SetLink(*arena_, cell, c.free_head);
  PC_CRASH_POINT();
  c.free_head = cell;
  PC_CRASH_POINT();
  ++c.free_count;
  Bump(ps_->frees);
  if (c.free_count > kDonateAbove) {
    Off first = c.free_head, last = first;
    for (uint32_t i = 1; i < kDonate; ++i) last = GetLink(*arena_, last);
    PC_CRASH_POINT();
    c.free_head = GetLink(*arena_, last);
    PC_CRASH_POINT();
    c.free_count -= kDonate;
    PoolPushChain(pools_[cls], *arena_, first, last, kDonate);
  }
}

void Allocator::FlushToGlobal() {
  for (int cls = 0; cls < kNumClasses; ++cls) {
    ClassCache& c = ps_->cls[cls];
    while (BumpNext(c.bump) != BumpEnd(c.bump)) {
      Off cell = BumpNext(c.bump);
      PC_CRASH_POINT();
      c.bump = BumpRange(cell + kClassSize[cls] / kUnit, BumpEnd(c.bump));
      SetLink(*arena_, cell, c.free_head);
      PC_CRASH_POINT();
      c.free_head = cell;
      PC_CRASH_POINT();
      ++c.free_count;
    }
    if (c.free_head == 0) continue;
    Off first = c.free_head, last = first;
    uint32_t n = 1;
    while (GetLink(*arena_, last) != 0) {
      last = GetLink(*arena_, last);
      ++n;
    }
    PC_CRASH_POINT();
    c.free_head = 0;
    PC_CRASH_POINT();
    c.free_count = 0;
    PoolPushChain(pools_[cls], *arena_, first, last, n);
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

// The head group of a large object, or -1.
int64_t LargeHead(const Arena& a, Off cell) {
  size_t byte = size_t{cell} * kUnit;
  uint32_t g = static_cast<uint32_t>(byte / kGroupSize);
  if (byte % kGroupSize != 0 || g >= a.hdr()->ngroups ||
      Arena::EntryKind(a.GroupEntry(g)) != GroupKind::kLargeHead) {
    return -1;
  }
  return g;
}

void FreeLargeNow(Arena& a, uint32_t g) {
  uint32_t e = a.GroupEntry(g);
  a.hdr()->large_bytes.fetch_sub(size_t{Arena::EntryRun(e)} * kGroupSize);
  a.hdr()->large_objects.fetch_sub(1);
  a.FreeGroups(g);
}

}  // namespace

bool PinLarge(Arena& a, Off cell) {
  int64_t g = LargeHead(a, cell);
  if (g < 0) return false;
  PC_CRASH_POINT();
  a.PinsOf(static_cast<uint32_t>(g)).fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void UnpinLarge(Arena& a, Off cell) {
  int64_t g = LargeHead(a, cell);
  if (g < 0) return;
  auto& pins = a.PinsOf(static_cast<uint32_t>(g));
  PC_CRASH_POINT();
  uint32_t left = pins.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (left == kPinZombie) {  // freed meanwhile and we were the last reader
    uint32_t z = kPinZombie;
    if (pins.compare_exchange_strong(z, 0, std::memory_order_acq_rel)) FreeLargeNow(a, static_cast<uint32_t>(g));
  }
}

void FreeGlobal(Arena& a, Off cell) {
  if (cell == 0) return;
  uint8_t cls = ClassByte(a, cell);
  if (cls == kLargeClass) {
    int64_t g = LargeHead(a, cell);
    if (g < 0) {
      std::fprintf(stderr, "perfcached: free of bad large object %u (leaked)\n", cell);
      return;
    }
    auto& pins = a.PinsOf(static_cast<uint32_t>(g));
    PC_CRASH_POINT();
    if (pins.fetch_or(kPinZombie, std::memory_order_acq_rel) != 0) return;  // the last reader frees
    PC_CRASH_POINT();
    pins.store(0, std::memory_order_release);
    FreeLargeNow(a, static_cast<uint32_t>(g));
    return;
  }
  if (cls >= kNumClasses) {
    std::fprintf(stderr, "perfcached: free of cell %u with bad class %u (leaked)\n", cell, cls);
    return;
  }
  PoolPushChain(*PoolAt(a, cls), a, cell, cell, 1);
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
    // The dead owner may have stopped anywhere; trust nothing: every cell
    // must be readable and of this class, and the walk is bounded. Each
    // cell leaves the slot before it is pushed (see slab.h).
    uint32_t limit = c.free_count + 2;
    Off cur = c.free_head;
    while (cur != 0 && limit-- > 0) {
      if (moved == budget) return moved;
      if (CellBound(a, cur) == 0 || ClassByte(a, cur) != cls) break;
      Off next = GetLink(a, cur);
      if (PC_CANARY(5)) PoolPushChain(*PoolAt(a, cls), a, cur, cur, 1);  // the defect-1 order
      PC_CRASH_POINT();
      c.free_head = next;
      PC_CRASH_POINT();
      if (c.free_count > 0) --c.free_count;
      if (!PC_CANARY(5)) PoolPushChain(*PoolAt(a, cls), a, cur, cur, 1);
      ++moved;
      cur = next;
    }
    PC_CRASH_POINT();
    c.free_head = 0;
    PC_CRASH_POINT();
    c.free_count = 0;
    size_t step = kClassSize[cls] / kUnit;
    Off x = BumpNext(c.bump), end = BumpEnd(c.bump);
    if (x < end && (end - x) % step == 0 && size_t{end - x} * kUnit <= kGroupSize) {
      for (; x < end; x += static_cast<Off>(step)) {
        if (moved == budget) return moved;
        if (ClassByte(a, x) != cls) break;
        PC_CRASH_POINT();
        c.bump = BumpRange(x + static_cast<Off>(step), end);
        PoolPushChain(*PoolAt(a, cls), a, x, x, 1);
        ++moved;
      }
    }
    PC_CRASH_POINT();
    c.bump = 0;
  }
  return moved;
}

}  // namespace mem
