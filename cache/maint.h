// perfcached — maintenance of collections (cache/maint.cc): resize steps, expiry sweep, repair.
// Copyright (c) 2026 the perfcached authors.
#pragma once

#include <functional>
#include <string_view>

#include "cache/catalog.h"

namespace cache {

// ---- maintenance (cache/maint.cc) -------------------------------------------
// Split (or merge) up to `budget` buckets toward the target load / size.
// Only one process should call it per table at a time (the admin lock
// enforces it). Returns the number of splits + merges done.
uint32_t GrowStep(Ctx& c, const TableRef& t, uint32_t budget);
// Remove expired records from due buckets (hint <= now) and the overflow
// table; `on_expired` (may be empty) sees each key after the lock is gone.
uint32_t SweepExpired(Ctx& c, const TableRef& t, uint32_t budget,
                      const std::function<void(std::string_view key)>& on_expired);
// How many records have an expiry that has passed but no sweep removed
// yet (DBSIZE leaves them out). Read-only: one 32-bit hint load per bucket
// (contiguous per segment), and the lock of only the buckets whose hint is
// due (an expired record, or one expiring this second) and of the overflow
// table when it is not empty.
uint64_t CountExpired(Ctx& c, const TableRef& t);
// Repair every bucket / overflow / admin lock of every collection whose
// holder is dead, and return the number repaired.
uint32_t RepairDead(Ctx& c);
// The timer's slow background pass: the global locks and slots, then
// `budget` buckets from *cursor on (round robin over every table). Deaths
// are repaired when the supervisor reaps the child (RepairDead) and by any
// waiter that finds a dead holder; this pass only catches what neither saw.
uint32_t RepairDeadStep(Ctx& c, uint64_t* cursor, uint32_t budget);

}  // namespace cache
