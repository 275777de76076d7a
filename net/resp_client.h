// perfcached — a blocking RESP2 client: what `perfcached --dump` / `--restore` speak to a server.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// One TCP connection, commands pipelined: Send() queues any number of
// commands, Flush() writes them, Read() takes the replies in order. Every
// wait is bounded by the timeout given to Connect. The reply parser is a
// pure function (ParseReply) so that it can be fuzzed: a server's bytes
// are input like any other (a wrong port, another program, a damaged
// stream) and must give an error, never a crash or an unbounded buffer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace net {

struct Reply {
  enum Kind : uint8_t { kStatus, kError, kInt, kBulk, kNil, kArray } kind = kNil;
  std::string str;  // kStatus, kError (without the '-'), kBulk
  long long num = 0;
  std::vector<Reply> items;  // kArray
};

// Parses one reply from buf at *pos. kOk: *out filled, *pos past it;
// kMore: incomplete (nothing consumed); kBad: not RESP (*err says why).
// Bulk strings up to max_bulk bytes, arrays up to 2^20 items (and nesting
// 8 deep): more is kBad, before anything is allocated for it.
enum class ParseResult { kOk, kMore, kBad };
ParseResult ParseReply(std::string_view buf, size_t* pos, Reply* out, std::string* err,
                       size_t max_bulk = size_t{1} << 30);

class RespClient {
 public:
  RespClient() = default;
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  // host: a name or address; timeout_ms bounds connect and each wait.
  bool Connect(const std::string& host, int port, int timeout_ms, std::string* err);
  void Send(const std::vector<std::string_view>& argv);
  bool Flush(std::string* err);
  bool Read(Reply* out, std::string* err);
  // Send + Flush + Read of one command.
  bool Call(const std::vector<std::string_view>& argv, Reply* out, std::string* err);
  size_t Pending() const { return out_.size(); }

 private:
  bool Wait(short events, std::string* err);
  int fd_ = -1;
  int timeout_ms_ = 10000;
  std::string out_, in_;
  size_t in_pos_ = 0;
};

}  // namespace net
