// perfcached — the string commands as Ops (GET SET APPEND SETRANGE INCRBYFLOAT ...).
// Copyright (c) 2026 the perfcached authors.
#include "cache/string_ops.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "cache/internal.h"
#include "cache/key_ops.h"
#include "cache/number.h"

namespace cache {

namespace {

// Read-modify-write with a version check: `fn(exists, old, out)` turns the
// old value (absent = empty) into the new one; the store lands only if
// nobody wrote the key meanwhile, else it runs again. The TTL is kept.
template <typename Fn>
Status Rmw(Ctx& c, const TableRef& t, std::string_view key, Fn fn, std::string* result) {
  std::string old;
  for (int tries = 0; tries < 1000; ++tries) {
    ReadInfo ri;
    Status s = StrGet(c, t, key, &old, &ri);
    if (s != Status::kOk && s != Status::kNotFound) return s;
    bool exists = s == Status::kOk;
    if (Status fs = fn(exists, old, result); fs != Status::kOk) return fs;
    detail::BetweenReadAndWrite();
    StoreOpts so;
    so.check_version = true;
    so.expect_version = exists ? ri.version : 0;
    so.keep_ttl = true;
    s = Set(c, t, key, *result, so);
    if (s != Status::kVersion) return s;
  }
  return Status::kBusy;
}

}  // namespace

bool IsStringType(uint8_t type) { return type == kTypeString || type == kTypeInt; }

Status StrGet(Ctx& c, const TableRef& t, std::string_view key, std::string* out, ReadInfo* info) {
  ReadInfo tmp;
  if (!info) info = &tmp;
  Status s = GetString(c, t, key, out, info);
  if (s == Status::kOk && !IsStringType(info->type)) return Status::kWrongType;
  return s;
}

Status StrSet(Ctx& c, const TableRef& t, std::string_view key, std::string_view value,
              const StrSetArgs& a, StrSetResult* r) {
  r->had_old = false;
  r->old.clear();
  bool read_old = false;
  if (a.get) {
    // GET on a non-string fails before anything is stored (Redis).
    Status s = StrGet(c, t, key, &r->old, nullptr);
    if (s == Status::kWrongType || s == Status::kStale) return s;
    read_old = s == Status::kOk;
  }
  StoreOpts so;
  so.expire_ms = a.expire_ms;
  so.keep_ttl = a.keep_ttl;
  so.cond = a.cond;
  std::string old;
  bool had = false;
  if (a.get) {
    so.old_value = &old;
    so.had_old = &had;
  }
  Status s = Set(c, t, key, value, so);
  if (!a.get) return s;
  if (s == Status::kOk) {
    // The value the store actually replaced.
    r->had_old = had;
    r->old = had ? std::move(old) : std::string();
  } else {
    // Condition failed: what the first read saw.
    r->had_old = read_old;
    if (!read_old) r->old.clear();
  }
  return s;
}

Status GetSet(Ctx& c, const TableRef& t, std::string_view key, std::string_view value,
              std::string* old, bool* had_old) {
  StrSetArgs a;
  a.get = true;
  StrSetResult r;
  Status s = StrSet(c, t, key, value, a, &r);
  *had_old = r.had_old;
  *old = std::move(r.old);
  return s;
}

Status GetDel(Ctx& c, const TableRef& t, std::string_view key, std::string* out) {
  for (int tries = 0; tries < 100; ++tries) {
    ReadInfo ri;
    Status s = StrGet(c, t, key, out, &ri);
    if (s != Status::kOk) return s;
    detail::BetweenReadAndWrite();
    s = DelIfVersion(c, t, key, ri.version);
    if (s != Status::kVersion) return s;  // kOk, kNotFound, kStale
    // Changed between the read and the delete: read again.
  }
  return Status::kBusy;
}

Status ResolveExpire(int64_t now_ms, const ExpireArg& e, int64_t* abs_ms) {
  *abs_ms = 0;
  if (e.kind == ExpireKind::kNone || e.kind == ExpireKind::kPersist) return Status::kOk;
  int64_t v;
  if (!ParseInt64(e.text, &v)) return Status::kNotInteger;
  bool secs = e.kind == ExpireKind::kEx || e.kind == ExpireKind::kExAt;
  bool rel = e.kind == ExpireKind::kEx || e.kind == ExpireKind::kPx;
  return AbsoluteExpire(now_ms, v, secs ? 1000 : 1, rel, true, abs_ms);
}

Status GetEx(Ctx& c, const TableRef& t, std::string_view key, const ExpireArg& e,
             std::string* out) {
  Status s = StrGet(c, t, key, out, nullptr);
  if (s != Status::kOk || e.kind == ExpireKind::kNone) return s;
  int64_t ms;
  if (Status rs = ResolveExpire(NowMs(c), e, &ms); rs != Status::kOk) return rs;
  bool changed;
  (void)SetExpire(c, t, key, ms, ExpireCond::kAlways, &changed);  // 0: PERSIST
  return Status::kOk;
}

void MGet(Ctx& c, const TableRef& t, std::span<const std::string_view> keys,
          const std::function<void(size_t, const std::string*)>& emit) {
  std::string& v = c.scratch;
  for (size_t i = 0; i < keys.size(); ++i) {
    emit(i, StrGet(c, t, keys[i], &v, nullptr) == Status::kOk ? &v : nullptr);
  }
}

Status MSet(Ctx& c, const TableRef& t, std::span<const std::string_view> kv) {
  if (kv.size() % 2 != 0) return Status::kInvalid;
  for (size_t i = 0; i < kv.size(); i += 2) {
    if (Status s = Set(c, t, kv[i], kv[i + 1]); s != Status::kOk) return s;
  }
  return Status::kOk;
}

Status MSetNx(Ctx& c, const TableRef& t, std::span<const std::string_view> kv, bool* all_set) {
  *all_set = false;
  if (kv.size() % 2 != 0) return Status::kInvalid;
  // A key given twice takes its last value (Redis): keep the last pair of
  // every key, in the order of their last appearance.
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  pairs.reserve(kv.size() / 2);
  for (size_t i = 0; i < kv.size(); i += 2) {
    bool later = false;
    for (size_t j = i + 2; j < kv.size() && !later; j += 2) later = kv[j] == kv[i];
    if (!later) pairs.emplace_back(kv[i], kv[i + 1]);
  }
  ReadInfo ri;
  for (auto& [k, v] : pairs) {
    Status s = Probe(c, t, k, &ri);
    if (s == Status::kOk) return Status::kOk;
    if (s != Status::kNotFound) return s;
  }
  // All absent a moment ago: set each with NX; if another client wins one
  // of them meanwhile, undo ours (only if still the version we stored).
  std::vector<uint64_t> versions(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    StoreOpts so;
    so.cond = Cond::kNx;
    so.stored_version = &versions[i];
    Status s = Set(c, t, pairs[i].first, pairs[i].second, so);
    if (s != Status::kOk) {
      for (size_t j = 0; j < i; ++j) (void)DelIfVersion(c, t, pairs[j].first, versions[j]);
      return s == Status::kExists ? Status::kOk : s;
    }
  }
  *all_set = true;
  return Status::kOk;
}

Status Append(Ctx& c, const TableRef& t, std::string_view key, std::string_view tail,
              size_t max_value, int64_t* len) {
  std::string nv;
  Status s = Rmw(
      c, t, key,
      [&](bool, const std::string& old, std::string* out) {
        if (old.size() + tail.size() > max_value) return Status::kTooBig;
        out->assign(old);
        out->append(tail);
        return Status::kOk;
      },
      &nv);
  if (s == Status::kOk) *len = static_cast<int64_t>(nv.size());
  return s;
}

Status StrLen(Ctx& c, const TableRef& t, std::string_view key, int64_t* len) {
  std::string& v = c.scratch;
  Status s = StrGet(c, t, key, &v, nullptr);
  *len = s == Status::kOk ? static_cast<int64_t>(v.size()) : 0;
  return s == Status::kNotFound ? Status::kOk : s;
}

Status GetRange(Ctx& c, const TableRef& t, std::string_view key, int64_t start, int64_t end,
                std::string* out) {
  std::string& v = c.scratch;
  Status s = StrGet(c, t, key, &v, nullptr);
  out->clear();
  if (s == Status::kNotFound) return Status::kOk;
  if (s != Status::kOk) return s;
  int64_t len = static_cast<int64_t>(v.size());
  if (start < 0 && end < 0 && start > end) return Status::kOk;
  if (start < 0) start = len + start;
  if (end < 0) end = len + end;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (len == 0 || start > end) return Status::kOk;
  out->assign(v, static_cast<size_t>(start), static_cast<size_t>(end - start + 1));
  return Status::kOk;
}

Status SetRange(Ctx& c, const TableRef& t, std::string_view key, int64_t offset,
                std::string_view value, size_t max_value, int64_t* len) {
  if (offset < 0) return Status::kOutOfRange;
  if (value.empty()) return StrLen(c, t, key, len);  // Redis: no change, no creation
  if (static_cast<uint64_t>(offset) + value.size() > max_value) {
    int64_t cur = 0;  // Redis: the key's type before the size
    Status ts = StrLen(c, t, key, &cur);
    return ts == Status::kWrongType ? ts : Status::kTooBig;
  }
  std::string nv;
  Status s = Rmw(
      c, t, key,
      [&](bool, const std::string& old, std::string* out) {
        out->assign(old);
        size_t need = static_cast<size_t>(offset) + value.size();
        if (out->size() < need) out->resize(need, '\0');
        std::memcpy(out->data() + offset, value.data(), value.size());
        return Status::kOk;
      },
      &nv);
  if (s == Status::kOk) *len = static_cast<int64_t>(nv.size());
  return s;
}

Status DecrBy(Ctx& c, const TableRef& t, std::string_view key, int64_t delta, int64_t* result) {
  if (delta == std::numeric_limits<int64_t>::min()) return Status::kDecrOverflow;
  return IncrBy(c, t, key, -delta, result);
}

Status IncrByFloat(Ctx& c, const TableRef& t, std::string_view key, long double incr,
                   std::string* out) {
  return Rmw(
      c, t, key,
      [&](bool exists, const std::string& old, std::string* res) {
        long double cur = 0;
        if (exists && !ParseLongDouble(old, &cur)) return Status::kNotFloat;
        long double r = cur + incr;
        if (std::isnan(r) || std::isinf(r)) return Status::kNanOrInf;
        *res = FormatLongDouble(r);
        return Status::kOk;
      },
      out);
}

}  // namespace cache
