// perfcached — aggregate values: pack / intset / trie encodings and the
// optimistic Dict transaction (layouts and the proof in cache/dict.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/dict.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "cache/hash.h"
#include "cache/internal.h"
#include "cache/number.h"
#include "mem/canary.h"

namespace cache {

using namespace detail;

namespace {

constexpr uint8_t kNode = 0xA1, kCollide = 0xA2, kEntry = 0xA3;
constexpr size_t kNodeHdr = 24, kEntryHdr = 12;
constexpr size_t kOffKind = 1, kOffBitmap = 4, kOffLeaf = 8, kOffCount = 16;
constexpr size_t kEntFlen = 4, kEntVlen = 8;
constexpr int kLeafDepth = 12;               // 60 bits of hash, then a collision node
constexpr uint32_t kMaxCollide = 4096;       // bound on a collision node (cell size)
constexpr uint64_t kFieldSeedMix = 0x5DEECE66DA3B2F1Full;

inline uint32_t Digit(uint64_t h, int depth) { return static_cast<uint32_t>(h >> (5 * depth)) & 31; }
// Positions (cursors) of a trie: digit 0 most significant, 12 digits.
inline uint64_t Span(int depth) { return uint64_t{1} << (5 * (kLeafDepth - depth)); }

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
bool GetVarint(std::string_view s, size_t* pos, uint64_t* v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    r |= uint64_t{b & 0x7Fu} << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

bool CanonicalInt(std::string_view s, int64_t* v) { return cache::ParseInt64(s, v); }

std::string IntText(int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }

}  // namespace

// ---- limits ------------------------------------------------------------------

namespace {
void ToWords(const DictLimits& l, uint32_t w[8]) {
  w[0] = l.hash_pack_entries;
  w[1] = l.hash_pack_value;
  w[2] = l.set_intset_entries;
  w[3] = l.set_pack_entries;
  w[4] = l.set_pack_value;
  w[5] = static_cast<uint32_t>(l.list_pack_size);
  w[6] = l.zset_pack_entries;
  w[7] = l.zset_pack_value;
}
}  // namespace

void InitDictLimits(Catalog* cat) {
  uint32_t w[8];
  ToWords(DictLimits{}, w);
  for (int i = 0; i < 8; ++i) cat->dict_limits[i].store(w[i], std::memory_order_relaxed);
}

DictLimits GetDictLimits(const Ctx& c) {
  uint32_t w[8];
  for (int i = 0; i < 8; ++i) w[i] = c.catalog->dict_limits[i].load(std::memory_order_relaxed);
  DictLimits d;
  d.hash_pack_entries = w[0];
  d.hash_pack_value = w[1];
  d.set_intset_entries = w[2];
  d.set_pack_entries = w[3];
  d.set_pack_value = w[4];
  d.list_pack_size = static_cast<int32_t>(w[5]);
  d.zset_pack_entries = w[6];
  d.zset_pack_value = w[7];
  return d;
}

void SetDictLimits(Ctx& c, const DictLimits& l) {
  uint32_t w[8];
  ToWords(l, w);
  for (int i = 0; i < 8; ++i) c.catalog->dict_limits[i].store(w[i], std::memory_order_relaxed);
}

void DictBackoff(int attempt) {
  if (attempt > 4) sched_yield();
}

namespace {
thread_local uint64_t t_random = 0;  // 0: not seeded in this process yet

void ReseedAfterFork() { t_random = 0; }

uint64_t SeedRandom() {
  static const bool registered = pthread_atfork(nullptr, nullptr, ReseedAfterFork) == 0;
  (void)registered;
  std::random_device dev;
  uint64_t s = (uint64_t{dev()} << 32) ^ dev();
  return s ? s : 1;
}
}  // namespace

// splitmix64: a few instructions a number (eviction draws dozens a
// sample; the mersenne twister it replaced was 4.6% of a worker's
// instructions under allkeys-lru). Each forked process seeds its own.
uint64_t DictRandom() {
  if (t_random == 0) [[unlikely]] t_random = SeedRandom();
  uint64_t z = (t_random += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// ---- freeing -------------------------------------------------------------------

namespace {

// Free every cell of a tree this process owns (unlinked or private).
void FreeTree(Ctx& c, Off root) {
  std::vector<Off> stack{root};
  const mem::Arena& a = c.arena;
  uint64_t guard = uint64_t{1} << 40;
  while (!stack.empty() && guard-- > 0) {
    Off n = stack.back();
    stack.pop_back();
    size_t bound = mem::CellBound(a, n);
    if (n == 0 || bound < kEntryHdr) continue;
    const char* p = a.At(n);
    uint8_t kind = mem::LoadRelaxed8(p + kOffKind);
    if ((kind == kNode || kind == kCollide) && bound >= kNodeHdr) {
      uint32_t bm = mem::LoadRelaxed32(p + kOffBitmap);
      uint32_t nk = kind == kNode ? static_cast<uint32_t>(__builtin_popcount(bm)) : bm;
      if (nk > (bound - kNodeHdr) / 8) nk = static_cast<uint32_t>((bound - kNodeHdr) / 8);
      for (uint32_t i = 0; i < nk; ++i) stack.push_back(mem::LoadOff(p + kNodeHdr + 8 * i));
    }
    c.alloc.Free(n);
  }
}

bool TreeRoot(std::string_view v, Off* root, uint64_t* count) {
  if (v.size() != kTreeValue || static_cast<uint8_t>(v[0]) != static_cast<uint8_t>(DictEnc::kTree)) {
    return false;
  }
  uint64_t w = 0;  // 7 bytes, little-endian (an Off is below 2^37)
  std::memcpy(&w, v.data() + 1, 7);
  *root = w;
  std::memcpy(count, v.data() + 8, 8);
  return true;
}

}  // namespace

void FreeValue(Ctx& c, Off rec) {
  if (rec == 0) return;
  const mem::Arena& a = c.arena;
  RecView r{a.At(rec)};
  uint8_t type = r.type();
  if ((type == kTypeHash || type == kTypeSet) && !PC_CANARY(7)) {
    size_t bound = mem::CellBound(a, rec);
    size_t voff = ValueOffset(type, r.klen());
    if (voff + kTreeValue <= bound && r.vlen() == kTreeValue) {
      char v[kTreeValue];
      mem::AtomicCopyOut(v, r.value(type, r.klen()), kTreeValue);
      Off root;
      uint64_t count;
      if (TreeRoot(std::string_view(v, kTreeValue), &root, &count)) FreeTree(c, root);
    }
  }
  c.alloc.Free(rec);
}

bool IsTreeValue(uint8_t type, std::string_view value) {
  Off root;
  uint64_t count;
  return (type == kTypeHash || type == kTypeSet) && TreeRoot(value, &root, &count);
}

void FreeTreeValue(Ctx& c, std::string_view value) {
  Off root;
  uint64_t count;
  if (TreeRoot(value, &root, &count)) FreeTree(c, root);
}

namespace {

// Copy the subtree at n into fresh cells (collected in *made). 0 on a torn
// read or a failed allocation (*nomem says which).
Off CloneCell(Ctx& c, Off n, int depth, std::vector<Off>* made, bool* nomem) {
  const mem::Arena& a = c.arena;
  size_t bound = mem::CellBound(a, n);
  if (n == 0 || bound < kEntryHdr || depth > kLeafDepth + 1) return 0;
  const char* p = a.At(n);
  uint8_t kind = mem::LoadRelaxed8(p + kOffKind);
  size_t bytes;
  std::vector<Off> kids;
  if (kind == kEntry) {
    size_t fl = mem::LoadRelaxed32(p + kEntFlen), vl = mem::LoadRelaxed32(p + kEntVlen);
    if (fl > bound - kEntryHdr || vl > bound - kEntryHdr - fl) return 0;
    bytes = kEntryHdr + fl + vl;
  } else if ((kind == kNode || kind == kCollide) && bound >= kNodeHdr) {
    uint32_t bm = mem::LoadRelaxed32(p + kOffBitmap);
    uint32_t nk = kind == kNode ? static_cast<uint32_t>(__builtin_popcount(bm)) : bm;
    if (nk > (bound - kNodeHdr) / 8) return 0;
    bytes = kNodeHdr + 8 * size_t{nk};
    for (uint32_t i = 0; i < nk; ++i) {
      Off k = CloneCell(c, mem::LoadOff(p + kNodeHdr + 8 * i), depth + 1, made, nomem);
      if (k == 0) return 0;
      kids.push_back(k);
    }
  } else {
    return 0;
  }
  Off out;
  if (c.alloc.Alloc(bytes, &out) != Status::kOk) {
    *nomem = true;
    return 0;
  }
  made->push_back(out);
  char* q = c.arena.At(out);
  // Bytes 1.. of the cell (byte 0 is the new cell's class).
  std::string tmp((kind == kEntry ? bytes : kNodeHdr) - 1, '\0');
  mem::AtomicCopyOut(tmp.data(), p + 1, tmp.size());
  mem::AtomicCopyIn(q + 1, tmp.data(), tmp.size());
  for (size_t i = 0; i < kids.size(); ++i) mem::StoreOff(q + kNodeHdr + 8 * i, kids[i]);
  return out;
}

}  // namespace

namespace {

// A cell's kind, its bytes and (for a node) its children; false when it
// does not parse.
bool ReadCell(const mem::Arena& a, Off n, uint8_t* kind, size_t* bytes, std::vector<Off>* kids) {
  size_t bound = mem::CellBound(a, n);
  kids->clear();
  if (n == 0 || bound < kEntryHdr) return false;
  const char* p = a.At(n);
  *kind = mem::LoadRelaxed8(p + kOffKind);
  if (*kind == kEntry) {
    size_t fl = mem::LoadRelaxed32(p + kEntFlen), vl = mem::LoadRelaxed32(p + kEntVlen);
    if (fl > bound - kEntryHdr || vl > bound - kEntryHdr - fl) return false;
    *bytes = kEntryHdr + fl + vl;
    return true;
  }
  if ((*kind != kNode && *kind != kCollide) || bound < kNodeHdr) return false;
  uint32_t bm = mem::LoadRelaxed32(p + kOffBitmap);
  uint32_t nk = *kind == kNode ? static_cast<uint32_t>(__builtin_popcount(bm)) : bm;
  if (nk > (bound - kNodeHdr) / 8) return false;
  *bytes = kNodeHdr + 8 * size_t{nk};
  for (uint32_t i = 0; i < nk; ++i) kids->push_back(mem::LoadOff(p + kNodeHdr + 8 * i));
  return true;
}

// FindTreeCells below n: true when a cell to move lies there.
bool FindBelow(const mem::Arena& a, Off n, int depth, const std::function<bool(Off)>& moving, uint64_t* budget,
               std::unordered_set<Off>* path, bool* ok) {
  if (!*ok) return false;
  if (*budget == 0 || depth > kLeafDepth + 1) return *ok = false;
  --*budget;
  uint8_t kind;
  size_t bytes;
  std::vector<Off> kids;
  if (!ReadCell(a, n, &kind, &bytes, &kids)) return *ok = false;
  bool any = moving(n);
  for (Off k : kids) any |= FindBelow(a, k, depth + 1, moving, budget, path, ok);
  if (any && *ok) path->insert(n);
  return any && *ok;
}

// The cells of the trie below n, along `path`, that moving() picks.
bool CollectMoving(const mem::Arena& a, Off n, int depth, const std::unordered_set<Off>& path,
                   const std::function<bool(Off)>& moving, std::vector<std::pair<Off, size_t>>* out) {
  if (!path.count(n)) return true;
  uint8_t kind;
  size_t bytes;
  std::vector<Off> kids;
  if (depth > kLeafDepth + 1 || !ReadCell(a, n, &kind, &bytes, &kids)) return false;
  if (moving(n)) out->emplace_back(n, bytes);
  for (Off k : kids) {
    if (!CollectMoving(a, k, depth + 1, path, moving, out)) return false;
  }
  return true;
}

// RelocateTreeCells below n, with a fresh cell ready for each moving one
// (`copies`): the cell that stands for n now (its copy, or n). A node that
// stays gets its children's copies stored in place (each one store of a
// whole Off: a reader sees the old cell or its copy, equal in content).
Off RelocateBelow(Ctx& c, Off n, int depth, const std::unordered_set<Off>& path,
                  const std::unordered_map<Off, Off>& copies, std::vector<Off>* replaced) {
  if (!path.count(n)) return n;
  uint8_t kind;
  size_t bytes;
  std::vector<Off> kids;
  if (depth > kLeafDepth + 1 || !ReadCell(c.arena, n, &kind, &bytes, &kids)) return n;  // read before: not reached
  std::vector<Off> was = kids;
  for (Off& k : kids) k = RelocateBelow(c, k, depth + 1, path, copies, replaced);
  auto it = copies.find(n);
  if (it == copies.end()) {
    char* p = c.arena.At(n);
    // The copies' bytes are visible before the link that leads to them
    // (a reader that loads the new offset reads the copy, never what the
    // cell held before: weakly ordered CPUs; review, session 20).
    std::atomic_thread_fence(std::memory_order_release);
    for (size_t i = 0; i < kids.size(); ++i) {
      if (kids[i] != was[i]) mem::StoreOff(p + kNodeHdr + 8 * i, kids[i]);
    }
    return n;
  }
  char* q = c.arena.At(it->second);
  // Bytes 1.. of the cell (byte 0 is the new cell's class), then the
  // children the copy names; the copy is private until linked.
  std::string tmp((kind == kEntry ? bytes : kNodeHdr) - 1, '\0');
  mem::AtomicCopyOut(tmp.data(), c.arena.At(n) + 1, tmp.size());
  mem::AtomicCopyIn(q + 1, tmp.data(), tmp.size());
  for (size_t i = 0; i < kids.size(); ++i) mem::StoreOff(q + kNodeHdr + 8 * i, kids[i]);
  replaced->push_back(n);
  return it->second;
}

}  // namespace

bool FindTreeCells(const Ctx& c, std::string_view value, const std::function<bool(Off)>& moving,
                   uint64_t max_cells, std::unordered_set<Off>* path) {
  Off root;
  uint64_t count;
  path->clear();
  if (!TreeRoot(value, &root, &count)) return false;
  bool ok = true;
  uint64_t budget = max_cells;
  (void)FindBelow(c.arena, root, 0, moving, &budget, path, &ok);
  if (!ok) path->clear();
  return ok;
}

Status RelocateTreeCells(Ctx& c, std::string_view value, const std::unordered_set<Off>& path,
                         const std::function<bool(Off)>& moving, const std::function<Status(size_t, Off*)>& alloc,
                         std::string* out, std::vector<Off>* made, std::vector<Off>* replaced) {
  Off root;
  uint64_t count;
  made->clear();
  replaced->clear();
  if (!TreeRoot(value, &root, &count)) return Status::kInvalid;
  // Every fresh cell first: a failed allocation changes nothing.
  std::vector<std::pair<Off, size_t>> todo;
  if (!CollectMoving(c.arena, root, 0, path, moving, &todo)) return Status::kInvalid;
  if (todo.empty()) return Status::kNotFound;
  std::unordered_map<Off, Off> copies;
  for (const auto& [n, bytes] : todo) {
    Off o = 0;
    Status st = alloc(bytes, &o);
    if (st != Status::kOk) {
      for (Off m : *made) c.alloc.Free(m);
      made->clear();
      return st;
    }
    made->push_back(o);
    copies.emplace(n, o);
  }
  Off nr = RelocateBelow(c, root, 0, path, copies, replaced);
  out->assign(value);
  std::memcpy(out->data() + 1, &nr, 7);
  return Status::kOk;
}

Status CloneTreeValue(Ctx& c, std::string_view value, std::string* out) {
  Off root;
  uint64_t count;
  if (!TreeRoot(value, &root, &count)) return Status::kInvalid;
  std::vector<Off> made;
  bool nomem = false;
  Off copy = CloneCell(c, root, 0, &made, &nomem);
  if (copy == 0) {
    for (Off o : made) c.alloc.Free(o);
    return nomem ? Status::kNoMem : Status::kVersion;
  }
  out->assign(value);
  std::memcpy(out->data() + 1, &copy, 7);
  return Status::kOk;
}

const char* EncodingName(uint8_t type, std::string_view value) {
  if (value.empty()) return "unknown";
  switch (static_cast<DictEnc>(value[0])) {
    case DictEnc::kPack: return "listpack";
    case DictEnc::kIntset: return type == kTypeSet ? "intset" : "unknown";
    case DictEnc::kTree: return "hashtable";
    default: return "unknown";
  }
}

// ---- Dict: load ------------------------------------------------------------------

Dict::Dict(Ctx& c, const TableRef& t, std::string_view key, uint8_t type)
    : c_(c), t_(t), key_(key), type_(type) {}

Dict::~Dict() {
  Unlock();
  if (!committed_) {
    for (Off o : fresh_) c_.alloc.Free(o);
  }
}

uint64_t Dict::HashField(std::string_view f) const {
  return HashKey(f, c_.catalog->seed ^ kFieldSeedMix);
}

Status Dict::Load() {
  lim_ = GetDictLimits(c_);
  ReadInfo ri;
  if (buf_.size() < 256) buf_.resize(256);
  Status s = Status::kBusy;
  for (int i = 0; i < 16; ++i) {
    s = Get(c_, t_, key_, std::span<char>(buf_.data(), buf_.size()), &ri);
    if (s != Status::kBufferTooSmall) break;
    buf_.resize(ri.vlen);
  }
  if (s == Status::kNotFound) return s;
  if (s != Status::kOk) return s == Status::kBufferTooSmall ? Status::kBusy : s;
  if (ri.type != type_) return Status::kWrongType;
  buf_.resize(ri.vlen);
  version_ = ri.version;
  expire_ms_ = ri.expire_ms;
  return ParseValue();
}

Status Dict::LoadLocked() {
  lim_ = GetDictLimits(c_);
  TableHeader& h = *t_.h;
  if (!detail::LockKey(c_, h, detail::HashOf(c_, key_), key_, &klock_)) return Status::kStale;
  locked_ = true;
  if (!detail::Live(h, t_)) {
    Unlock();
    return Status::kStale;
  }
  const mem::Arena& a = c_.arena;
  if (klock_.rec == 0) return Status::kNotFound;
  RecView r{a.At(klock_.rec)};
  int64_t exp = r.expire();
  if (exp != 0 && exp <= NowMs(c_)) return Status::kNotFound;
  if (r.type() != type_) return Status::kWrongType;
  size_t bound = mem::CellBound(a, klock_.rec), voff = ValueOffset(type_, r.klen());
  if (voff > bound || r.vlen() > bound - voff) return Status::kInvalid;
  buf_.resize(r.vlen());
  mem::AtomicCopyOut(buf_.data(), r.value(type_, r.klen()), buf_.size());
  version_ = r.version();
  expire_ms_ = exp;
  return ParseValue();
}

void Dict::Unlock() {
  if (locked_) detail::UnlockKey(*t_.h, klock_);
  locked_ = false;
}

Status Dict::ParseValue() {
  std::string_view v(buf_);
  if (v.empty()) return Status::kInvalid;
  switch (static_cast<DictEnc>(v[0])) {
    case DictEnc::kPack: return LoadPack(v);
    case DictEnc::kIntset: return LoadIntset(v);
    case DictEnc::kTree:
      enc_ = DictEnc::kTree;
      return TreeRoot(v, &root_, &count_) ? Status::kOk : Status::kInvalid;
    default: return Status::kInvalid;
  }
}

Status Dict::LoadPack(std::string_view v) {
  enc_ = DictEnc::kPack;
  if (v.size() < 5) return Status::kInvalid;
  uint32_t n;
  std::memcpy(&n, v.data() + 1, 4);
  size_t pos = 5;
  pack_.clear();
  pack_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t fl, vl = 0;
    if (!GetVarint(v, &pos, &fl) || fl > v.size() - pos) return Status::kInvalid;
    std::string_view f = v.substr(pos, fl);
    pos += fl;
    std::string_view val;
    if (type_ == kTypeHash) {
      if (!GetVarint(v, &pos, &vl) || vl > v.size() - pos) return Status::kInvalid;
      val = v.substr(pos, vl);
      pos += vl;
    }
    pack_.emplace_back(f, val);
  }
  return pos == v.size() ? Status::kOk : Status::kInvalid;
}

Status Dict::LoadIntset(std::string_view v) {
  enc_ = DictEnc::kIntset;
  if (v.size() < 5) return Status::kInvalid;
  uint32_t n;
  std::memcpy(&n, v.data() + 1, 4);
  if (v.size() != 5 + size_t{n} * 8) return Status::kInvalid;
  ints_.resize(n);
  if (n) std::memcpy(ints_.data(), v.data() + 5, size_t{n} * 8);
  return Status::kOk;
}

Status Dict::LoadForReplace() {
  lim_ = GetDictLimits(c_);
  ReadInfo ri;
  Status s = Probe(c_, t_, key_, &ri);
  if (s == Status::kOk) {
    version_ = ri.version;
  } else if (s != Status::kNotFound) {
    return s;
  }
  replace_ = true;
  dirty_ = true;  // even an empty result replaces (deletes) the key
  enc_ = DictEnc::kNone;
  return Status::kOk;
}

uint64_t Dict::size() const {
  switch (enc_) {
    case DictEnc::kPack: return pack_.size();
    case DictEnc::kIntset: return ints_.size();
    case DictEnc::kTree: return count_;
    default: return 0;
  }
}

// ---- Dict: tree cells ---------------------------------------------------------------

Off Dict::NewEntry(std::string_view f, std::string_view v) {
  Off e;
  if (c_.alloc.Alloc(kEntryHdr + f.size() + v.size(), &e) != Status::kOk) {
    torn_ = alloc_failed_ = true;  // reported as kNoMem by Commit
    return 0;
  }
  fresh_.insert(e);
  char* p = c_.arena.At(e);
  mem::StoreRelaxed8(p + kOffKind, kEntry);
  mem::StoreRelaxed16(p + 2, 0);
  mem::StoreRelaxed32(p + kEntFlen, static_cast<uint32_t>(f.size()));
  mem::StoreRelaxed32(p + kEntVlen, static_cast<uint32_t>(v.size()));
  mem::AtomicCopyIn(p + kEntryHdr, f.data(), f.size());
  mem::AtomicCopyIn(p + kEntryHdr + f.size(), v.data(), v.size());
  return e;
}

Off Dict::NewNode(uint8_t kind, uint32_t bitmap, uint32_t leafmask, uint64_t count,
                  const std::vector<Off>& kids) {
  Off n;
  if (c_.alloc.Alloc(kNodeHdr + 8 * kids.size(), &n) != Status::kOk) {
    torn_ = alloc_failed_ = true;
    return 0;
  }
  fresh_.insert(n);
  char* p = c_.arena.At(n);
  mem::StoreRelaxed8(p + kOffKind, kind);
  mem::StoreRelaxed16(p + 2, 0);
  mem::StoreRelaxed32(p + kOffBitmap, bitmap);
  mem::StoreRelaxed32(p + kOffLeaf, leafmask);
  mem::StoreRelaxed32(p + 12, 0);
  mem::StoreRelaxed64(p + kOffCount, count);
  for (size_t i = 0; i < kids.size(); ++i) mem::StoreOff(p + kNodeHdr + 8 * i, kids[i]);
  return n;
}

bool Dict::ReadNode(Off n, uint8_t* kind, uint32_t* bitmap, uint32_t* leafmask, uint64_t* count,
                    std::vector<Off>* kids) {
  const mem::Arena& a = c_.arena;
  size_t bound = mem::CellBound(a, n);
  if (n == 0 || bound < kNodeHdr) return torn_ = true, false;
  const char* p = a.At(n);
  *kind = mem::LoadRelaxed8(p + kOffKind);
  *bitmap = mem::LoadRelaxed32(p + kOffBitmap);
  *leafmask = mem::LoadRelaxed32(p + kOffLeaf);
  *count = mem::LoadRelaxed64(p + kOffCount);
  uint32_t nk;
  if (*kind == kNode) {
    nk = static_cast<uint32_t>(__builtin_popcount(*bitmap));
  } else if (*kind == kCollide) {
    nk = *bitmap;
  } else {
    return torn_ = true, false;
  }
  if (nk > (bound - kNodeHdr) / 8) return torn_ = true, false;
  kids->resize(nk);
  for (uint32_t i = 0; i < nk; ++i) (*kids)[i] = mem::LoadOff(p + kNodeHdr + 8 * i);
  return true;
}

bool Dict::EntryIs(Off e, std::string_view f) {
  const mem::Arena& a = c_.arena;
  size_t bound = mem::CellBound(a, e);
  if (e == 0 || bound < kEntryHdr) return torn_ = true, false;
  const char* p = a.At(e);
  if (mem::LoadRelaxed8(p + kOffKind) != kEntry) return torn_ = true, false;
  if (mem::LoadRelaxed32(p + kEntFlen) != f.size() || f.size() > bound - kEntryHdr) return false;
  return mem::AtomicEqual(p + kEntryHdr, f);
}

bool Dict::ReadEntry(Off e, std::string* f, std::string* v) {
  const mem::Arena& a = c_.arena;
  size_t bound = mem::CellBound(a, e);
  if (e == 0 || bound < kEntryHdr) return torn_ = true, false;
  const char* p = a.At(e);
  if (mem::LoadRelaxed8(p + kOffKind) != kEntry) return torn_ = true, false;
  size_t fl = mem::LoadRelaxed32(p + kEntFlen), vl = mem::LoadRelaxed32(p + kEntVlen);
  if (fl > bound - kEntryHdr || vl > bound - kEntryHdr - fl) return torn_ = true, false;
  if (f) {
    f->resize(fl);
    mem::AtomicCopyOut(f->data(), p + kEntryHdr, fl);
  }
  if (v) {
    v->resize(vl);
    mem::AtomicCopyOut(v->data(), p + kEntryHdr + fl, vl);
  }
  return true;
}

void Dict::Retire(Off cell) {
  if (cell == 0) return;
  if (fresh_.erase(cell)) {
    c_.alloc.Free(cell);
  } else {
    retired_.push_back(cell);
  }
}

bool Dict::TreeFind(uint64_t h, std::string_view f, std::string* value) {
  const mem::Arena& a = c_.arena;
  Off n = root_;
  for (int depth = 0; depth <= kLeafDepth; ++depth) {
    size_t bound = mem::CellBound(a, n);
    if (n == 0 || bound < kNodeHdr) return torn_ = true, false;
    const char* p = a.At(n);
    uint8_t kind = mem::LoadRelaxed8(p + kOffKind);
    uint32_t bm = mem::LoadRelaxed32(p + kOffBitmap);
    if (kind == kCollide) {
      if (bm > (bound - kNodeHdr) / 8) return torn_ = true, false;
      for (uint32_t i = 0; i < bm; ++i) {
        Off e = mem::LoadOff(p + kNodeHdr + 8 * i);
        if (EntryIs(e, f)) return ReadEntry(e, nullptr, value);
      }
      return false;
    }
    if (kind != kNode) return torn_ = true, false;
    uint32_t bit = 1u << Digit(h, depth);
    if (!(bm & bit)) return false;
    uint32_t pos = static_cast<uint32_t>(__builtin_popcount(bm & (bit - 1)));
    if (pos >= (bound - kNodeHdr) / 8) return torn_ = true, false;
    Off child = mem::LoadOff(p + kNodeHdr + 8 * pos);
    if (mem::LoadRelaxed32(p + kOffLeaf) & bit) {
      return EntryIs(child, f) && ReadEntry(child, nullptr, value);
    }
    n = child;
  }
  torn_ = true;
  return false;
}

Off Dict::TreeInsert(Off node, int depth, uint64_t h, std::string_view f, std::string_view v,
                     bool* added) {
  uint8_t kind;
  uint32_t bm, lm;
  uint64_t count;
  std::vector<Off> kids;
  if (torn_ || !ReadNode(node, &kind, &bm, &lm, &count, &kids)) return 0;
  if (kind == kCollide) {
    size_t i = 0;
    while (i < kids.size() && !EntryIs(kids[i], f)) ++i;
    if (torn_) return 0;
    Off e = NewEntry(f, v);
    if (i < kids.size()) {
      Retire(kids[i]);
      kids[i] = e;
    } else {
      if (kids.size() >= kMaxCollide) return torn_ = true, 0;
      kids.push_back(e);
      *added = true;
    }
    Off nn = NewNode(kCollide, static_cast<uint32_t>(kids.size()), 0, kids.size(), kids);
    Retire(node);
    return nn;
  }
  uint32_t bit = 1u << Digit(h, depth);
  uint32_t pos = static_cast<uint32_t>(__builtin_popcount(bm & (bit - 1)));
  if (!(bm & bit)) {
    kids.insert(kids.begin() + pos, NewEntry(f, v));
    bm |= bit;
    lm |= bit;
    *added = true;
  } else if (lm & bit) {
    Off e = kids[pos];
    if (EntryIs(e, f)) {
      Retire(e);
      kids[pos] = NewEntry(f, v);
    } else {
      if (torn_) return 0;
      // Push the resident entry down with the new one (shared cells stay
      // where they are: the resident entry is linked, not copied).
      std::string rf;
      if (!ReadEntry(e, &rf, nullptr)) return 0;
      uint64_t eh = HashField(rf);
      Off ne = NewEntry(f, v);
      int d = depth + 1;
      // The chain of single-child nodes down to where the hashes part.
      std::vector<uint32_t> digits;
      while (d < kLeafDepth && Digit(eh, d) == Digit(h, d)) digits.push_back(Digit(h, d++));
      Off sub;
      if (d >= kLeafDepth) {
        sub = NewNode(kCollide, 2, 0, 2, {e, ne});
      } else {
        uint32_t de = Digit(eh, d), dn = Digit(h, d);
        std::vector<Off> two = de < dn ? std::vector<Off>{e, ne} : std::vector<Off>{ne, e};
        sub = NewNode(kNode, (1u << de) | (1u << dn), (1u << de) | (1u << dn), 2, two);
      }
      for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
        sub = NewNode(kNode, 1u << *it, 0, 2, {sub});
      }
      kids[pos] = sub;
      lm &= ~bit;
      *added = true;
    }
  } else {
    Off nc = TreeInsert(kids[pos], depth + 1, h, f, v, added);
    if (nc == 0) return 0;
    kids[pos] = nc;
  }
  if (torn_) return 0;
  Off nn = NewNode(kNode, bm, lm, count + (*added ? 1 : 0), kids);
  Retire(node);
  return nn;
}

Off Dict::TreeRemove(Off node, int depth, uint64_t h, std::string_view f, bool* removed) {
  uint8_t kind;
  uint32_t bm, lm;
  uint64_t count;
  std::vector<Off> kids;
  if (torn_ || !ReadNode(node, &kind, &bm, &lm, &count, &kids)) return node;
  if (kind == kCollide) {
    size_t i = 0;
    while (i < kids.size() && !EntryIs(kids[i], f)) ++i;
    if (i == kids.size()) return node;
    Retire(kids[i]);
    kids.erase(kids.begin() + i);
    *removed = true;
    Retire(node);
    if (kids.empty()) return 0;
    return NewNode(kCollide, static_cast<uint32_t>(kids.size()), 0, kids.size(), kids);
  }
  uint32_t bit = 1u << Digit(h, depth);
  if (!(bm & bit)) return node;
  uint32_t pos = static_cast<uint32_t>(__builtin_popcount(bm & (bit - 1)));
  if (lm & bit) {
    if (!EntryIs(kids[pos], f)) return node;
    Retire(kids[pos]);
    kids.erase(kids.begin() + pos);
    bm &= ~bit;
    lm &= ~bit;
    *removed = true;
  } else {
    Off nc = TreeRemove(kids[pos], depth + 1, h, f, removed);
    if (!*removed) return node;
    if (nc == 0) {
      kids.erase(kids.begin() + pos);
      bm &= ~bit;
    } else {
      kids[pos] = nc;
    }
  }
  Retire(node);
  if (kids.empty() && depth > 0) return 0;
  return NewNode(kNode, bm, lm, count - 1, kids);
}

// ---- Dict: staged changes ---------------------------------------------------------

bool Dict::FitsPack(std::string_view f, std::string_view v) const {
  uint32_t maxv = type_ == kTypeHash ? lim_.hash_pack_value : lim_.set_pack_value;
  return f.size() <= maxv && v.size() <= maxv;
}

void Dict::ToPack() {
  pack_.clear();
  for (int64_t x : ints_) {
    owned_.push_back(IntText(x));
    pack_.emplace_back(owned_.back(), std::string_view());
  }
  ints_.clear();
  enc_ = DictEnc::kPack;
}

void Dict::ToTree() {
  std::vector<std::pair<std::string_view, std::string_view>> items;
  if (enc_ == DictEnc::kIntset) ToPack();
  items.swap(pack_);
  root_ = NewNode(kNode, 0, 0, 0, {});
  count_ = 0;
  enc_ = DictEnc::kTree;
  for (auto& [f, v] : items) {
    bool added = false;
    Off r = TreeInsert(root_, 0, HashField(f), f, v, &added);
    if (r == 0) return;
    root_ = r;
    count_ += added;
  }
}

bool Dict::Find(std::string_view field, std::string* value) {
  switch (enc_) {
    case DictEnc::kPack:
      for (auto& [f, v] : pack_) {
        if (f == field) {
          if (value) value->assign(v);
          return true;
        }
      }
      return false;
    case DictEnc::kIntset: {
      int64_t x;
      if (!CanonicalInt(field, &x)) return false;
      bool in = std::binary_search(ints_.begin(), ints_.end(), x);
      if (in && value) value->clear();
      return in;
    }
    case DictEnc::kTree: return TreeFind(HashField(field), field, value);
    default: return false;
  }
}

void Dict::Note(std::string_view field, const std::string_view* value) {
  auto [it, fresh] = delta_at_.try_emplace(std::string(field), delta_.size());
  if (fresh) delta_.emplace_back(std::string(field), std::nullopt);
  auto& slot = delta_[it->second].second;
  if (value) {
    slot.emplace(*value);
  } else {
    slot.reset();
  }
}

void Dict::Journal(bool whole, uint64_t version, int64_t expire_ms) {
  DictChange ch;
  ch.table_index = t_.index;
  ch.table_gen = t_.gen;
  ch.key = key_;
  ch.type = type_;
  ch.whole = whole;
  ch.tree = enc_ == DictEnc::kTree;
  ch.version = version;
  ch.expire_ms = expire_ms;
  if (version != 0 && !whole) ch.fields = std::move(delta_);
  c_.dict_journal->push_back(std::move(ch));
}

bool Dict::Put(std::string_view field, std::string_view value) {
  dirty_ = true;
  if (c_.dict_journal) Note(field, &value);
  if (enc_ == DictEnc::kNone) {
    int64_t x;
    if (type_ == kTypeSet && lim_.set_intset_entries > 0 && CanonicalInt(field, &x)) {
      enc_ = DictEnc::kIntset;
    } else {
      enc_ = DictEnc::kPack;
    }
  }
  if (enc_ == DictEnc::kIntset) {
    int64_t x;
    if (CanonicalInt(field, &x)) {
      auto it = std::lower_bound(ints_.begin(), ints_.end(), x);
      if (it != ints_.end() && *it == x) return false;
      if (ints_.size() + 1 <= lim_.set_intset_entries) {
        ints_.insert(it, x);
        return true;
      }
    }
    // A non-integer member or too many integers: listpack if it fits.
    if (ints_.size() + 1 <= lim_.set_pack_entries && FitsPack(field, value)) {
      ToPack();
    } else {
      ToTree();
    }
  }
  if (enc_ == DictEnc::kPack) {
    for (auto& [f, v] : pack_) {
      if (f == field) {
        if (FitsPack(field, value)) {
          owned_.emplace_back(value);
          v = owned_.back();
          return false;
        }
        break;
      }
    }
    uint32_t maxn = type_ == kTypeHash ? lim_.hash_pack_entries : lim_.set_pack_entries;
    bool is_new = !Find(field);
    if (FitsPack(field, value) && pack_.size() + (is_new ? 1 : 0) <= maxn) {
      owned_.emplace_back(field);
      std::string_view fv = owned_.back();
      owned_.emplace_back(value);
      pack_.emplace_back(fv, owned_.back());
      return true;
    }
    ToTree();
  }
  if (enc_ != DictEnc::kTree || torn_) return false;
  bool added = false;
  Off r = TreeInsert(root_, 0, HashField(field), field, value, &added);
  if (r != 0) {
    root_ = r;
    count_ += added;
  }
  return added;
}

bool Dict::Remove(std::string_view field) {
  if (c_.dict_journal && Find(field)) Note(field, nullptr);
  switch (enc_) {
    case DictEnc::kPack:
      for (size_t i = 0; i < pack_.size(); ++i) {
        if (pack_[i].first == field) {
          pack_.erase(pack_.begin() + static_cast<ptrdiff_t>(i));
          dirty_ = true;
          return true;
        }
      }
      return false;
    case DictEnc::kIntset: {
      int64_t x;
      if (!CanonicalInt(field, &x)) return false;
      auto it = std::lower_bound(ints_.begin(), ints_.end(), x);
      if (it == ints_.end() || *it != x) return false;
      ints_.erase(it);
      dirty_ = true;
      return true;
    }
    case DictEnc::kTree: {
      bool removed = false;
      Off r = TreeRemove(root_, 0, HashField(field), field, &removed);
      if (removed) {
        dirty_ = true;
        root_ = r;
        --count_;
      }
      return removed;
    }
    default: return false;
  }
}

// ---- Dict: iteration -----------------------------------------------------------

void Dict::Walk(Off node, int depth, uint64_t base, uint64_t from, uint64_t* budget,
                const std::function<bool(Off entry)>& fn, uint64_t* next, bool* stop) {
  uint8_t kind;
  uint32_t bm, lm;
  uint64_t count;
  std::vector<Off> kids;
  if (!ReadNode(node, &kind, &bm, &lm, &count, &kids)) {
    *stop = true;
    return;
  }
  if (kind == kCollide) {
    for (Off e : kids) {
      if (!fn(e)) {
        *stop = true;
        return;
      }
    }
    return;
  }
  uint32_t i = 0;
  for (uint32_t d = 0; d < 32; ++d) {
    uint32_t bit = 1u << d;
    if (!(bm & bit)) continue;
    Off child = kids[i++];
    uint64_t cb = base + d * Span(depth + 1), ce = cb + Span(depth + 1);
    if (ce <= from) continue;
    if (*budget == 0) {
      *next = cb > from ? cb : from;
      *stop = true;
      return;
    }
    if (lm & bit) {
      --*budget;
      if (!fn(child)) {
        *stop = true;
        return;
      }
    } else {
      Walk(child, depth + 1, cb, from, budget, fn, next, stop);
      if (*stop) return;
    }
  }
}

void Dict::ForEach(const std::function<bool(std::string_view, std::string_view)>& fn) {
  switch (enc_) {
    case DictEnc::kPack:
      for (auto& [f, v] : pack_) {
        if (!fn(f, v)) return;
      }
      return;
    case DictEnc::kIntset:
      for (int64_t x : ints_) {
        std::string s = IntText(x);
        if (!fn(s, {})) return;
      }
      return;
    case DictEnc::kTree: {
      uint64_t budget = ~uint64_t{0}, next = 0;
      bool stop = false;
      std::string f, v;
      Walk(root_, 0, 0, 0, &budget,
           [&](Off e) { return ReadEntry(e, &f, &v) && fn(f, v); }, &next, &stop);
      return;
    }
    default: return;
  }
}

void Dict::Scan(uint64_t cursor, uint64_t count,
                const std::function<void(std::string_view, std::string_view)>& fn,
                uint64_t* next) {
  *next = 0;
  if (enc_ != DictEnc::kTree) {
    ForEach([&](std::string_view f, std::string_view v) {
      fn(f, v);
      return true;
    });
    return;
  }
  uint64_t budget = count == 0 ? 1 : count;
  bool stop = false;
  std::string f, v;
  Walk(root_, 0, 0, cursor, &budget,
       [&](Off e) {
         if (!ReadEntry(e, &f, &v)) return false;
         fn(f, v);
         return true;
       },
       next, &stop);
}

bool Dict::NthEntry(Off node, uint64_t i, Off* out, int depth) {
  uint8_t kind;
  uint32_t bm, lm;
  uint64_t count;
  std::vector<Off> kids;
  if (depth > kLeafDepth || !ReadNode(node, &kind, &bm, &lm, &count, &kids)) return false;
  if (kind == kCollide) {
    if (i >= kids.size()) return torn_ = true, false;
    *out = kids[i];
    return true;
  }
  uint32_t k = 0;
  for (uint32_t d = 0; d < 32; ++d) {
    uint32_t bit = 1u << d;
    if (!(bm & bit)) continue;
    Off child = kids[k++];
    uint64_t n = 1;
    if (!(lm & bit)) {
      size_t bound = mem::CellBound(c_.arena, child);
      if (child == 0 || bound < kNodeHdr) return torn_ = true, false;
      n = mem::LoadRelaxed64(c_.arena.At(child) + kOffCount);
    }
    if (i < n) {
      if (lm & bit) {
        *out = child;
        return true;
      }
      return NthEntry(child, i, out, depth + 1);
    }
    i -= n;
  }
  return torn_ = true, false;
}

bool Dict::At(uint64_t i, std::string* field, std::string* value) {
  switch (enc_) {
    case DictEnc::kPack:
      if (i >= pack_.size()) return false;
      field->assign(pack_[i].first);
      if (value) value->assign(pack_[i].second);
      return true;
    case DictEnc::kIntset:
      if (i >= ints_.size()) return false;
      *field = IntText(ints_[i]);
      if (value) value->clear();
      return true;
    case DictEnc::kTree: {
      Off e;
      return NthEntry(root_, i, &e, 0) && ReadEntry(e, field, value);
    }
    default: return false;
  }
}

// ---- Dict: publish -----------------------------------------------------------------

Status Dict::Validate() {
  if (PC_CANARY(6)) return Status::kOk;
  if (locked_) {  // nothing could change under the lock
    Unlock();
    return torn_ ? Status::kInvalid : Status::kOk;
  }
  if (torn_) return Status::kVersion;
  if (enc_ != DictEnc::kTree || version_ == 0) return Status::kOk;
  ReadInfo ri;
  NoStats quiet(c_);  // a re-check, not a look-up
  Status s = Probe(c_, t_, key_, &ri);
  if (s == Status::kStale) return s;
  return s == Status::kOk && ri.version == version_ ? Status::kOk : Status::kVersion;
}

Status Dict::Commit() {
  if (locked_) {  // a read-only load (LoadLocked) cannot publish: Set takes that lock
    Unlock();
    return Status::kInvalid;
  }
  if (torn_) {
    // A torn read (a stale snapshot: run again) or a failed allocation
    // (kNoMem if the snapshot is still the key's state).
    if (!alloc_failed_) return Status::kVersion;
    ReadInfo ri;
    NoStats quiet(c_);
    Status s = Probe(c_, t_, key_, &ri);
    bool current = version_ == 0 ? s == Status::kNotFound : s == Status::kOk && ri.version == version_;
    return current ? Status::kNoMem : Status::kVersion;
  }
  if (!dirty_) {
    Status s = Validate();
    if (s == Status::kOk && c_.dict_journal) Journal(false, 0, 0);  // nothing changed
    return s;
  }
  if (size() == 0) {
    if (version_ == 0) {
      if (c_.dict_journal) Journal(false, 0, 0);
      return Status::kOk;
    }
    // The last field went: the key goes (its cells with it, freed by the
    // delete: retired_ cells belong to that tree and are not freed here).
    Status s = DelIfVersion(c_, t_, key_, version_);
    if (s == Status::kNotFound) s = Status::kVersion;
    if (s == Status::kOk) {
      retired_.clear();
      for (Off o : fresh_) c_.alloc.Free(o);
      fresh_.clear();
      committed_ = true;
      if (c_.dict_journal) Journal(true, 0, 0);
    }
    return s;
  }
  std::string out;
  out.push_back(static_cast<char>(enc_));
  switch (enc_) {
    case DictEnc::kPack:
      PutU32(&out, static_cast<uint32_t>(pack_.size()));
      for (auto& [f, v] : pack_) {
        PutVarint(&out, f.size());
        out.append(f);
        if (type_ == kTypeHash) {
          PutVarint(&out, v.size());
          out.append(v);
        }
      }
      break;
    case DictEnc::kIntset:
      PutU32(&out, static_cast<uint32_t>(ints_.size()));
      out.append(reinterpret_cast<const char*>(ints_.data()), ints_.size() * 8);
      break;
    case DictEnc::kTree:
      out.append(reinterpret_cast<const char*>(&root_), 7);  // little-endian
      out.append(reinterpret_cast<const char*>(&count_), 8);
      break;
    default: return Status::kInvalid;
  }
  StoreOpts o;
  o.type = type_;
  o.check_version = true;
  o.expect_version = version_;
  o.keep_ttl = !replace_ && !set_expire_;
  if (set_expire_) {
    o.expire_ms = set_expire_ms_;
  } else if (replace_) {
    o.expire_ms = replace_expire_ms_;
  }
  o.shallow_old = !replace_;
  if (publish_version_ != 0) {
    o.if_newer = true;
    o.version = publish_at_least_ ? std::max(publish_version_, version_ + 1) : publish_version_;
  }
  uint64_t stored = 0;
  o.stored_version = &stored;
  Status s = Set(c_, t_, key_, out, o);
  if (s != Status::kOk) return s;
  committed_ = true;
  fresh_.clear();  // published
  for (Off r : retired_) c_.alloc.Free(r);
  retired_.clear();
  // Last: the journal allocates, and a bad_alloc must not find fresh_
  // still naming cells the published value owns.
  if (c_.dict_journal) Journal(version_ == 0 || replace_, stored, o.keep_ttl ? expire_ms_ : o.expire_ms);
  return Status::kOk;
}

// ---- audit -------------------------------------------------------------------------

bool WalkDictCells(const Ctx& c, std::string_view value, const std::function<void(Off)>& mark,
                   std::string* err, uint64_t* entries) {
  Off root;
  uint64_t count;
  *entries = 0;
  if (!TreeRoot(value, &root, &count)) return true;  // pack / intset: inside the record
  const mem::Arena& a = c.arena;
  // Check each node's count against its subtree, bottom-up by recursion.
  std::function<bool(Off, int, uint64_t, uint64_t*)> visit = [&](Off n, int depth, uint64_t prefix,
                                                                uint64_t* total) -> bool {
    size_t bound = mem::CellBound(a, n);
    if (n == 0 || bound < kNodeHdr) return *err = "tree: bad node offset", false;
    mark(n);
    const char* p = a.At(n);
    uint8_t kind = mem::LoadRelaxed8(p + kOffKind);
    uint32_t bm = mem::LoadRelaxed32(p + kOffBitmap), lm = mem::LoadRelaxed32(p + kOffLeaf);
    uint64_t cnt = mem::LoadRelaxed64(p + kOffCount);
    uint32_t nk = kind == kNode ? static_cast<uint32_t>(__builtin_popcount(bm)) : bm;
    if (kind != kNode && kind != kCollide) return *err = "tree: bad node kind", false;
    if (kind == kCollide && depth != kLeafDepth) return *err = "tree: collision node above the leaf depth", false;
    if (kind == kNode && depth >= kLeafDepth) return *err = "tree: node below the leaf depth", false;
    if (nk > (bound - kNodeHdr) / 8) return *err = "tree: node children beyond its cell", false;
    if (kind == kNode && (lm & ~bm)) return *err = "tree: leaf bit without a child", false;
    uint64_t sum = 0;
    uint32_t k = 0;
    for (uint32_t d = 0; d < 32 && k < nk; ++d) {
      bool leaf;
      uint64_t pre = prefix;
      if (kind == kNode) {
        if (!(bm & (1u << d))) continue;
        leaf = lm & (1u << d);
        pre = prefix | uint64_t{d} << (5 * depth);
      } else {
        leaf = true;
      }
      Off ch = mem::LoadOff(p + kNodeHdr + 8 * k++);
      if (leaf) {
        size_t eb = mem::CellBound(a, ch);
        if (ch == 0 || eb < kEntryHdr) return *err = "tree: bad entry offset", false;
        const char* e = a.At(ch);
        if (mem::LoadRelaxed8(e + kOffKind) != kEntry) return *err = "tree: entry kind", false;
        size_t fl = mem::LoadRelaxed32(e + kEntFlen), vl = mem::LoadRelaxed32(e + kEntVlen);
        if (fl > eb - kEntryHdr || vl > eb - kEntryHdr - fl) return *err = "tree: entry lengths beyond its cell", false;
        std::string f(fl, '\0');
        mem::AtomicCopyOut(f.data(), e + kEntryHdr, fl);
        uint64_t h = HashKey(f, c.catalog->seed ^ kFieldSeedMix);
        int bits = 5 * (depth + (kind == kNode ? 1 : 0));
        uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
        if (kind == kCollide) mask = (uint64_t{1} << 60) - 1;
        if ((h & mask) != (pre & mask)) return *err = "tree: entry on the wrong path", false;
        mark(ch);
        ++sum;
        ++*entries;
      } else {
        uint64_t sub = 0;
        if (!visit(ch, depth + 1, pre, &sub)) return false;
        sum += sub;
      }
    }
    if (kind == kNode && !(depth == 0) && sum == 0) return *err = "tree: empty inner node", false;
    if (cnt != sum) return *err = "tree: node count " + std::to_string(cnt) + " != " + std::to_string(sum), false;
    *total = sum;
    return true;
  };
  uint64_t total = 0;
  if (!visit(root, 0, 0, &total)) return false;
  if (total != count) {
    *err = "tree: record count " + std::to_string(count) + " != " + std::to_string(total);
    return false;
  }
  return true;
}

}  // namespace cache
