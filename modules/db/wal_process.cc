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

#include <cstdio>
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
#include "net/server.h"
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

// A committer: rings -> the current segment. Every method runs under
// commit_mu (db/wal_ring.h): the segment's state is shared (the write
// offset is written_pos - segment_start, the zeros' end seg_alloc), and
// each committer takes it up at the start of its turn (Adopt), since
// another may have written or opened a segment meanwhile.
class Pump {
 public:
  // kProcess: the WAL process (opens segments, lays zeros ahead under
  // always). kFinal: the supervisor's last drain (a few records at most:
  // no zeros laid down for them). kLeader: a worker committing its
  // round's records itself (Lead; it neither opens segments nor lays
  // zeros: it wakes the WAL process for those).
  enum class Role { kProcess, kFinal, kLeader };
  Pump(const proc::Config& cfg, Role role = Role::kProcess, uint32_t self_ring = UINT32_MAX)
      : dir_(cfg.wal_dir), seg_bytes_(uint64_t(cfg.wal_segment_mb) << 20), role_(role), self_ring_(self_ring) {
    w_ = db::Wal();
    policy_ = static_cast<db::WalPolicy>(w_->policy);
    zero_fill_ = policy_ == db::WalPolicy::kAlways && role == Role::kProcess;
    pending_.assign(w_->nrings, 0);
    // Tests only (test_wal): PERFCACHED_TEST_LEADER_DIES=STEP:N kills a
    // leading worker at STEP of its Nth turn (1 drained, 2 written, 3
    // counted in written_pos, 4 ring tails moved, 5 fsynced, 6 one ring
    // published), so that the next committer's recovery from a turn cut
    // short runs at each step.
    const char* die = role == Role::kLeader ? getenv("PERFCACHED_TEST_LEADER_DIES") : nullptr;
    if (die && sscanf(die, "%d:%llu", &die_step_, &die_turn_) != 2) die_step_ = 0;
  }
  ~Pump() {
    if (fd_ >= 0) close(fd_);
  }

  // The previous holder of commit_mu died holding it: what it wrote
  // (and counted in written_pos) may not be fsynced; this turn fsyncs
  // and publishes even with nothing new to write.
  void AfterDeath() { dirty_ = true; }

  // Leaving (the WAL process at a stop, the final drain): the zeros after
  // the records go.
  void Finish() {
    if (Adopt()) TrimZeros();
  }

  // Start after whatever is on disk: fsync the current segment and the
  // newest (a killed predecessor's writes), then everything written so
  // far is durable.
  bool Start(std::string* err) {
    auto segs = db::ListWalSegments(dir_);
    std::vector<std::string> sync;
    if (w_->segments_opened.load() != 0) sync.push_back(dir_ + "/" + db::WalSegmentName(w_->segment_start.load()));
    if (!segs.empty() && (sync.empty() || sync[0] != segs.back().second)) sync.push_back(segs.back().second);
    for (const std::string& path : sync) {
      errno = 0;
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT) continue;
      if (fd < 0 || fdatasync(fd) != 0) {
        Fail(errno ? errno : EIO, path + ": fdatasync at start: " + std::strerror(errno));
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
    // A segment of this run: the records end at written_pos (counted before
    // the ring tails move). Bytes after it — a predecessor's write cut
    // short, or written and not counted — are written over by the next
    // batch, which holds at least the same records (they are still in the
    // rings); raising written_pos over them would leave a torn record
    // in the middle of the segment, and a later replay would cut every
    // record after it. Before any segment of this run: after the log on disk.
    if (w_->segments_opened.load() == 0) {
      uint64_t end = db::WalEndPosition(dir_);
      if (end > w_->written_pos.load()) w_->written_pos.store(end);
    }
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
    // A predecessor killed while it opened a segment: open it again (the
    // same name: nothing was written since, no worker commits meanwhile).
    if (w_->rotating.load() != 0) {
      std::string err;
      if (!OpenSegment(&err)) {
        Fail(errno ? errno : EIO, err);
        return false;
      }
    }
    // The current segment cannot be written: nothing may be published.
    if (!Adopt() && w_->segments_opened.load() != 0) return false;
    bool moved = CycleLocked(force_sync);
    TrimBuffer();
    return moved;
  }

  // A worker's turn as leader (fsync = always): false when it cannot (no
  // segment yet, or the WAL process is opening one): the WAL process
  // commits then.
  bool Lead() {
    // A full segment: the WAL process opens the next (it commits meanwhile).
    if (!Adopt() || size_ >= seg_bytes_) return false;
    ++turns_;
    w_->worker_commits.fetch_add(1, std::memory_order_relaxed);
    CycleLocked(false);
    TrimBuffer();
    return true;
  }

 private:
  void TestDie(int step) const {
    if (step == die_step_ && turns_ == die_turn_) raise(SIGKILL);
  }

  // Take the shared segment state; false when there is no segment to write
  // into (none opened yet, or one being opened).
  bool Adopt() {
    if (w_->rotating.load() != 0) return false;
    if (w_->segments_opened.load() == 0) return fd_ >= 0;
    uint64_t start = w_->segment_start.load();
    if (fd_ < 0 || start != seg_start_) {
      std::string path = dir_ + "/" + db::WalSegmentName(start);
      int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) {
        // A worker (out of descriptors): the WAL process commits instead.
        // The WAL process: the segment is gone; start another.
        if (role_ == Role::kLeader) return false;
        // Only when everything in it is durable: the records not yet
        // fsynced there would otherwise be published by the next turn.
        int e = errno;
        std::string err;
        if (w_->durable_pos.load() == w_->written_pos.load() && OpenSegment(&err)) return true;
        Fail(e, path + ": " + std::strerror(e) + (err.empty() ? "" : "; " + err));
        return false;
      }
      if (fd_ >= 0) close(fd_);
      fd_ = fd;
      seg_start_ = start;
      path_ = path;
    }
    size_ = w_->written_pos.load() - seg_start_;
    alloc_ = std::max(w_->seg_alloc.load(), kHeaderBytes + size_);
    return true;
  }

  bool CycleLocked(bool force_sync) {
    // Whatever a worker that found commit_mu taken asked for is drained now.
    w_->commit_wanted.store(0, std::memory_order_seq_cst);
    // Written and not yet fsynced under always: a committer died after its
    // write (its records may be in no ring any more): fsync and publish
    // now, even with nothing new to write.
    if (policy_ == db::WalPolicy::kAlways && w_->durable_pos.load() < w_->written_pos.load()) dirty_ = true;
    buf_.clear();
    heads_.assign(w_->nrings, 0);
    for (uint32_t i = 0; i < w_->nrings; ++i) {
      db::WalRing* r = db::WalRingAt(i);
      // (seq_cst: the other half of the commit_wanted pair, db/wal_ring.h)
      uint64_t h = r->head.load(std::memory_order_seq_cst), t = r->tail.load(std::memory_order_relaxed);
      heads_[i] = h;
      if (h > t) db::WalRingCopy(i, h, &buf_);
    }
    bool moved = !buf_.empty();
    last_bytes_ = buf_.size();
    last_records_ = 0;
    if (moved) {
      TestDie(1);
      if (!Write()) return false;
      TestDie(2);
      // written_pos first: a committer killed after it leaves the records
      // counted in the file and still in the rings (the next one writes
      // them again after them: replay takes a version once); killed
      // before it, they are written over.
      w_->written_pos.fetch_add(buf_.size());
      TestDie(3);
      for (uint32_t i = 0; i < w_->nrings; ++i) {
        db::WalRing* r = db::WalRingAt(i);
        if (heads_[i] > r->tail.load(std::memory_order_relaxed)) r->tail.store(heads_[i], std::memory_order_release);
      }
      TestDie(4);
      w_->bytes.fetch_add(buf_.size());
      dirty_ = true;
    }
    int64_t now = WallMs();
    bool sync = dirty_ && (force_sync || policy_ == db::WalPolicy::kAlways ||
                           (policy_ == db::WalPolicy::kEverysec && now - last_sync_ms_ >= 1000));
    if (sync) {
      if (!Sync()) return false;
      TestDie(5);
      Publish();
    } else if (moved && policy_ == db::WalPolicy::kNo) {
      Publish();  // no fsync: "durable" is "handed to the kernel"
    }
    if (role_ == Role::kLeader) {
      // Zeros running out, or the segment full: the WAL process's work.
      bool low = policy_ == db::WalPolicy::kAlways && alloc_ < kHeaderBytes + size_ + kZeroChunk / 2 &&
                 alloc_ < kHeaderBytes + seg_bytes_;
      if (low || size_ >= seg_bytes_) db::WakeWalProcess();
      return moved;
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

 public:
  uint64_t segment_start() const { return seg_start_; }
  // The last Cycle's batch (bytes, records) and the last fsync's time.
  size_t last_bytes() const { return last_bytes_; }
  uint64_t last_records() const { return last_records_; }
  uint64_t last_sync_us() const { return last_sync_us_; }

 private:
  // rotating is 1 from before the file is made until segment_start names
  // it (or it is removed again): a worker never writes into a segment
  // whose header may not be on disk, nor into the old one while a new
  // one may exist (replay would take the old one's later records as
  // before the new one's start).
  bool OpenSegment(std::string* err) {
    w_->rotating.store(1, std::memory_order_seq_cst);
    bool ok = OpenSegmentFile(err);
    w_->rotating.store(0, std::memory_order_seq_cst);
    return ok;
  }

  bool OpenSegmentFile(std::string* err) {
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
    w_->seg_alloc.store(alloc);
    w_->segment_start.store(start);
    w_->segments_opened.fetch_add(1);
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
          w_->seg_alloc.store(alloc_);
        }
        Fail(e, path_ + ": write: " + std::strerror(e));
        return false;
      }
      off += static_cast<size_t>(n);
    }
    size_ += buf_.size();
    if (kHeaderBytes + size_ > alloc_) {  // past the zeros: the file grew
      alloc_ = kHeaderBytes + size_;
      w_->seg_alloc.store(alloc_);
    }
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
    if (!dirty_) return true;
    if (fd_ < 0) {
      // No segment to fsync: fine before the first one of this run (nothing
      // was written); otherwise (it could not be opened) nothing may be
      // published as durable.
      if (w_->segments_opened.load() != 0) return false;
      dirty_ = false;
      return true;
    }
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
    if (us > 1000000) w_->slow_fsync_ms.store(WallMs());  // workers leave committing to the WAL process a while
    w_->fsyncs.fetch_add(1);
    w_->fsync_us_total.fetch_add(us);
    if (us > w_->fsync_us_max.load()) w_->fsync_us_max.store(us);
    last_sync_ms_ = WallMs();
    w_->last_fsync_ms.store(last_sync_ms_);
    dirty_ = false;
    return true;
  }

  // A batch's buffer: no larger than a few MiB kept between batches.
  void TrimBuffer() {
    if (buf_.capacity() > (8u << 20)) std::string().swap(buf_);
  }

  // Everything written so far is durable: tell the rings, wake waiters.
  // durable_pos goes last: a committer killed inside Publish leaves it
  // below written_pos, and the next turn under always publishes again
  // (CycleLocked): no ring is left unpublished with nothing to say so.
  void Publish() {
    if (w_->sync_failed.load() != 0) return;
    uint64_t written = w_->written_pos.load();
    for (uint32_t i = 0; i < w_->nrings; ++i) {
      db::WalRing* r = db::WalRingAt(i);
      uint64_t t = r->tail.load(std::memory_order_relaxed);
      if (t > r->durable.load(std::memory_order_relaxed)) {
        r->durable.store(t, std::memory_order_seq_cst);
        TestDie(6);
        // (A leading worker releases its own replies when it is done.)
        if (i != self_ring_ && r->waiters.load(std::memory_order_seq_cst) != 0) {
          uint64_t one = 1;
          ssize_t n = write(r->efd, &one, sizeof one);
          (void)n;
        }
      }
    }
    w_->durable_pos.store(written, std::memory_order_seq_cst);
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
    w_->seg_alloc.store(alloc_);
    w_->zero_fills.fetch_add(1);
    sync_file_range(fd_, static_cast<off_t>(from), static_cast<off_t>(kZeroChunk), SYNC_FILE_RANGE_WRITE);
  }

  // A segment left: the zeros after its records go (their room is not
  // needed; nothing to fsync: with or without them the records read the same).
  void TrimZeros() {
    if (alloc_ > kHeaderBytes + size_ && ftruncate(fd_, static_cast<off_t>(kHeaderBytes + size_)) == 0) {
      alloc_ = kHeaderBytes + size_;
      w_->seg_alloc.store(alloc_);
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
  Role role_;
  uint32_t self_ring_;
  int die_step_ = 0;  // PERFCACHED_TEST_LEADER_DIES
  unsigned long long die_turn_ = 0, turns_ = 0;
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

// Take commit_mu for a turn of p (wait: up to 200 ms). False: another
// committer holds it.
bool TakeTurn(Pump& p, bool wait) {
  db::CommitLock l = db::LockCommit(wait);
  if (l == db::CommitLock::kBusy) return false;
  if (l == db::CommitLock::kOwnerDied) {
    LOG_WARN("WAL: a committer died during its turn: what it wrote is fsynced now (records it had not counted are "
             "written again)");
    p.AfterDeath();
  }
  return true;
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
  for (;;) {  // a worker stuck in a hung fdatasync holds commit_mu: wait for it
    pc.self->heartbeat_ms.store(WallMs());
    if (proc::StopRequested()) return;
    if (!TakeTurn(pump, true)) continue;
    bool started = pump.Start(&err);
    db::UnlockCommit();
    if (started) break;
    // a full disk at start: keep trying, writes are refused meanwhile
    if (w->failed_errno.exchange(ENOSPC) == 0) LOG_ERR("WAL: %s", err.c_str());
    for (int i = 0; i < 10 && !proc::StopRequested(); ++i) usleep(100 * 1000);
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
    bool moved = false;
    if (TakeTurn(pump, true)) {
      moved = pump.Cycle(false);
      db::UnlockCommit();
    }
    if (moved) {
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
  for (int64_t until = WallMs() + 15000; WallMs() < until;) {
    if (!TakeTurn(pump, true)) continue;
    bool moved = pump.Cycle(true);
    if (!moved) pump.Finish();
    db::UnlockCommit();
    if (!moved) break;
  }
}

void FinalWalDrain(const proc::Config& cfg) {
  if (!db::Wal()) return;
  Pump pump(cfg, Pump::Role::kFinal);
  std::string err;
  // Every other process is gone: commit_mu is free, or its holder died.
  if (!TakeTurn(pump, true)) {
    LOG_ERR("WAL: final drain: the commit lock is held: the records still in memory are not on disk");
    return;
  }
  if (!pump.Start(&err)) {
    db::UnlockCommit();
    LOG_ERR("WAL: final drain: %s: the records still in memory are not on disk", err.c_str());
    return;
  }
  for (int i = 0; i < 1000 && pump.Cycle(true); ++i) {
  }
  pump.Finish();
  db::UnlockCommit();
}

// fsync = always, [wal] commit = worker: at the end of a loop round in
// which replies were held, the worker commits every ring's records itself
// (the leader of a group commit: no wake-up of the WAL process and back
// per batch; docs/persistence.md "Workers commit"). A worker that finds
// another committing sets commit_wanted and goes on serving; the holder
// sees it after its turn and takes another on its next loop iteration
// (after its own replies went out and its sockets were read), so the
// records are written without anyone waiting for the lock.
int WalLead(const proc::Config& cfg, uint32_t self_ring) {
  db::WalShared* w = db::Wal();
  if (!w) return net::kCommitNone;
  static Pump* pump = nullptr;  // this worker's, for its life (never trims: the WAL process's)
  if (!pump) pump = new Pump(cfg, Pump::Role::kLeader, self_ring);
  // An fdatasync took over a second lately (a disk in trouble): a leader
  // would stall every connection of its worker with it. The WAL process
  // commits for 10 s.
  if (WallMs() - w->slow_fsync_ms.load(std::memory_order_relaxed) < 10000) {
    db::WakeWalProcess();
    return net::kCommitNone;
  }
  w->commit_wanted.store(1, std::memory_order_seq_cst);
  if (!TakeTurn(*pump, false)) return net::kCommitNone;  // the holder sees commit_wanted
  bool ok;
  {
    struct Unlock {
      ~Unlock() { db::UnlockCommit(); }  // an exception (std::bad_alloc) too
    } unlock;
    ok = pump->Lead();
  }
  if (!ok) {  // no segment to write into yet, or one being opened
    db::WakeWalProcess();
    return net::kCommitNone;
  }
  // Dekker with a worker whose trylock failed: it set commit_wanted, then
  // tried; we unlocked, then look.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return w->commit_wanted.load(std::memory_order_seq_cst) != 0 ? net::kCommitAgain : net::kCommitted;
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
