// perfcached — a blocking RESP2 client (see resp_client.h).
// Copyright (c) 2026 the perfcached authors.
#include "net/resp_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace net {

namespace {

constexpr size_t kMaxItems = size_t{1} << 20;
constexpr int kMaxDepth = 8;

// The line at *pos (without CRLF); kMore when no CRLF yet. A line longer
// than 64 KiB is not a reply header (kBad).
ParseResult Line(std::string_view buf, size_t* pos, std::string_view* line, std::string* err) {
  size_t end = buf.find("\r\n", *pos);
  if (end == std::string_view::npos) {
    if (buf.size() - *pos > 65536) {
      *err = "a reply line over 64 KiB";
      return ParseResult::kBad;
    }
    return ParseResult::kMore;
  }
  *line = buf.substr(*pos, end - *pos);
  *pos = end + 2;
  return ParseResult::kOk;
}

bool Number(std::string_view s, long long* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

ParseResult Parse(std::string_view buf, size_t* pos, Reply* out, std::string* err, size_t max_bulk, int depth) {
  if (*pos >= buf.size()) return ParseResult::kMore;
  char type = buf[*pos];
  size_t p = *pos + 1;
  std::string_view line;
  ParseResult r = Line(buf, &p, &line, err);
  if (r != ParseResult::kOk) return r;
  long long n = 0;
  switch (type) {
    case '+':
    case '-':
      out->kind = type == '+' ? Reply::kStatus : Reply::kError;
      out->str.assign(line);
      break;
    case ':':
      if (!Number(line, &n)) {
        *err = "a bad integer reply";
        return ParseResult::kBad;
      }
      out->kind = Reply::kInt;
      out->num = n;
      break;
    case '$':
      if (!Number(line, &n) || n < -1 || (n >= 0 && static_cast<unsigned long long>(n) > max_bulk)) {
        *err = "a bad bulk length";
        return ParseResult::kBad;
      }
      if (n == -1) {
        out->kind = Reply::kNil;
        break;
      }
      if (buf.size() - p < static_cast<size_t>(n) + 2) return ParseResult::kMore;
      if (buf.compare(p + static_cast<size_t>(n), 2, "\r\n") != 0) {
        *err = "a bulk string without its CRLF";
        return ParseResult::kBad;
      }
      out->kind = Reply::kBulk;
      out->str.assign(buf.substr(p, static_cast<size_t>(n)));
      p += static_cast<size_t>(n) + 2;
      break;
    case '*': {
      if (!Number(line, &n) || n < -1 || (n >= 0 && static_cast<unsigned long long>(n) > kMaxItems) ||
          depth >= kMaxDepth) {
        *err = "a bad array length or nesting";
        return ParseResult::kBad;
      }
      if (n == -1) {
        out->kind = Reply::kNil;
        break;
      }
      out->kind = Reply::kArray;
      out->items.clear();
      // Each item takes at least 3 bytes ("+\r\n"): no reservation the
      // buffer cannot justify.
      if (static_cast<size_t>(n) <= (buf.size() - p) / 3) out->items.reserve(static_cast<size_t>(n));
      for (long long k = 0; k < n; ++k) {
        Reply item;
        r = Parse(buf, &p, &item, err, max_bulk, depth + 1);
        if (r != ParseResult::kOk) return r;
        out->items.push_back(std::move(item));
      }
      break;
    }
    default:
      *err = "not a RESP reply (first byte " + std::to_string(static_cast<unsigned char>(type)) + ")";
      return ParseResult::kBad;
  }
  *pos = p;
  return ParseResult::kOk;
}

}  // namespace

ParseResult ParseReply(std::string_view buf, size_t* pos, Reply* out, std::string* err, size_t max_bulk) {
  return Parse(buf, pos, out, err, max_bulk, 0);
}

RespClient::~RespClient() {
  if (fd_ >= 0) close(fd_);
}

bool RespClient::Wait(short events, std::string* err) {
  pollfd p{fd_, events, 0};
  int n;
  do {
    n = poll(&p, 1, timeout_ms_);
  } while (n < 0 && errno == EINTR);
  if (n > 0) return true;
  *err = n == 0 ? "no answer within " + std::to_string(timeout_ms_) + " ms" : std::string(std::strerror(errno));
  return false;
}

bool RespClient::Connect(const std::string& host, int port, int timeout_ms, std::string* err) {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  out_.clear();
  in_.clear();
  in_pos_ = 0;
  timeout_ms_ = timeout_ms;
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *err = host + ": " + gai_strerror(rc);
    return false;
  }
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd_ = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd_ < 0) continue;
    if (connect(fd_, a->ai_addr, a->ai_addrlen) == 0 || (errno == EINPROGRESS && Wait(POLLOUT, err))) {
      int e = 0;
      socklen_t len = sizeof e;
      getsockopt(fd_, SOL_SOCKET, SO_ERROR, &e, &len);
      if (e == 0) break;
      *err = std::strerror(e);
    } else if (err->empty()) {
      *err = std::strerror(errno);
    }
    close(fd_);
    fd_ = -1;
  }
  freeaddrinfo(res);
  if (fd_ < 0) {
    *err = "cannot connect to " + host + ":" + std::to_string(port) + ": " + *err;
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  err->clear();
  return true;
}

void RespClient::Send(const std::vector<std::string_view>& argv) {
  out_ += "*" + std::to_string(argv.size()) + "\r\n";
  for (std::string_view a : argv) {
    out_ += "$" + std::to_string(a.size()) + "\r\n";
    out_.append(a);
    out_ += "\r\n";
  }
}

bool RespClient::Flush(std::string* err) {
  size_t done = 0;
  while (done < out_.size()) {
    ssize_t n = send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!Wait(POLLOUT, err)) return false;
    } else {
      *err = std::string("write: ") + std::strerror(errno);
      return false;
    }
  }
  out_.clear();
  return true;
}

bool RespClient::Read(Reply* out, std::string* err) {
  for (;;) {
    size_t pos = in_pos_;
    ParseResult r = ParseReply(in_, &pos, out, err);
    if (r == ParseResult::kOk) {
      in_pos_ = pos;
      if (in_pos_ == in_.size()) {
        in_.clear();
        in_pos_ = 0;
      } else if (in_pos_ > (1u << 20) && in_pos_ * 2 > in_.size()) {
        in_.erase(0, in_pos_);
        in_pos_ = 0;
      }
      return true;
    }
    if (r == ParseResult::kBad) return false;
    char buf[65536];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!Wait(POLLIN, err)) return false;
    } else {
      *err = n == 0 ? "the server closed the connection" : std::string("read: ") + std::strerror(errno);
      return false;
    }
  }
}

bool RespClient::Call(const std::vector<std::string_view>& argv, Reply* out, std::string* err) {
  Send(argv);
  return Flush(err) && Read(out, err);
}

}  // namespace net
