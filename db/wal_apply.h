// perfcached — what each WAL record does to the table at recovery.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// modules/db ReplayWal reads the segments after the snapshot and hands
// every record here, oldest segment first. The rings of several writers
// are merged in any order, so no rule below may depend on the order of
// two records of different writers (docs/persistence.md "Versions").
//
// Whole records (put, tombstone; flush, drop) carry a key's complete
// state at a version: the newest version wins, as ImportEntry does.
//
// Fields records (kind 5) carry some entries of a large hash or set at a
// version, each a true statement about the key at that version; expire
// records (kind 6) carry its expiry alone. A key that has had either is
// "tracked" until the end of the replay:
//
//   whole     the newest whole-record version applied (or the table's
//             version at the first fields record: the snapshot's state)
//   fields    entry -> the newest fields-record version applied to it
//   exp, type the expiry and type of the newest record applied, and its
//             version (a fields record of another type than the table's
//             is of an older life when older, of a newer one when newer)
//
// and its final state is, per entry, the newest record that speaks of it
// (a whole record speaks of every entry: absent ones are absent), and
// the expiry and type of the newest record of all. A fields record at v
// applies to the entries it names where v is newer than both `whole` and
// the entry's version; a whole record at V newer than `whole` replaces
// the key but keeps the entries a fields record newer than V wrote. This
// needs no order: it computes the same maximum whatever order the records
// come in. An expire record at v sets the expiry where v is above every
// record that stated one, and touches no entry. It is right because every
// write that makes, replaces or removes a key logs a whole record (fields
// and expire records are only taken from writes to a live key:
// cache/journal.h DictChange), so the newest whole record starts the
// key's newest life, and a fields or expire record's expiry is that
// life's at its version. No record is taken as the end of a hash's or
// set's life because the expiry it states has passed: a later expire
// record may have moved it on. The replay runs under RecoveryClock, and
// the sweep after it removes what the newest expiry says is over.
//
// The table's version of a tracked key is an upper bound only (a merge
// publishes at max(v, current + 1) so versions never repeat); decisions
// for tracked keys use the bookkeeping above. Its cost: one small entry
// per tracked key and per entry written by fields records in the tail.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/table.h"
#include "db/wal.h"

namespace db {

// Recovery (the snapshot's load and the replay of the tail) runs with the
// engine's clock held far in the past, so that a hash or set whose expiry
// passed while the daemon was down stays until the whole log is read: an
// expire record (kind 6) later in the tail may have moved that expiry on,
// and the entries of its life are then still the key's. Strings and
// counters are judged against the real clock as they come (Gone): their
// expiry never changes without a whole record. Release gives the clock
// back and sweeps every collection of what has expired by then, before
// the floors are raised and before any worker forks. Holding it costs
// memory only: the hashes and sets that expired in the downtime stay in
// the arena until that sweep.
class RecoveryClock {
 public:
  explicit RecoveryClock(cache::Ctx& c);
  ~RecoveryClock();  // gives the clock back (no sweep) if Release did not
  RecoveryClock(const RecoveryClock&) = delete;
  RecoveryClock& operator=(const RecoveryClock&) = delete;
  // The real time (the engine's, with any configured skew).
  int64_t RealNowMs() const;
  // A string or counter whose expiry has passed by the real clock: a load
  // or a replay takes it as gone at its version. Never a hash or a set.
  bool Gone(const cache::Entry& e) const;
  // The clock back; sweep every collection until nothing more expires.
  // Returns the keys removed.
  uint64_t Release();

 private:
  cache::Ctx& c_;
  int64_t saved_;
  bool held_ = true;
};

class WalApplier {
 public:
  // What recovery knows besides the table (modules/db Recovered).
  struct Known {
    std::map<std::string, uint64_t>* top;             // collection -> largest version seen
    std::unordered_map<std::string, uint64_t>* tomb;  // collection \0 key -> newest version gone
    const std::map<std::string, uint64_t>* snap_floor;  // collection -> floor when the snapshot's walk began
    // collection \0 key: keys the snapshot held that had expired by the
    // load (their tombstones are in `tomb`); may be null.
    const std::unordered_set<std::string>* snap_expired = nullptr;
    // Held for the replay (see RecoveryClock); null: the engine's clock is
    // the real one, and a hash or set whose expiry passed is gone (expire
    // records then cannot move an expiry that passed back on).
    const RecoveryClock* clock = nullptr;
  };
  // configured(name): a collection the configuration makes at every start
  // (a drop record empties it rather than removing it). log_error: one
  // line per record that could not be applied.
  WalApplier(cache::Ctx& c, Known k, std::function<bool(std::string_view)> configured,
             std::function<void(const std::string&)> log_error);

  // False: stop, *err says why (the arena is full).
  bool Apply(const WalRecord& r, std::string* err);

  uint64_t applied = 0, skipped = 0;
  uint64_t unknown = 0;  // records naming a collection that cannot be made
  size_t tracked_keys() const { return side_.size(); }

 private:
  struct Side {
    uint64_t whole = 0;    // the newest whole record applied
    uint64_t exp_ver = 0;  // the newest record applied: its expiry is `exp`
    uint64_t type_ver = 0; // ... and its type is `type` (0: absent)
    int64_t exp = 0;
    uint8_t type = 0;
    std::unordered_map<std::string, uint64_t> fields;  // entry -> newest fields record applied
  };
  bool Table(const std::string& name, bool make, cache::TableRef* t);
  bool Put(const cache::TableRef& t, const std::string& tk, const WalRecord& r, std::string* err);
  bool Fields(const cache::TableRef& t, const std::string& tk, const WalRecord& r, std::string* err);
  bool Expiry(const cache::TableRef& t, const std::string& tk, const WalRecord& r, std::string* err);
  // A flush record, or a versioned drop: every key at or below r's version
  // goes (a tracked one by its bookkeeping), and later states at or below
  // it are outranked.
  bool FlushAt(const cache::TableRef& t, const WalRecord& r, std::string* err);
  // The bookkeeping of a key a fields or expire record at v names; starts
  // it from what the table holds. Null: the record is to be skipped.
  Side* Track(const cache::TableRef& t, const std::string& tk, const WalRecord& r);
  bool Gone(const cache::Entry& e) const;
  // A key's tombstone or its collection's flush is at or above v: a state
  // at v is older than the key's absence (skip the record).
  bool Outranked(const std::string& coll, const std::string& tk, uint64_t v) const;
  // A tracked key's whole state at version v (put == nullptr: absent).
  bool Whole(const cache::TableRef& t, std::string_view key, Side* sd, const cache::Entry* put, uint64_t v,
             std::string* err);
  void RemoveIfNotAbove(const cache::TableRef& t, std::string_view key, uint64_t v);
  std::vector<std::string> Keys(const cache::TableRef& t);  // every key of the table now
  bool SnapshotDropped(const std::string& coll, const std::string& tk, std::string_view key, uint64_t v);
  void Error(std::string_view key, const std::string& why);
  const cache::TableRef* Current() const { return cur_; }
  void Raise(const std::string& coll, uint64_t v);
  void Stored(const cache::TableRef& t);

  cache::Ctx& c_;
  Known k_;
  std::function<bool(std::string_view)> configured_;
  std::function<void(const std::string&)> log_error_;
  std::map<std::string, cache::TableRef> tables_;
  std::map<std::string, uint64_t> flushed_;  // collection -> newest flush floor
  std::unordered_map<std::string, Side> side_;  // collection \0 key -> tracked key
  // collection \0 key: keys an expired put of the tail ended. Their absence
  // is the replay's doing, not the snapshot's (SnapshotDropped).
  std::unordered_set<std::string> ended_;
  uint64_t stores_ = 0;
  std::string tk_, coll_;  // the record being applied
  const cache::TableRef* cur_ = nullptr;
};

}  // namespace db
