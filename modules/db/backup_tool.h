// perfcached — `perfcached --dump DIR` / `--restore DIR`: a logical backup of a running server over RESP.
// Copyright (c) 2026 the perfcached authors.
#pragma once

namespace modules::db_module {

// argv[first] is "--dump" or "--restore"; the options follow (usage in
// backup_tool.cc, docs/persistence.md "Logical backup"). Returns the exit
// status: 0 done, 1 failed (said on stderr), 2 bad usage.
int RunBackupTool(int argc, char** argv, int first);

}  // namespace modules::db_module
