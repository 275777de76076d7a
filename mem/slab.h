// perfcached — slab size classes, global pools and the per-process allocator.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Cells, chunks, pools:
//
//   chunk (64 KiB .. 2 MiB, bound to one class for the life of the arena)
//   +------+------+------+------+-- ... --+------+-------+
//   | cell | cell | cell | cell |         | cell | slack |
//   +------+------+------+------+-- ... --+------+-------+
//   cell byte 0 = class id, stamped when the chunk is carved, never changed.
//   A free cell links to the next free cell through bytes 4..7 (an Off).
//
// Size classes (kClassSize): 16..256 B in 8-byte steps, then 8 classes per
// doubling up to 256 KiB (12.5% steps, <= 11% waste). The fine small steps
// are what keep a 16-byte key + 100-byte value (136-byte record) in a
// 136-byte cell instead of the original 1.5x ladder's 192 (see
// docs/engine.md). Records above 256 KiB take a run of whole 2 MiB groups
// (the large-object path, class byte kLargeClass).
//
// Per-process allocation: every process owns one ProcSlot in shm. For each
// class it holds a bump range inside its current chunk and a private LIFO
// free stack. Only the owner touches its slot, so the fast path has no
// atomics and no locks. The shared part is one SlabPool per class under a
// ShmLock: refills take kRefill cells, a private stack above kDonateAbove
// donates kDonate cells, and cross-process frees (the expiry sweep) go there.
//
// Fork: a child must never use the ProcSlot it inherited the handle of; it
// binds a fresh Allocator to its own slot. Donating an inherited stack would
// put the same cells on the global list once per child (the bug the
// cachedb_perf soak found). A slot whose process died is *adopted*: its free
// stack and bump remainder go to the global pools, then the slot is reset.
// Slot state is kept crash-consistent: the list head is stored last, so a
// process killed mid-operation never corrupts a list; it leaks the cells in
// flight (one cell, or a refill / donation batch of up to kDonate).

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mem/arena.h"
#include "mem/lock.h"
#include "mem/status.h"

namespace mem {

inline constexpr size_t kMinCell = 16;
inline constexpr size_t kMaxCell = 256u << 10;
inline constexpr uint8_t kLargeClass = 0xFF;
// What a record may need above its value: cache/record.h's 20-byte header,
// a key of up to 65535 bytes and the 8-byte alignment of an int value.
inline constexpr size_t kMaxRecordOverhead = 65536 + 64;

constexpr int CountClasses() {
  int n = 0;
  for (size_t s = kMinCell; s <= 256; s += 8) ++n;
  for (size_t base = 256; base < kMaxCell; base *= 2) n += 8;
  return n;
}
inline constexpr int kNumClasses = CountClasses();
static_assert(kNumClasses < 255);

constexpr std::array<uint32_t, kNumClasses> MakeClassSizes() {
  std::array<uint32_t, kNumClasses> a{};
  int i = 0;
  for (size_t s = kMinCell; s <= 256; s += 8) a[i++] = static_cast<uint32_t>(s);
  for (size_t base = 256; base < kMaxCell; base *= 2) {
    for (size_t k = 1; k <= 8; ++k) a[i++] = static_cast<uint32_t>(base + base / 8 * k);
  }
  return a;
}
inline constexpr std::array<uint32_t, kNumClasses> kClassSize = MakeClassSizes();
static_assert(kClassSize[kNumClasses - 1] == kMaxCell);

// Smallest class whose cells hold `bytes`; -1 above kMaxCell.
int ClassFor(size_t bytes);
// Chunk bytes for a class: a power of two in [64 KiB, 2 MiB], >= 32 cells
// up to 64 KiB cells, >= 8 above.
size_t ChunkBytes(int cls);

// Global pool of one class. 64 bytes, one per class, in arena metadata.
struct alignas(64) SlabPool {
  ShmLock lock;
  Off head;                        // free list (via cell bytes 4..7)
  uint32_t count;                  // cells on the list
  uint32_t pad;
  std::atomic<uint64_t> chunks;    // chunks carved for this class
  std::atomic<uint64_t> cells_total;
  uint64_t pad2[4];
};
static_assert(sizeof(SlabPool) == 64);
static_assert(std::is_standard_layout_v<SlabPool>);

// One class's private state inside a ProcSlot. Owner-only writes (and the
// adopter's, once the owner is dead).
struct ClassCache {
  Off free_head;      // private free stack
  uint32_t free_count;
  uint64_t bump;      // next cell (low 32) | end of the chunk (high 32): one
                      // 8-byte field, so a refill or an adopter's step moves
                      // both with one store
};
static_assert(sizeof(ClassCache) == 16);
static_assert(offsetof(ClassCache, bump) == 8);
inline Off BumpNext(uint64_t r) { return static_cast<Off>(r); }
inline Off BumpEnd(uint64_t r) { return static_cast<Off>(r >> 32); }
inline uint64_t BumpRange(Off next, Off end) { return uint64_t{next} | (uint64_t{end} << 32); }

// owner_tid carries kSlotBusy while a process claims or adopts the slot
// (between the claim and the recorded start time, or during a drain): such
// an owner is judged by its tid alone, and a process that finds a live one
// waits for it instead of taking the slot.
inline constexpr uint32_t kSlotBusy = 1u << 31;

struct alignas(64) ProcSlot {
  std::atomic<uint32_t> owner_tid;  // 0 = free slot; | kSlotBusy in transition
  std::atomic<uint32_t> gen;        // bumped at every claim (lock tokens)
  std::atomic<uint64_t> allocs;     // cells handed out by this slot (stats)
  std::atomic<uint64_t> frees;
  std::atomic<uint64_t> owner_start;  // owner's start time (/proc stat field 22)
  uint64_t pad2[4];
  ClassCache cls[kNumClasses];
};
static_assert(offsetof(ProcSlot, owner_tid) == 0);
static_assert(offsetof(ProcSlot, gen) == 4);
static_assert(offsetof(ProcSlot, owner_start) == 24);
static_assert(offsetof(ProcSlot, cls) == 64);
static_assert(sizeof(ProcSlot) == (64 + 16 * kNumClasses + 63) / 64 * 64);
static_assert(std::is_standard_layout_v<ProcSlot>);
static_assert(std::is_standard_layout_v<ClassCache> && std::is_trivially_copyable_v<ClassCache>);

// The lock token of a slot's owner (mem/lock.h).
inline uint32_t SlotToken(uint32_t slot, uint32_t gen) {
  return kTokenBit | (slot << 22) | (gen & kTokenGenMask);
}

// Metadata sizing/initialisation, used by Arena::Create.
size_t SlabMetaBytes(uint32_t max_procs);

// Cell bound as seen by a lock-free reader: bytes readable from the cell
// start (class size, or the large run), 0 if the class byte is impossible.
size_t CellBound(const Arena& a, Off cell);

class Allocator {
 public:
  // Claim process slot `slot` for the calling process (resets it).
  Allocator(Arena& a, uint32_t slot);
  ~Allocator();  // unbinds the thread's lock token (the slot stays claimed)
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // A cell of at least `bytes` (class byte stamped). kTooBig above
  // max_value; kNoMem when the arena is full (nothing changed).
  [[nodiscard]] Status Alloc(size_t bytes, Off* out);
  // Free a cell this process or any other allocated (private stack).
  void Free(Off cell);
  // Give every privately held cell to the global pools (before fork, or at
  // clean exit).
  void FlushToGlobal();
  // Clean exit: flush, then free the slot (nothing left for an adopter).
  void Release();

  uint32_t slot() const { return slot_; }
  Arena& arena() const { return *arena_; }

 private:
  Status Refill(int cls, ClassCache& c);
  Status AllocLarge(size_t bytes, Off* out);
  void FreeLarge(Off cell);

  Arena* arena_;
  ProcSlot* ps_;
  SlabPool* pools_;
  uint32_t slot_;
};

// Free a cell straight to the global pool (any process, e.g. a sweep).
// A large object that readers have pinned is only marked; the last reader
// to unpin it frees it.
void FreeGlobal(Arena& a, Off cell);
// Large objects: a reader pins one (while the record is linked, under its
// bucket lock) so that it can copy the value with no lock held; a free
// waits for the last pin. A reader killed while pinned leaks the object
// (counted by the audit), never frees it twice. False if not a large head.
bool PinLarge(Arena& a, Off cell);
void UnpinLarge(Arena& a, Off cell);
inline constexpr uint32_t kPinZombie = 1u << 31;  // freed while pinned
// If the slot's owner is dead: claim it (CAS), move its free stack and bump
// remainder to the global pools, and free the slot. False if not dead or
// someone else adopted it first. An adopter killed mid-drain leaves the slot
// busy under its own (dead) tid: the next adopter goes on where it stopped.
bool AdoptDeadSlot(Arena& a, uint32_t slot);
// True when the slot's owner (claimed or in transition) is dead.
bool SlotOwnerDead(const ProcSlot& ps);
// Move a slot's cells to the global pools (caller has claimed the slot).
// Crash-safe order: each cell leaves the slot (head or bump advanced) before
// it is pushed, so a drain killed anywhere leaks at most one cell and never
// hands a cell out twice. `budget` stops after that many cells (tests: a
// drain killed at that point). Returns the cells moved.
size_t DrainSlot(Arena& a, ProcSlot* ps, size_t budget = ~size_t{0});
ProcSlot* SlotAt(const Arena& a, uint32_t slot);
// Arena::Destroy: stop judging tokens against this arena's slots.
void ForgetTokenArena(const Arena* a);
SlabPool* PoolAt(const Arena& a, int cls);

inline constexpr uint32_t kRefill = 32;
inline constexpr uint32_t kDonateAbove = 256;
inline constexpr uint32_t kDonate = 128;

}  // namespace mem
