// perfcached — the few file calls the on-disk formats share: a whole write, a directory fsync.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace db::fileio {

// write(2) until all n bytes are written; false on an error (errno says
// which) or a write of 0 bytes (a full disk: errno may be 0).
inline bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A rename or a new file in dir is durable only once dir is fsync'd.
inline void FsyncDir(const std::string& dir) {
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
}

}  // namespace db::fileio
