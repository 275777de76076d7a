// perfcached — CRC-32C (Castagnoli), the checksum of snapshot and WAL files.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace db {

// crc = Crc32c(data, n) for one buffer; pass a previous result as `crc`
// to continue over several. Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace db
