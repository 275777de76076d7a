// perfcached — aggregate values (hashes and sets): encodings and the
// optimistic transaction every hash / set Op runs in.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A hash or a set is one record of its table (type kTypeHash / kTypeSet)
// whose value starts with an encoding byte:
//
//   pack    [1][count u32][flen varint][field][vlen varint][value] ...
//           (sets: no value part). Small aggregates: the whole thing is the
//           record's value, so a read is one seqlock-checked copy, like GET.
//   intset  [2][count u32][int64 LE] ...   sorted; sets of integers only.
//   tree    [3][root Off, 7 bytes LE][count u64]   (16 bytes) a hash trie of cells
//           in the arena, below.
//
// The tree: a hash array mapped trie over the 64-bit seeded hash of each
// field. A node at depth d routes on hash bits [5d, 5d+5); depth 12 (60
// bits) is a collision node that lists its entries. Byte 0 of a node or
// entry cell is not used (a record's byte 0 is its access byte):
//
//   node   0 -   | 1 kind=kNode | 2..3 0 | 4 bitmap u32 | 8 leafmask u32 |
//          12 0 | 16 count u64 (entries below) | 24 child Off (u64)[popcount(bitmap)]
//          A child whose bit is set in leafmask is an entry, else a node.
//          (collision node: kind=kCollide, bitmap = number of children, all
//          of them entries.)
//   entry  0 -   | 1 kind=kEntry | 2..3 0 | 4 flen u32 | 8 vlen u32 | 12 field | value
//
// Published cells are immutable, with one exception: automove links a copy
// of a cell into its live parent by one aligned store of an offset (the
// copy equal in content, its bytes fenced before the link), then bumps the
// key's version before the old cell is freed (RelocateTreeCells). A write copies the path from the root to
// the changed entry into fresh cells (O(depth), about 4 nodes at a million
// entries) and swaps the record (a new 16-byte root record) with the
// record's version as the compare: if another write got in first, the
// version differs, the fresh cells are freed and the Op runs again. The
// cells the swap made unreachable are freed by the writer that swapped.
// A reader walks the shared cells with bounds-checked relaxed loads and then
// checks the record's version is unchanged: versions never repeat for a key
// (record.h), so an unchanged version proves no cell it read was freed or
// reused meanwhile — the same proof a big-value GET uses (docs/engine.md).
// A process killed anywhere leaves the key as it was (before the swap) or as
// it would be (after it); its fresh cells leak, as a killed SET's cell does.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cache/encoding.h"
#include "cache/journal.h"
#include "cache/internal.h"
#include "cache/table.h"

namespace cache {

enum class DictEnc : uint8_t { kNone = 0, kPack = 1, kIntset = 2, kTree = 3 };



// Free a record that this process unlinked, with everything it owns (the
// cells of a tree-encoded aggregate). The one free path for records.
void FreeValue(Ctx& c, Off rec);
// The encoding of a record value (its first byte) as Redis names it.
const char* EncodingName(uint8_t type, std::string_view value);

// One optimistic transaction over one aggregate key. Usage (every Op):
//   for (;;) { Dict d(c, t, key, kTypeHash); st = d.Load(); ...reads and
//              stages...; st = d.Commit() (writes) or d.Validate() (reads);
//              if (st != kVersion) break; }
// Lookups see the staged changes. Nothing is visible to others before
// Commit; a Dict that is not committed frees what it allocated.
class Dict {
 public:
  Dict(Ctx& c, const TableRef& t, std::string_view key, uint8_t type);
  ~Dict();
  Dict(const Dict&) = delete;
  Dict& operator=(const Dict&) = delete;

  // kOk (the key holds this type), kNotFound (absent: an empty aggregate),
  // kWrongType, kStale.
  [[nodiscard]] Status Load();
  // For read-only Ops that lost kDictLocked rounds to writers of the key:
  // load under the key's bucket lock and keep it until Validate (or the
  // Dict's end), so no writer can swap the value while it is read. The
  // reader always finishes; writers of the bucket wait for one read.
  [[nodiscard]] Status LoadLocked();
  // For ops that overwrite the key whatever it holds (SINTERSTORE ...): an
  // empty aggregate that Commit publishes in place of the current value
  // (any type, freed whole), without its TTL.
  [[nodiscard]] Status LoadForReplace();
  bool exists() const { return version_ != 0; }
  uint64_t size() const;
  DictEnc encoding() const { return enc_; }
  int64_t expire_ms() const { return expire_ms_; }
  // The record's version at Load (0 = absent).
  uint64_t version() const { return version_; }
  // After LoadForReplace: the expiry the published value takes (absolute
  // ms, 0 = never; an import publishes value and TTL in one swap).
  void SetReplaceExpire(int64_t ms) { replace_expire_ms_ = ms; }
  // An import that keeps the source's version (snapshot load, WAL replay):
  // Commit publishes with version v, and only if v is newer than the key's
  // current version (kVersion if not; cache/ops.h StoreOpts::if_newer).
  void SetPublishVersion(uint64_t v) { publish_version_ = v; }
  // WAL replay of field records (db/wal_apply.h): Commit publishes with
  // version max(v, the loaded version + 1), whatever the key holds now, so
  // a merge never reuses a version. Not for a live table.
  void SetPublishVersionAtLeast(uint64_t v) {
    publish_version_ = v;
    publish_at_least_ = true;
  }
  // Commit sets the key's expiry (absolute ms, 0 = never) instead of
  // keeping it: WAL replay of field records.
  void SetExpire(int64_t ms) {
    set_expire_ = true;
    set_expire_ms_ = ms;
    dirty_ = true;
  }

  bool Find(std::string_view field, std::string* value = nullptr);
  // Stage: insert or replace; returns true when the field is new.
  bool Put(std::string_view field, std::string_view value = {});
  // Stage: remove; returns true when it was there.
  bool Remove(std::string_view field);
  // Every entry (order: the encoding's); stop by returning false.
  void ForEach(const std::function<bool(std::string_view f, std::string_view v)>& fn);
  // One step of a cursor walk (HSCAN / SSCAN). Small encodings answer all
  // entries and next = 0. A tree answers entries in hash-trie order from
  // position `cursor` until `count` entries were seen; next = 0 at the end.
  void Scan(uint64_t cursor, uint64_t count,
            const std::function<void(std::string_view f, std::string_view v)>& fn,
            uint64_t* next);
  // The entry at index i (0 <= i < size()) in this snapshot's order.
  bool At(uint64_t i, std::string* field, std::string* value);

  // Publish the staged changes (an empty result deletes the key).
  // kOk; kVersion: someone else changed the key first, run the Op again;
  // kNoMem / kTooBig / kStale.
  [[nodiscard]] Status Commit();
  // For read-only Ops: kOk if what was read is still the key's state.
  [[nodiscard]] Status Validate();
  // A torn read of shared cells was detected (only possible on a stale
  // snapshot): Validate / Commit answer kVersion.
  bool torn() const { return torn_; }

 private:
  struct Node;
  Status LoadPack(std::string_view v);
  Status LoadIntset(std::string_view v);
  void ToPack();
  void ToTree();
  bool FitsPack(std::string_view f, std::string_view v) const;
  // tree
  Off TreeInsert(Off node, int depth, uint64_t h, std::string_view f, std::string_view v,
                 bool* added);
  Off TreeRemove(Off node, int depth, uint64_t h, std::string_view f, bool* removed);
  bool TreeFind(uint64_t h, std::string_view f, std::string* value);
  bool ReadEntry(Off e, std::string* f, std::string* v);
  bool EntryIs(Off e, std::string_view f);
  Off NewEntry(std::string_view f, std::string_view v);
  Off NewNode(uint8_t kind, uint32_t bitmap, uint32_t leafmask, uint64_t count,
              const std::vector<Off>& kids);
  bool ReadNode(Off n, uint8_t* kind, uint32_t* bitmap, uint32_t* leafmask, uint64_t* count,
                std::vector<Off>* kids);
  void Retire(Off cell);
  void Walk(Off node, int depth, uint64_t prefix, uint64_t from, uint64_t* budget,
            const std::function<bool(Off entry)>& fn, uint64_t* next, bool* stop);
  bool NthEntry(Off node, uint64_t i, Off* out, int depth);
  uint64_t HashField(std::string_view f) const;

  Ctx& c_;
  TableRef t_;
  std::string key_;
  uint8_t type_;
  DictEnc enc_ = DictEnc::kNone;
  uint64_t version_ = 0;   // 0 = absent
  int64_t expire_ms_ = 0;
  bool dirty_ = false;
  bool torn_ = false;
  bool committed_ = false;
  bool replace_ = false;
  int64_t replace_expire_ms_ = 0;
  uint64_t publish_version_ = 0;  // 0: the next version (the usual case)
  bool publish_at_least_ = false;
  bool set_expire_ = false;
  int64_t set_expire_ms_ = 0;
  // Ctx::dict_journal: the entries staged, last value wins (Note).
  std::vector<std::pair<std::string, std::optional<std::string>>> delta_;
  std::unordered_map<std::string, size_t> delta_at_;
  void Note(std::string_view field, const std::string_view* value);
  void Journal(bool whole, uint64_t version, int64_t expire_ms);
  bool alloc_failed_ = false;
  bool locked_ = false;
  detail::KeyLock klock_;
  Status ParseValue();
  void Unlock();
  DictLimits lim_;
  // pack / intset: entries as views into buf_ or owned_ (stable storage)
  std::string buf_;
  std::deque<std::string> owned_;
  std::vector<std::pair<std::string_view, std::string_view>> pack_;
  std::vector<int64_t> ints_;
  // tree
  Off root_ = 0;
  uint64_t count_ = 0;
  std::unordered_set<Off> fresh_;  // cells this Dict allocated (private)
  std::vector<Off> retired_;       // shared cells made unreachable
};

// Copies of aggregate keys (RENAME across tables, COPY, MOVE: key_ops.cc).
// A tree-encoded value names shared cells, so a second key needs its own.
bool IsTreeValue(uint8_t type, std::string_view value);
inline constexpr size_t kTreeValue = 16;  // a tree value's bytes in its record
// Deep copy of a tree value into private cells: kOk and *out = the new
// 16-byte value; kVersion when a read was torn (the source key changed:
// read it again); kNoMem. The caller validates the source's version after.
[[nodiscard]] Status CloneTreeValue(Ctx& c, std::string_view value, std::string* out);
// Free a private tree value (a clone whose store failed).
void FreeTreeValue(Ctx& c, std::string_view value);

// Automove (cache/automove.cc) moves the cells of a trie out of marked
// pages by a path copy, as a write does: the cells to move and every node
// above one get fresh cells, the rest is shared.
// FindTreeCells: the look, with no lock (bounds-checked relaxed loads: a
// walk of a trie being freed stays in the arena and ends): each cell
// moving() picks and each node above one go into *path. At most
// max_cells cells are visited; false when the walk was cut short or met
// a cell that does not parse (then *path means nothing).
bool FindTreeCells(const Ctx& c, std::string_view value, const std::function<bool(Off)>& moving,
                   uint64_t max_cells, std::unordered_set<Off>* path);
// RelocateTreeCells: under the key's lock, guided by the look's path (it
// reads the trie as it is now: a stale path only leaves cells unmoved).
// Each cell to move gets a fresh cell from alloc(bytes, &off), all of them
// before anything changes; then each copy is linked where its old cell
// was: into its parent's copy, or into a parent that stays by one store in
// place (readers see the old cell or its copy, equal in content). *out =
// the value with the root that stands now (the old one unless the root
// moved). The caller must then publish a new version of the key (inside
// its seqlock bracket) BEFORE it frees *replaced, the old cells: readers
// that walked them fail their version check. kOk; kNotFound: nothing to
// move; kNoMem (nothing changed, the fresh cells are freed); kInvalid.
[[nodiscard]] Status RelocateTreeCells(Ctx& c, std::string_view value, const std::unordered_set<Off>& path,
                                       const std::function<bool(Off)>& moving,
                                       const std::function<Status(size_t, Off*)>& alloc, std::string* out,
                                       std::vector<Off>* made, std::vector<Off>* replaced);

// Run one Dict Op until it is not beaten by another writer (kVersion).
// The body may take the attempt number: read-only Ops load with
// Dict::LoadLocked from attempt kDictLocked on, so a reader of a key that
// is written non-stop still finishes.
inline constexpr int kDictRetries = 100000;
inline constexpr int kDictLocked = 16;
void DictBackoff(int attempt);
template <class F>
Status RunDict(F&& body) {
  for (int i = 0; i < kDictRetries; ++i) {
    Status s;
    if constexpr (std::is_invocable_v<F, int>) {
      s = body(i);
    } else {
      s = body();
    }
    if (s != Status::kVersion) return s;
    DictBackoff(i);
  }
  return Status::kBusy;
}
// A random 64-bit number (per-thread splitmix64, seeded at first use and
// again in a forked child, so workers do not share one sequence).
uint64_t DictRandom();

// Audit support (cache/audit.cc): walk a tree-encoded value, calling
// mark(cell) for every cell; false and *err on a structural defect.
bool WalkDictCells(const Ctx& c, std::string_view value, const std::function<void(Off)>& mark,
                   std::string* err, uint64_t* entries);

}  // namespace cache
