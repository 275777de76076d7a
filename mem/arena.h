// perfcached — the shared-memory arena: one mapping made before fork.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The arena is one MAP_SHARED mapping created by the supervisor before it
// forks, so every process sees it at the same address. Inside it, memory is
// handed out in 2 MiB *groups*; everything else (slab chunks, large objects,
// index regions) is carved from groups.
//
//   base                                                        base + cap
//   +-----------+-----------------------+---------+----//----+----------+
//   | group 0.. | meta: header, group   | group k | group .. | reserved |
//   | ArenaHdr  | map, slab pools, proc | (slab / | (large / | (not yet |
//   |           | slots  (kMeta groups) | region) |  free)   | faulted) |
//   +-----------+-----------------------+---------+----//----+----------+
//   <------------- populated (faulted, maybe mlocked) ------><-- cap -->
//
// Slab groups are split into pages of one size (mem/page.h); a group whose
// pages all come free goes back to the group allocator, so memory freed in
// one size class serves any other (or a large object, or the index).
//
// Sizes: `cap` bytes of address space are reserved (arena_cap_mb); the first
// `commit` bytes (arena_mb) are pre-faulted at start; the populated prefix
// grows by whole groups under pressure (MADV_POPULATE_WRITE, so a hugetlb
// shortage is an error code, never a SIGBUS). Groups that come free (a
// slab group's last page, a kLarge group's last unit) are given back to the
// kernel (MADV_REMOVE) except on the hugetlb tier.
//
// Links inside the arena are offsets in 8-byte units (Off), from the arena
// base: bounds-checkable before a lock-free reader follows one. A bucket
// stores them in 40 bits (a 32-bit word and a byte), which lets a 64-byte
// bucket hold 9 positions and reach 1 TiB (docs/memory.md, "Arenas up to
// 1 TiB").
//
// Hugepage tier ladder, detected by trying (never by kernel version):
//   1 hugetlb   MAP_HUGETLB (needs vm.nr_overcommit_hugepages or a pool)
//   2 thp       shmem THP via MADV_HUGEPAGE on a 2 MiB-congruent mapping
//   3 collapse  MADV_COLLAPSE after faulting (verified in /proc/meminfo)
//   4 small     plain 4 KiB pages

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "mem/lock.h"
#include "mem/status.h"

namespace mem {

inline constexpr uint64_t kArenaMagic = 0x48434143'46524550ull;  // "PERFCACH"
// 2: 48-bit record versions, table floor; 3: large pins; 4: slab pages with
// in-use bitmaps (mem/page.h), page masks, groups freed back from slabs;
// 5: a cell's class comes from its page header, record byte 0 and the top
// of byte 1 are its access field (cache/record.h, cache/access.h);
// 6: page draining mark and per-class move counters (automove); the
// route word carries a change count (cache/internal.h NextRoute);
// 7: large objects in runs of 32 KiB units (mem/large.h): unit masks
// replace the per-group pins, kLarge replaces kLargeHead / kLargeCont;
// 8: 40-bit offsets (Off is 64 bits in memory and in every stored link,
// a bucket has 9 positions of a 32-bit low word and a high byte, up to 1 TiB);
// 9: a table's directory grows in chunks past 2^25 buckets (cache/catalog.h
// TableHeader::dir_ext), up to 2^32;
// 10: a process slot's give-back request and answer (mem/slab.h ProcSlot)
inline constexpr uint32_t kArenaLayoutVersion = 10;
inline constexpr size_t kGroupSize = 2u << 20;  // 2 MiB
inline constexpr size_t kUnit = 8;              // Off granularity
inline constexpr size_t kMaxArenaBytes = size_t{1} << 40;  // 1 TiB (an Off below 2^37)
inline constexpr uint32_t kMaxProcs = 256;

// Offset from the arena base in kUnit units; 0 is null (the header is there).
// Below 2^37 (kMaxArenaBytes / kUnit). Stored as 64 bits everywhere except a
// bucket's positions (cache/bucket.h: a 32-bit word and a high byte).
using Off = uint64_t;

enum class Tier : uint8_t { kNone = 0, kHugetlb = 1, kThp = 2, kCollapse = 3, kSmall = 4 };
const char* TierName(Tier t);

struct ArenaOptions {
  size_t arena_mb = 256;      // committed (pre-faulted) at start
  size_t arena_cap_mb = 0;    // reserved address space; 0 = same as arena_mb
  Tier best_tier = Tier::kHugetlb;  // try the ladder from here down
  bool prefault = true;       // pre-fault the committed part
  bool lock_memory = false;   // mlock committed memory (warn when refused)
  size_t max_value = 512u << 20;  // largest value a record may hold
  uint32_t max_procs = 64;    // process slots (allocator + stats lines)
  // Called while the committed part is faulted in at start: once before
  // the first step (done = the bytes already there), after every
  // `progress_step` bytes, and once at the end (done == total). mem/ only
  // counts; the caller decides what to say (proc/daemon.cc logs it).
  std::function<void(size_t done, size_t total)> progress;
  size_t progress_step = 256u << 20;  // bytes faulted per step (a multiple of kGroupSize)
};

// Group map entry: kind in the top byte; below it the run length (a
// region run) or the page order (kSlab). A kLarge group is carved in 32 KiB
// units for large objects (mem/large.h); its unit masks say which.
enum class GroupKind : uint8_t { kFree = 0, kMeta, kRegion, kSlab, kLarge, kReleased };

// A kLarge group's units (mem/large.h): bit i = unit i (32 KiB at group
// start + i * 32 KiB). `used`: the unit belongs to a large object; `heads`:
// an object starts there (its LargeHeader). heads is a subset of used.
// Written under group_lock only; read lock-free (heads) by ClassifyCell.
struct UnitMasks {
  std::atomic<uint64_t> used;
  std::atomic<uint64_t> heads;
};
static_assert(sizeof(UnitMasks) == 16);

// The arena header: first bytes of the mapping. An API: fixed layout.
struct ArenaHeader {
  uint64_t magic;                 // kArenaMagic
  uint32_t layout_version;        // kArenaLayoutVersion
  uint32_t header_bytes;          // sizeof(ArenaHeader)
  uint64_t base_addr;             // where it is mapped in every process
  uint64_t cap_bytes;             // reserved
  uint64_t commit_bytes;          // asked to be committed at start
  std::atomic<uint64_t> populated_bytes;  // faulted prefix; readers bound-check
  std::atomic<uint64_t> released_bytes;   // given back with MADV_REMOVE
  uint32_t ngroups;               // cap / kGroupSize
  uint32_t meta_groups;           // groups 0..meta_groups-1 hold metadata
  uint32_t max_procs;
  uint8_t tier;                   // Tier achieved
  uint8_t locked;                 // 1 when mlock succeeded
  uint8_t pad0[2];
  uint64_t max_value;
  // -- offsets of the metadata blocks (bytes from base) --
  uint64_t group_map_off;         // u32[ngroups]
  uint64_t pools_off;             // SlabPool[kNumClasses]
  uint64_t slots_off;             // ProcSlot[max_procs]
  uint64_t user_off;              // 4 KiB for cache/ (catalog root)
  uint64_t units_off;             // UnitMasks[ngroups]: a kLarge group's units
  // -- group allocator (under group_lock) --
  ShmLock group_lock;
  uint32_t hwm_groups;            // groups ever handed out (incl. meta)
  uint64_t page_cls_off;          // u8[ngroups * 32]: per 64 KiB of arena, class + 1 of
                                  // the slab page there, 0 = none (mem/page.h)
  uint32_t region_group;          // region group being carved
  uint32_t region_pos;
  std::atomic<uint64_t> large_bytes;    // bytes of live large objects' runs (units x 32 KiB)
  std::atomic<uint64_t> large_objects;
  std::atomic<uint64_t> slab_pages;     // slab pages in use (all classes)
  std::atomic<uint64_t> region_bytes;
  std::atomic<uint64_t> nomem_events;   // allocation refusals (arena full)
  uint64_t page_masks_off;        // u32[ngroups]: a slab group's pages in use (mem/page.h)
  uint32_t free_pages[8];         // per page order: free pages in slab groups (hint)
  uint32_t page_scan[8];          // per page order: group where the search resumes
  std::atomic<uint64_t> groups_returned;  // slab groups whose pages all came free
  std::atomic<uint64_t> freed_bytes;      // cell bytes freed with no process slot (sweeps)
  std::atomic<uint64_t> used_peak;        // highest UsedMemory seen (slab.h NoteUsedPeak)
  std::atomic<uint64_t> region_used;      // index bytes handed out (region_bytes: their groups)
  char tier_note[320];            // why this tier, and how to reach a better one
};
static_assert(std::is_standard_layout_v<ArenaHeader>);
static_assert(offsetof(ArenaHeader, magic) == 0);
static_assert(offsetof(ArenaHeader, populated_bytes) % 8 == 0);
static_assert(offsetof(ArenaHeader, units_off) == 112);
static_assert(offsetof(ArenaHeader, page_masks_off) == 184);
static_assert(offsetof(ArenaHeader, page_cls_off) == 128);
static_assert(sizeof(ArenaHeader) <= 640);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

class Arena {
 public:
  // Map and initialise a new arena. Returns nullptr and fills *err on failure.
  static Arena* Create(const ArenaOptions& o, std::string* err);
  // Unmap (tests only; the daemon never unmaps while it runs).
  static void Destroy(Arena* a);

  char* base() const { return base_; }
  ArenaHeader* hdr() const { return reinterpret_cast<ArenaHeader*>(base_); }
  Tier tier() const { return static_cast<Tier>(hdr()->tier); }
  const char* tier_note() const { return hdr()->tier_note; }

  // Offset <-> pointer. Off is in kUnit units.
  char* At(Off off) const { return base_ + static_cast<size_t>(off) * kUnit; }
  Off OffOf(const void* p) const {
    return static_cast<Off>((static_cast<const char*>(p) - base_) / kUnit);
  }
  // A lock-free reader's check before following a link: inside the
  // populated part, past the metadata. Returns the bytes readable from there.
  size_t ReadableFrom(Off off) const {
    size_t b = static_cast<size_t>(off) * kUnit;
    size_t pop = hdr()->populated_bytes.load(std::memory_order_acquire);
    if (b < meta_end_ || b >= pop) return 0;
    return pop - b;
  }
  void* UserRoot() const { return base_ + hdr()->user_off; }

  // Group allocator (takes group_lock). n contiguous groups of `kind`.
  // Returns the first group index, or -1 when the arena is full.
  int64_t AllocGroups(uint32_t n, GroupKind kind);
  int64_t AllocGroupsLocked(uint32_t n, GroupKind kind);  // group_lock held
  // Tests only: take the next n groups as one region run *without faulting
  // them in* (no memory is used), so that what is allocated next lies above
  // them: how tests reach offsets beyond 32 GiB on a small machine. Returns
  // the first group, or -1 when they do not fit under the cap.
  int64_t SkipGroupsForTest(uint32_t n);
  // The group lock for callers in mem/ (slab pages): a dead holder's
  // half-done work is repaired first.
  void LockGroups();
  void UnlockGroups() { Unlock(hdr()->group_lock); }
  // group_lock held: give one group back (to the OS too, except on hugetlb).
  void FreeGroupLocked(uint32_t g);
  void SetGroupEntryLocked(uint32_t g, GroupKind k, uint32_t run) {
    __atomic_store_n(group_map_ + g, (static_cast<uint32_t>(k) << 24) | (run & 0xFFFFFF), __ATOMIC_RELEASE);
  }
  // A slab group's page mask: bit i = page i in use (writes under group_lock).
  std::atomic<uint32_t>& PageMaskOf(uint32_t g) const {
    return reinterpret_cast<std::atomic<uint32_t>*>(base_ + hdr()->page_masks_off)[g];
  }
  // The page class map: one byte per 64 KiB of arena (writes under group_lock).
  uint8_t* PageClassMap() const { return cls_map_; }
  // group_lock taken over from a dead holder: large-object units that no
  // head covers, and kLarge groups left empty, are freed (an allocation or
  // a free killed mid-way, mem/large.h); then slab pages (mem/page.h).
  uint32_t RepairGroupsLocked();
  uint32_t GroupEntry(uint32_t g) const {     // atomic read of the group map
    return __atomic_load_n(group_map_ + g, __ATOMIC_ACQUIRE);
  }
  // group_lock held: group g (free, released, or the one at the high-water
  // mark) populated and kFree, ready to be given a kind. False when the
  // memory cannot be had (counted in nomem_events); nothing changed then.
  bool ReadyGroupLocked(uint32_t g);
  // A kLarge group's unit masks (mem/large.h).
  UnitMasks& UnitsOf(uint32_t g) const { return reinterpret_cast<UnitMasks*>(base_ + hdr()->units_off)[g]; }
  static GroupKind EntryKind(uint32_t e) { return static_cast<GroupKind>(e >> 24); }
  static uint32_t EntryRun(uint32_t e) { return e & 0xFFFFFF; }

  // Index memory for cache/: 64-byte aligned, zeroed, from region groups.
  // Never freed (cache/ keeps its own free lists for reuse).
  Off RegionAlloc(size_t bytes);

  size_t cap_bytes() const { return hdr()->cap_bytes; }
  size_t populated_bytes() const { return hdr()->populated_bytes.load(); }
  size_t committed_bytes() const {
    return hdr()->populated_bytes.load() - hdr()->released_bytes.load();
  }
  size_t used_bytes() const;   // groups handed out (minus free ones) in bytes

 private:
  Arena() = default;
  bool PopulateLocked(size_t upto);  // extend populated prefix to `upto`

  char* base_ = nullptr;
  size_t map_bytes_ = 0;
  size_t meta_end_ = 0;
  uint32_t* group_map_ = nullptr;
  uint8_t* cls_map_ = nullptr;  // base_ + page_cls_off
};

}  // namespace mem
