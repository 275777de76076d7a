// perfcached — set Ops over the Dict transaction (cache/dict.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/set_ops.h"

#include <algorithm>
#include <unordered_set>

#include "cache/dict.h"
#include "cache/glob.h"
#include "cache/ops.h"

namespace cache {

Status SAdd(Ctx& c, const TableRef& t, std::string_view key,
            std::span<const std::string_view> members, uint64_t* added) {
  return RunDict([&] {
    Dict d(c, t, key, kTypeSet);
    Status s = d.Load();
    if (s != Status::kOk && s != Status::kNotFound) return s;
    uint64_t n = 0;
    for (std::string_view m : members) n += d.Put(m) ? 1 : 0;
    s = d.Commit();
    if (s == Status::kOk) *added = n;
    return s;
  });
}

Status SRem(Ctx& c, const TableRef& t, std::string_view key,
            std::span<const std::string_view> members, uint64_t* removed) {
  return RunDict([&] {
    *removed = 0;
    Dict d(c, t, key, kTypeSet);
    Status s = d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    uint64_t n = 0;
    for (std::string_view m : members) n += d.Remove(m) ? 1 : 0;
    s = d.Commit();
    if (s == Status::kOk) *removed = n;
    return s;
  });
}

namespace {

// Read every member of a set into out (absent = empty).
Status ReadAll(Ctx& c, const TableRef& t, std::string_view key, std::vector<std::string>* out) {
  return RunDict([&](int attempt) {
    out->clear();
    Dict d(c, t, key, kTypeSet);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s != Status::kOk) return s;  // kNotFound: absent (empty)
    out->reserve(d.size());
    d.ForEach([&](std::string_view m, std::string_view) {
      out->emplace_back(m);
      return true;
    });
    return d.Validate();
  });
}

}  // namespace

Status SMembers(Ctx& c, const TableRef& t, std::string_view key, std::vector<std::string>* out) {
  Status s = ReadAll(c, t, key, out);
  return s == Status::kNotFound ? Status::kOk : s;
}

Status SMIsMember(Ctx& c, const TableRef& t, std::string_view key,
                  std::span<const std::string_view> members, std::vector<bool>* in) {
  return RunDict([&](int attempt) {
    in->assign(members.size(), false);
    Dict d(c, t, key, kTypeSet);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    for (size_t i = 0; i < members.size(); ++i) (*in)[i] = d.Find(members[i]);
    return d.Validate();
  });
}

Status SIsMember(Ctx& c, const TableRef& t, std::string_view key, std::string_view member,
                 bool* in) {
  std::vector<bool> v;
  Status s = SMIsMember(c, t, key, std::span<const std::string_view>(&member, 1), &v);
  *in = s == Status::kOk && v[0];
  return s;
}

Status SCard(Ctx& c, const TableRef& t, std::string_view key, uint64_t* n) {
  *n = 0;
  Dict d(c, t, key, kTypeSet);
  Status s = d.Load();
  if (s == Status::kNotFound) return Status::kOk;
  if (s == Status::kOk) *n = d.size();
  return s;
}

namespace {

std::vector<uint64_t> Distinct(uint64_t n, uint64_t k) {
  std::vector<uint64_t> idx;
  if (k >= n) {
    for (uint64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  std::unordered_set<uint64_t> seen;
  for (uint64_t j = n - k; j < n; ++j) {
    uint64_t r = DictRandom() % (j + 1);
    idx.push_back(seen.insert(r).second ? r : (seen.insert(j), j));
  }
  return idx;
}

}  // namespace

Status SPop(Ctx& c, const TableRef& t, std::string_view key, uint64_t count,
            std::vector<std::string>* out) {
  return RunDict([&] {
    out->clear();
    Dict d(c, t, key, kTypeSet);
    Status s = d.Load();
    if (s != Status::kOk) return s;
    std::string m;
    for (uint64_t i : Distinct(d.size(), count)) {
      if (!d.At(i, &m, nullptr)) return Status::kVersion;
      out->push_back(m);
    }
    for (const std::string& x : *out) d.Remove(x);
    return d.Commit();
  });
}

Status SRandMember(Ctx& c, const TableRef& t, std::string_view key, int64_t count,
                   std::vector<std::string>* out) {
  if (count < 0 && (count == INT64_MIN || static_cast<uint64_t>(-count) > kMaxRandomRepeats)) {
    return Status::kOutOfRange;
  }
  return RunDict([&](int attempt) {
    out->clear();
    Dict d(c, t, key, kTypeSet);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s != Status::kOk) return s;
    uint64_t n = d.size();
    std::vector<uint64_t> idx;
    if (count < 0) {
      uint64_t k = static_cast<uint64_t>(-count);
      for (uint64_t i = 0; i < k && n > 0; ++i) idx.push_back(DictRandom() % n);
    } else {
      idx = Distinct(n, static_cast<uint64_t>(count));
    }
    std::string m;
    for (uint64_t i : idx) {
      if (!d.At(i, &m, nullptr)) return Status::kVersion;
      out->push_back(m);
    }
    return d.Validate();
  });
}

Status SMove(Ctx& c, const TableRef& t, std::string_view src, std::string_view dst,
             std::string_view member, bool* moved) {
  *moved = false;
  // Redis's order: an absent source answers 0, then either key of another
  // type answers WRONGTYPE.
  ReadInfo ri;
  Status s = Probe(c, t, src, &ri);
  if (s == Status::kNotFound) return Status::kOk;
  if (s != Status::kOk) return s;
  if (ri.type != kTypeSet) return Status::kWrongType;
  s = Probe(c, t, dst, &ri);
  if (s == Status::kOk && ri.type != kTypeSet) return Status::kWrongType;
  if (s != Status::kOk && s != Status::kNotFound) return s;
  bool in = false;
  s = SIsMember(c, t, src, member, &in);
  if (s != Status::kOk) return s;
  if (!in) return Status::kOk;
  if (src == dst) {
    *moved = true;
    return Status::kOk;
  }
  // Add to dst, then remove from src: a crash between leaves it in both.
  uint64_t n;
  s = SAdd(c, t, dst, std::span<const std::string_view>(&member, 1), &n);
  if (s != Status::kOk) return s;
  s = SRem(c, t, src, std::span<const std::string_view>(&member, 1), &n);
  if (s != Status::kOk) return s;
  *moved = n == 1;
  return Status::kOk;
}

namespace {

// The members of the combination, in the order Redis builds them (the
// first set's order for SINTER / SDIFF; callers that need order sort).
Status Combine(Ctx& c, const TableRef& t, SetAlgebra op, std::span<const std::string_view> keys,
               uint64_t limit, std::vector<std::string>* out) {
  out->clear();
  std::vector<std::vector<std::string>> sets(keys.size());
  bool empty = false;  // SINTER with an absent key: empty, once types are checked
  for (size_t i = 0; i < keys.size(); ++i) {
    if (empty) {
      // Redis still looks at every key's type (SINTER nokey str is
      // WRONGTYPE) but reads no more members.
      ReadInfo ri;
      Status s = Probe(c, t, keys[i], &ri);
      if (s == Status::kOk && ri.type != kTypeSet) return Status::kWrongType;
      if (s != Status::kOk && s != Status::kNotFound) return s;
      continue;
    }
    Status s = ReadAll(c, t, keys[i], &sets[i]);
    if (s == Status::kNotFound && op == SetAlgebra::kInter) empty = true;
    if (s != Status::kOk && s != Status::kNotFound) return s;
  }
  if (empty) return Status::kOk;
  if (sets.empty()) return Status::kOk;
  if (op == SetAlgebra::kUnion) {
    std::unordered_set<std::string> seen;
    for (auto& set : sets) {
      for (auto& m : set) {
        if (seen.insert(m).second) out->push_back(m);
      }
    }
    return Status::kOk;
  }
  if (op == SetAlgebra::kInter) {
    size_t smallest = 0;
    for (size_t i = 1; i < sets.size(); ++i) {
      if (sets[i].size() < sets[smallest].size()) smallest = i;
    }
    std::vector<std::unordered_set<std::string>> others;
    for (size_t i = 0; i < sets.size(); ++i) {
      if (i != smallest) others.emplace_back(sets[i].begin(), sets[i].end());
    }
    for (auto& m : sets[smallest]) {
      bool all = true;
      for (auto& o : others) {
        if (!o.count(m)) {
          all = false;
          break;
        }
      }
      if (all) {
        out->push_back(m);
        if (limit && out->size() >= limit) break;
      }
    }
    return Status::kOk;
  }
  std::unordered_set<std::string> minus;
  for (size_t i = 1; i < sets.size(); ++i) minus.insert(sets[i].begin(), sets[i].end());
  for (auto& m : sets[0]) {
    if (!minus.count(m)) out->push_back(m);
  }
  return Status::kOk;
}

}  // namespace

Status SCombine(Ctx& c, const TableRef& t, SetAlgebra op, std::span<const std::string_view> keys,
                std::vector<std::string>* out) {
  return Combine(c, t, op, keys, 0, out);
}

Status SInterCard(Ctx& c, const TableRef& t, std::span<const std::string_view> keys,
                  uint64_t limit, uint64_t* n) {
  std::vector<std::string> out;
  Status s = Combine(c, t, SetAlgebra::kInter, keys, limit, &out);
  *n = out.size();
  return s;
}

Status SCombineStore(Ctx& c, const TableRef& t, SetAlgebra op, std::string_view dst,
                     std::span<const std::string_view> keys, uint64_t* n) {
  std::vector<std::string> members;
  Status s = Combine(c, t, op, keys, 0, &members);
  if (s != Status::kOk) return s;
  return RunDict([&] {
    Dict d(c, t, dst, kTypeSet);
    Status st = d.LoadForReplace();
    if (st != Status::kOk) return st;
    for (auto& m : members) d.Put(m);
    st = d.Commit();
    if (st == Status::kOk) *n = members.size();
    return st;
  });
}

Status SScan(Ctx& c, const TableRef& t, std::string_view key, uint64_t cursor, uint64_t count,
             std::string_view glob, std::vector<std::string>* out, uint64_t* next) {
  return RunDict([&](int attempt) {
    out->clear();
    *next = 0;
    Dict d(c, t, key, kTypeSet);
    Status s = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    d.Scan(cursor, count,
           [&](std::string_view m, std::string_view) {
             if (glob.empty() || GlobMatch(glob, m)) out->emplace_back(m);
           },
           next);
    return d.Validate();
  });
}

}  // namespace cache
