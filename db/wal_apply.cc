// perfcached — applying WAL records at recovery (the rules in wal_apply.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/wal_apply.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "cache/export.h"
#include "cache/maint.h"
#include "cache/ops.h"
#include "cache/scan.h"

namespace db {

using mem::Status;

WalApplier::WalApplier(cache::Ctx& c, Known k, std::function<bool(std::string_view)> configured,
                       std::function<void(const std::string&)> log_error)
    : c_(c), k_(k), configured_(std::move(configured)), log_error_(std::move(log_error)) {}

// A put names a collection that must exist (made as allow_create would);
// a tombstone never makes one (a dropped or renamed collection stays gone).
bool WalApplier::Table(const std::string& name, bool make, cache::TableRef* t) {
  auto it = tables_.find(name);
  if (it == tables_.end() || (!it->second && make)) {
    cache::TableRef r;
    if (cache::OpenCollection(c_, name, &r) != Status::kOk &&
        (!make || cache::CreateCollection(c_, name, cache::CollectionOptions{}, &r) != Status::kOk)) {
      r = cache::TableRef{};
    }
    it = tables_.insert_or_assign(name, r).first;
  }
  *t = it->second;
  return static_cast<bool>(*t);
}

void WalApplier::Raise(const std::string& coll, uint64_t v) {
  uint64_t& mx = (*k_.top)[coll];
  if (v > mx) mx = v;
}

void WalApplier::Stored(const cache::TableRef& t) {
  if (++stores_ % 1024 == 0) (void)cache::GrowStep(c_, t, 1u << 16);
}

std::vector<std::string> WalApplier::Keys(const cache::TableRef& t) {
  std::vector<std::string> keys;
  uint64_t cursor = 0;
  do {
    if (cache::ScanStep(c_, t, cursor, 1024, cache::ScanFilter{}, [&](const cache::ScanItem& it) {
          keys.emplace_back(it.key);
        }, &cursor) != Status::kOk) {
      break;
    }
  } while (cursor != 0);
  return keys;
}

// Remove `key` if it holds a version at or below v (a tombstone, an expired
// put, a flush) — for keys that are not tracked.
void WalApplier::RemoveIfNotAbove(const cache::TableRef& t, std::string_view key, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    cache::ReadInfo ri;
    if (cache::Probe(c_, t, key, &ri) != Status::kOk || ri.version > v) return;
    if (cache::DelIfVersion(c_, t, key, ri.version) != Status::kVersion) return;
  }
}

// ---- the held clock ------------------------------------------------------------

namespace {
// Far enough back that no expiry a client can set has passed (the engine
// clamps expiries to positive unix ms).
constexpr int64_t kHeldBackMs = int64_t{60} * 365 * 86400 * 1000;
}  // namespace

RecoveryClock::RecoveryClock(cache::Ctx& c) : c_(c), saved_(c.clock_skew_ms) {
  c_.clock_skew_ms = saved_ - kHeldBackMs;
}

RecoveryClock::~RecoveryClock() {
  if (held_) c_.clock_skew_ms = saved_;
}

int64_t RecoveryClock::RealNowMs() const { return cache::NowMs(c_) + (held_ ? kHeldBackMs : 0); }

bool RecoveryClock::Gone(const cache::Entry& e) const {
  return e.type != cache::kTypeHash && e.type != cache::kTypeSet && e.expire_ms != 0 && e.expire_ms <= RealNowMs();
}

uint64_t RecoveryClock::Release() {
  if (held_) c_.clock_skew_ms = saved_;
  held_ = false;
  uint64_t removed = 0;
  for (const cache::CollectionInfo& ci : cache::ListCollections(c_)) {
    cache::TableRef t;
    if (cache::OpenCollection(c_, ci.name, &t) != Status::kOk) continue;
    for (int round = 0; round < 64; ++round) {
      uint32_t n = cache::SweepExpired(c_, t, 1u << 20, {});
      removed += n;
      if (n == 0) break;
    }
  }
  return removed;
}

// ---- records ---------------------------------------------------------------------

bool WalApplier::Gone(const cache::Entry& e) const {
  if (k_.clock) return k_.clock->Gone(e);
  return e.expire_ms != 0 && e.expire_ms <= cache::NowMs(c_);
}

bool WalApplier::Apply(const WalRecord& r, std::string* err) {
  if (r.kind == kWalPart) return true;  // ReadWal hands out the record its parts join into, never a part
  coll_ = r.collection;
  cur_ = nullptr;
  Raise(r.collection, r.entry.version);
  tk_.assign(r.collection);
  tk_.push_back('\0');
  tk_.append(r.entry.key);
  bool makes = r.kind == kWalPut || r.kind == kWalFields || r.kind == kWalExpire;
  if (r.kind == kWalTombstone) {
    // Known even when the collection is not there (yet): a state of the
    // key merged after it must not make the collection.
    uint64_t& tv = (*k_.tomb)[tk_];
    if (r.entry.version > tv) tv = r.entry.version;
  } else if (makes) {
    // A state its key's tombstone outranks makes nothing: a record of a
    // key of a collection perf_drop / perf_rename removed after it (their
    // tombstones come before the drop record, in one ring) must not make
    // the collection again when the rings are merged with it after the drop.
    // Nor one a versioned drop of its collection outranks (kWalDrop below).
    if (Outranked(r.collection, tk_, r.entry.version)) {
      ++skipped;
      return true;
    }
  }
  cache::TableRef t;
  if (!Table(r.collection, makes, &t)) {
    if (makes) ++unknown;
    return true;  // a tombstone for a collection that is gone: nothing to remove
  }
  cur_ = &t;
  switch (r.kind) {
    case kWalPut: return Put(t, tk_, r, err);
    case kWalFields: return Fields(t, tk_, r, err);
    case kWalExpire: return Expiry(t, tk_, r, err);
    case kWalPart: return true;  // not reached (above)
    case kWalTombstone: {
      if (auto it = side_.find(tk_); it != side_.end()) return Whole(t, r.entry.key, &it->second, nullptr,
                                                                     r.entry.version, err);
      RemoveIfNotAbove(t, r.entry.key, r.entry.version);
      ++applied;
      return true;
    }
    case kWalFlush:
      if (!FlushAt(t, r, err)) return false;
      ++applied;
      return true;
    case kWalDrop: {
      std::string prefix = r.collection + '\0';
      bool configured = configured_ && configured_(r.collection);
      if (r.entry.version != 0) {
        // A drop at v (since session 22; WalMaxVersion when it was
        // logged): the dropped life's versions are at or below v, and a
        // collection made again starts above it. Records of that new life
        // can come before the drop in the merged log (everysec: a
        // worker's ring is drained before the MI's), so it removes only
        // what is at or below v, as a flush does, and the collection goes
        // only if nothing newer is in it. Unversioned drops (older
        // segments) empty it whole, as before.
        if (!FlushAt(t, r, err)) return false;
        if (configured || !Keys(t).empty()) {
          ++applied;
          return true;
        }
      } else if (configured) {
        for (const std::string& k : Keys(t)) (void)cache::Del(c_, t, k);
      }
      // The keys' tombstones came first; what is tracked starts again.
      std::erase_if(side_, [&](const auto& kv) { return kv.first.compare(0, prefix.size(), prefix) == 0; });
      // A configured collection is made again at every start: it stays,
      // emptied (anything left at this point is older). Any other goes,
      // and only a later put makes it.
      if (!configured && cache::DropCollection(c_, r.collection) == Status::kOk) {
        tables_[r.collection] = cache::TableRef{};
      }
      ++applied;
      return true;
    }
  }
  return true;
}

bool WalApplier::FlushAt(const cache::TableRef& t, const WalRecord& r, std::string* err) {
  uint64_t& fv = flushed_[r.collection];
  if (r.entry.version > fv) fv = r.entry.version;
  // Every key at or below the floor goes.
  std::vector<std::string> keys = Keys(t);
  std::string prefix = r.collection + '\0';
  for (auto& [key, sd] : side_) {
    if (key.compare(0, prefix.size(), prefix) == 0 &&
        !Whole(t, std::string_view(key).substr(prefix.size()), &sd, nullptr, r.entry.version, err)) {
      return false;
    }
  }
  for (const std::string& k : keys) {
    if (!side_.count(prefix + k)) RemoveIfNotAbove(t, k, r.entry.version);
  }
  return true;
}

bool WalApplier::Outranked(const std::string& coll, const std::string& tk, uint64_t v) const {
  auto ti = k_.tomb->find(tk);
  auto fi = flushed_.find(coll);
  return (ti != k_.tomb->end() && ti->second >= v) || (fi != flushed_.end() && fi->second >= v);
}

bool WalApplier::Put(const cache::TableRef& t, const std::string& tk, const WalRecord& r, std::string* err) {
  const cache::Entry& e = r.entry;
  if (Outranked(r.collection, tk, e.version)) {
    ++skipped;
    return true;
  }
  if (SnapshotDropped(r.collection, tk, e.key, e.version)) {
    ++skipped;
    return true;
  }
  if (auto it = side_.find(tk); it != side_.end()) {
    bool expired = Gone(e);
    if (expired) {
      uint64_t& tv = (*k_.tomb)[tk];
      if (e.version > tv) tv = e.version;
      ended_.insert(tk);
    }
    return Whole(t, e.key, &it->second, expired ? nullptr : &e, e.version, err);
  }
  std::string why;
  // Under the held clock ImportEntry takes nothing as expired: a string or
  // counter is judged here against the real one.
  Status s = Gone(e) ? Status::kNotFound : cache::ImportEntry(c_, t, e, &why);
  if (s == Status::kOk) {
    ++applied;
    Stored(t);
  } else if (s == Status::kNotFound) {
    // Expired since: a tombstone at its version (an older state of the
    // key, in the table or later in the log, must not stay).
    uint64_t& tv = (*k_.tomb)[tk];
    if (e.version > tv) tv = e.version;
    RemoveIfNotAbove(t, e.key, e.version);
    ended_.insert(tk);
    ++applied;
  } else if (s == Status::kVersion) {
    ++skipped;  // the table holds this state or a newer one
  } else if (s == Status::kNoMem) {
    *err = "the arena is full";
    return false;
  } else {
    ++skipped;
    Error(e.key, why.empty() ? std::string(mem::StatusName(s)) : why);
  }
  return true;
}

bool WalApplier::Fields(const cache::TableRef& t, const std::string& tk, const WalRecord& r, std::string* err) {
  const cache::Entry& e = r.entry;
  const uint64_t v = e.version;
  if (Outranked(r.collection, tk, v)) {
    ++skipped;
    return true;
  }
  Side* track = Track(t, tk, r);
  if (!track || v <= track->whole) {
    ++skipped;
    return true;
  }
  Side& sd = *track;
  if (!k_.clock && e.expire_ms != 0 && e.expire_ms <= cache::NowMs(c_)) {
    // No held clock: the key's life this record belongs to has ended by
    // now, as an expired put, a tombstone at v (a newer life logs its own
    // state). Under the held clock the sweep after the tail decides, with
    // the newest expiry any record states.
    uint64_t& tv = (*k_.tomb)[tk];
    if (v > tv) tv = v;
    ended_.insert(tk);
    return Whole(t, e.key, &sd, nullptr, v, err);
  }
  bool other_type = sd.type != 0 && sd.type != e.type;
  if (other_type && v < sd.type_ver) {
    // The table holds another type from a newer record: this record's life
    // is older, and the newer life's whole record replaces it when it comes.
    ++skipped;
    return true;
  }
  WalFieldChanges ch;
  if (!DecodeWalFields(e.value, e.type, &ch)) {  // DecodeWalRecord checked it: not reached
    ++skipped;
    return true;
  }
  WalFieldChanges apply;
  for (auto& [f, val] : ch) {
    uint64_t& fv = sd.fields[f];
    if (fv >= v) continue;
    fv = v;
    apply.emplace_back(f, std::move(val));
  }
  if (v > sd.exp_ver) {
    sd.exp_ver = v;
    sd.exp = e.expire_ms;
  }
  if (v > sd.type_ver) {
    sd.type_ver = v;
    sd.type = e.type;
  }
  // Another type from an older record: this record's life is newer, and
  // nothing the table holds belongs to it (replace). Every commit states
  // the expiry the bookkeeping holds.
  uint64_t published = 0;
  Status s = cache::MergeFields(c_, t, e.key, e.type, apply, other_type, sd.exp, v, &published);
  if (s == Status::kNoMem) {
    *err = "the arena is full";
    return false;
  }
  if (s != Status::kOk) {
    ++skipped;
    Error(e.key, std::string(mem::StatusName(s)));
    return true;
  }
  Raise(r.collection, published);
  Stored(t);
  ++applied;
  return true;
}

WalApplier::Side* WalApplier::Track(const cache::TableRef& t, const std::string& tk, const WalRecord& r) {
  auto it = side_.find(tk);
  if (it != side_.end()) return &it->second;
  // The first fields or expire record of this key: what the table holds is
  // the newest whole state seen (the snapshot's, or a put applied before).
  const cache::Entry& e = r.entry;
  cache::ReadInfo ri;
  Side sd;
  if (cache::Probe(c_, t, e.key, &ri) == Status::kOk) {
    sd.whole = ri.version;
    sd.type = ri.type;
    sd.exp = ri.expire_ms;
  } else {
    if (SnapshotDropped(r.collection, tk, e.key, e.version)) return nullptr;
    if (auto ti = k_.tomb->find(tk); ti != k_.tomb->end()) sd.whole = ti->second;
    if (auto fi = flushed_.find(r.collection); fi != flushed_.end()) sd.whole = std::max(sd.whole, fi->second);
  }
  sd.exp_ver = sd.type_ver = sd.whole;
  return &side_.emplace(tk, std::move(sd)).first->second;
}

// An expire record: the key's expiry at v, its entries untouched. It is
// the newest statement of the expiry when v is above every record that
// stated one (a whole, fields or expire record); the entries stay as the
// other records make them. A key absent now gets it when its life's whole
// record comes (Whole's newer-expiry overlay).
bool WalApplier::Expiry(const cache::TableRef& t, const std::string& tk, const WalRecord& r, std::string* err) {
  const cache::Entry& e = r.entry;
  const uint64_t v = e.version;
  if (Outranked(r.collection, tk, v)) {
    ++skipped;
    return true;
  }
  Side* track = Track(t, tk, r);
  if (!track || v <= track->whole || v <= track->exp_ver) {
    ++skipped;
    return true;
  }
  Side& sd = *track;
  bool other_type = sd.type != 0 && sd.type != e.type;
  if (other_type && v < sd.type_ver) {
    ++skipped;  // of an older life than the type the table holds
    return true;
  }
  sd.exp_ver = v;
  sd.exp = e.expire_ms;
  if (v > sd.type_ver) {
    sd.type_ver = v;
    sd.type = e.type;
  }
  cache::ReadInfo ri;
  Status s = cache::Probe(c_, t, e.key, &ri);
  if (s == Status::kOk && ri.type != e.type) {
    // The table holds an older life of another type: none of its entries
    // are this life's (its whole record brings them, with this expiry).
    (void)cache::Del(c_, t, e.key);
  } else if (s == Status::kOk) {
    uint64_t published = 0;
    s = cache::MergeFields(c_, t, e.key, e.type, {}, false, sd.exp, v, &published);
    if (s == Status::kNoMem) {
      *err = "the arena is full";
      return false;
    }
    if (s != Status::kOk) {
      ++skipped;
      Error(e.key, std::string(mem::StatusName(s)));
      return true;
    }
    Raise(r.collection, published);
  }
  ++applied;
  return true;
}

bool WalApplier::Whole(const cache::TableRef& t, std::string_view key, Side* sd, const cache::Entry* put,
                       uint64_t v, std::string* err) {
  if (v <= sd->whole) {
    ++skipped;
    return true;
  }
  // The entries a fields record newer than v wrote keep their value (or
  // their absence), and so do the expiry and the type when such a record
  // set them.
  WalFieldChanges keep;
  {
    std::vector<std::string> names;
    for (const auto& [f, fv] : sd->fields) {
      if (fv > v) names.push_back(f);
    }
    std::vector<std::optional<std::string>> vals;
    if (!names.empty() &&
        (sd->type == 0 || cache::ReadFields(c_, t, key, sd->type, names, &vals) != Status::kOk)) {
      vals.assign(names.size(), std::nullopt);  // absent, or another type: none of them is there
    }
    for (size_t i = 0; i < names.size(); ++i) keep.emplace_back(std::move(names[i]), std::move(vals[i]));
  }
  sd->whole = v;
  bool exp_newer = sd->exp_ver > v;
  if (!exp_newer) {
    sd->exp_ver = v;
    sd->exp = put ? put->expire_ms : 0;
  }
  bool type_newer = sd->type_ver > v;
  // A put of another type than a newer record's is of an older life.
  bool import = put && !(type_newer && put->type != sd->type);
  if (!type_newer) {
    sd->type_ver = v;
    sd->type = put ? put->type : 0;
  }
  cache::ReadInfo ri;
  uint64_t cur_ver = cache::Probe(c_, t, key, &ri) == Status::kOk ? ri.version : 0;
  if (import) {
    cache::Entry e = *put;
    e.version = std::max(v, cur_ver + 1);
    std::string why;
    Status s = cache::ImportEntry(c_, t, e, &why);
    if (s == Status::kNoMem) {
      *err = "the arena is full";
      return false;
    }
    if (s != Status::kOk && s != Status::kNotFound) Error(key, why.empty() ? std::string(mem::StatusName(s)) : why);
    Raise(coll_, e.version);
  } else if (cur_ver != 0) {
    // Absent at v, or a newer record of another type holds the key: of
    // this record's state only what no newer record overrides would stay,
    // and that is nothing (a new life's own whole record brings the rest).
    (void)cache::Del(c_, t, key);
  }
  bool any_present = false;
  for (const auto& kv : keep) any_present |= kv.second.has_value();
  bool overlay = any_present || (import && (!keep.empty() || exp_newer));
  if (overlay && sd->type != 0) {
    uint64_t published = 0;
    Status s = cache::MergeFields(c_, t, key, sd->type, keep, false, sd->exp, v, &published);
    if (s == Status::kNoMem) {
      *err = "the arena is full";
      return false;
    }
    if (s == Status::kOk) Raise(coll_, published);
  }
  Stored(t);
  ++applied;
  return true;
}

void WalApplier::Error(std::string_view key, const std::string& why) {
  if (log_error_) log_error_("collection '" + coll_ + "' key '" + std::string(key.substr(0, 64)) + "': " + why);
}

// A key the snapshot does not hold, at a version at or below the
// collection's floor when the walk began: that state was replaced or
// removed before the walk reached the key (a create during the walk gets a
// version above the floor), and its tombstone may lie before the
// snapshot's position: do not bring the key back. A key the snapshot held
// but that expired while the daemon was down is not such a key (its
// tombstone at the snapshot's version decides), nor is one an expired put
// of the tail removed: the table lacks it because the replay ended that
// life, and the tombstone at the put's version decides what comes after.
// (A key's updates take its version + 1, which the floor can pass: the
// snapshot's K@s, `EXPIRE K 1` at s+1, `PERSIST K` at s+2 <= floor, a
// restart after the second — the PERSIST was skipped and K lost until
// session 22.)
bool WalApplier::SnapshotDropped(const std::string& coll, const std::string& tk, std::string_view key, uint64_t v) {
  auto sf = k_.snap_floor->find(coll);
  if (sf == k_.snap_floor->end() || v > sf->second) return false;
  if (k_.snap_expired && k_.snap_expired->count(tk)) return false;
  if (ended_.count(tk)) return false;
  cache::ReadInfo ri;
  return cache::Probe(c_, *Current(), key, &ri) == Status::kNotFound;
}

}  // namespace db
