// perfcached — the MI process: the FIFO transport (OpenSIPS mi_fifo framing)
// and the UNIX datagram transport (mi_datagram), served by one process.
// Copyright (c) 2026 the perfcached authors.
//
// FIFO (../shared/reference/opensips-mi.md §1.1): the process makes the
// FIFO (mkfifo + chmod), opens it for reading and keeps its own write end
// open so that clients opening and closing it never cause EOF. Each wake-up
// does one read of at most 4096 bytes minus what is buffered; every
// complete ":reply_name:{json}" frame in the buffer is served in order. A
// reply goes to reply_dir + reply_name: opened write-only and non-blocking
// (4 retries 80 ms apart while nobody reads it), checked to be a real FIFO
// (not a symlink, one link), made blocking, one compact line written,
// closed. Unparseable JSON with a usable reply name is answered -32700
// (OpenSIPS stays silent there and opensips-cli hangs). Every 30 s of
// idleness the FIFO is checked and recreated if it was removed.
//
// Datagram (§1.2): one JSON-RPC object per datagram (up to 65457 bytes);
// the reply goes back to the sender's address in one datagram.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <string>

#include "mi/mi.h"
#include "modules/exports.h"
#include "modules/mi/mi_module.h"

#include <event2/event.h>
#include "proc/config.h"
#include "proc/daemon.h"
#include "proc/log.h"

namespace modules::mi_door {
namespace {

constexpr size_t kFifoBuf = 4096;

// fifo_user / fifo_group: a name or a number (checked by FinishConfig); a
// user also gives its group. Never throws: a bad value is logged.
bool NumericId(const std::string& s, unsigned long* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *out < 4294967295ul;
}

bool ResolveOwner(const std::string& user, const std::string& group, uid_t* uid, gid_t* gid) {
  *uid = static_cast<uid_t>(-1);
  *gid = static_cast<gid_t>(-1);
  unsigned long id;
  if (!user.empty()) {
    const passwd* pw = getpwnam(user.c_str());
    if (!pw && NumericId(user, &id)) pw = getpwuid(static_cast<uid_t>(id));
    if (!pw) {
      LOG_ERR("MI FIFO: unknown fifo_user '%s'", user.c_str());
      return false;
    }
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
  }
  if (!group.empty()) {
    const struct group* gr = getgrnam(group.c_str());
    if (!gr && NumericId(group, &id)) gr = getgrgid(static_cast<gid_t>(id));
    if (!gr) {
      LOG_ERR("MI FIFO: unknown fifo_group '%s'", group.c_str());
      return false;
    }
    *gid = gr->gr_gid;
  }
  return true;
}

// Make the FIFO with exactly `mode` (umask cleared around mkfifo: no chmod
// by path), then open it for reading without following a symlink and check
// it is the FIFO we made; ownership is changed through that descriptor
// (fchown), so a symlink planted at the path is never followed. Returns
// the read descriptor, or -1.
int MakeFifo(const std::string& path, mode_t mode, struct stat* st) {
  std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0755);  // /run/perfcached: fine if it exists
  unlink(path.c_str());
  mode_t old = umask(0);
  int rc = mkfifo(path.c_str(), mode);
  umask(old);
  if (rc != 0) {
    LOG_ERR("MI FIFO: mkfifo %s: %s", path.c_str(), std::strerror(errno));
    return -1;
  }
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || fstat(fd, st) != 0 || !S_ISFIFO(st->st_mode)) {
    LOG_ERR("MI FIFO: %s is not the FIFO just made: %s", path.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// The FIFO at `path` is still the one we made.
bool SameFifo(const std::string& path, const struct stat& made) {
  struct stat now;
  return lstat(path.c_str(), &now) == 0 && S_ISFIFO(now.st_mode) && now.st_ino == made.st_ino &&
         now.st_dev == made.st_dev;
}

void WriteReply(const std::string& reply_dir, const std::string& name, const std::string& line) {
  std::string path = reply_dir + name;
  if (path.size() >= 128) {
    LOG_WARN("MI FIFO: reply path too long: %s", path.c_str());
    return;
  }
  int fd = -1;
  for (int i = 0; i < 4 && fd < 0; ++i) {
    fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENXIO) break;
    if (fd < 0) usleep(80 * 1000);
  }
  if (fd < 0) {
    LOG_WARN("MI FIFO: no client at %s (%s)", path.c_str(), std::strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_nlink != 1) {
    LOG_WARN("MI FIFO: %s is not a plain FIFO: not replying", path.c_str());
    close(fd);
    return;
  }
  // Blocking for the write, but bounded: a client that opened the reply
  // FIFO and never reads would otherwise stall the MI process forever.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size_t off = 0;
  while (off < line.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 2000) <= 0) {
      LOG_WARN("MI FIFO: client at %s does not read its reply: dropped", path.c_str());
      break;
    }
    ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace

namespace {

constexpr size_t kDatagramMax = 65457;

int OpenDatagram(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    LOG_ERR("MI datagram: path too long: %s", path.c_str());
    return -1;
  }
  std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0755);
  std::memcpy(sa.sun_path, path.c_str(), path.size());
  unlink(path.c_str());
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // The socket file is created 0660 by bind itself (umask), never chmod'ed
  // by path afterwards (a path can be swapped for a symlink in between).
  mode_t old = umask(0117);
  int rc = fd < 0 ? -1 : bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  umask(old);
  if (rc != 0) {
    LOG_ERR("MI datagram: bind %s: %s", path.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  int sz = 1 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
  return fd;
}

void ServeDatagram(int fd, const mi::Registry& reg) {
  static char buf[kDatagramMax + 1];
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage from{};
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, buf, kDatagramMax, 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n < 0) return;  // EAGAIN: drained
    mi::Json reply = mi::ProcessText(reg, std::string_view(buf, static_cast<size_t>(n)));
    if (reply.is_null() || fl <= sizeof(sa_family_t)) continue;  // notification / unnamed sender
    std::string line = mi::Serialize(reply);
    if (sendto(fd, line.data(), line.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), fl) < 0) {
      LOG_WARN("MI datagram: reply of %zu bytes not sent: %s", line.size(), std::strerror(errno));
    }
  }
}

}  // namespace

namespace {

struct MiState {
  proc::ModuleProcContext* pc = nullptr;
  const proc::Config* cfg = nullptr;
  mi::Registry reg;
  event_base* base = nullptr;
  int rfd = -1, wfd = -1, dfd = -1;
  event* fifo_ev = nullptr;
  event* dgram_ev = nullptr;
  struct stat made {};
  mode_t mode = 0600;
  std::string buf;             // an unfinished request (held at most kHoldMs)
  int64_t held_since_ms = 0;
  bool drained = true;         // the last read emptied the pipe
  bool skipping = false;       // following the rest of an oversize request
  mi::JsonScanner skip;
  int64_t last_data_ms = 0;
  int idle_ticks = 0;
};

// An unfinished request is held this long for the rest of its bytes.
constexpr int64_t kHoldMs = 1000;

void OnFifo(evutil_socket_t, short, void* arg);

void OpenFifo(MiState& st) {
  const proc::Config& cfg = *st.cfg;
  if (st.fifo_ev) {
    event_free(st.fifo_ev);
    st.fifo_ev = nullptr;
  }
  if (st.rfd >= 0) close(st.rfd);
  if (st.wfd >= 0) close(st.wfd);
  st.rfd = st.wfd = -1;
  st.rfd = MakeFifo(cfg.mi_fifo, st.mode, &st.made);
  if (st.rfd < 0) return;
  uid_t uid;
  gid_t gid;
  if (!cfg.mi_fifo_user.empty() || !cfg.mi_fifo_group.empty()) {
    if (!ResolveOwner(cfg.mi_fifo_user, cfg.mi_fifo_group, &uid, &gid) || fchown(st.rfd, uid, gid) != 0) {
      LOG_ERR("MI FIFO: cannot give %s to %s:%s: %s", cfg.mi_fifo.c_str(), cfg.mi_fifo_user.c_str(),
              cfg.mi_fifo_group.c_str(), std::strerror(errno));
    }
    fstat(st.rfd, &st.made);
  }
  st.wfd = open(cfg.mi_fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);  // keep a writer
  struct stat w;
  if (st.wfd < 0 || fstat(st.wfd, &w) != 0 || w.st_ino != st.made.st_ino || w.st_dev != st.made.st_dev) {
    LOG_ERR("MI FIFO: open %s: %s", cfg.mi_fifo.c_str(), std::strerror(errno));
    if (st.wfd >= 0) close(st.wfd);
    close(st.rfd);
    st.rfd = st.wfd = -1;
    return;
  }
  st.fifo_ev = event_new(st.base, st.rfd, EV_READ | EV_PERSIST, &OnFifo, &st);
  event_add(st.fifo_ev, nullptr);
  LOG_INFO("MI FIFO listening on %s", cfg.mi_fifo.c_str());
}

void ServeFifo(MiState& st);

// No input may throw out of a libevent callback (it would abort the process).
void OnFifo(evutil_socket_t, short, void* arg) {
  try {
    ServeFifo(*static_cast<MiState*>(arg));
  } catch (const std::exception& e) {
    LOG_ERR("MI FIFO: request dropped: %s", e.what());
    static_cast<MiState*>(arg)->buf.clear();
  }
}

int64_t MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// Answer the unfinished request held in st.buf with -32700 and forget it.
void DropHeld(MiState& st, const char* why) {
  std::string name;
  if (mi::HeldReplyName(st.buf, &name) && !name.empty() && mi::ValidReplyName(name)) {
    WriteReply(st.cfg->mi_reply_dir, name, mi::Serialize(mi::ProcessText(st.reg, "{")));
  }
  LOG_WARN("MI FIFO: %s: answered -32700", why);
  st.buf.clear();
  st.held_since_ms = 0;
}

void ServeFifo(MiState& st) {
  st.idle_ticks = 0;
  char chunk[kFifoBuf];
  size_t room = kFifoBuf - st.buf.size();  // st.buf stays below kFifoBuf between reads
  ssize_t n = read(st.rfd, chunk, room);
  if (n <= 0) return;
  std::string_view in(chunk, static_cast<size_t>(n));
  // When the previous read emptied the pipe, this one starts where a
  // client's write started (writes up to PIPE_BUF are atomic).
  bool boundary = st.drained;
  st.drained = static_cast<size_t>(n) < room;
  int64_t now = MonoMs();
  st.last_data_ms = now;
  if (st.skipping) {  // the rest of a request too large to hold
    if (boundary && in[0] == ':') {
      st.skipping = false;
    } else {
      size_t k = st.skip.Feed(in);
      if (k == std::string_view::npos) return;
      st.skipping = false;
      in.remove_prefix(k);
    }
  }
  // A new client's frame never continues an unfinished request.
  if (!st.buf.empty() && boundary && !in.empty() && in[0] == ':') {
    DropHeld(st, "unfinished request followed by a new one");
  }
  st.buf.append(in);
  size_t pos = 0;
  for (;;) {
    mi::Frame f;
    mi::FrameResult r = mi::ParseFifoFrame(st.buf, &pos, &f);
    if (r == mi::FrameResult::kNeedMore) break;
    if (r == mi::FrameResult::kBadName) {
      LOG_WARN("MI FIFO: forbidden reply name '%s': request dropped", f.reply_name.c_str());
      continue;
    }
    if (r == mi::FrameResult::kGarbage) {
      LOG_WARN("MI FIFO: input is not ':reply_name:{json}': dropped");
      continue;
    }
    mi::Json reply = r == mi::FrameResult::kBadJson ? mi::ProcessText(st.reg, "{")  // -32700
                                                    : mi::Dispatch(st.reg, f.request);
    if (!f.reply_name.empty() && !reply.is_null()) {
      WriteReply(st.cfg->mi_reply_dir, f.reply_name, mi::Serialize(reply));
    }
  }
  st.buf.erase(0, pos);
  if (st.buf.size() >= kFifoBuf) {
    // Too large to hold: answered now; its remaining bytes are followed
    // (not kept) to the end of its JSON value, then framing goes on.
    st.skip = mi::JsonScanner{};
    size_t js = mi::FrameJsonStart(st.buf);
    bool ended = js != std::string_view::npos &&
                 st.skip.Feed(std::string_view(st.buf).substr(js)) != std::string_view::npos;
    DropHeld(st, "request larger than 4096 bytes");
    st.skipping = !ended;
  }
  if (st.buf.empty()) {
    st.held_since_ms = 0;
  } else if (st.held_since_ms == 0) {
    st.held_since_ms = now;
  }
}

void OnDatagram(evutil_socket_t, short, void* arg) {
  auto& st = *static_cast<MiState*>(arg);
  try {
    ServeDatagram(st.dfd, st.reg);
  } catch (const std::exception& e) {
    LOG_ERR("MI datagram: request dropped: %s", e.what());
  }
}

void OnTick(evutil_socket_t, short, void* arg) {
  auto& st = *static_cast<MiState*>(arg);
  if (proc::StopRequested()) {
    event_base_loopbreak(st.base);
    return;
  }
  int64_t now = MonoMs();
  if (!st.buf.empty() && st.held_since_ms && now - st.held_since_ms >= kHoldMs) {
    DropHeld(st, "request unfinished for 1 s");
  }
  if (st.skipping && now - st.last_data_ms >= kHoldMs) st.skipping = false;
  // Every 30 s of FIFO idleness: is it still our FIFO? Recreate it if not.
  if (!st.cfg->mi_fifo.empty() && ++st.idle_ticks >= 60) {
    st.idle_ticks = 0;
    if (st.rfd < 0 || !SameFifo(st.cfg->mi_fifo, st.made)) {
      LOG_WARN("MI FIFO %s was removed or replaced: recreating it", st.cfg->mi_fifo.c_str());
      OpenFifo(st);
    }
  }
}

}  // namespace

void RunMi(proc::ModuleProcContext& pc) {
  MiState st;
  st.pc = &pc;
  st.cfg = pc.cfg;
  st.base = event_base_new();
  // The MI commands of every module (modules/exports.h).
  for (const modules::ModuleExports* m : modules::AllModules()) {
    if (m->mi_commands) m->mi_commands(st.reg, pc);
  }
  unsigned mode = 0600;
  std::string merr;
  if (!proc::ParseFifoMode(pc.cfg->mi_fifo_mode, &mode, &merr)) LOG_ERR("%s: using 0600", merr.c_str());
  st.mode = static_cast<mode_t>(mode);
  if (!pc.cfg->mi_fifo.empty()) OpenFifo(st);
  if (!pc.cfg->mi_datagram.empty()) {
    st.dfd = OpenDatagram(pc.cfg->mi_datagram);
    if (st.dfd >= 0) {
      st.dgram_ev = event_new(st.base, st.dfd, EV_READ | EV_PERSIST, &OnDatagram, &st);
      event_add(st.dgram_ev, nullptr);
      LOG_INFO("MI datagram on %s", pc.cfg->mi_datagram.c_str());
    }
  }
  void* http = pc.cfg->http.empty() ? nullptr : StartHttp(st.base, pc, st.reg);
  event* tick = event_new(st.base, -1, EV_PERSIST, &OnTick, &st);
  timeval half{0, 500 * 1000};
  event_add(tick, &half);
  event_base_dispatch(st.base);
  StopHttp(http);
  event_free(tick);
  if (st.fifo_ev) event_free(st.fifo_ev);
  if (st.dgram_ev) event_free(st.dgram_ev);
  if (st.rfd >= 0) close(st.rfd);
  if (st.wfd >= 0) close(st.wfd);
  if (!pc.cfg->mi_fifo.empty()) unlink(pc.cfg->mi_fifo.c_str());
  if (st.dfd >= 0) {
    close(st.dfd);
    unlink(pc.cfg->mi_datagram.c_str());
  }
  event_base_free(st.base);
}

}  // namespace modules::mi_door
