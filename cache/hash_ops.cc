// perfcached — hash Ops over the Dict transaction (cache/dict.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/hash_ops.h"

#include <charconv>
#include <cmath>
#include <unordered_set>

#include "cache/dict.h"
#include "cache/glob.h"
#include "cache/number.h"
#include "cache/ops.h"

namespace cache {

namespace {

std::string IntText(int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

}  // namespace

Status HSet(Ctx& c, const TableRef& t, std::string_view key, std::span<const std::string_view> fv,
            uint64_t* added) {
  if (fv.size() % 2 != 0) return Status::kInvalid;
  return RunDict([&] {
    Dict d(c, t, key, kTypeHash);
    Status s = d.Load();
    if (s != Status::kOk && s != Status::kNotFound) return s;
    uint64_t n = 0;
    for (size_t i = 0; i < fv.size(); i += 2) n += d.Put(fv[i], fv[i + 1]) ? 1 : 0;
    s = d.Commit();
    if (s == Status::kOk) *added = n;
    return s;
  });
}

Status HSetNx(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
              std::string_view value, bool* set) {
  return RunDict([&] {
    Dict d(c, t, key, kTypeHash);
    Status s = d.Load();
    if (s != Status::kOk && s != Status::kNotFound) return s;
    if (d.Find(field)) {
      *set = false;
      return d.Validate();
    }
    d.Put(field, value);
    s = d.Commit();
    *set = s == Status::kOk;
    return s;
  });
}

Status HGet(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
            std::string* value) {
  return RunDict([&](int attempt) {
    Dict d(c, t, key, kTypeHash);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s != Status::kOk) return s;
    bool found = d.Find(field, value);
    s = d.Validate();
    if (s != Status::kOk) return s;
    return found ? Status::kOk : Status::kNotFound;
  });
}

Status HMGet(Ctx& c, const TableRef& t, std::string_view key,
             std::span<const std::string_view> fields, std::vector<std::optional<std::string>>* out) {
  return RunDict([&](int attempt) {
    out->assign(fields.size(), std::nullopt);
    Dict d(c, t, key, kTypeHash);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    std::string v;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (d.Find(fields[i], &v)) (*out)[i] = v;
    }
    return d.Validate();
  });
}

Status HGetAll(Ctx& c, const TableRef& t, std::string_view key, HPart part, FieldValues* out) {
  return RunDict([&](int attempt) {
    out->clear();
    Dict d(c, t, key, kTypeHash);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    out->reserve(d.size());
    d.ForEach([&](std::string_view f, std::string_view v) {
      out->emplace_back(part == HPart::kValues ? std::string_view() : f,
                        part == HPart::kFields ? std::string_view() : v);
      return true;
    });
    return d.Validate();
  });
}

Status HDel(Ctx& c, const TableRef& t, std::string_view key,
            std::span<const std::string_view> fields, uint64_t* removed) {
  return RunDict([&] {
    *removed = 0;
    Dict d(c, t, key, kTypeHash);
    Status s = d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    uint64_t n = 0;
    for (std::string_view f : fields) n += d.Remove(f) ? 1 : 0;
    s = d.Commit();
    if (s == Status::kOk) *removed = n;
    return s;
  });
}

Status HLen(Ctx& c, const TableRef& t, std::string_view key, uint64_t* n) {
  return RunDict([&] {
    *n = 0;
    Dict d(c, t, key, kTypeHash);
    Status s = d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    *n = d.size();
    return Status::kOk;  // the count is in the record itself
  });
}

Status HExists(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
               bool* exists) {
  Status s = HGet(c, t, key, field, nullptr);
  *exists = s == Status::kOk;
  return s == Status::kNotFound ? Status::kOk : s;
}

Status HStrLen(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
               uint64_t* len) {
  std::string v;
  Status s = HGet(c, t, key, field, &v);
  *len = s == Status::kOk ? v.size() : 0;
  return s == Status::kNotFound ? Status::kOk : s;
}

Status HIncrBy(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
               int64_t delta, int64_t* result) {
  return RunDict([&] {
    Dict d(c, t, key, kTypeHash);
    Status s = d.Load();
    if (s != Status::kOk && s != Status::kNotFound) return s;
    std::string v;
    int64_t cur = 0, n;
    if (d.Find(field, &v) && !ParseInt64(v, &cur)) {
      s = d.Validate();
      return s == Status::kOk ? Status::kNotInteger : s;
    }
    if (__builtin_add_overflow(cur, delta, &n)) {
      s = d.Validate();
      return s == Status::kOk ? Status::kOverflow : s;
    }
    d.Put(field, IntText(n));
    s = d.Commit();
    if (s == Status::kOk) *result = n;
    return s;
  });
}

Status HIncrByFloat(Ctx& c, const TableRef& t, std::string_view key, std::string_view field,
                    long double delta, std::string* result) {
  return RunDict([&] {
    Dict d(c, t, key, kTypeHash);
    Status s = d.Load();
    if (s != Status::kOk && s != Status::kNotFound) return s;
    std::string v;
    long double cur = 0;
    if (d.Find(field, &v) && !ParseLongDouble(v, &cur)) {
      s = d.Validate();
      return s == Status::kOk ? Status::kNotFloat : s;
    }
    long double r = cur + delta;
    if (std::isnan(r) || std::isinf(r)) {
      s = d.Validate();
      return s == Status::kOk ? Status::kNanOrInf : s;
    }
    std::string text = FormatLongDouble(r);
    d.Put(field, text);
    s = d.Commit();
    if (s == Status::kOk) *result = text;
    return s;
  });
}

Status HScan(Ctx& c, const TableRef& t, std::string_view key, uint64_t cursor, uint64_t count,
             std::string_view glob, FieldValues* out, uint64_t* next) {
  return RunDict([&](int attempt) {
    out->clear();
    *next = 0;
    Dict d(c, t, key, kTypeHash);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    d.Scan(cursor, count,
           [&](std::string_view f, std::string_view v) {
             if (glob.empty() || GlobMatch(glob, f)) out->emplace_back(f, v);
           },
           next);
    return d.Validate();
  });
}

namespace {

// Pick indices for a random-members reply: count > 0 distinct (all when
// count >= n), count < 0 |count| with repeats.
std::vector<uint64_t> RandomIndices(uint64_t n, int64_t count) {
  std::vector<uint64_t> idx;
  if (n == 0 || count == 0) return idx;
  if (count < 0) {
    uint64_t k = static_cast<uint64_t>(-count);  // HRandField bounds it
    idx.reserve(k);
    for (uint64_t i = 0; i < k; ++i) idx.push_back(DictRandom() % n);
    return idx;
  }
  uint64_t k = static_cast<uint64_t>(count);
  if (k >= n) {
    for (uint64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  // Floyd's sampling: k distinct of n, O(k).
  std::unordered_set<uint64_t> seen;
  for (uint64_t j = n - k; j < n; ++j) {
    uint64_t r = DictRandom() % (j + 1);
    if (!seen.insert(r).second) {
      seen.insert(j);
      idx.push_back(j);
    } else {
      idx.push_back(r);
    }
  }
  return idx;
}

}  // namespace

Status HRandField(Ctx& c, const TableRef& t, std::string_view key, int64_t count,
                  FieldValues* out) {
  if (count < 0 && (count == INT64_MIN || static_cast<uint64_t>(-count) > kMaxRandomRepeats)) {
    return Status::kOutOfRange;
  }
  return RunDict([&](int attempt) {
    out->clear();
    Dict d(c, t, key, kTypeHash);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s != Status::kOk) return s;
    std::string f, v;
    for (uint64_t i : RandomIndices(d.size(), count)) {
      if (!d.At(i, &f, &v)) break;
      out->emplace_back(f, v);
    }
    return d.Validate();
  });
}

Status AggregateEncoding(Ctx& c, const TableRef& t, std::string_view key, std::string* name) {
  ReadInfo ri;
  Status s = Probe(c, t, key, &ri);
  if (s != Status::kOk) return s;
  if (ri.type != kTypeHash && ri.type != kTypeSet) return Status::kWrongType;
  std::string v;
  s = GetString(c, t, key, &v, &ri);
  if (s != Status::kOk) return s;
  *name = EncodingName(ri.type, v);
  return Status::kOk;
}

}  // namespace cache
