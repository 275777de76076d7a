// perfcached — the modules of this build and the daemon hooks built from their tables.
// Copyright (c) 2026 the perfcached authors.
#include "modules/exports.h"

#include <algorithm>

namespace modules {

namespace resp {
extern const ModuleExports kExports;
}
namespace mi_door {
extern const ModuleExports kExports;
}
namespace db_module {
extern const ModuleExports kExports;
}

std::span<const ModuleExports* const> AllModules() {
  static const ModuleExports* const kAll[] = {&resp::kExports, &mi_door::kExports, &db_module::kExports};
  return kAll;
}

bool InitModules(const proc::Config& cfg, std::string* err) {
  for (const ModuleExports* m : AllModules()) {
    if (m->init && !m->init(cfg, err)) {
      *err = std::string(m->name) + ": " + *err;
      return false;
    }
  }
  return true;
}

namespace {
// One worker's state: a pointer per module (nullptr: no per-worker state).
struct WorkerStates {
  std::vector<void*> state;
};
}  // namespace

proc::DaemonHooks HooksFromModules(const proc::Config& cfg) {
  proc::DaemonHooks h;
  auto mods = AllModules();
  h.worker_init = [mods](proc::WorkerContext& wc) -> void* {
    auto* w = new WorkerStates;
    for (const ModuleExports* m : mods) w->state.push_back(m->child_init ? m->child_init(wc) : nullptr);
    return w;
  };
  h.stop_accepting = [mods](void* p) {
    auto* w = static_cast<WorkerStates*>(p);
    for (size_t i = 0; i < mods.size(); ++i) {
      if (mods[i]->stop_accepting) mods[i]->stop_accepting(w->state[i]);
    }
  };
  h.drain = [mods](void* p) {
    auto* w = static_cast<WorkerStates*>(p);
    bool idle = true;
    for (size_t i = 0; i < mods.size(); ++i) {
      if (mods[i]->drain && !mods[i]->drain(w->state[i])) idle = false;
    }
    return idle;
  };
  h.tick = [mods](void* p, int64_t now) {
    auto* w = static_cast<WorkerStates*>(p);
    for (size_t i = 0; i < mods.size(); ++i) {
      if (mods[i]->tick) mods[i]->tick(w->state[i], now);
    }
  };
  h.reload = [mods](void* p) {
    auto* w = static_cast<WorkerStates*>(p);
    for (size_t i = 0; i < mods.size(); ++i) {
      if (mods[i]->reload) mods[i]->reload(w->state[i]);
    }
  };
  h.destroy = [mods](void* p) {
    auto* w = static_cast<WorkerStates*>(p);
    for (size_t i = mods.size(); i-- > 0;) {
      if (mods[i]->destroy) mods[i]->destroy(w->state[i]);
    }
    delete w;
  };
  std::vector<const ProcExport*> started;
  for (const ModuleExports* m : mods) {
    for (const ProcExport& pe : m->procs) {
      int n = pe.count(cfg);
      for (int i = 0; i < n; ++i) h.procs.push_back(proc::ModuleProc{pe.name, pe.run});
      if (n > 0) started.push_back(&pe);
    }
  }
  const proc::Config* c = &cfg;
  h.open_doors = [started, c](std::vector<int>* fds, std::string* err) {
    for (const ProcExport* pe : started) {
      if (pe->open_doors && !pe->open_doors(*c, fds, err)) return false;
    }
    return true;
  };
  bool any_warm = false, any_stop = false;
  for (const ModuleExports* m : mods) {
    any_warm |= m->warm != nullptr;
    any_stop |= m->at_stop != nullptr;
  }
  if (any_warm) {
    h.warm = [mods, c](cache::Ctx& ctx, proc::ProcTable* pt, std::string* err) {
      for (const ModuleExports* m : mods) {
        if (m->warm && !m->warm(ctx, pt, *c, err)) {
          *err = std::string(m->name) + ": " + *err;
          return false;
        }
      }
      return true;
    };
  }
  for (const ModuleExports* m : mods) {
    if (m->loading_begin && !h.loading_begin) {
      h.loading_begin = m->loading_begin;
      h.loading_end = m->loading_end;
    }
  }
  if (any_stop) {
    h.at_stop = [mods, c](cache::Ctx& ctx, proc::ProcTable* pt) {
      for (const ModuleExports* m : mods) {
        if (m->at_stop) m->at_stop(ctx, pt, *c);
      }
    };
  }
  h.close_doors = [started, c]() {
    for (size_t i = started.size(); i-- > 0;) {
      if (started[i]->close_doors) started[i]->close_doors(*c);
    }
  };
  return h;
}

namespace {
std::vector<const StatExport*> StatExports() {
  std::vector<const StatExport*> v;
  for (const ModuleExports* m : AllModules()) {
    for (const StatExport& s : m->stats) v.push_back(&s);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const StatExport* a, const StatExport* b) { return a->order < b->order; });
  return v;
}
}  // namespace

std::vector<StatValue> CollectAllStats(proc::ModuleProcContext& pc) {
  std::vector<StatValue> v;
  for (const StatExport* s : StatExports()) s->collect(pc, &v);
  return v;
}

bool ResetStatByName(proc::ModuleProcContext& pc, const std::string& name) {
  bool found = false;
  for (const StatExport* s : StatExports()) found |= s->reset(pc, name);
  return found;
}

void ResetAllModuleStats(proc::ModuleProcContext& pc) {
  for (const StatExport* s : StatExports()) s->reset_all(pc);
}

}  // namespace modules
