// perfcached — byte copies that are data-race-free against concurrent copies.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A seqlock reader copies bytes a writer may be changing. In the C++ memory
// model that is a data race unless every access is atomic, so both sides go
// through these helpers: relaxed atomic 8-byte loads/stores on the aligned
// middle, relaxed 1-byte accesses on the unaligned edges. On x86-64 and
// AArch64 relaxed atomics compile to plain moves; what we give up is only the
// compiler's freedom to use wide vector moves. The ordering that makes a copy
// trustworthy comes from the seqlock's acquire fence + version re-check, not
// from these helpers.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "mem/crash_point.h"

namespace mem {

inline uint64_t LoadRelaxed64(const void* p) {
  return __atomic_load_n(static_cast<const uint64_t*>(p), __ATOMIC_RELAXED);
}
inline uint32_t LoadRelaxed32(const void* p) {
  return __atomic_load_n(static_cast<const uint32_t*>(p), __ATOMIC_RELAXED);
}
// An Off is 64 bits (mem/arena.h): a 32-bit access to one would read or
// write half of it. These catch that at compile time.
uint32_t LoadRelaxed32(const uint64_t* p) = delete;
void StoreRelaxed32(uint64_t* p, uint32_t v PC_LOC_PARAM) = delete;
// An Off (mem/arena.h) stored in the arena: 64 bits, 8-aligned.
inline uint64_t LoadOff(const void* p) { return LoadRelaxed64(p); }
inline void StoreOff(void* p, uint64_t v PC_LOC_PARAM) {
  PC_LOC_POINT();
  __atomic_store_n(static_cast<uint64_t*>(p), v, __ATOMIC_RELAXED);
}
inline uint16_t LoadRelaxed16(const void* p) {
  return __atomic_load_n(static_cast<const uint16_t*>(p), __ATOMIC_RELAXED);
}
inline uint8_t LoadRelaxed8(const void* p) {
  return __atomic_load_n(static_cast<const uint8_t*>(p), __ATOMIC_RELAXED);
}
inline void StoreRelaxed64(void* p, uint64_t v PC_LOC_PARAM) {
  PC_LOC_POINT();
  __atomic_store_n(static_cast<uint64_t*>(p), v, __ATOMIC_RELAXED);
}
inline void StoreRelaxed32(void* p, uint32_t v PC_LOC_PARAM) {
  PC_LOC_POINT();
  __atomic_store_n(static_cast<uint32_t*>(p), v, __ATOMIC_RELAXED);
}
inline void StoreRelaxed16(void* p, uint16_t v PC_LOC_PARAM) {
  PC_LOC_POINT();
  __atomic_store_n(static_cast<uint16_t*>(p), v, __ATOMIC_RELAXED);
}
inline void StoreRelaxed8(void* p, uint8_t v PC_LOC_PARAM) {
  PC_LOC_POINT();
  __atomic_store_n(static_cast<uint8_t*>(p), v, __ATOMIC_RELAXED);
}

// Copy n bytes out of shared memory (src may be written concurrently).
inline void AtomicCopyOut(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  while (n > 0 && (reinterpret_cast<uintptr_t>(s) & 7) != 0) {
    *d++ = LoadRelaxed8(s++);
    --n;
  }
  for (; n >= 8; n -= 8, s += 8, d += 8) {
    uint64_t w = LoadRelaxed64(s);
    std::memcpy(d, &w, 8);
  }
  while (n > 0) {
    *d++ = LoadRelaxed8(s++);
    --n;
  }
}

// Copy n bytes into shared memory that a stale reader may be reading.
inline void AtomicCopyIn(void* dst, const void* src, size_t n PC_LOC_PARAM) {
  PC_LOC_POINT();
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  while (n > 0 && (reinterpret_cast<uintptr_t>(d) & 7) != 0) {
    __atomic_store_n(d++, *s++, __ATOMIC_RELAXED);
    --n;
  }
  for (; n >= 8; n -= 8, s += 8, d += 8) {
    uint64_t w;
    std::memcpy(&w, s, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(d), w, __ATOMIC_RELAXED);
  }
  while (n > 0) {
    __atomic_store_n(d++, *s++, __ATOMIC_RELAXED);
    --n;
  }
}

// Compare shared bytes against a private key without a data race.
inline bool AtomicEqual(const void* shm, std::string_view key) {
  auto* s = static_cast<const unsigned char*>(shm);
  const char* k = key.data();
  size_t n = key.size();
  while (n > 0 && (reinterpret_cast<uintptr_t>(s) & 7) != 0) {
    if (LoadRelaxed8(s++) != static_cast<unsigned char>(*k++)) return false;
    --n;
  }
  for (; n >= 8; n -= 8, s += 8, k += 8) {
    uint64_t w, kw;
    w = LoadRelaxed64(s);
    std::memcpy(&kw, k, 8);
    if (w != kw) return false;
  }
  while (n > 0) {
    if (LoadRelaxed8(s++) != static_cast<unsigned char>(*k++)) return false;
    --n;
  }
  return true;
}

}  // namespace mem

namespace mem {
// Zero shared memory that stale readers may still be reading.
inline void AtomicZero(void* dst, size_t n PC_LOC_PARAM) {
  PC_LOC_POINT();
  auto* d = static_cast<unsigned char*>(dst);
  while (n > 0 && (reinterpret_cast<uintptr_t>(d) & 7) != 0) {
    __atomic_store_n(d++, uint8_t{0}, __ATOMIC_RELAXED);
    --n;
  }
  for (; n >= 8; n -= 8, d += 8) __atomic_store_n(reinterpret_cast<uint64_t*>(d), uint64_t{0}, __ATOMIC_RELAXED);
  while (n > 0) {
    __atomic_store_n(d++, uint8_t{0}, __ATOMIC_RELAXED);
    --n;
  }
}
}  // namespace mem

namespace mem {
// The seqlock reader's fence between its relaxed data loads and the version
// re-check. ThreadSanitizer does not model fences (gcc refuses them under
// -fsanitize=thread); every shared access is atomic, so under TSan a
// compiler barrier suffices for what TSan checks (data-race freedom).
inline void SeqReadFence() {
#if defined(__SANITIZE_THREAD__)
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}
}  // namespace mem
