// perfcached — slab size classes, global pools and the per-process allocator.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// Cells, pages, pools:
//
//   page (64 KiB .. 2 MiB, one class while in use; mem/page.h)
//   +--------+--------+------+------+-- ... --+------+-------+
//   | header | bitmap | cell | cell |         | cell | slack |
//   +--------+--------+------+------+-- ... --+------+-------+
//   A cell's class is its page's (header), its page's order is its group's
//   (group map): CellClass / CellBound never read the cell, whose byte 0 is
//   the record's access byte (cache/record.h). A bit per cell: 1 = live or
//   claimed, 0 = free.
//
// Size classes (kClassSize): 16..256 B in 8-byte steps, then 8 classes per
// doubling up to 256 KiB (12.5% steps, <= 11% waste). The fine small steps
// are what keep a 16-byte key + 100-byte value (136-byte record) in a
// 136-byte cell instead of the original 1.5x ladder's 192 (see
// docs/engine.md). Records above 256 KiB take a run of 32 KiB units, at
// most 1/8 wasted (mem/large.h; CellClass kLargeClass).
//
// Per-process allocation: every process owns one ProcSlot in shm. For each
// class it holds a *claim*: up to 64 cells of one bitmap word whose bits it
// set under the class's pool lock (ClassCache: the word's first cell and a
// mask of the cells not yet handed out). Alloc pops the lowest bit of the
// mask: no atomics, no locks. Free keeps up to StackCells freed cells on a
// private stack (bits still set: a replace reuses the cell it freed, as
// cheaply as before pages), and past that clears the cell's bit with one
// atomic AND, from any process, so a cell freed by anyone is free for
// everyone, and a page whose bits all clear goes back to its group (and the
// group to the arena): memory freed in one class serves every other class.
//
// Fork: a child must never use the ProcSlot it inherited the handle of; it
// binds a fresh Allocator to its own slot (using the parent's claim twice
// would hand the same cells out twice: the bug the cachedb_perf soak found).
// A slot whose process died is *adopted*: its claims and stacks are cleared
// in the bitmaps, then the slot is reset. Slot state is crash-consistent: a
// claim's mask is emptied (a stack cell leaves the stack) before its bits
// are cleared, so a process killed mid-operation leaks the cells in flight
// (one cell, or one claim of up to 64) and never hands a cell out twice.

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "mem/arena.h"
#include "mem/large.h"
#include "mem/lock.h"
#include "mem/page.h"
#include "mem/status.h"

namespace mem {

inline constexpr size_t kMinCell = 16;
inline constexpr size_t kMaxCell = 256u << 10;
inline constexpr uint8_t kLargeClass = 0xFF;  // CellClass of a large object's head
inline constexpr uint8_t kNoClass = 0xFE;     // CellClass of an Off in no page in use
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

// Page order and geometry of every class (constant tables: the read path
// bounds a cell from them with no call and no page header access).
constexpr int OrderFor(size_t chunk) {
  int o = 0;
  while ((kMinPage << o) < chunk) ++o;
  return o;
}

constexpr size_t ChunkBytesOf(size_t cell) {
  size_t want = cell * 32;
  size_t c = 64u << 10;
  while (c < want && c < kGroupSize) c <<= 1;
  return c;
}

struct ClassTables {
  std::array<uint8_t, kNumClasses> order{};
  std::array<PageGeometry, kNumClasses> geo{};
};
constexpr ClassTables MakeTables() {
  ClassTables t{};
  for (int c = 0; c < kNumClasses; ++c) {
    size_t chunk = ChunkBytesOf(kClassSize[c]);
    t.order[c] = static_cast<uint8_t>(OrderFor(chunk));
    t.geo[c] = Geometry(chunk, kClassSize[c]);
  }
  return t;
}
inline constexpr ClassTables kClassTables = MakeTables();
static_assert(kClassTables.geo[0].ncells > 4000 && kClassTables.geo[kNumClasses - 1].ncells >= 7);
static_assert(kClassTables.order[kNumClasses - 1] == kPageOrders - 1);


// Smallest class whose cells hold `bytes`; -1 above kMaxCell.
int ClassFor(size_t bytes);
// Page bytes for a class: a power of two in [64 KiB, 2 MiB], >= 31 cells
// up to 64 KiB cells, >= 7 above.
size_t ChunkBytes(int cls);

// Global state of one class (64 bytes, one per class, in arena metadata).
// The lock covers claims, the current page and giving pages back.
struct alignas(64) SlabPool {
  ShmLock lock;
  std::atomic<uint32_t> partial;   // pages that came back from full (hint for the search)
  Off current;                     // page claims come from (Off of the page; 0 = none)
  uint32_t scan;                   // group where the search for a page with room resumes
  uint32_t pad1;
  std::atomic<uint64_t> pages;     // pages in use by this class
  std::atomic<uint64_t> cells_total;  // cells in those pages
  std::atomic<uint64_t> pages_returned;  // pages given back after they came free
  std::atomic<uint64_t> moved;     // live cells automove relocated out of draining pages
  std::atomic<uint64_t> drained;   // pages marked draining
};
static_assert(sizeof(SlabPool) == 64);
static_assert(offsetof(SlabPool, current) == 8);
static_assert(offsetof(SlabPool, pages) == 24);
static_assert(offsetof(SlabPool, moved) == 48);
static_assert(std::is_standard_layout_v<SlabPool>);

// One class's claim and private stack inside a ProcSlot. Owner-only writes
// (and the adopter's, once the owner is dead). `base` changes only while
// `mask` is 0. The stack holds cells this process freed, bits still set (a
// replace reuses the cell it just freed, with no atomics); linked through
// cell bytes 8..15, at most StackCells of them.
struct ClassCache {
  Off base;          // cell of bit 0 of the claimed bitmap word
  Off stack;         // top of the private stack (0 = empty)
  uint64_t mask;     // cells of that word claimed and not handed out
  uint32_t stack_n;  // cells on the stack
  uint32_t pad;
};
static_assert(sizeof(ClassCache) == 32);
static_assert(offsetof(ClassCache, mask) == 16);
static_assert(offsetof(ClassCache, stack_n) == 24);

// Cells a claim takes at most: 64, fewer for big cells (32 KiB a claim).
inline constexpr uint32_t ClaimCells(size_t cell) {
  size_t n = (32u << 10) / cell;
  return n < 1 ? 1 : (n > 64 ? 64 : static_cast<uint32_t>(n));
}
// Cells a private stack keeps at most: 32, fewer for big cells (64 KiB).
inline constexpr uint32_t StackCells(size_t cell) {
  size_t n = (64u << 10) / cell;
  return n < 1 ? 1 : (n > 32 ? 32 : static_cast<uint32_t>(n));
}

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
  std::atomic<uint64_t> alloc_bytes;  // cell bytes handed out / freed by this
  std::atomic<uint64_t> free_bytes;   // slot (never reset: used memory sums them)
  std::atomic<uint32_t> give_back_asked;  // bumped by the mover (AskGiveBack)
  std::atomic<uint32_t> give_back_done;   // the owner's answer: the last request it served
  std::atomic<uint64_t> given_back;       // cells given back when asked (stats, never reset)
  ClassCache cls[kNumClasses];
};
static_assert(offsetof(ProcSlot, owner_tid) == 0);
static_assert(offsetof(ProcSlot, gen) == 4);
static_assert(offsetof(ProcSlot, owner_start) == 24);
static_assert(offsetof(ProcSlot, alloc_bytes) == 32);
static_assert(offsetof(ProcSlot, give_back_asked) == 48);
static_assert(offsetof(ProcSlot, give_back_done) == 52);
static_assert(offsetof(ProcSlot, given_back) == 56);
static_assert(offsetof(ProcSlot, cls) == 64);
static_assert(sizeof(ProcSlot) == (64 + sizeof(ClassCache) * kNumClasses + 63) / 64 * 64);
static_assert(std::is_standard_layout_v<ProcSlot>);
static_assert(std::is_standard_layout_v<ClassCache> && std::is_trivially_copyable_v<ClassCache>);

// The lock token of a slot's owner (mem/lock.h).
inline uint32_t SlotToken(uint32_t slot, uint32_t gen) {
  return kTokenBit | (slot << 22) | (gen & kTokenGenMask);
}

// Metadata sizing/initialisation, used by Arena::Create.
size_t SlabMetaBytes(uint32_t max_procs);

// ClassifyCell's rare branch, out of line (mem/large.cc) so that the read
// path's inlined slab branch stays as small as it was: kLargeClass and
// *bound, or kNoClass.
[[gnu::cold]] uint8_t ClassifyLarge(const Arena& a, size_t byte, size_t readable, size_t* bound);

// What a cell is, from the page class map (mem/page.h) and for a large
// object the group map, unit masks and run header (mem/large.h; never from
// the cell itself: its byte 0 is the record's access byte). Lock-free: a stale Off gives the class of the page
// there now, or kNoClass, never a fault. *bound: bytes a reader may touch
// from the cell (its class size clipped to its page, or a large object's
// run), 0 with kNoClass.
inline __attribute__((always_inline)) uint8_t ClassifyCell(const Arena& a, Off cell, size_t* bound) {
  *bound = 0;
  size_t readable = a.ReadableFrom(cell);
  if (readable == 0) return kNoClass;
  size_t byte = size_t{cell} * kUnit;
  uint8_t v = __atomic_load_n(a.PageClassMap() + (byte >> kClassMapShift), __ATOMIC_ACQUIRE);
  if (v != 0 && v <= kNumClasses) {
    int cls = v - 1;
    int order = kClassTables.order[cls];
    size_t page = PageOfByte(byte, order);
    if (byte < page + kClassTables.geo[cls].first) return kNoClass;
    size_t s = kClassSize[cls], room = page + PageBytes(order) - byte;
    if (s > room) s = room;
    *bound = s <= readable ? s : readable;
    return static_cast<uint8_t>(cls);
  }
  return ClassifyLarge(a, byte, readable, bound);
}

// Cell bound as seen by a lock-free reader: bytes readable from the cell
// start (class size clipped to its page, or the large run), 0 if `cell`
// lies in no page in use and heads no large object. Reads the page class
// map (a large head: the group map), never the cell or its page header.
inline size_t CellBound(const Arena& a, Off cell) {
  size_t bound;
  ClassifyCell(a, cell, &bound);
  return bound;
}

// The class of `cell` by the same rule: 0..kNumClasses-1, kLargeClass, or
// kNoClass.
inline uint8_t CellClass(const Arena& a, Off cell) {
  size_t bound;
  return ClassifyCell(a, cell, &bound);
}

class Allocator {
 public:
  // Claim process slot `slot` for the calling process (resets it).
  Allocator(Arena& a, uint32_t slot);
  ~Allocator();  // unbinds the thread's lock token (the slot stays claimed)
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // A cell of at least `bytes`. kTooBig above
  // max_value; kNoMem when the arena is full (nothing changed).
  [[nodiscard]] Status Alloc(size_t bytes, Off* out);
  // Free a cell this process or any other allocated.
  void Free(Off cell);
  // Give every claimed cell back (before fork, or at clean exit).
  void FlushToGlobal();
  // Clean exit: flush, then free the slot (nothing left for an adopter).
  void Release();
  // If the mover asked (AskGiveBack): give back the claim of every class
  // whose claimed word lies in a draining page, and the private stack's
  // cells that lie in draining pages (the rest stay). Then answer. Cheap
  // when not asked (two loads of the slot's first line): every process
  // calls it from its loop's tick. Returns the cells given back.
  size_t AnswerGiveBack();

  uint32_t slot() const { return slot_; }
  Arena& arena() const { return *arena_; }

 private:
  Status Refill(int cls, ClassCache& c);
  Status AllocLarge(size_t bytes, Off* out);

  Arena* arena_;
  ProcSlot* ps_;
  SlabPool* pools_;
  uint32_t slot_;
};

// Free a cell (any process, with or without a slot, e.g. a sweep).
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
// If the slot's owner is dead: claim it (CAS), give its claims back, and
// free the slot. False if not dead or
// someone else adopted it first. An adopter killed mid-drain leaves the slot
// busy under its own (dead) tid: the next adopter goes on where it stopped.
bool AdoptDeadSlot(Arena& a, uint32_t slot);
// True when the slot's owner (claimed or in transition) is dead.
bool SlotOwnerDead(const ProcSlot& ps);
// Give a slot's claims back (caller has claimed the slot). Crash-safe
// order: a claim's mask is emptied before its bits are cleared, so a drain
// killed anywhere leaks at most one claim and never hands a cell out twice.
// `budget` (tests): a claim that would exceed that many cells is only half
// given back, as by a drain killed between its two steps. Returns the cells
// given back.
size_t DrainSlot(Arena& a, ProcSlot* ps, size_t budget = ~size_t{0});
ProcSlot* SlotAt(const Arena& a, uint32_t slot);
// Arena::Destroy: stop judging tokens against this arena's slots.
void ForgetTokenArena(const Arena* a);
SlabPool* PoolAt(const Arena& a, int cls);

// A page of `cls` whose live hint dropped to 0 is given back if its bitmap
// is clear and it is not the class's current page (takes the pool lock).
void MaybeReleasePage(Arena& a, int cls, size_t page);
// Housekeeping (timer process): recount the live hints of sparse pages from
// their bitmaps and give back the pages that are free (a crash can leave a
// hint high). `max_pages` bounds the pages looked at. Returns the pages
// given back.
size_t TidyPages(Arena& a, size_t max_pages = ~size_t{0});

// ---- automove (cache/automove.h moves the records; this is the page side) --
// A page marked *draining* gets no new claims (FindPartial skips it; the
// class's current page is never marked), so once its live cells are moved
// or freed it goes back to its group like any page that comes free. Cells a
// process had already claimed from it, or keeps on its private stack, may
// still be handed out: such a page simply does not drain in that pass.
// The mark is a hint for one mover (cache/automove.h): a mover that dies
// leaves marks, which the next one clears (ClearDrainMarks) before it starts.
struct PageLoad {
  size_t page;   // byte offset from the arena base
  int32_t live;  // live hint (bits set)
};
// The pages of `cls` in use (not the current one) with their live hints.
void ClassPages(const Arena& a, int cls, std::vector<PageLoad>* out);
// Mark these pages of `cls` draining (pool lock; pages no longer of the
// class, or now current, are skipped). Returns the pages marked.
size_t MarkDrain(Arena& a, int cls, const std::vector<size_t>& pages);
// Clear the mark of these pages (those still of the class).
void EndDrain(Arena& a, int cls, const std::vector<size_t>& pages);
// Clear every mark (a mover that died left them). Returns the pages cleared.
size_t ClearDrainMarks(Arena& a);
// Cells a claim or a private stack holds are the owner's alone: only it
// can give them back. The mover asks every live process (but `self_slot`)
// that holds a claim or stack cells of a class in `draining_cls` (a hint
// read racily: nonzero by class) to give back those in draining pages;
// the owner answers from its loop's tick (Allocator::AnswerGiveBack).
// `out`: what each asked slot must answer, for GiveBackAnswered.
struct GiveBackAsk {
  uint32_t slot;
  uint32_t owner_tid;  // the owner asked (a new owner has nothing of the old)
  uint32_t seq;        // the request it must answer
};
void AskGiveBack(Arena& a, uint32_t self_slot, const std::vector<uint8_t>& draining_cls,
                 std::vector<GiveBackAsk>* out);
// True when every asked slot answered, or its owner changed or died (an
// adopter gives everything back).
bool GiveBackAnswered(const Arena& a, const std::vector<GiveBackAsk>& asked);
// Cells every process gave back when asked, since the arena was made.
uint64_t GivenBackCells(const Arena& a);
// Whether a slab cell of class `cls` lies in a draining page (reads the
// page header; for the mover, not the read path).
inline bool CellDraining(const Arena& a, Off cell, int cls) {
  size_t page = PageOfByte(size_t{cell} * kUnit, kClassTables.order[cls]);
  const PageHeader* h = reinterpret_cast<const PageHeader*>(a.base() + page);
  return h->draining.load(std::memory_order_relaxed) != 0;
}

// Occupancy of one class (walks its pages and their bitmaps: for reports).
struct ClassUsage {
  uint64_t pages = 0, cells = 0, used = 0;  // used: bits set (live + claimed)
  uint64_t page_bytes = 0;                  // bytes of those pages
};
ClassUsage UsageOf(const Arena& a, int cls);
// Every class in one walk of the slab groups; `exact`: count the bitmaps'
// bits (else the pages' live hints: cheap enough for a /metrics scrape).
void UsageAll(const Arena& a, bool exact, ClassUsage out[kNumClasses]);
// Bytes of cells handed out and not freed, over all slots (cheap).
uint64_t CellBytesInUse(const Arena& a);
// Bytes the cell for a record of `bytes` takes: its class size, or a large
// object's run of units (mem/large.h).
inline uint64_t CellBytesFor(size_t bytes) {
  int cls = ClassFor(bytes);
  return cls >= 0 ? kClassSize[cls] : LargeUnitsFor(bytes) * kLargeUnit;
}
// What the data takes (INFO used_memory): cells in use, large objects, the
// index bytes handed out and the metadata (MetaBytes). Drops when keys go.
uint64_t UsedMemory(const Arena& a);
// The arena's metadata as laid out (header, group map, pins, page masks,
// pools, process slots, user root), not the whole groups reserved for it.
uint64_t MetaBytes(const Arena& a);
// Record the current UsedMemory as the peak if it is higher (the timer
// calls it every tick, a reader of the figure too); returns the peak.
uint64_t NoteUsedPeak(Arena& a);

}  // namespace mem
