// perfcached — bench/trace_client: replay a key trace against a RESP server as a cache would use it.
// Copyright (c) 2026 the perfcached authors.
//
// For bench/eviction.py: reads a trace of key ids (little-endian uint32),
// sends them as pipelines of --batch GETs, then one pipeline of SETs for
// the keys that missed (a cache in front of a database), and prints one
// JSON line: {"hits", "sets", "requests", "wall_s"}. One connection, one
// thread: the same client for every server, and cheap enough per request
// (about a tenth of a server's cost) that the servers, not the client,
// set the pace. Key k is "k:<k>", its value 100..1000 bytes of 'v'
// (bench/eviction.py value_size).
//
//   trace_client --port P --trace FILE [--batch 500] [--host 127.0.0.1]

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "trace_client: %s\n", what.c_str());
  std::exit(1);
}

size_t ValueSize(uint64_t k) { return 100 + (k * 7919) % 901; }

void AppendBulk(std::string* out, std::string_view s) {
  out->push_back('$');
  out->append(std::to_string(s.size()));
  out->append("\r\n");
  out->append(s);
  out->append("\r\n");
}

void AppendCommand(std::string* out, std::initializer_list<std::string_view> args) {
  out->push_back('*');
  out->append(std::to_string(args.size()));
  out->append("\r\n");
  for (std::string_view a : args) AppendBulk(out, a);
}

class Conn {
 public:
  Conn(const char* host, int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) Die(std::string("socket: ") + std::strerror(errno));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) Die(std::string("bad host ") + host);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      Die(std::string("connect: ") + std::strerror(errno));
    }
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    buf_.resize(1 << 20);
  }
  ~Conn() { close(fd_); }

  void Send(const std::string& s) {
    for (size_t off = 0; off < s.size();) {
      ssize_t n = write(fd_, s.data() + off, s.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) Die(std::string("write: ") + std::strerror(errno));
      off += static_cast<size_t>(n);
    }
  }

  // One reply line without its CRLF (a type byte and what follows).
  std::string_view Line() {
    for (;;) {
      const char* b = buf_.data() + pos_;
      const void* cr = std::memchr(b, '\r', end_ - pos_);
      if (cr && static_cast<const char*>(cr) + 1 < buf_.data() + end_) {
        size_t len = static_cast<size_t>(static_cast<const char*>(cr) - b);
        if (b[len + 1] != '\n') Die("malformed reply: CR without LF");
        pos_ += len + 2;
        return {b, len};
      }
      Fill();
    }
  }

  void Skip(size_t n) {
    while (end_ - pos_ < n) {
      n -= end_ - pos_;
      pos_ = end_ = 0;
      Fill();
    }
    pos_ += n;
  }

 private:
  void Fill() {
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    if (end_ == buf_.size()) Die("a reply line longer than 1 MiB");
    ssize_t n;
    do {
      n = read(fd_, buf_.data() + end_, buf_.size() - end_);
    } while (n < 0 && errno == EINTR);
    if (n < 0) Die(std::string("read: ") + std::strerror(errno));
    if (n == 0) Die("the server closed the connection");
    end_ += static_cast<size_t>(n);
  }

  int fd_ = -1;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const char* host = "127.0.0.1";
  const char* trace_path = nullptr;
  int port = 0;
  size_t batch = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view a = argv[i];
    if (a == "--port") {
      port = std::atoi(argv[i + 1]);
    } else if (a == "--trace") {
      trace_path = argv[i + 1];
    } else if (a == "--batch") {
      batch = static_cast<size_t>(std::atol(argv[i + 1]));
    } else if (a == "--host") {
      host = argv[i + 1];
    } else {
      Die("unknown option " + std::string(a));
    }
  }
  if (!trace_path || port <= 0 || batch == 0) Die("usage: trace_client --port P --trace FILE [--batch N] [--host H]");
  std::FILE* f = std::fopen(trace_path, "rb");
  if (!f) Die(std::string(trace_path) + ": " + std::strerror(errno));
  std::vector<uint32_t> keys;
  uint32_t chunk[4096];
  for (size_t n; (n = std::fread(chunk, sizeof(uint32_t), 4096, f)) > 0;) keys.insert(keys.end(), chunk, chunk + n);
  bool partial = std::fgetc(f) != EOF;  // a length that is not a multiple of 4
  std::fclose(f);
  if (partial) Die(std::string(trace_path) + ": not a whole number of 32-bit key ids");

  Conn c(host, port);
  std::string out, key, value(1000, 'v');
  std::vector<uint32_t> miss;
  uint64_t hits = 0, sets = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < keys.size(); i += batch) {
    size_t n = std::min(batch, keys.size() - i);
    out.clear();
    for (size_t j = 0; j < n; ++j) {
      key = "k:" + std::to_string(keys[i + j]);
      AppendCommand(&out, {"GET", key});
    }
    c.Send(out);
    miss.clear();
    for (size_t j = 0; j < n; ++j) {
      std::string_view l = c.Line();
      if (l.empty()) Die("empty reply line");
      if (l[0] == '-') Die("GET answered " + std::string(l));
      if (l[0] != '$') Die("GET answered a non-bulk reply: " + std::string(l));
      std::string num(l.substr(1));
      char* end = nullptr;
      long len = std::strtol(num.c_str(), &end, 10);
      if (num.empty() || *end != '\0' || len < -1) Die("GET answered a bad bulk length: " + std::string(l));
      if (len < 0) {
        miss.push_back(keys[i + j]);
      } else {
        c.Skip(static_cast<size_t>(len));
        if (!c.Line().empty()) Die("a bulk reply longer than its length");
        ++hits;
      }
    }
    if (miss.empty()) continue;
    out.clear();
    for (uint32_t k : miss) {
      key = "k:" + std::to_string(k);
      AppendCommand(&out, {"SET", key, std::string_view(value).substr(0, ValueSize(k))});
    }
    c.Send(out);
    for (size_t j = 0; j < miss.size(); ++j) {
      std::string_view l = c.Line();
      if (l != "+OK") Die("SET refused under maxmemory: " + std::string(l));
    }
    sets += miss.size();
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"hits\": %llu, \"sets\": %llu, \"requests\": %zu, \"wall_s\": %.3f}\n",
              static_cast<unsigned long long>(hits), static_cast<unsigned long long>(sets), keys.size(), wall);
  return 0;
}
