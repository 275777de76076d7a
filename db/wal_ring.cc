// perfcached — the WAL's shared rings (see wal_ring.h).
// Copyright (c) 2026 the perfcached authors.
#include "db/wal_ring.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "cache/journal.h"
#include "cache/export.h"
#include "db/wal.h"

namespace db {
namespace {

WalShared* g_wal = nullptr;

constexpr char kShmMagic[8] = {'P', 'C', 'W', 'A', 'L', 'S', 'H', 'M'};

size_t RingStride(uint64_t ring_bytes) { return sizeof(WalRing) + ring_bytes; }

// Owner-only counter increment (one writer: no locked RMW).
void Bump(std::atomic<uint64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

uint64_t WalMaxVersion() {
  if (!g_wal) return 0;
  uint64_t v = g_wal->recovered_max_version.load();
  for (uint32_t i = 0; i < g_wal->nrings; ++i) v = std::max(v, WalRingAt(i)->max_version.load());
  return v;
}

const char* WalPolicyName(WalPolicy p) {
  switch (p) {
    case WalPolicy::kNo: return "no";
    case WalPolicy::kEverysec: return "everysec";
    case WalPolicy::kAlways: return "always";
    default: return "off";
  }
}

bool ParseWalPolicy(std::string_view s, WalPolicy* out) {
  if (s == "always") *out = WalPolicy::kAlways;
  else if (s == "everysec") *out = WalPolicy::kEverysec;
  else if (s == "no") *out = WalPolicy::kNo;
  else if (s == "off") *out = WalPolicy::kOff;
  else return false;
  return true;
}

bool MapWal(uint32_t nrings, uint64_t ring_bytes, WalPolicy policy, std::string* err) {
  if (g_wal) return true;
  size_t total = sizeof(WalShared) + size_t{nrings} * RingStride(ring_bytes);
  // Pages are touched as the rings fill: an idle ring costs address space only.
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    *err = "WAL rings (" + std::to_string(total >> 20) + " MiB): mmap: " + std::strerror(errno);
    return false;
  }
  auto* w = static_cast<WalShared*>(p);
  std::memcpy(w->magic, kShmMagic, 8);
  w->version = kWalShmVersion;
  w->nrings = nrings;
  w->ring_bytes = ring_bytes;
  w->policy = static_cast<uint32_t>(policy);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
  int me = pthread_mutex_init(&w->commit_mu, &ma);
  pthread_mutexattr_destroy(&ma);
  if (me != 0) {
    *err = std::string("WAL commit lock: ") + std::strerror(me);
    munmap(p, total);
    return false;
  }
  w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->wake_fd < 0) {
    *err = std::string("WAL eventfd: ") + std::strerror(errno);
    munmap(p, total);
    return false;
  }
  g_wal = w;
  for (uint32_t i = 0; i < nrings; ++i) {
    WalRing* r = WalRingAt(i);
    r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->efd < 0) {
      *err = std::string("WAL eventfd: ") + std::strerror(errno);
      return false;
    }
  }
  return true;
}

WalShared* Wal() { return g_wal; }

CommitLock LockCommit(bool wait) {
  int r;
  if (wait) {
    // Bounded: a committer stuck in a hung fdatasync must not stop the
    // caller's heartbeat (the WAL process tries again).
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 200 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec += 1;
      until.tv_nsec -= 1000000000;
    }
    r = pthread_mutex_clocklock(&g_wal->commit_mu, CLOCK_MONOTONIC, &until);
  } else {
    r = pthread_mutex_trylock(&g_wal->commit_mu);
  }
  if (r == EOWNERDEAD) {
    pthread_mutex_consistent(&g_wal->commit_mu);
    return CommitLock::kOwnerDied;
  }
  if (r != 0 && r != EBUSY && r != ETIMEDOUT) {
    // ENOTRECOVERABLE cannot happen (every EOWNERDEAD is made consistent):
    // do not let a waiting caller spin on it.
    if (wait) usleep(100 * 1000);
    return CommitLock::kBusy;
  }
  return r == 0 ? CommitLock::kTaken : CommitLock::kBusy;
}

void UnlockCommit() { pthread_mutex_unlock(&g_wal->commit_mu); }

void WakeWalProcess() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_wal->sleeping.load(std::memory_order_seq_cst) != 0) {
    uint64_t one = 1;
    ssize_t n = write(g_wal->wake_fd, &one, sizeof one);
    (void)n;
  }
}

WalRing* WalRingAt(uint32_t index) {
  if (!g_wal || index >= g_wal->nrings) return nullptr;
  char* base = reinterpret_cast<char*>(g_wal) + sizeof(WalShared);
  return reinterpret_cast<WalRing*>(base + size_t{index} * RingStride(g_wal->ring_bytes));
}

char* WalRingBytes(uint32_t index) {
  WalRing* r = WalRingAt(index);
  return r ? reinterpret_cast<char*>(r) + sizeof(WalRing) : nullptr;
}

void WalRingCopy(uint32_t index, uint64_t upto, std::string* out) {
  WalRing* r = WalRingAt(index);
  const char* bytes = WalRingBytes(index);
  uint64_t cap = g_wal->ring_bytes;
  uint64_t from = r->tail.load(std::memory_order_relaxed);
  while (from < upto) {
    uint64_t off = from & (cap - 1);
    uint64_t n = std::min(upto - from, cap - off);
    out->append(bytes + off, n);
    from += n;
  }
}

std::vector<WalFigure> WalFigures() {
  std::vector<WalFigure> out;
  WalShared* w = Wal();
  if (!w) return out;
  auto counter = [&](const char* n, uint64_t v) { out.push_back({n, static_cast<int64_t>(v), true}); };
  auto gauge = [&](const char* n, int64_t v) { out.push_back({n, v, false}); };
  uint64_t refused = 0, waits = 0, pending = 0, appended = 0;
  for (uint32_t i = 0; i < w->nrings; ++i) {
    WalRing* r = WalRingAt(i);
    refused += r->refused.load();
    waits += r->waits.load();
    appended += r->records.load();
    pending += r->head.load() - r->tail.load();
  }
  uint64_t fsyncs = w->fsyncs.load();
  counter("records_appended", appended);
  counter("records_written", w->records.load());
  counter("bytes_written", w->bytes.load());
  counter("fsyncs", fsyncs);
  gauge("fsync_avg_us", fsyncs ? static_cast<int64_t>(w->fsync_us_total.load() / fsyncs) : 0);
  gauge("fsync_max_us", static_cast<int64_t>(w->fsync_us_max.load()));
  gauge("last_fsync_time", w->last_fsync_ms.load() / 1000);
  counter("segments_opened", w->segments_opened.load());
  counter("segments_dropped", w->segments_dropped.load());
  counter("zero_fills", w->zero_fills.load());
  counter("worker_commits", w->worker_commits.load());
  gauge("segment_start", static_cast<int64_t>(w->segment_start.load()));
  gauge("written_position", static_cast<int64_t>(w->written_pos.load()));
  gauge("durable_position", static_cast<int64_t>(w->durable_pos.load()));
  gauge("pending_bytes", static_cast<int64_t>(pending));
  gauge("ring_bytes", static_cast<int64_t>(w->ring_bytes));
  counter("write_errors", w->write_errors.load());
  gauge("failed", w->failed_errno.load() != 0);
  counter("refused_writes", refused);
  counter("ring_waits", waits);
  gauge("replayed_records", static_cast<int64_t>(w->replayed.load()));
  gauge("replay_torn_bytes", static_cast<int64_t>(w->replay_torn.load()));
  gauge("replay_ms", w->replay_ms.load());
  return out;
}

// ---- the producer ---------------------------------------------------------------

void (*g_wal_test_after_floor)() = nullptr;

bool WalLogger::Attach(uint32_t index) {
  if (!g_wal || static_cast<WalPolicy>(g_wal->policy) == WalPolicy::kOff) return false;
  ring_ = WalRingAt(index);
  if (!ring_) {
    // More writing processes than rings: this one cannot log, so it must
    // not write (Admit refuses) rather than write unlogged.
    broken_ = true;
    return true;
  }
  bytes_ = WalRingBytes(index);
  cap_ = g_wal->ring_bytes;
  index_ = index;
  ring_->owner.store(getpid());
  ring_->waiters.store(0);
  return true;
}

WalPolicy WalLogger::policy() const { return g_wal ? static_cast<WalPolicy>(g_wal->policy) : WalPolicy::kOff; }

int WalLogger::efd() const { return ring_ ? ring_->efd : -1; }

uint64_t WalLogger::position() const { return ring_ ? ring_->head.load(std::memory_order_relaxed) : 0; }

bool WalLogger::Durable(uint64_t pos) const {
  return !ring_ || ring_->durable.load(std::memory_order_seq_cst) >= pos;
}

void WalLogger::SetWaiting(bool on) {
  if (ring_) ring_->waiters.store(on ? 1 : 0, std::memory_order_seq_cst);
}

void WalLogger::Wake() {
  if (!ring_) return;
  // Dekker with the WAL process: it sets `sleeping`, then looks at every
  // head; we published head, then look at `sleeping` (both seq_cst).
  WakeWalProcess();
}

const char* WalLogger::Admit(int timeout_ms) {
  if (broken_) return "MISCONF this process has no WAL ring (more processes than rings): writes are refused";
  if (!ring_) return nullptr;
  if (g_wal->failed_errno.load(std::memory_order_relaxed) != 0) {
    Bump(ring_->refused);
    return "MISCONF Errors writing to the WAL (see the log): writes are refused until it can be written";
  }
  // Room for a typical record; a larger one waits in Push.
  uint64_t want = std::min<uint64_t>(cap_ / 4, 1u << 20);
  int64_t deadline = 0;
  while (cap_ - (ring_->head.load(std::memory_order_relaxed) - ring_->tail.load(std::memory_order_acquire)) < want) {
    int64_t now = MonoMs();
    // After a wait that timed out, refuse at once for a second: a stalled
    // WAL process must not make every write hold the worker's loop.
    if (now < refuse_until_ms_) {
      Bump(ring_->refused);
      return "ERR the WAL is not keeping up (its ring stayed full): write refused, nothing changed";
    }
    if (deadline == 0) {
      deadline = now + timeout_ms;
      Bump(ring_->waits);
    }
    uint64_t one = 1;
    ssize_t n = write(g_wal->wake_fd, &one, sizeof one);
    (void)n;
    if (now >= deadline) {
      refuse_until_ms_ = now + 1000;
      Bump(ring_->refused);
      return "ERR the WAL is not keeping up (its ring stayed full): write refused, nothing changed";
    }
    usleep(500);
  }
  return nullptr;
}

bool WalLogger::HasRoom(uint64_t bytes) const {
  if (broken_) return false;
  if (!ring_) return true;
  if (g_wal->failed_errno.load(std::memory_order_relaxed) != 0) return false;
  return cap_ - (ring_->head.load(std::memory_order_relaxed) - ring_->tail.load(std::memory_order_acquire)) >= bytes;
}

bool WalLogger::Push(std::string_view rec, std::string_view collection, std::string_view key, std::string* err) {
  // A record larger than a quarter of the ring goes in as parts (kind 7,
  // db/wal.h), each appended once there is room for it: it never needs the
  // whole ring, and the WAL process drains the first parts while the rest
  // wait. The reply waits for the last one like for any record. The parts
  // share one 10 s bound on waiting, as one record has (the worker's loop
  // waits meanwhile: the supervisor's watchdog must not see it stall).
  size_t piece = static_cast<size_t>(cap_ / 4);
  int64_t deadline = 0;
  if (rec.size() <= piece) return PushOne(rec, &deadline, err);
  if (!EncodeWalParts(rec, index_, collection, key, pending_version_, piece,
                      [&](std::string_view part) { return PushOne(part, &deadline, err); })) {
    if (err->empty()) {
      *err = "a record of " + std::to_string(rec.size()) + " bytes is larger than the WAL can read back";
    }
    return false;
  }
  return true;
}

bool WalLogger::PushOne(std::string_view rec, int64_t* deadline, std::string* err) {
  if (rec.size() > cap_) {
    *err = "a record of " + std::to_string(rec.size()) + " bytes does not fit the WAL ring (" +
           std::to_string(cap_ >> 20) + " MiB: raise [wal] ring_mb)";
    return false;
  }
  uint64_t head = ring_->head.load(std::memory_order_relaxed);
  while (cap_ - (head - ring_->tail.load(std::memory_order_acquire)) < rec.size()) {
    if (g_wal->failed_errno.load(std::memory_order_relaxed) != 0) {
      *err = std::string("the WAL cannot be written: ") + std::strerror(g_wal->failed_errno.load());
      return false;  // no room will come soon: do not hold the loop
    }
    if (*deadline == 0) {
      *deadline = MonoMs() + 10000;
      Bump(ring_->waits);
    }
    uint64_t one = 1;
    ssize_t n = write(g_wal->wake_fd, &one, sizeof one);
    (void)n;
    if (MonoMs() >= *deadline) {
      *err = "the WAL ring stayed full for 10 s (is the WAL process running? the disk?)";
      return false;
    }
    usleep(500);
  }
  uint64_t off = head & (cap_ - 1);
  size_t first = static_cast<size_t>(std::min<uint64_t>(rec.size(), cap_ - off));
  std::memcpy(bytes_ + off, rec.data(), first);
  if (first < rec.size()) std::memcpy(bytes_, rec.data() + first, rec.size() - first);
  ring_->head.store(head + rec.size(), std::memory_order_seq_cst);
  Bump(ring_->records);
  if (pending_version_ > ring_->max_version.load(std::memory_order_relaxed)) {
    ring_->max_version.store(pending_version_, std::memory_order_relaxed);
  }
  // everysec / no: the WAL process drains on its own clock; wake it early
  // only when the ring is half full. always: at once, unless this process
  // commits its records itself at the end of its round (set_leads).
  uint64_t used = head + rec.size() - ring_->tail.load(std::memory_order_relaxed);
  if ((policy() == WalPolicy::kAlways && !leads_) || used > cap_ / 2) {
    Wake();
  }
  return true;
}

bool WalLogger::LogKey(cache::Ctx& c, const cache::TableRef& t, std::string_view collection, std::string_view key,
                       std::string* err, const std::vector<cache::DictChange>* journal) {
  if (!ring_) return !broken_;
  if (journal) {
    // A large hash or set changed by field: log the fields. Its state is
    // logged whole when the write made or removed the key (a new life must
    // start with a whole record: db/wal_apply.h), when it is small
    // (listpack, intset: one short record, and replay keeps no per-field
    // bookkeeping for it), or when something other than a Dict wrote it
    // (no journal entry). A new expiry of a large one is an expire record
    // (kind 6). A write that changed nothing logs nothing.
    bool any = false, by_field = true;
    for (const cache::DictChange& ch : *journal) {
      if (ch.key != key || ch.table_index != t.index || ch.table_gen != t.gen) continue;
      any = true;
      if (ch.whole || (!ch.tree && ch.version != 0)) by_field = false;
    }
    if (any && by_field) {
      for (const cache::DictChange& ch : *journal) {
        if (ch.key != key || ch.table_index != t.index || ch.table_gen != t.gen || ch.version == 0) continue;
        if (!LogFields(collection, ch, err)) return false;
      }
      return true;
    }
  }
  // The tombstone rule (docs/persistence.md): the floor read after the
  // write and BEFORE looking for the key.
  uint64_t floor = cache::VersionFloor(t);
  if (g_wal_test_after_floor) g_wal_test_after_floor();
  cache::Entry e;
  mem::Status s = mem::Status::kBusy;
  for (int round = 0;; ++round) {
    // Read back with the clock far in the past: a record that expired
    // since the write (SET k v PX 1) is logged as the put it is, with its
    // version (replay drops it, and it outranks older puts), not as a
    // tombstone at a floor that may be below them. Not an access (LRU).
    cache::NoTouch quiet(c);
    cache::NoStats no_stats(c);  // nor a keyspace hit or miss
    struct PastClock {  // put back even when the export throws (bad_alloc)
      cache::Ctx& c;
      int64_t saved;
      explicit PastClock(cache::Ctx& x) : c(x), saved(x.clock_skew_ms) {
        c.clock_skew_ms = saved - int64_t{50} * 365 * 86400 * 1000;
      }
      ~PastClock() { c.clock_skew_ms = saved; }
    } past(c);
    s = mem::Status::kBusy;
    for (int i = 0; i < 100 && s == mem::Status::kBusy; ++i) s = cache::ExportKey(c, t, key, &e);
    if (s != mem::Status::kNotFound || round == 100) break;
    // Absent. A removal raises the floor to the removed version before it
    // unlinks, so an unchanged floor proves that a removal of this
    // write's record (the timer's sweep of a 1 ms TTL, which logs
    // nothing) came before `floor` was read, and the tombstone outranks
    // it. A floor that moved: read the key again under the new one (a
    // tombstone at a floor read after the look could outrank a create
    // that came in between).
    uint64_t again = cache::VersionFloor(t);
    if (again == floor) break;
    floor = again;
  }
  buf_.clear();
  pending_version_ = s == mem::Status::kOk ? e.version : floor;
  if (s == mem::Status::kOk) {
    EncodeWalPut(collection, e, &buf_);
  } else if (s == mem::Status::kNotFound) {
    EncodeWalRecord(kWalTombstone, collection, key, 0, {}, 0, floor, &buf_);
  } else if (s == mem::Status::kStale) {
    return true;  // the collection went away: its flush record covers it
  } else {
    *err = "cannot read the key back for the WAL: " + std::string(mem::StatusName(s));
    return false;
  }
  return Push(buf_, collection, key, err);
}

bool WalLogger::LogFields(std::string_view collection, const cache::DictChange& ch, std::string* err) {
  if (!ring_) return !broken_;
  buf_.clear();
  pending_version_ = ch.version;
  if (ch.expire_only) {
    EncodeWalRecord(kWalExpire, collection, ch.key, ch.type, {}, ch.expire_ms, ch.version, &buf_);
  } else {
    EncodeWalFields(collection, ch.key, ch.type, ch.expire_ms, ch.version, ch.fields, &buf_);
  }
  return Push(buf_, collection, ch.key, err);
}

bool WalLogger::LogTombstone(std::string_view collection, std::string_view key, uint64_t version,
                             std::string* err) {
  if (!ring_) return !broken_;
  buf_.clear();
  pending_version_ = version;
  EncodeWalRecord(kWalTombstone, collection, key, 0, {}, 0, version, &buf_);
  return Push(buf_, collection, key, err);
}

bool WalLogger::LogDrop(std::string_view collection, uint64_t version, std::string* err) {
  if (!ring_) return !broken_;
  buf_.clear();
  pending_version_ = version;
  EncodeWalRecord(kWalDrop, collection, {}, 0, {}, 0, version, &buf_);
  return Push(buf_, collection, {}, err);
}

bool WalLogger::WaitDurable(uint64_t pos, int timeout_ms) {
  if (!ring_ || policy() != WalPolicy::kAlways) return true;
  Wake();
  int64_t deadline = MonoMs() + timeout_ms, failing_since = 0;
  while (!Durable(pos)) {
    int64_t now = MonoMs();
    if (now >= deadline) return false;
    // The WAL cannot be written: give up after 2 s, as a worker does.
    if (g_wal->failed_errno.load(std::memory_order_relaxed) == 0) {
      failing_since = 0;
    } else if (failing_since == 0) {
      failing_since = now;
    } else if (now - failing_since > 2000) {
      return false;
    }
    usleep(200);
  }
  return true;
}

}  // namespace db
