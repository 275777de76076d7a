// perfcached — RESP2 parser and reply builder.
// Copyright (c) 2026 the perfcached authors.
#include "net/resp.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace net {
namespace {

// Redis's string2ll for the count/length lines: optional '-', digits.
bool ParseLen(const char* p, size_t n, long long* out) {
  if (n == 0 || n > 20) return false;
  // string2ll refuses leading zeros ("01", "00") and "-0"; only "0" itself starts with '0'.
  size_t d = p[0] == '-' ? 1 : 0;
  if (d < n && p[d] == '0' && n > 1) return false;
  auto r = std::from_chars(p, p + n, *out);
  return r.ec == std::errc() && r.ptr == p + n;
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'; }

}  // namespace

void RespParser::Reset() {
  args_.clear();
  inline_args_.clear();
  inline_ = false;
  in_multibulk_ = false;
  need_args_ = 0;
  bulk_len_ = -1;
  scan_ = 0;
}

size_t RespParser::table_bytes() const {
  size_t n = args_.capacity() * sizeof(Arg) + inline_args_.capacity() * sizeof(std::string);
  for (const auto& a : inline_args_) n += a.capacity();
  return n;
}

RespParser::Result RespParser::Fail(const std::string& msg) {
  error_ = "Protocol error: " + msg;
  return Result::kError;
}

RespParser::Result RespParser::Parse(const char* buf, size_t len, size_t* pos) {
  size_t start = *pos;
  if (start >= len) return Result::kNeedMore;
  if (!in_multibulk_) {
    args_.clear();
    inline_args_.clear();
    inline_ = false;
    if (buf[start] != '*') return ParseInline(buf, len, pos);
    // "*<count>\r\n"
    const char* nl = static_cast<const char*>(std::memchr(buf + start, '\r', len - start));
    if (!nl) {
      if (len - start > lim_.max_inline) return Fail("too big mbulk count string");
      return Result::kNeedMore;
    }
    if (static_cast<size_t>(nl - (buf + start)) > lim_.max_inline) {
      return Fail("too big mbulk count string");
    }
    if (static_cast<size_t>(nl - buf) + 1 >= len) return Result::kNeedMore;  // need '\n'
    long long n;
    if (!ParseLen(buf + start + 1, static_cast<size_t>(nl - (buf + start + 1)), &n) ||
        n > static_cast<long long>(lim_.max_args)) {
      return Fail("invalid multibulk length");
    }
    if (unauth_ && n > static_cast<long long>(kUnauthMaxArgs)) {
      return Fail("unauthenticated multibulk length");
    }
    size_t after = static_cast<size_t>(nl - buf) + 2;
    if (n <= 0) {
      *pos = after;
      return Result::kCommand;  // empty command: ignored by the caller
    }
    in_multibulk_ = true;
    need_args_ = n;
    bulk_len_ = -1;
    scan_ = after - start;
    args_.reserve(static_cast<size_t>(n < 1024 ? n : 1024));
  }
  while (need_args_ > 0) {
    size_t at = start + scan_;
    if (bulk_len_ < 0) {
      if (at >= len) return Result::kNeedMore;
      const char* nl = static_cast<const char*>(std::memchr(buf + at, '\r', len - at));
      if (!nl) {
        if (len - at > lim_.max_inline) return Fail("too big bulk count string");
        return Result::kNeedMore;
      }
      if (static_cast<size_t>(nl - (buf + at)) > lim_.max_inline) {
        return Fail("too big bulk count string");
      }
      if (static_cast<size_t>(nl - buf) + 1 >= len) return Result::kNeedMore;
      if (buf[at] != '$') {
        return Fail(std::string("expected '$', got '") + buf[at] + "'");
      }
      long long bl;
      if (!ParseLen(buf + at + 1, static_cast<size_t>(nl - (buf + at + 1)), &bl) || bl < 0 ||
          static_cast<unsigned long long>(bl) > lim_.max_bulk) {
        return Fail("invalid bulk length");
      }
      if (unauth_ && static_cast<unsigned long long>(bl) > kUnauthMaxBulk) {
        return Fail("unauthenticated bulk length");
      }
      bulk_len_ = bl;
      scan_ = static_cast<size_t>(nl - buf) + 2 - start;
      continue;
    }
    size_t need = static_cast<size_t>(bulk_len_) + 2;
    if (len - at < need) return Result::kNeedMore;
    // Redis does not check the CRLF after a bulk; neither do we. Offsets
    // are kept relative to the command start until the command completes,
    // so the caller may move the unfinished bytes between calls.
    args_.push_back(Arg{scan_, static_cast<size_t>(bulk_len_)});
    scan_ += need;
    bulk_len_ = -1;
    --need_args_;
  }
  for (Arg& a : args_) a.off += start;
  *pos = start + scan_;
  in_multibulk_ = false;
  scan_ = 0;
  return Result::kCommand;
}

RespParser::Result RespParser::ParseInline(const char* buf, size_t len, size_t* pos) {
  size_t start = *pos;
  const char* nl = static_cast<const char*>(std::memchr(buf + start, '\n', len - start));
  if (!nl) {
    if (len - start > lim_.max_inline) return Fail("too big inline request");
    return Result::kNeedMore;
  }
  size_t end = static_cast<size_t>(nl - buf);
  if (end - start > lim_.max_inline) return Fail("too big inline request");
  std::string_view line(buf + start, end - start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  inline_ = true;
  if (!SplitInline(line, &inline_args_)) return Fail("unbalanced quotes in request");
  *pos = end + 1;
  return Result::kCommand;
}

bool SplitInline(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  size_t i = 0, n = line.size();
  for (;;) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i >= n) return true;
    std::string cur;
    bool inq = false, insq = false, done = false;
    while (!done) {
      if (inq) {
        if (i >= n) return false;
        char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && HexVal(line[i + 2]) >= 0 &&
            HexVal(line[i + 3]) >= 0) {
          cur.push_back(static_cast<char>(HexVal(line[i + 2]) * 16 + HexVal(line[i + 3])));
          i += 3;
        } else if (c == '\\' && i + 1 < n) {
          char e = line[++i];
          switch (e) {
            case 'n': cur.push_back('\n'); break;
            case 'r': cur.push_back('\r'); break;
            case 't': cur.push_back('\t'); break;
            case 'b': cur.push_back('\b'); break;
            case 'a': cur.push_back('\a'); break;
            default: cur.push_back(e); break;
          }
        } else if (c == '"') {
          // A closing quote must be followed by a space or the end.
          if (i + 1 < n && !IsSpace(line[i + 1])) return false;
          done = true;
        } else {
          cur.push_back(c);
        }
      } else if (insq) {
        if (i >= n) return false;
        char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          ++i;
          cur.push_back('\'');
        } else if (c == '\'') {
          if (i + 1 < n && !IsSpace(line[i + 1])) return false;
          done = true;
        } else {
          cur.push_back(c);
        }
      } else {
        if (i >= n) {
          done = true;
          break;
        }
        char c = line[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {  // not \v \f (sdssplitargs)
          done = true;
        } else if (c == '"') {
          inq = true;
        } else if (c == '\'') {
          insq = true;
        } else {
          cur.push_back(c);
        }
      }
      if (i < n) ++i;
    }
    out->push_back(std::move(cur));
  }
}

void Reply::Simple(std::string_view s) {
  if (!Room(s.size() + 3)) return;
  out_->push_back('+');
  out_->append(s);
  out_->append("\r\n", 2);
}

void Reply::Error(std::string_view s) {
  if (!Room(s.size() + 3)) return;
  out_->push_back('-');
  // An error line may not contain CR/LF (Redis replaces them with spaces).
  size_t at = out_->size();
  out_->append(s);
  for (size_t i = at; i < out_->size(); ++i) {
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') (*out_)[i] = ' ';
  }
  out_->append("\r\n", 2);
}

namespace {
// "<prefix><number>\r\n" with no allocation.
template <typename T>
void AppendLine(std::string* out, char prefix, T v) {
  char b[32];
  b[0] = prefix;
  auto r = std::to_chars(b + 1, b + sizeof b - 2, v);
  r.ptr[0] = '\r';
  r.ptr[1] = '\n';
  out->append(b, static_cast<size_t>(r.ptr + 2 - b));
}
}  // namespace

void Reply::Int(long long v) {
  if (Room(24)) AppendLine(out_, ':', v);
}
void Reply::BulkHeader(size_t n) {
  // The caller appends the n bytes itself (one value, at most
  // proto-max-bulk-len): noted as over the cap, still made consistent.
  (void)Room(n + 24);
  AppendLine(out_, '$', n);
}

void Reply::Bulk(std::string_view s) {
  if (!Room(s.size() + 24)) return;
  AppendLine(out_, '$', s.size());
  out_->append(s);
  out_->append("\r\n", 2);
}

void Reply::Null() {
  if (Room(5)) out_->append("$-1\r\n", 5);
}
void Reply::NullArray() {
  if (Room(5)) out_->append("*-1\r\n", 5);
}

void Reply::Array(size_t n) {
  if (Room(24)) AppendLine(out_, '*', n);
}

void Reply::Double(double d) {
  char b[512];  // "%.17Lf" of DBL_MAX is 328 characters
  int n;
  if (std::isinf(d)) {
    n = std::snprintf(b, sizeof b, "%s", d > 0 ? "inf" : "-inf");
  } else {
    // Redis INCRBYFLOAT: %.17Lg, then trailing zeros trimmed (humanfriendly).
    n = std::snprintf(b, sizeof b, "%.17Lf", static_cast<long double>(d));
    if (std::strchr(b, '.')) {
      while (n > 0 && b[n - 1] == '0') --n;
      if (n > 0 && b[n - 1] == '.') --n;
    }
    if (n == 2 && b[0] == '-' && b[1] == '0') n = 1, b[0] = '0';
  }
  Bulk(std::string_view(b, static_cast<size_t>(n)));
}

}  // namespace net
