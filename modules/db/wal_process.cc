// perfcached — the WAL process: drains every ring into segments, fsyncs by policy; replay at start.
// Copyright (c) 2026 the perfcached authors.
//
// Where each step runs:
//   rings mapped         the supervisor, before any fork (Init)
//   replay               the supervisor, after the snapshot, before the
//                        fork: workers accept only once it is done
//   draining, fsync      the WAL process ("pc-wal"); a restarted one
//                        fsyncs what its predecessor wrote, then goes on
//   final drain          the supervisor, after every child stopped
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include "cache/export.h"
#include "cache/ops.h"
#include "cache/scan.h"
#include "db/fileio.h"
#include "db/wal.h"
#include "db/wal_apply.h"
#include "db/wal_ring.h"
#include "modules/db/db_module.h"
#include "proc/daemon.h"
#include "proc/log.h"

namespace modules::db_module {
namespace {

int64_t MonoUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

using ::db::fileio::FsyncDir;

// The consumer: rings -> the current segment.
class Pump {
 public:
  // final: the supervisor's last drain (a few records at most): no
  // zeros laid down ahead for them.
  Pump(const proc::Config& cfg, bool final = false)
      : dir_(cfg.wal_dir), seg_bytes_(uint64_t(cfg.wal_segment_mb) << 20) {
    w_ = db::Wal();
    policy_ = static_cast<db::WalPolicy>(w_->policy);
    zero_fill_ = policy_ == db::WalPolicy::kAlways && !final;
    pending_.assign(w_->nrings, 0);
  }
  ~Pump() {
    if (fd_ >= 0) {
      TrimZeros();
      close(fd_);
    }
  }

  // Start after whatever is on disk: fsync the newest segment (a killed
  // predecessor's writes), then everything written so far is durable.
  bool Start(std::string* err) {
    auto segs = db::ListWalSegments(dir_);
    if (!segs.empty()) {
      int fd = open(segs.back().second.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || fdatasync(fd) != 0) {
        Fail(errno ? errno : EIO, segs.back().second + ": fdatasync at start: " + std::strerror(errno));
        w_->sync_failed.store(1);
      }
      if (fd >= 0) close(fd);
    }
    if (w_->sync_failed.load() != 0) {
      // A predecessor's fdatasync failed: what it wrote may be gone from the
      // disk although the file says otherwise. Nothing is durable again
      // until a restart (a fresh fdatasync would report success).
      (void)err;
      return true;
    }
    uint64_t end = db::WalEndPosition(dir_);
    if (end > w_->written_pos.load()) w_->written_pos.store(end);
    w_->durable_pos.store(w_->written_pos.load());
    for (uint32_t i = 0; i < w_->nrings; ++i) {
      db::WalRing* r = db::WalRingAt(i);
      r->durable.store(r->tail.load(), std::memory_order_seq_cst);
      pending_[i] = r->tail.load();
    }
    (void)err;
    return true;  // the segment is opened by the first write
  }

  // One round: drain, write, fsync by policy, publish. True when it moved
  // bytes (the caller loops again at once).
  bool Cycle(bool force_sync) {
    buf_.clear();
    heads_.assign(w_->nrings, 0);
    for (uint32_t i = 0; i < w_->nrings; ++i) {
      db::WalRing* r = db::WalRingAt(i);
      uint64_t h = r->head.load(std::memory_order_acquire), t = r->tail.load(std::memory_order_relaxed);
      heads_[i] = h;
      if (h > t) db::WalRingCopy(i, h, &buf_);
    }
    bool moved = !buf_.empty();
    last_bytes_ = buf_.size();
    last_records_ = 0;
    if (moved) {
      if (!Write()) return false;
      for (uint32_t i = 0; i < w_->nrings; ++i) {
        db::WalRing* r = db::WalRingAt(i);
        if (heads_[i] > r->tail.load(std::memory_order_relaxed)) r->tail.store(heads_[i], std::memory_order_release);
      }
      w_->written_pos.fetch_add(buf_.size());
      w_->bytes.fetch_add(buf_.size());
      dirty_ = true;
    }
    int64_t now = WallMs();
    bool sync = dirty_ && (force_sync || policy_ == db::WalPolicy::kAlways ||
                           (policy_ == db::WalPolicy::kEverysec && now - last_sync_ms_ >= 1000));
    if (sync) {
      if (!Sync()) return false;
      Publish();
    } else if (moved && policy_ == db::WalPolicy::kNo) {
      Publish();  // no fsync: "durable" is "handed to the kernel"
    }
    if (zero_fill_ && fd_ >= 0) KeepZerosAhead();
    if (fd_ >= 0 && size_ >= seg_bytes_) {
      std::string err;
      bool synced = Sync();
      if (synced) TrimZeros();
      if (!synced || !OpenSegment(&err)) {
        if (!err.empty()) Fail(errno ? errno : EIO, err);
      } else {
        Publish();
        if (w_->failed_errno.load() != 0 && w_->sync_failed.load() == 0) {
          w_->failed_errno.store(0);  // a new segment could be made: room again
          LOG_NOTICE("WAL: %s started: writes are accepted", path_.c_str());
        }
      }
    }
    return moved;
  }

  uint64_t segment_start() const { return seg_start_; }
  // The last Cycle's batch (bytes, records) and the last fsync's time.
  size_t last_bytes() const { return last_bytes_; }
  uint64_t last_records() const { return last_records_; }
  uint64_t last_sync_us() const { return last_sync_us_; }

 private:
  bool OpenSegment(std::string* err) {
    uint64_t start = w_->written_pos.load();
    std::string path = dir_ + "/" + db::WalSegmentName(start);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      *err = path + ": " + std::strerror(errno);
      return false;
    }
    std::string h = db::WalSegmentHeader(start, zero_fill_ ? db::kWalSegmentZeroFilled : 0);
    errno = 0;
    if (pwrite(fd, h.data(), h.size(), 0) != static_cast<ssize_t>(h.size())) {
      *err = path + ": write: " + std::strerror(errno ? errno : ENOSPC);
      close(fd);
      unlink(path.c_str());
      return false;
    }
    uint64_t alloc = kHeaderBytes;
    // The first zeros go down with the header's fdatasync (the one write
    // that opens a segment waits for them); no room for them (a full
    // disk) leaves a segment that grows as it is written.
    bool filled = zero_fill_ && ZeroFill(fd, &alloc, kZeroChunk);
    if (fdatasync(fd) != 0) {
      *err = path + ": fdatasync: " + std::strerror(errno);
      close(fd);
      unlink(path.c_str());
      return false;
    }
    FsyncDir(dir_);
    if (filled) w_->zero_fills.fetch_add(1);
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
    alloc_ = alloc;
    fill_retry_ms_ = 0;
    seg_start_ = start;
    size_ = 0;
    path_ = path;
    w_->segments_opened.fetch_add(1);
    w_->segment_start.store(start);
    return true;
  }

  void Fail(int e, const std::string& what) {
    w_->write_errors.fetch_add(1);
    w_->last_write_error_ms.store(WallMs());
    if (w_->failed_errno.exchange(e) == 0) {
      LOG_ERR("WAL: %s: writes are refused until the WAL can be written again", what.c_str());
    }
  }

  bool Write() {
    if (fd_ < 0) {
      std::string err;
      if (!OpenSegment(&err)) {
        Fail(errno ? errno : EIO, err);
        return false;
      }
    }
    size_t off = 0;
    while (off < buf_.size()) {
      ssize_t n = pwrite(fd_, buf_.data() + off, buf_.size() - off, static_cast<off_t>(kHeaderBytes + size_ + off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = n < 0 ? errno : ENOSPC;
        // Cut the file back to its last good record (the zeros ahead go
        // too, and with them what this write left in them; they are laid
        // down again later): the records stay in the rings and go again
        // on the next round, perhaps in another order of rings.
        if (ftruncate(fd_, static_cast<off_t>(kHeaderBytes + size_)) != 0) {
          LOG_ERR("WAL: %s: cannot cut a failed write back: %s", path_.c_str(), std::strerror(errno));
        } else {
          alloc_ = kHeaderBytes + size_;
        }
        Fail(e, path_ + ": write: " + std::strerror(e));
        return false;
      }
      off += static_cast<size_t>(n);
    }
    size_ += buf_.size();
    alloc_ = std::max(alloc_, kHeaderBytes + size_);
    last_records_ = CountRecords();
    w_->records.fetch_add(last_records_);
    if (w_->failed_errno.load() != 0 && w_->sync_failed.load() == 0) {
      w_->failed_errno.store(0);
      LOG_NOTICE("WAL: %s is written again: writes are accepted", path_.c_str());
    }
    return true;
  }

  uint64_t CountRecords() const {
    uint64_t n = 0;
    for (size_t off = 0; off + db::kWalRecordHead <= buf_.size();) {
      uint32_t len;
      std::memcpy(&len, buf_.data() + off, 4);
      off += db::kWalRecordHead + len;
      ++n;
    }
    return n;
  }

  bool Sync() {
    if (!dirty_ || fd_ < 0) return true;
    int64_t t0 = MonoUs();
    if (fdatasync(fd_) != 0) {
      // After a failed fsync the kernel may have dropped the pages: nothing
      // written since the last good one can be called durable, ever.
      Fail(errno, path_ + ": fdatasync: " + std::strerror(errno) + " (restart the daemon once the disk is fixed)");
      w_->sync_failed.store(1);
      return false;
    }
    if (w_->sync_failed.load() != 0) return false;
    uint64_t us = static_cast<uint64_t>(MonoUs() - t0);
    last_sync_us_ = us;
    w_->fsyncs.fetch_add(1);
    w_->fsync_us_total.fetch_add(us);
    if (us > w_->fsync_us_max.load()) w_->fsync_us_max.store(us);
    last_sync_ms_ = WallMs();
    w_->last_fsync_ms.store(last_sync_ms_);
    dirty_ = false;
    return true;
  }

  // Everything written so far is durable: tell the rings, wake waiters.
  void Publish() {
    if (w_->sync_failed.load() != 0) return;
    w_->durable_pos.store(w_->written_pos.load());
    for (uint32_t i = 0; i < w_->nrings; ++i) {
      db::WalRing* r = db::WalRingAt(i);
      uint64_t t = r->tail.load(std::memory_order_relaxed);
      if (t > r->durable.load(std::memory_order_relaxed)) {
        r->durable.store(t, std::memory_order_seq_cst);
        if (r->waiters.load(std::memory_order_seq_cst) != 0) {
          uint64_t one = 1;
          ssize_t n = write(r->efd, &one, sizeof one);
          (void)n;
        }
      }
    }
  }

  // fsync = always: the segment is zero-filled ahead of its records
  // (db/wal.h kWalSegmentZeroFilled), a chunk at a time, so the fdatasync
  // each write waits for carries no size change (one fewer write to the
  // disk: docs/persistence.md "Zero-filled segments"). The chunk goes
  // down after a publish (the waiting replies are released first); its
  // writeback starts at once, and the next fdatasync waits for what is
  // left of it and commits the new size: once per chunk.
  static bool ZeroFill(int fd, uint64_t* alloc, uint64_t bytes) {
    static const char zeros[64 << 10] = {};
    uint64_t done = 0;
    while (done < bytes) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof zeros, bytes - done));
      ssize_t w = pwrite(fd, zeros, n, static_cast<off_t>(*alloc + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        // No room (a full disk): give the part back; the segment grows
        // as it is written, as under the other policies.
        if (ftruncate(fd, static_cast<off_t>(*alloc)) != 0) {
          LOG_ERR("WAL: cannot give back a zero fill cut short: %s", std::strerror(errno));
        }
        return false;
      }
      done += static_cast<uint64_t>(w);
    }
    *alloc += bytes;
    return true;
  }

  void KeepZerosAhead() {
    uint64_t used = kHeaderBytes + size_;
    if (alloc_ >= used + kZeroChunk / 2 || size_ >= seg_bytes_ || alloc_ >= kHeaderBytes + seg_bytes_) return;
    int64_t now = WallMs();
    if (now < fill_retry_ms_) return;
    uint64_t from = alloc_;
    if (!ZeroFill(fd_, &alloc_, kZeroChunk)) {
      fill_retry_ms_ = now + 1000;
      return;
    }
    w_->zero_fills.fetch_add(1);
    sync_file_range(fd_, static_cast<off_t>(from), static_cast<off_t>(kZeroChunk), SYNC_FILE_RANGE_WRITE);
  }

  // A segment left: the zeros after its records go (their room is not
  // needed; nothing to fsync: with or without them the records read the same).
  void TrimZeros() {
    if (alloc_ > kHeaderBytes + size_ && ftruncate(fd_, static_cast<off_t>(kHeaderBytes + size_)) == 0) {
      alloc_ = kHeaderBytes + size_;
    }
  }

  static constexpr uint64_t kHeaderBytes = db::kWalSegmentHeader;
  static constexpr uint64_t kZeroChunk = 1 << 20;
  db::WalShared* w_;
  db::WalPolicy policy_;
  bool zero_fill_ = false;
  std::string dir_, path_, buf_;
  std::vector<uint64_t> heads_, pending_;
  uint64_t seg_bytes_, seg_start_ = 0, size_ = 0, alloc_ = 0;
  int64_t fill_retry_ms_ = 0;
  int fd_ = -1;
  bool dirty_ = false;
  int64_t last_sync_ms_ = 0;
  size_t last_bytes_ = 0;
  uint64_t last_records_ = 0, last_sync_us_ = 0;
};

// fsync = always, group commit. When the last fsync covered several
// writes (at least kGatherMinRecords) and as many more arrived while it
// ran, more clients are writing than one fsync covers: wait one fsync's
// time (at most kGatherMaxUs) before draining, so the next fsync covers
// the writes of that time too. Otherwise (a lone client, a few, or one
// client's pipeline whose first record woke us) drain at once: a nap
// there would only add its length to every write. Without it, one fsync
// per ~12 writes at pipeline 1 (50 clients) cost 1.7x redis-server's CPU
// per SET; redis-server fsyncs once per event-loop round (bench/wal.py,
// docs/persistence.md "Group commit window"). One nap, not a poll of the
// rings: waking every 20 us cost what the fsyncs saved.
constexpr uint64_t kGatherMinRecords = 4;
constexpr uint64_t kGatherMaxUs = 1000;

uint64_t PendingBytes(db::WalShared* w) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < w->nrings; ++i) {
    db::WalRing* r = db::WalRingAt(i);
    n += r->head.load(std::memory_order_acquire) - r->tail.load(std::memory_order_relaxed);
  }
  return n;
}

void Gather(db::WalShared* w, const Pump& pump) {
  // A batch of a few: its writers were all there was (or one client's
  // pipeline, caught at its first record): no nap.
  if (pump.last_records() < kGatherMinRecords) return;
  uint64_t per_record = pump.last_bytes() / pump.last_records();
  if (PendingBytes(w) < kGatherMinRecords * std::max<uint64_t>(per_record, 1)) return;
  usleep(static_cast<useconds_t>(std::min(pump.last_sync_us(), kGatherMaxUs)));
}

}  // namespace

bool InitWal(const proc::Config& cfg, std::string* err) {
  db::WalPolicy p;
  if (cfg.wal_dir.empty() || !db::ParseWalPolicy(cfg.wal_fsync, &p) || p == db::WalPolicy::kOff) return true;
  uint64_t ring = 1;
  while (ring < (uint64_t(cfg.wal_ring_mb) << 20)) ring <<= 1;
  int workers = cfg.workers > 0 ? cfg.workers : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // One ring per process-table entry that may write: supervisor, timer,
  // workers, then module processes (the MI's among them).
  uint32_t n = static_cast<uint32_t>(std::min<int>(2 + workers + 16, proc::kMaxProcEntries));
  if (cfg.wal_save.empty()) {
    LOG_WARN("[wal] save = \"\" with the WAL on: no snapshot is taken by itself, so WAL segments are never "
             "dropped and recovery replays them all: run BGSAVE now and then");
  }
  return db::MapWal(n, ring, p, err);
}

int WalProcesses(const proc::Config&) { return db::Wal() ? 1 : 0; }

void RunWal(proc::ModuleProcContext& pc) {
  db::WalShared* w = db::Wal();
  prctl(PR_SET_TIMERSLACK, 1000UL);  // Gather's nap: its length, not + the default 50 us slack
  w->wal_pid.store(getpid());
  Pump pump(*pc.cfg);
  std::string err;
  while (!pump.Start(&err)) {  // a full disk at start: keep trying, writes are refused meanwhile
    if (w->failed_errno.exchange(ENOSPC) == 0) LOG_ERR("WAL: %s", err.c_str());
    for (int i = 0; i < 10 && !proc::StopRequested(); ++i) usleep(100 * 1000);
    if (proc::StopRequested()) return;
  }
  int64_t last_tick = 0, stop_at = 0;
  // A stop: workers finish the replies in flight, and under always those
  // wait for this process. Go on until no worker is left (bounded).
  auto running = [&] {
    if (!proc::StopRequested()) return true;
    int64_t now = WallMs();
    if (stop_at == 0) stop_at = now;
    if (now - stop_at > 15000) return false;
    for (uint32_t i = 0; i < pc.procs->count; ++i) {
      const proc::ProcEntry& e = pc.procs->e[i];
      int32_t pid = e.pid.load();
      if (e.role.load() == static_cast<uint32_t>(proc::Role::kWorker) && pid > 0 && kill(pid, 0) == 0) return true;
    }
    return false;
  };
  while (running()) {
    int64_t now = WallMs();
    if (now - last_tick >= 200) {
      last_tick = now;
      if (pc.tick) pc.tick();
      pc.self->heartbeat_ms.store(now);
    }
    if (pump.Cycle(false)) {
      if (static_cast<db::WalPolicy>(w->policy) == db::WalPolicy::kAlways) Gather(w, pump);
      continue;
    }
    if (w->failed_errno.load() != 0) {
      usleep(100 * 1000);  // a full disk: try again soon
      continue;
    }
    // Nothing to do: sleep on the wake eventfd (Dekker with the producers,
    // db/wal_ring.h WalLogger::Wake).
    w->sleeping.store(1, std::memory_order_seq_cst);
    bool empty = true;
    for (uint32_t i = 0; i < w->nrings && empty; ++i) {
      db::WalRing* r = db::WalRingAt(i);
      empty = r->head.load(std::memory_order_seq_cst) == r->tail.load(std::memory_order_relaxed);
    }
    if (empty) {
      pollfd p{w->wake_fd, POLLIN, 0};
      int timeout = static_cast<db::WalPolicy>(w->policy) == db::WalPolicy::kAlways ? 100 : 20;
      if (poll(&p, 1, timeout) > 0) {
        uint64_t v;
        ssize_t n = read(w->wake_fd, &v, sizeof v);
        (void)n;
      }
    }
    w->sleeping.store(0, std::memory_order_seq_cst);
  }
  // Stopping: what the rings hold now goes out and is fsynced; the
  // supervisor drains the rest once every worker is gone (FinalWalDrain).
  while (pump.Cycle(true)) {
  }
}

void FinalWalDrain(const proc::Config& cfg) {
  if (!db::Wal()) return;
  Pump pump(cfg, true);
  std::string err;
  if (!pump.Start(&err)) {
    LOG_ERR("WAL: final drain: %s: the records still in memory are not on disk", err.c_str());
    return;
  }
  for (int i = 0; i < 1000 && pump.Cycle(true); ++i) {
  }
}

std::vector<StatValue> WalStatValues() {
  std::vector<StatValue> out;
  for (const db::WalFigure& f : db::WalFigures()) {
    out.push_back({"wal", f.name, static_cast<double>(f.value), f.counter});
  }
  return out;
}

uint64_t WalWrittenPosition() {
  db::WalShared* w = db::Wal();
  return w ? w->written_pos.load() : 0;
}

// ---- replay --------------------------------------------------------------------

bool ReplayWal(cache::Ctx& c, const proc::Config& cfg, Recovered* rec, std::string* err) {
  db::WalShared* w = db::Wal();
  int64_t t0 = WallMs();
  uint64_t from = rec->wal_from;
  // What each record does: db/wal_apply.h.
  db::WalApplier apply(
      c, db::WalApplier::Known{&rec->top, &rec->tomb, &rec->snap_floor, &rec->snap_expired, rec->clock},
      [&cfg](std::string_view name) {
        for (const auto& cc : cfg.collections) {
          if (cc.name == name) return true;
        }
        return false;
      },
      [](const std::string& line) { LOG_ERR("WAL replay: %s", line.c_str()); });
  bool full = false;
  db::WalReadReport rep;
  std::string why;
  bool ok = db::ReadWal(cfg.wal_dir, from, true, [&](uint64_t, const db::WalRecord& r) {
    if (apply.Apply(r, &why)) return true;
    full = true;
    return false;
  }, &rep, err);
  uint64_t applied = apply.applied, skipped = apply.skipped, unknown = apply.unknown;
  if (full) {
    *err = "the WAL does not fit the arena (" + std::to_string(applied) +
           " records replayed): raise [memory] arena_mb / arena_cap_mb";
    return false;
  }
  if (!ok) return false;
  for (const std::string& p : rep.problems) LOG_ERR("WAL replay: %s", p.c_str());
  // Where the next segment starts: after the newest one's bytes (read
  // just now: a zero-filled segment's size does not say).
  uint64_t end = rep.segments ? rep.written_end : db::WalEndPosition(cfg.wal_dir);
  if (rec->have_snapshot && from > end) {
    // The snapshot covers more than the segments hold (segments removed by
    // hand, or an everysec tail lost with the machine): new writes go
    // after the snapshot's position, never below it (replay starts there).
    LOG_WARN("WAL: the snapshot covers position %llu but the segments end at %llu: the WAL after the snapshot "
             "is missing (removed, or lost with the machine)",
             static_cast<unsigned long long>(from), static_cast<unsigned long long>(end));
    end = from;
  }
  if (w) {
    w->replayed.store(rep.records);
    w->replay_torn.store(rep.torn_bytes);
    w->replay_ms.store(WallMs() - t0);
    w->written_pos.store(end);
  }
  if (unknown) LOG_ERR("WAL replay: %llu record(s) name a collection that cannot be made: not replayed",
                       static_cast<unsigned long long>(unknown));
  LOG_NOTICE("WAL replay: %llu record(s) from position %llu in %llu segment(s) (%llu applied, %llu older than "
             "what the table holds; %zu key(s) merged by field) in %lld ms%s",
             static_cast<unsigned long long>(rep.records), static_cast<unsigned long long>(from),
             static_cast<unsigned long long>(rep.segments), static_cast<unsigned long long>(applied),
             static_cast<unsigned long long>(skipped), apply.tracked_keys(), static_cast<long long>(WallMs() - t0),
             rep.torn_bytes ? (", " + std::to_string(rep.torn_bytes) + " torn byte(s) cut off").c_str() : "");
  return true;
}

}  // namespace modules::db_module
