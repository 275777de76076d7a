// perfcached — collections (named seqlock hash tables) and their operations.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// The umbrella header: everything a door needs from the engine. Each part
// has its own header with one job:
//   cache/catalog.h     shared layout (Catalog, TableHeader), Ctx, TableRef,
//                       create / open / drop / rename / resize / list
//   cache/ops.h         Get, Set, Del, DelIfVersion, IncrBy, SetExpire, Restamp, MSetNx
//   cache/scan.h        ScanStep (SCAN with its guarantee)
//   cache/maint.h       GrowStep, SweepExpired, RepairDead, RepairDeadStep
//   cache/number.h      Redis number parsing and formatting
//   cache/string_ops.h  the string commands as Ops (APPEND, SETRANGE, ...)
//   cache/key_ops.h     the generic key commands as Ops (RENAME, COPY, TTL, ...)
//   cache/hash_ops.h    the hash commands as Ops (HSET ... HRANDFIELD)
//   cache/set_ops.h     the set commands as Ops (SADD ... SSCAN)
//   cache/encoding.h    encoding thresholds (hash-max-listpack-entries ...)
// (cache/dict.h, the aggregate engine under hash_ops / set_ops, is internal.)
// The engine's internals (namespace detail) are in cache/internal.h, which
// only cache/ itself and the engine's tests include.

#include "cache/catalog.h"
#include "cache/encoding.h"
#include "cache/hash_ops.h"
#include "cache/key_ops.h"
#include "cache/maint.h"
#include "cache/number.h"
#include "cache/ops.h"
#include "cache/scan.h"
#include "cache/set_ops.h"
#include "cache/string_ops.h"
