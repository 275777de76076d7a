// perfcached — perfcli: the command-line client (MI over the FIFO or the datagram socket).
// Copyright (c) 2026 the perfcached authors.
//
//   perfcli mi CMD [value ...]          positional params (sent as strings, as opensips-cli does)
//   perfcli mi CMD name=value ...       named params
//   options: --fifo PATH (default /run/perfcached/perfcached_fifo), --reply-dir DIR (default:
//            both the FIFO's directory, when writable, and /tmp/: the daemon answers into one),
//            --datagram PATH, --http URL (http://host:port, POST /mi; --token T or
//            PERFCACHED_TOKEN in the environment: the bearer token), -r (raw one-line JSON), -t SECONDS (timeout, default 5)
// Exit 0 with the result on stdout; 1 with the JSON-RPC error on stderr; 2
// when the daemon cannot be reached or does not answer in time.
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mi/mi.h"

namespace {

using mi::Json;

int64_t NowMs() {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return int64_t{tv.tv_sec} * 1000 + tv.tv_usec / 1000;
}

void Usage() {
  std::fprintf(stderr,
               "usage: perfcli [--fifo PATH | --datagram PATH | --http URL [--token T]] [--reply-dir DIR]\n"
               "               [-r] [-t SECONDS]\n"
               "               mi COMMAND [value ... | name=value ...]\n"
               "  e.g. perfcli mi which\n"
               "       perfcli mi perf_keys 'session:*' 0 50\n"
               "       perfcli mi perf_set key=k value=v ttl=60\n"
               "       perfcli mi get_statistics all\n");
}

// Commands whose single parameter is an array (as opensips-cli's table),
// under every name they answer to: bare, "core:NAME" and OpenSIPS 4.0's
// "statistics:get" / "statistics:list" / "statistics:reset".
bool TakesArray(const std::string& cmd) {
  static const char* const kArray[] = {"get_statistics",   "list_statistics",   "reset_statistics",
                                       "core:get_statistics", "core:list_statistics", "core:reset_statistics",
                                       "statistics:get",   "statistics:list",   "statistics:reset"};
  for (const char* c : kArray) {
    if (cmd == c) return true;
  }
  return false;
}

// The daemon may run as another user (the Debian package's `perfcached`)
// than perfcli (root at 3 a.m.): it must be able to write into our reply
// FIFO / socket. Give it to the group of the daemon's own FIFO / socket,
// group-writable (0620), as root can and as a member of that group can;
// world-writable never. Otherwise it stays 0600 and a missing reply says
// why (Hint).
void LetDaemonWrite(const std::string& reply, const std::string& daemon_path) {
  struct stat st {};
  if (stat(daemon_path.c_str(), &st) != 0 || st.st_uid == geteuid()) return;
  if (chown(reply.c_str(), static_cast<uid_t>(-1), st.st_gid) == 0) (void)chmod(reply.c_str(), 0620);
}
std::string Hint(const std::string& daemon_path) {
  struct stat st {};
  if (stat(daemon_path.c_str(), &st) != 0 || st.st_uid == geteuid()) return "";
  return " (the daemon runs as uid " + std::to_string(st.st_uid) + ": run perfcli as root, as that user, or as a "
         "member of gid " + std::to_string(st.st_gid) + ")";
}

// The directory a path is in, with its trailing '/' ("" for a bare name).
std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// Where the daemon may answer when --reply-dir is not given. Its [mi]
// reply_dir is /tmp/ by default, as OpenSIPS's, but the packaged config
// puts it next to the MI FIFO (/run/perfcached/) so that the unit can
// have a private /tmp (docs/daemon.md "Running under systemd"). perfcli
// makes its reply FIFO under the same name in both, when it may write
// both, and reads the one the daemon opens.
std::vector<std::string> ReplyDirs(const std::string& door, const std::string& given) {
  if (!given.empty()) return {given};
  std::vector<std::string> dirs;
  std::string beside = DirOf(door);
  if (!beside.empty() && beside != "/tmp/" && access(beside.c_str(), W_OK | X_OK) == 0) dirs.push_back(beside);
  dirs.push_back("/tmp/");
  return dirs;
}

bool ViaFifo(const std::string& fifo, const std::string& reply_dir, const std::string& body,
             int timeout_ms, std::string* out, std::string* err) {
  std::string name = "perfcli_reply_" + std::to_string(getpid()) + "_" + std::to_string(NowMs());
  std::vector<std::string> paths;
  std::vector<pollfd> rfds;
  for (const std::string& dir : ReplyDirs(fifo, reply_dir)) {
    std::string path = dir + name;
    unlink(path.c_str());
    if (mkfifo(path.c_str(), 0600) != 0) {
      if (err->empty()) *err = "cannot create reply FIFO " + path + ": " + std::strerror(errno);
      continue;
    }
    LetDaemonWrite(path, fifo);
    int rfd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (rfd < 0) {
      unlink(path.c_str());
      continue;
    }
    paths.push_back(path);
    rfds.push_back(pollfd{rfd, POLLIN, 0});
  }
  bool ok = false;
  if (rfds.empty()) return false;
  err->clear();
  int wfd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (wfd < 0) {
    *err = "cannot open " + fifo + ": " + std::strerror(errno) +
           (errno == ENXIO || errno == ENOENT ? " (is perfcached running with [mi] fifo_name?)" : "");
  } else {
    std::string req = ":" + name + ":" + body;
    if (write(wfd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
      *err = std::string("write to the MI FIFO failed: ") + std::strerror(errno);
    } else {
      // The daemon opens one of them, writes its line and closes; a FIFO
      // with no writer yet reads 0 too, so "done" is 0 after data.
      int64_t deadline = NowMs() + timeout_ms;
      int answered = -1;
      while (!ok && NowMs() < deadline) {
        poll(rfds.data(), rfds.size(), 50);
        for (size_t k = 0; k < rfds.size() && !ok; ++k) {
          if (answered >= 0 && static_cast<size_t>(answered) != k) continue;
          char buf[65536];
          ssize_t n = read(rfds[k].fd, buf, sizeof buf);
          if (n > 0) {
            out->append(buf, static_cast<size_t>(n));
            answered = static_cast<int>(k);
          } else if (n == 0 && answered == static_cast<int>(k)) {
            ok = true;
          }
        }
      }
      if (!ok) {
        *err = "no reply within " + std::to_string(timeout_ms / 1000) + " s" + Hint(fifo);
        if (answered < 0) {
          std::string where;
          for (const std::string& p : paths) where += (where.empty() ? "" : " and ") + DirOf(p);
          *err += "; the reply FIFO was in " + where + ": is the daemon's [mi] reply_dir another? (--reply-dir DIR)";
        }
      }
    }
    close(wfd);
  }
  for (size_t k = 0; k < rfds.size(); ++k) {
    close(rfds[k].fd);
    unlink(paths[k].c_str());
  }
  return ok;
}

bool ViaDatagram(const std::string& sock, const std::string& body, int timeout_ms, std::string* out,
                 std::string* err) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un me{}, srv{};
  me.sun_family = srv.sun_family = AF_UNIX;
  // Bound beside the daemon's socket when perfcli may write there: a
  // daemon with a private /tmp (the unit's PrivateTmp=yes) cannot reach
  // /tmp/perfcli_*.sock.
  std::string mine = ReplyDirs(sock, "").front() + "perfcli_" + std::to_string(getpid()) + ".sock";
  if (sock.size() >= sizeof srv.sun_path || mine.size() >= sizeof me.sun_path) {
    *err = "socket path too long";
    close(fd);
    return false;
  }
  std::memcpy(me.sun_path, mine.c_str(), mine.size());
  std::memcpy(srv.sun_path, sock.c_str(), sock.size());
  unlink(mine.c_str());
  bool ok = false;
  bool bound = bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) == 0;
  if (bound) LetDaemonWrite(mine, sock);
  if (!bound) {
    *err = "bind " + mine + ": " + std::strerror(errno);
  } else if (sendto(fd, body.data(), body.size(), 0, reinterpret_cast<sockaddr*>(&srv), sizeof srv) < 0) {
    *err = "cannot send to " + sock + ": " + std::strerror(errno);
  } else {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
      char buf[65536];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        out->assign(buf, static_cast<size_t>(n));
        ok = true;
      }
    }
    if (!ok) *err = "no reply within " + std::to_string(timeout_ms / 1000) + " s" + Hint(sock);
  }
  close(fd);
  unlink(mine.c_str());
  return ok;
}

// POST the request to http://host:port/mi (HTTP/1.0: the server closes
// after the reply, so the body ends at EOF).
bool ViaHttp(const std::string& url, const std::string& token, const std::string& body,
             int timeout_ms, std::string* out, std::string* err) {
  std::string rest = url.rfind("http://", 0) == 0 ? url.substr(7) : url;
  std::string hostport = rest.substr(0, rest.find('/'));
  size_t colon = hostport.rfind(':');
  std::string host = colon == std::string::npos ? hostport : hostport.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : hostport.substr(colon + 1);
  if (!host.empty() && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res) {
    *err = "cannot resolve " + hostport;
    return false;
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  bool ok = false;
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    *err = "cannot connect to " + hostport + ": " + std::strerror(errno);
  } else {
    std::string req = "POST /mi HTTP/1.0\r\nHost: " + hostport +
                      "\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n";
    if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
    req += "\r\n" + body;
    std::string resp;
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) resp.append(buf, static_cast<size_t>(n));
    }
    size_t hdr_end = resp.find("\r\n\r\n");
    int status = resp.size() > 12 ? std::atoi(resp.c_str() + 9) : 0;
    if (hdr_end == std::string::npos || status == 0) {
      *err = "no reply from " + hostport;
    } else if (status != 200) {
      *err = "HTTP " + std::to_string(status) + " from " + hostport + ": " + resp.substr(hdr_end + 4);
    } else {
      *out = resp.substr(hdr_end + 4);
      ok = true;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string fifo = "/run/perfcached/perfcached_fifo", reply_dir, dgram, http_url, token;
  bool raw = false;
  int timeout_s = 5;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--fifo" && i + 1 < argc) fifo = argv[++i];
    else if (a == "--reply-dir" && i + 1 < argc) reply_dir = argv[++i];
    else if (a == "--datagram" && i + 1 < argc) dgram = argv[++i];
    else if (a == "--http" && i + 1 < argc) http_url = argv[++i];
    else if (a == "--token" && i + 1 < argc) {
      token = argv[++i];
      std::memset(argv[i], '*', std::strlen(argv[i]));  // not for ps to show
    }
    else if (a == "-r") raw = true;
    else if (a == "-t" && i + 1 < argc) timeout_s = std::atoi(argv[++i]);
    else if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    } else break;
  }
  if (i + 1 >= argc || std::string(argv[i]) != "mi") {
    Usage();
    return 2;
  }
  if (!reply_dir.empty() && reply_dir.back() != '/') reply_dir += '/';
  std::string cmd = argv[i + 1];
  std::vector<std::string> args(argv + i + 2, argv + argc);
  Json params = Json::array();
  bool named = !args.empty() && args[0].find('=') != std::string::npos;
  if (named) {
    params = Json::object();
    for (const auto& a : args) {
      size_t eq = a.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "perfcli: mix of positional and name=value parameters\n");
        return 2;
      }
      params[a.substr(0, eq)] = a.substr(eq + 1);
    }
  } else if (TakesArray(cmd) && !args.empty()) {
    params.push_back(args);
  } else {
    for (const auto& a : args) params.push_back(a);
  }
  Json req{{"jsonrpc", "2.0"}, {"id", std::to_string(getpid() % 32768)}, {"method", cmd}, {"params", params}};
  std::string body = req.dump(), out, err;
  if (token.empty() && std::getenv("PERFCACHED_TOKEN")) token = std::getenv("PERFCACHED_TOKEN");
  bool ok = !http_url.empty() ? ViaHttp(http_url, token, body, timeout_s * 1000, &out, &err)
            : !dgram.empty()  ? ViaDatagram(dgram, body, timeout_s * 1000, &out, &err)
                              : ViaFifo(fifo, reply_dir, body, timeout_s * 1000, &out, &err);
  if (!ok) {
    std::fprintf(stderr, "perfcli: %s\n", err.c_str());
    return 2;
  }
  Json reply = Json::parse(out, nullptr, false);
  if (reply.is_discarded()) {
    std::fprintf(stderr, "perfcli: unreadable reply: %s\n", out.c_str());
    return 2;
  }
  if (reply.contains("error")) {
    std::fprintf(stderr, "%s\n", raw ? out.c_str() : reply["error"].dump(2).c_str());
    return 1;
  }
  const Json& res = reply["result"];
  if (raw) {
    std::printf("%s\n", out.c_str());
  } else if (res.is_string()) {
    std::printf("%s\n", res.get<std::string>().c_str());
  } else {
    std::printf("%s\n", res.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  }
  return 0;
}
