// perfcached — the version this build answers with (-V, MI version, /metrics build_info).
// Copyright (c) 2026 the perfcached authors.
#pragma once

namespace proc {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace proc
