// perfcached — libFuzzer target for the snapshot reader (db/snapshot.h): a
// file on disk is input the daemon does not control (a damaged disk, a
// file from another version, an operator's mistake).
// Copyright (c) 2026 the perfcached authors.
//
// The input, behind a valid header (so the fuzzer reaches the blocks) or
// as it is (byte 0 chooses), is read back from a memfd. ReadSnapshot must
// answer true or false with a message, never crash or read out of bounds
// (ASan), and never hand out a record after it answered false.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "db/crc32c.h"
#include "db/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string file;
  if (data[0] & 1) {
    char h[64] = {'P', 'C', 'S', 'N', 'A', 'P', 0, 1, 1, 0, 0, 0};
    uint32_t crc = db::Crc32c(h, 60);
    std::memcpy(h + 60, &crc, 4);
    file.assign(h, 64);
  }
  file.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  int fd = memfd_create("snap", 0);
  if (fd < 0) return 0;
  if (write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) {
    close(fd);
    return 0;
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd), err;
  db::SnapshotInfo info;
  uint64_t seen = 0;
  bool ok = db::ReadSnapshot(path, [&](std::string_view, const cache::Entry&) { return ++seen, true; }, &info, &err);
  if (!ok && err.empty()) std::abort();
  if (ok && seen != info.records) std::abort();
  close(fd);
  return 0;
}
