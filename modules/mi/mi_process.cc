// perfcached — the MI process: the FIFO transport (OpenSIPS mi_fifo framing)
// and the UNIX datagram transport (mi_datagram), served by one process.
// Copyright (c) 2026 the perfcached authors.
//
// Every door is claimed and opened by the supervisor before it forks
// (OpenMiDoors, proc/claim.h): a door that cannot open stops start-up, a
// path another daemon serves is never taken over, and the supervisor
// removes the paths when the daemon stops (CloseMiDoors); the MI process,
// and a restart of it, serves the descriptors it inherits.
//
// FIFO (../shared/reference/opensips-mi.md §1.1): made with mkfifo at
// exactly fifo_mode, opened for reading, with a write end kept open so
// that clients opening and closing it never cause EOF. Each wake-up
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
//
// The HTTP door (http_door.cc) and the XML-RPC door (xmlrpc_door.cc) run
// in the same event loop.
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
#include "proc/claim.h"
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

bool ResolveOwner(const std::string& user, const std::string& group, uid_t* uid, gid_t* gid,
                  std::string* err) {
  *uid = static_cast<uid_t>(-1);
  *gid = static_cast<gid_t>(-1);
  unsigned long id;
  if (!user.empty()) {
    const passwd* pw = getpwnam(user.c_str());
    if (!pw && NumericId(user, &id)) pw = getpwuid(static_cast<uid_t>(id));
    if (!pw) {
      *err = "MI FIFO: unknown fifo_user '" + user + "'";
      return false;
    }
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
  }
  if (!group.empty()) {
    const struct group* gr = getgrnam(group.c_str());
    if (!gr && NumericId(group, &id)) gr = getgrgid(static_cast<gid_t>(id));
    if (!gr) {
      *err = "MI FIFO: unknown fifo_group '" + group + "'";
      return false;
    }
    *gid = gr->gr_gid;
  }
  return true;
}

// Make the FIFO with exactly `mode` (umask cleared around mkfifo: no chmod
// by path), then open it for reading without following a symlink and check
// it is the FIFO we made; ownership is changed through that descriptor
// (fchown), so a symlink planted at the path is never followed. The caller
// holds the path's claim (proc/claim.h): what is at the path is ours to
// replace. Returns the read descriptor, or -1 with *err.
int MakeFifo(const std::string& path, mode_t mode, struct stat* st, std::string* err) {
  unlink(path.c_str());
  mode_t old = umask(0);
  int rc = mkfifo(path.c_str(), mode);
  umask(old);
  if (rc != 0) {
    *err = "MI FIFO: mkfifo " + path + ": " + std::strerror(errno);
    return -1;
  }
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || fstat(fd, st) != 0 || !S_ISFIFO(st->st_mode)) {
    *err = "MI FIFO: " + path + " is not the FIFO just made: " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// The whole FIFO door: made, given to fifo_user:fifo_group, with our own
// writer kept open (clients opening and closing it never cause EOF).
bool MakeFifoDoor(const proc::Config& cfg, mode_t mode, int* rfd, int* wfd, struct stat* made,
                  std::string* err) {
  *rfd = MakeFifo(cfg.mi_fifo, mode, made, err);
  if (*rfd < 0) return false;
  if (!cfg.mi_fifo_user.empty() || !cfg.mi_fifo_group.empty()) {
    uid_t uid;
    gid_t gid;
    if (!ResolveOwner(cfg.mi_fifo_user, cfg.mi_fifo_group, &uid, &gid, err)) {
      close(*rfd);
      *rfd = -1;
      return false;
    }
    if (fchown(*rfd, uid, gid) != 0) {
      int e = errno;
      *err = "MI FIFO: cannot give " + cfg.mi_fifo + " to " +
             (cfg.mi_fifo_user.empty() ? std::string() : cfg.mi_fifo_user) + ":" + cfg.mi_fifo_group + ": " +
             std::strerror(e) + (e == EPERM ? " (only root can change a file's owner)" : "");
      close(*rfd);
      *rfd = -1;
      return false;
    }
    fstat(*rfd, made);
  }
  *wfd = open(cfg.mi_fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  struct stat w;
  if (*wfd < 0 || fstat(*wfd, &w) != 0 || w.st_ino != made->st_ino || w.st_dev != made->st_dev) {
    *err = "MI FIFO: open " + cfg.mi_fifo + ": " + std::strerror(errno);
    if (*wfd >= 0) close(*wfd);
    close(*rfd);
    *rfd = *wfd = -1;
    return false;
  }
  return true;
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

// The caller holds the path's claim and probed it (OpenMiDoors).
int OpenDatagram(const std::string& path, std::string* err) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    *err = "MI datagram: path too long (at most " + std::to_string(sizeof sa.sun_path - 1) + " bytes): " + path;
    return -1;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size());
  unlink(path.c_str());
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // The socket file is created 0660 by bind itself (umask), never chmod'ed
  // by path afterwards (a path can be swapped for a symlink in between).
  mode_t old = umask(0117);
  int rc = fd < 0 ? -1 : bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  umask(old);
  if (rc != 0) {
    *err = "MI datagram: bind " + path + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  int sz = 1 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
  return fd;
}

// Somebody receives on the datagram socket at `path` (a connect succeeds).
bool DatagramServed(const std::string& path) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) return false;
  std::memcpy(sa.sun_path, path.c_str(), path.size());
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  bool served = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  if (fd >= 0) close(fd);
  return served;
}

// Somebody reads the FIFO at `path` (a writer's non-blocking open succeeds).
bool FifoServed(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  close(fd);
  return true;
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

void WatchFifo(MiState& st) {
  st.fifo_ev = event_new(st.base, st.rfd, EV_READ | EV_PERSIST, &OnFifo, &st);
  event_add(st.fifo_ev, nullptr);
}

// Make the FIFO again (it was removed or replaced while we served).
void OpenFifo(MiState& st) {
  if (st.fifo_ev) {
    event_free(st.fifo_ev);
    st.fifo_ev = nullptr;
  }
  if (st.rfd >= 0) close(st.rfd);
  if (st.wfd >= 0) close(st.wfd);
  st.rfd = st.wfd = -1;
  std::string err;
  if (!MakeFifoDoor(*st.cfg, st.mode, &st.rfd, &st.wfd, &st.made, &err)) {
    LOG_ERR("%s", err.c_str());
    return;
  }
  WatchFifo(st);
  LOG_NOTICE("MI FIFO made again at %s", st.cfg->mi_fifo.c_str());
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
  if (st.pc->tick) st.pc->tick();  // log level, SIGHUP reload (tokens, Host names, allow_create)
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

namespace {

// Opened by the supervisor (OpenMiDoors) before any fork; every MI process
// (a restarted one too) serves these descriptors.
struct Doors {
  int fifo_r = -1, fifo_w = -1;
  struct stat made {};
  int dgram = -1;
  int http = -1;
  int xmlrpc = -1;
  bool fifo_ours = false, dgram_ours = false;  // we made the path: we remove it
};
Doors g_doors;

mode_t FifoMode(const proc::Config& cfg) {
  unsigned mode = 0600;
  std::string e;
  (void)proc::ParseFifoMode(cfg.mi_fifo_mode, &mode, &e);  // validated by FinishConfig
  return static_cast<mode_t>(mode);
}

// What is at a door's path before we take it: nothing, or a FIFO / socket
// nobody serves (left by a daemon that died). Anything else is refused.
bool PathFree(const std::string& path, const char* door, bool fifo, std::string* err) {
  struct stat ls;
  if (lstat(path.c_str(), &ls) != 0) return true;
  std::string what = std::string(door) + " " + path;
  if (fifo ? !S_ISFIFO(ls.st_mode) : !S_ISSOCK(ls.st_mode)) {
    *err = what + ": the path exists and is not a " + (fifo ? "FIFO" : "socket") +
           ": remove it or choose another path";
    return false;
  }
  if (fifo ? FifoServed(path) : DatagramServed(path)) {
    *err = what + ": another process " + (fifo ? "reads this FIFO" : "is bound to this socket") +
           " (an older perfcached, or another program): not taking it over";
    return false;
  }
  return true;
}

}  // namespace

bool OpenMiDoors(const proc::Config& cfg, std::vector<int>* fds, std::string* err) {
  if (!cfg.mi_fifo.empty()) {
    const std::string& path = cfg.mi_fifo;
    if (!proc::MakeParentDirs(path, err)) {
      *err = "MI FIFO " + path + ": " + *err;
      return false;
    }
    if (!proc::ClaimPath(path, "MI FIFO " + path, err)) return false;
    if (!PathFree(path, "MI FIFO", true, err)) return false;
    if (!MakeFifoDoor(cfg, FifoMode(cfg), &g_doors.fifo_r, &g_doors.fifo_w, &g_doors.made, err)) return false;
    g_doors.fifo_ours = true;
    fds->push_back(g_doors.fifo_r);
    fds->push_back(g_doors.fifo_w);
    LOG_NOTICE("MI FIFO listening on %s (mode %04o)", path.c_str(), static_cast<unsigned>(FifoMode(cfg)));
  }
  if (!cfg.mi_datagram.empty()) {
    const std::string& path = cfg.mi_datagram;
    if (!proc::MakeParentDirs(path, err)) {
      *err = "MI datagram socket " + path + ": " + *err;
      return false;
    }
    if (!proc::ClaimPath(path, "MI datagram socket " + path, err)) return false;
    if (!PathFree(path, "MI datagram socket", false, err)) return false;
    g_doors.dgram = OpenDatagram(path, err);
    if (g_doors.dgram < 0) return false;
    g_doors.dgram_ours = true;
    fds->push_back(g_doors.dgram);
    LOG_NOTICE("MI datagram socket listening on %s", path.c_str());
  }
  if (!cfg.http.empty()) {
    g_doors.http = OpenHttpListener("HTTP door", cfg.http, proc::RunDir(cfg), err);
    if (g_doors.http < 0) return false;
    fds->push_back(g_doors.http);
    LOG_NOTICE("HTTP door listening on http://%s/ (/metrics /stats /health /reset-stats /mi)",
               cfg.http.c_str());
  }
  if (!cfg.mi_xmlrpc.empty()) {
    g_doors.xmlrpc = OpenHttpListener("XML-RPC door", cfg.mi_xmlrpc, proc::RunDir(cfg), err);
    if (g_doors.xmlrpc < 0) return false;
    fds->push_back(g_doors.xmlrpc);
    std::string host;
    int port = 0;
    proc::ParseHostPort(cfg.mi_xmlrpc, &host, &port);  // checked by FinishConfig
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    LOG_NOTICE("XML-RPC door listening on http://%s:%d/%s (token %s)", host.c_str(), port,
               cfg.mi_xmlrpc_root.c_str(), cfg.http_tokens.empty() ? "off" : "required");
  }
  return true;
}

void CloseMiDoors(const proc::Config& cfg) {
  for (int* fd : {&g_doors.fifo_r, &g_doors.fifo_w, &g_doors.dgram, &g_doors.http, &g_doors.xmlrpc}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  // Ours to remove: we hold their claims (a second perfcached never got
  // here). Our descriptors are closed and every child is gone, so if the
  // path still has a reader, it is somebody else's (a program that does
  // not claim, which replaced ours): left alone.
  struct stat st;
  if (g_doors.fifo_ours && lstat(cfg.mi_fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode) &&
      !FifoServed(cfg.mi_fifo)) {
    unlink(cfg.mi_fifo.c_str());
  }
  if (g_doors.dgram_ours && lstat(cfg.mi_datagram.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
      !DatagramServed(cfg.mi_datagram)) {
    unlink(cfg.mi_datagram.c_str());
  }
  g_doors.fifo_ours = g_doors.dgram_ours = false;
}

void RunMi(proc::ModuleProcContext& pc) {
  MiState st;
  st.pc = &pc;
  st.cfg = pc.cfg;
  st.base = event_base_new();
  // The MI commands of every module (modules/exports.h).
  for (const modules::ModuleExports* m : modules::AllModules()) {
    if (m->mi_commands) m->mi_commands(st.reg, pc);
  }
  st.mode = FifoMode(*pc.cfg);
  if (!pc.cfg->mi_fifo.empty()) {
    st.rfd = g_doors.fifo_r;
    st.wfd = g_doors.fifo_w;
    st.made = g_doors.made;
    // A restarted MI process: the FIFO may have been made again since.
    if (st.rfd >= 0 && SameFifo(pc.cfg->mi_fifo, st.made)) {
      WatchFifo(st);
    } else {
      OpenFifo(st);
    }
  }
  if (g_doors.dgram >= 0) {
    st.dfd = g_doors.dgram;
    st.dgram_ev = event_new(st.base, st.dfd, EV_READ | EV_PERSIST, &OnDatagram, &st);
    event_add(st.dgram_ev, nullptr);
  }
  void* http = g_doors.http >= 0 ? StartHttp(st.base, pc, st.reg, g_doors.http) : nullptr;
  void* xmlrpc = g_doors.xmlrpc >= 0 ? StartXmlRpc(st.base, pc, st.reg, g_doors.xmlrpc) : nullptr;
  event* tick = event_new(st.base, -1, EV_PERSIST, &OnTick, &st);
  timeval half{0, 500 * 1000};
  event_add(tick, &half);
  event_base_dispatch(st.base);
  StopHttp(http);
  StopHttp(xmlrpc);
  event_free(tick);
  if (st.fifo_ev) event_free(st.fifo_ev);
  if (st.dgram_ev) event_free(st.dgram_ev);
  // The paths stay: the supervisor removes them when the daemon stops
  // (CloseMiDoors), and a restarted MI process serves them again.
  if (st.rfd >= 0) close(st.rfd);
  if (st.wfd >= 0) close(st.wfd);
  if (st.dfd >= 0) close(st.dfd);
  event_base_free(st.base);
}

}  // namespace modules::mi_door
