// perfcached — records in a portable form (cache/export.h).
// Copyright (c) 2026 the perfcached authors.
#include "cache/export.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "cache/dict.h"
#include "cache/number.h"
#include "cache/record.h"
#include "cache/scan.h"

namespace cache {

const char* ExportTypeName(uint8_t type) {
  switch (type) {
    case kTypeString: return "string";
    case kTypeInt: return "counter";
    case kTypeHash: return "hash";
    case kTypeSet: return "set";
    default: return nullptr;
  }
}

int ExportTypeFromName(std::string_view name) {
  for (uint8_t t : {kTypeString, kTypeInt, kTypeHash, kTypeSet}) {
    if (name == ExportTypeName(t)) return t;
  }
  return -1;
}

void AppendItem(std::string* out, std::string_view item) {
  uint64_t n = item.size();
  do {
    uint8_t b = n & 0x7f;
    n >>= 7;
    out->push_back(static_cast<char>(b | (n ? 0x80 : 0)));
  } while (n);
  out->append(item);
}

bool DecodeItems(std::string_view enc, bool pairs,
                 const std::function<void(std::string_view, std::string_view)>& fn, std::string* err) {
  size_t pos = 0;
  uint64_t index = 0;
  std::string_view first;
  while (pos < enc.size()) {
    uint64_t len = 0;
    int shift = 0;
    size_t start = pos;
    for (;;) {
      if (pos >= enc.size()) {
        *err = "item " + std::to_string(index) + " at byte " + std::to_string(start) + ": truncated length";
        return false;
      }
      uint8_t b = static_cast<uint8_t>(enc[pos++]);
      if (shift == 28 && (b & 0xf0) != 0) {
        *err = "item " + std::to_string(index) + " at byte " + std::to_string(start) + ": length above 2^32-1";
        return false;
      }
      len |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
      shift += 7;
    }
    if (len > enc.size() - pos) {
      *err = "item " + std::to_string(index) + " at byte " + std::to_string(start) + ": length " +
             std::to_string(len) + " runs past the end (" + std::to_string(enc.size() - pos) + " bytes left)";
      return false;
    }
    std::string_view item = enc.substr(pos, len);
    pos += len;
    if (!pairs) {
      fn(item, {});
    } else if (index % 2 == 0) {
      first = item;
    } else {
      fn(first, item);
    }
    ++index;
  }
  if (pairs && index % 2 != 0) {
    *err = "a hash field without its value (" + std::to_string(index) + " items)";
    return false;
  }
  return true;
}

Status ExportKey(Ctx& c, const TableRef& t, std::string_view key, Entry* out) {
  // The type can change between the probe and the read: look again.
  for (int round = 0; round < 64; ++round) {
    ReadInfo ri;
    Status s = Probe(c, t, key, &ri);  // the look-up (DUMP: one hit or one miss)
    if (s != Status::kOk) return s;
    out->key.assign(key);
    if (ri.type == kTypeString || ri.type == kTypeInt) {
      NoStats quiet(c);  // the value's read is not a second look-up
      s = GetString(c, t, key, &out->value, &ri);  // a counter arrives as decimal text
      if (s != Status::kOk) return s;
      if (ri.type != kTypeString && ri.type != kTypeInt) continue;
      out->type = ri.type;
      out->expire_ms = ri.expire_ms;
      out->version = ri.version;
      return Status::kOk;
    }
    if (ri.type != kTypeHash && ri.type != kTypeSet) return Status::kWrongType;  // no exported form yet
    bool pairs = ri.type == kTypeHash;
    s = RunDict([&](int attempt) {
      out->value.clear();
      Dict d(c, t, key, ri.type);
      Status ls = attempt >= kDictLocked ? d.LoadLocked() : d.Load();
      if (ls != Status::kOk) return ls;
      d.ForEach([&](std::string_view f, std::string_view v) {
        AppendItem(&out->value, f);
        if (pairs) AppendItem(&out->value, v);
        return true;
      });
      out->expire_ms = d.expire_ms();
      out->version = d.version();
      return d.Validate();
    });
    if (s == Status::kWrongType) continue;
    if (s != Status::kOk) return s;
    out->type = ri.type;
    return Status::kOk;
  }
  return Status::kBusy;
}

Status ExportStep(Ctx& c, const TableRef& t, uint64_t cursor, uint32_t count,
                  const std::function<void(const Entry&)>& emit, uint64_t* next) {
  // Strings and counters come with the step's copy (a bucket's records are
  // copied between two equal seqlock reads: a consistent snapshot of each);
  // aggregates are read again whole (ExportKey), their value naming cells.
  // Values above kBigRead are not copied by the scan (that copy runs in
  // the bucket's bracket, or under locks after retries: a writer of the
  // bucket would wait for a big copy); they are read by key, as GET does.
  std::vector<std::string> again;
  Entry e;
  ScanFilter f;
  f.values = true;
  f.value_cap = detail::kBigRead;
  Status s = ScanStep(c, t, cursor, count, f, [&](const ScanItem& it) {
    uint8_t type = it.info.type;
    if (type == kTypeHash || type == kTypeSet || it.value.size() != it.info.vlen) {
      again.emplace_back(it.key);
      return;
    }
    if (type != kTypeString && type != kTypeInt) return;  // no exported form yet
    e.key.assign(it.key);
    e.type = type;
    if (type == kTypeInt) {
      if (it.value.size() != 8) return;
      int64_t n;
      std::memcpy(&n, it.value.data(), 8);
      e.value = std::to_string(n);
    } else {
      e.value.assign(it.value);
    }
    e.expire_ms = it.info.expire_ms;
    e.version = it.info.version;
    emit(e);
  }, next);
  if (s != Status::kOk) return s;
  NoStats quiet(c);  // a snapshot's or a save's reads are not look-ups
  for (const std::string& k : again) {
    s = ExportKey(c, t, k, &e);
    if (s == Status::kNotFound || s == Status::kWrongType) continue;  // gone meanwhile / no exported form
    if (s != Status::kOk) return s;
    emit(e);
  }
  return Status::kOk;
}

Status ImportEntry(Ctx& c, const TableRef& t, const Entry& e, std::string* err, bool if_absent) {
  if (e.expire_ms != 0 && e.expire_ms <= NowMs(c)) return Status::kNotFound;
  StoreOpts o;
  o.expire_ms = e.expire_ms;
  if (if_absent) o.cond = Cond::kNx;
  if (e.version != 0) {  // keep the source's version: newer wins
    o.if_newer = true;
    o.version = e.version;
  }
  switch (e.type) {
    case kTypeString:
      return Set(c, t, e.key, e.value, o);
    case kTypeInt: {
      int64_t n;
      if (!ParseInt64(e.value, &n)) {
        *err = "a counter's value is not a 64-bit decimal integer";
        return Status::kInvalid;
      }
      char b[8];
      std::memcpy(b, &n, 8);
      o.type = kTypeInt;
      return Set(c, t, e.key, std::string_view(b, 8), o);
    }
    case kTypeHash:
    case kTypeSet: {
      bool pairs = e.type == kTypeHash;
      std::string why;
      if (!DecodeItems(e.value, pairs, [](std::string_view, std::string_view) {}, &why)) {
        *err = std::string(pairs ? "hash" : "set") + " value: " + why;
        return Status::kInvalid;
      }
      bool busy = false;
      Status st = RunDict([&] {
        Dict d(c, t, e.key, e.type);
        Status s = d.LoadForReplace();
        if (s != Status::kOk) return s;
        // Commit publishes only over the version Load saw: absent stays
        // absent until then, or the whole step runs again.
        busy = if_absent && d.exists();
        if (busy) return Status::kExists;
        // Not newer than what the key holds: nothing to do (RunDict would
        // take Commit's kVersion for a lost race and run again).
        if (e.version != 0 && d.version() != 0 && !VersionNewer(e.version, d.version())) return Status::kExists;
        d.SetReplaceExpire(e.expire_ms);
        if (e.version != 0) d.SetPublishVersion(e.version);
        (void)DecodeItems(e.value, pairs, [&](std::string_view a, std::string_view b) { d.Put(a, b); }, &why);
        return d.Commit();
      });
      return st == Status::kExists && !busy ? Status::kVersion : st;
    }
    default:
      *err = "type " + std::to_string(e.type) + " has no exported form";
      return Status::kInvalid;
  }
}

Status MergeFields(Ctx& c, const TableRef& t, std::string_view key, uint8_t type, const FieldChanges& changes,
                   bool replace, int64_t expire_ms, uint64_t at_least, uint64_t* published) {
  std::optional<Dict> d;
  d.emplace(c, t, key, type);
  Status s = replace ? d->LoadForReplace() : d->Load();
  if (s == Status::kWrongType) {
    d.emplace(c, t, key, type);
    s = d->LoadForReplace();
  }
  if (s != Status::kOk && s != Status::kNotFound) return s;
  for (const auto& [f, v] : changes) {
    if (v) {
      d->Put(f, *v);
    } else {
      d->Remove(f);
    }
  }
  d->SetExpire(expire_ms);
  *published = std::max(at_least, d->version() + 1);
  d->SetPublishVersionAtLeast(at_least);
  return d->Commit();
}

Status ReadFields(Ctx& c, const TableRef& t, std::string_view key, uint8_t type, const std::vector<std::string>& fields,
                  std::vector<std::optional<std::string>>* out) {
  out->assign(fields.size(), std::nullopt);
  Dict d(c, t, key, type);
  Status s = d.Load();
  if (s != Status::kOk) return s;
  std::string v;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (d.Find(fields[i], &v)) (*out)[i] = v;
  }
  return Status::kOk;
}

}  // namespace cache
