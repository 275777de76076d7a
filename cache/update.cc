// perfcached — in-place updates of one live record under its key lock: INCRBY on a counter, TTL.
// Copyright (c) 2026 the perfcached authors.
#include <algorithm>
#include <cstring>

#include "cache/dict.h"
#include "cache/internal.h"
#include "cache/journal.h"
#include "cache/number.h"
#include "cache/table.h"

namespace cache {

using namespace detail;

Status IncrBy(Ctx& c, const TableRef& t, std::string_view key, int64_t delta, int64_t* result) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  char buf[32];
  for (int attempt = 0; attempt < 1000; ++attempt) {
    ReadInfo ri;
    Status st = Get(c, t, key, std::span<char>(buf, sizeof buf), &ri);
    if (st == Status::kStale) return st;
    if (st == Status::kNotFound) {
      char v[8];
      std::memcpy(v, &delta, 8);
      StoreOpts o;
      o.type = kTypeInt;
      o.cond = Cond::kNx;
      st = Set(c, t, key, std::string_view(v, 8), o);
      if (st == Status::kExists) continue;
      if (st == Status::kOk) *result = delta;
      return st;
    }
    if (st == Status::kBufferTooSmall) {  // too long for a number, or not a string at all
      return ri.type == kTypeString ? Status::kNotInteger : Status::kWrongType;
    }
    if (st != Status::kOk) return st;
    if (ri.type == kTypeInt) {
      // Native counter: add under the bucket lock, no parse/format inside.
      KeyLock k;
      if (!LockKey(c, h, HashOf(c, key), key, &k)) return Status::kStale;
      RecView v{k.rec ? a.At(k.rec) : nullptr};
      Status out = Status::kOk;
      if (k.rec == 0 || v.type() != kTypeInt || Expired(v.expire(), NowMs(c)) || !Live(h, t)) {
        out = Status::kBusy;  // changed under us: retry from the top
      } else {
        char* vp = v.value(kTypeInt, key.size());
        int64_t cur = static_cast<int64_t>(mem::LoadRelaxed64(vp)), n;
        if (__builtin_add_overflow(cur, delta, &n)) {
          out = Status::kOverflow;
        } else {
          // The bracket: a reader never sees the counter and its version torn.
          std::atomic<uint32_t>& seq = KeySeq(h, k);
          PC_CRASH_POINT();
          seq.fetch_add(1, std::memory_order_acq_rel);
          mem::StoreRelaxed64(vp, static_cast<uint64_t>(n));
          v.set_meta(v.expire(), NextVersion(v.version()));
          PC_CRASH_POINT();
          seq.fetch_add(1, std::memory_order_acq_rel);
          *result = n;
        }
      }
      UnlockKey(h, k);
      if (out == Status::kBusy) continue;
      if (out == Status::kOk) Count(c, h, kStatStores);
      return out;
    }
    if (ri.type != kTypeString) return Status::kWrongType;
    int64_t cur, n;
    if (!ParseInt64(std::string_view(buf, ri.vlen), &cur)) return Status::kNotInteger;
    if (__builtin_add_overflow(cur, delta, &n)) return Status::kOverflow;
    char v[8];
    std::memcpy(v, &n, 8);
    StoreOpts o;
    o.type = kTypeInt;
    o.keep_ttl = true;
    o.check_version = true;
    o.expect_version = ri.version;
    st = Set(c, t, key, std::string_view(v, 8), o);
    if (st == Status::kVersion) continue;
    if (st == Status::kOk) *result = n;
    return st;
  }
  return Status::kBusy;
}

Status SetExpire(Ctx& c, const TableRef& t, std::string_view key, int64_t expire_ms,
                 ExpireCond cond, bool* changed) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  *changed = false;
  int64_t now = NowMs(c);
  KeyLock k;
  if (!LockKey(c, h, HashOf(c, key), key, &k)) return Status::kStale;
  RecView v{k.rec ? a.At(k.rec) : nullptr};
  Status st = Status::kOk;
  bool removed = false;
  uint8_t type = 0;
  bool tree = false;
  uint64_t published = 0;
  if (!Live(h, t)) {
    st = Status::kStale;
  } else if (k.rec == 0 || Expired(v.expire(), now)) {
    st = Status::kNotFound;
  } else {
    int64_t cur = v.expire();
    type = v.type();
    // (IsTreeValue reads the value only when its length is a tree's.)
    tree = IsTreeValue(type, std::string_view(v.value(type, v.klen()), v.vlen()));
    bool ok = true;
    switch (cond) {
      case ExpireCond::kAlways: ok = !(expire_ms == 0 && cur == 0); break;
      case ExpireCond::kNx: ok = cur == 0; break;
      case ExpireCond::kXx: ok = cur != 0; break;
      case ExpireCond::kGt: ok = cur != 0 && expire_ms > cur; break;
      case ExpireCond::kLt: ok = cur == 0 || expire_ms < cur; break;
    }
    if (ok && expire_ms != 0 && expire_ms <= now) {
      // An expiry in the past deletes, as in Redis: under the same lock, so
      // a SET that lands after us is never the one deleted.
      UnlinkKeyLocked(a, h, k);
      removed = true;
    } else if (ok) {
      std::atomic<uint32_t>& seq = KeySeq(h, k);
      LowerHint(a, h, k.idx, expire_ms);  // before the record (cache/scan.cc TtlSkip)
      PC_CRASH_POINT();
      seq.fetch_add(1, std::memory_order_acq_rel);
      published = NextVersion(v.version());
      v.set_meta(expire_ms, published);
      PC_CRASH_POINT();
      seq.fetch_add(1, std::memory_order_acq_rel);
    }
    *changed = ok;
  }
  UnlockKey(h, k);
  if (removed) {
    FreeValue(c, k.rec);
    c.alloc.Free(k.node);
    Count(c, h, kStatDestroyed);
    Count(c, h, kStatRemoves);
  } else if (*changed) {
    // A new version of the record, as an INCR in place is: a store (the
    // save rules count it, as Redis counts EXPIRE in its dirty count).
    Count(c, h, kStatStores);
  }
  if (c.dict_journal && st == Status::kOk && !removed) {
    // For the WAL (cache/journal.h): nothing changed (EXPIRE NX on a key
    // with a TTL) logs nothing; a large hash or set logs its new expiry
    // alone, not its entries. Anything else is read back whole (no entry).
    if (!*changed || tree) {
      DictChange ch;
      ch.table_index = t.index;
      ch.table_gen = t.gen;
      ch.key = key;
      ch.type = type;
      ch.tree = tree;
      ch.expire_only = *changed;
      ch.version = *changed ? published : 0;
      ch.expire_ms = expire_ms;
      c.dict_journal->push_back(std::move(ch));
    }
  }
  return st;
}

Status Restamp(Ctx& c, const TableRef& t, std::string_view key, uint64_t above, uint64_t* version) {
  TableHeader& h = *t.h;
  const mem::Arena& a = c.arena;
  KeyLock k;
  if (!LockKey(c, h, HashOf(c, key), key, &k)) return Status::kStale;
  RecView v{k.rec ? a.At(k.rec) : nullptr};
  Status st = Status::kOk;
  if (!Live(h, t)) {
    st = Status::kStale;
  } else if (k.rec == 0 || Expired(v.expire(), NowMs(c))) {
    st = Status::kNotFound;
  } else {
    uint64_t nv = NextVersion(std::max(v.version(), above));
    std::atomic<uint32_t>& seq = KeySeq(h, k);
    seq.fetch_add(1, std::memory_order_acq_rel);
    v.set_meta(v.expire(), nv);
    seq.fetch_add(1, std::memory_order_acq_rel);
    *version = nv;
  }
  UnlockKey(h, k);
  return st;  // not a store: the data did not change (save rules do not count it)
}

}  // namespace cache
