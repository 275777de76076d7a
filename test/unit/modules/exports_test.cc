// perfcached — unit tests for the module exports tables (modules/exports.h).
// Copyright (c) 2026 the perfcached authors.
#include <string>

#include "mi/mi.h"
#include "modules/exports.h"
#include "modules/resp/command.h"
#include "proc/config.h"
// CppUTest last: its operator-new macros must not meet the standard headers.
#include "CppUTest/TestHarness.h"
#include "CppUTest/MemoryLeakWarningPlugin.h"

namespace {
const modules::ModuleExports* Find(const char* name) {
  for (const modules::ModuleExports* m : modules::AllModules()) {
    if (std::string(m->name) == name) return m;
  }
  return nullptr;
}
}  // namespace

TEST_GROUP(Exports){};

TEST(Exports, EveryModuleIsListed) {
  CHECK(Find("resp") != nullptr);
  CHECK(Find("mi") != nullptr);
  CHECK(Find("db") != nullptr);
  CHECK_EQUAL(3u, modules::AllModules().size());
  // The db module fills the collections before the fork and saves at the stop.
  CHECK(Find("db")->warm != nullptr && Find("db")->at_stop != nullptr);
  // The RESP module has per-worker state; the MI module owns a process.
  CHECK(Find("resp")->child_init != nullptr);
  CHECK_EQUAL(1u, Find("mi")->procs.size());
  CHECK(Find("mi")->mi_commands != nullptr);
}

TEST(Exports, ProcessesFollowTheConfig) {
  proc::Config cfg;
  cfg.mi_fifo.clear();
  cfg.mi_datagram.clear();
  cfg.http.clear();
  CHECK_EQUAL(0u, modules::HooksFromModules(cfg).procs.size());
  cfg.http = "127.0.0.1:0";
  proc::DaemonHooks h = modules::HooksFromModules(cfg);
  CHECK_EQUAL(1u, h.procs.size());
  STRCMP_EQUAL("MI", h.procs[0].name.c_str());
  CHECK(h.worker_init && h.tick && h.drain && h.stop_accepting && h.destroy);
}

TEST(Exports, RespFamiliesFillTheDispatchTable) {
  proc::Config cfg;
  modules::resp::Env e;
  e.cfg = &cfg;
  modules::resp::InitEnv(e);
  for (const char* name : {"get", "append", "rename", "copy", "info", "subscribe", "command"}) {
    CHECK_TEXT(e.table.count(name) == 1, name);
  }
  size_t rows = 0;
  for (const modules::ModuleExports* m : modules::AllModules()) {
    for (const modules::RespFamily& f : m->resp_families) {
      modules::resp::Env one;
      one.cfg = &cfg;
      f.reg(one);
      rows += one.ordered.size();
    }
  }
  CHECK_EQUAL(rows, e.ordered.size());
}

// The MI module's command environment lives as long as its process (not a
// leak of the test): CppUTest's leak check is off for this group.
TEST_GROUP(ExportsMi) {
  void setup() override { MemoryLeakWarningPlugin::saveAndDisableNewDeleteOverloads(); }
  void teardown() override { MemoryLeakWarningPlugin::restoreNewDeleteOverloads(); }
};

TEST(ExportsMi, MiCommandsComeFromTheTables) {
  mi::Registry r;
  proc::Config cfg;
  proc::ModuleProcContext pc;
  pc.cfg = &cfg;
  for (const modules::ModuleExports* m : modules::AllModules()) {
    if (m->mi_commands) m->mi_commands(r, pc);
  }
  for (const char* name : {"which", "perf_get", "perf_set", "perf_del", "perf_ttl", "get_statistics"}) {
    CHECK_TEXT(r.Find(name) != nullptr, name);
  }
}
