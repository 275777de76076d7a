// perfcached — RESP2 request parser (multibulk + inline) and reply builder.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The parser is resumable: Parse() consumes what it can from `buf` and
// remembers where it stopped inside a command, so a 512 MB bulk arriving in
// 64 KB reads is scanned once, not once per read. Arguments are returned as
// (offset, length) pairs into the caller's buffer, which must keep the bytes
// of an unfinished command (from *pos) until the next call, but may move
// them (e.g. drop consumed bytes before them) between calls.
//
// Limits and errors follow redis-server 7 byte for byte (networking.c):
// a bad frame yields kError with the exact Redis message; the connection is
// then answered with "-ERR <message>" and closed, as Redis does.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace net {

struct RespLimits {
  size_t max_bulk = 512u << 20;       // proto-max-bulk-len
  size_t max_args = 2147483647;       // multibulk count limit (INT_MAX, as Redis)
  size_t max_inline = 64 * 1024;      // PROTO_INLINE_MAX_SIZE
};

// Before AUTH (when a password is set) Redis 7 refuses bigger frames than
// these (the CVE-2021-32675 fix): an unauthenticated client cannot make
// the server hold more than a few KiB for it.
inline constexpr size_t kUnauthMaxBulk = 16 * 1024;
inline constexpr size_t kUnauthMaxArgs = 10;

class RespParser {
 public:
  enum class Result { kNeedMore, kCommand, kError };
  struct Arg {
    size_t off;
    size_t len;
  };

  explicit RespParser(const RespLimits& l = {}) : lim_(l) {}

  // Parse one command from buf[pos..]. On kCommand, args() holds the
  // arguments (offsets into buf) and *pos is past the command. On
  // kNeedMore, *pos is unchanged (== command start) and the parser keeps
  // its progress; call again with the same bytes plus more. On kError,
  // error() is the Redis message. An empty command (blank inline line,
  // "*0") returns kCommand with no args.
  Result Parse(const char* buf, size_t len, size_t* pos);
  const std::vector<Arg>& args() const { return args_; }
  // Inline arguments are unescaped into storage the parser owns.
  std::string_view arg(const char* buf, size_t i) const {
    return inline_ ? std::string_view(inline_args_[i]) : std::string_view(buf + args_[i].off, args_[i].len);
  }
  size_t argc() const { return inline_ ? inline_args_.size() : args_.size(); }
  const std::string& error() const { return error_; }
  // Bytes the parser still needs for the current bulk (a hint for reads).
  size_t bulk_remaining() const { return bulk_len_ >= 0 ? static_cast<size_t>(bulk_len_) + 2 : 0; }
  void Reset();
  void set_limits(const RespLimits& l) { lim_ = l; }
  // Unauthenticated: kUnauthMaxBulk / kUnauthMaxArgs apply (Redis 7 texts).
  void set_unauthenticated(bool u) { unauth_ = u; }
  // Memory the parsed argument table holds (counted against
  // client-query-buffer-limit together with the unparsed input).
  size_t table_bytes() const;

 private:
  Result ParseInline(const char* buf, size_t len, size_t* pos);
  Result Fail(const std::string& msg);

  RespLimits lim_;
  bool unauth_ = false;
  std::vector<Arg> args_;
  std::vector<std::string> inline_args_;
  bool inline_ = false;
  // Resume state for a multibulk in progress.
  bool in_multibulk_ = false;
  long long need_args_ = 0;   // arguments still to read
  long long bulk_len_ = -1;   // length of the bulk being read, -1 = expecting '$'
  size_t scan_ = 0;           // offset (from command start) parsed so far
  std::string error_;
};

// Split an inline command like sdssplitargs(): spaces separate, "..." with
// \n \r \t \b \a \\ \" \xHH escapes, '...' with \'. False on unbalanced quotes.
bool SplitInline(std::string_view line, std::vector<std::string>* out);

// RESP2 reply builder appending to a std::string. With a cap (the
// client-output-buffer-limit of the connection), an append that would take
// the string past it is not made and over() turns true: a reply that
// would be too big (MGET of many big keys) stops growing while it is built;
// the server then closes the connection.
class Reply {
 public:
  explicit Reply(std::string* out, size_t cap = SIZE_MAX) : out_(out), cap_(cap) {}
  bool over() const { return out_->size() > cap_ || over_; }
  void Simple(std::string_view s);        // +OK
  void Error(std::string_view s);         // -ERR ... (s includes the code word)
  void Int(long long v);                  // :1
  void Bulk(std::string_view s);          // $3\r\nfoo
  void Null();                            // $-1
  void NullArray();                       // *-1
  void Array(size_t n);                   // *n header
  void Double(double d);                  // as bulk, Redis %.17g formatting
  void Raw(std::string_view s) {
    if (Room(s.size())) out_->append(s);
  }
  std::string* out() { return out_; }
  // Start a bulk of known length; the caller appends exactly n bytes, then
  // calls EndBulk(). Used to copy values straight from the table.
  void BulkHeader(size_t n);
  void EndBulk() { out_->append("\r\n", 2); }

 private:
  bool Room(size_t n) {
    if (out_->size() + n <= cap_) return true;
    over_ = true;
    return false;
  }
  std::string* out_;
  size_t cap_;
  bool over_ = false;
};

}  // namespace net
