// perfcached — automove: moving live records out of sparse slab pages.
// Copyright (c) 2026 the perfcached authors.
#pragma once

// memcached's slab_automove, in shared memory. After a fill of one value
// size is mostly deleted or evicted, its pages are sparse: a few live
// cells each, none empty, so none goes back to the arena and another size
// class can get no page (docs/memory.md "Automove"). The mover empties the
// sparsest pages of such a class into the free cells of its other pages:
//
//   plan   a class with at least two pages' worth of free cells, a quarter
//          of its cells free, and pages at most half full. Its sparsest
//          pages are marked *draining* (mem/slab.h MarkDrain: no new
//          claims), as many as its other pages' free cells can absorb.
//   walk   every bucket of every collection (a budget per step): a record
//          whose cell is in a draining page is copied, under its bucket
//          lock, into a new cell of its class, with the next version, and
//          the slot is swapped inside the bucket's seqlock bracket; the old
//          cell is freed after the unlock. This is a SET's replace, so
//          readers need nothing new: a reader that raced the swap fails its
//          seqlock check and retries, and one that copied a big value
//          outside the bracket checks that the key still names the same
//          cell and version. The version moves on because the old cell is
//          freed: optimistic writers (aggregates, INCR on a string) compare
//          versions, and an unchanged version promises that no cell they
//          read was freed (record.h). Records in the overflow table move
//          the same way under its lock. The cells of a hash's or set's
//          trie in marked pages get copies, linked in place of the old
//          ones (dict.h RelocateTreeCells); the key's record then gets
//          its next version (and new root) in the bracket, and the old
//          cells are freed after the unlock.
//   end    the marks are cleared; pages whose cells all went were given
//          back to their group as they came free, from there to any class.
//
//   give  free cells another process holds in marked pages (a claim not
//          yet handed out, cells on its private stack) are its own: the
//          mover asks it, at the start and at the end of the walk
//          (mem::AskGiveBack), and the process gives them back from its
//          loop's tick (mem::Allocator::AnswerGiveBack). The pass ends
//          when every process asked has answered, or after
//          give_back_wait_ms (a process that answers later finds the
//          marks cleared and gives back nothing: its cells wait for the
//          next pass that marks their pages).
//
// Crash safety: a mover killed mid-move leaks at most the new cell (before
// the swap) or the old one (after it), exactly like a SET killed there; it
// never leaves a slot pointing at a freed cell. Marks it leaves are cleared
// by the next mover (mem::ClearDrainMarks). A process killed while it
// gives back leaks at most the cell in flight; its adopter gives back the
// rest.
//
// One mover at a time: the timer process (proc/daemon.cc) runs it.

#include <cstdint>
#include <string>
#include <vector>

#include "cache/catalog.h"
#include "mem/slab.h"

namespace cache {

struct AutomoveStats {
  uint64_t passes = 0;       // passes started
  uint64_t moved = 0;        // records moved
  uint64_t pages_freed = 0;  // marked pages that came free during their pass
  uint64_t given_back = 0;   // free cells processes gave back when the mover asked
  bool enabled = true;
  bool active = false;       // a pass is running
};
AutomoveStats GetAutomoveStats(const Ctx& c);
void SetAutomoveEnabled(Ctx& c, bool on);
// Ask the mover for a pass now, whatever the memory pressure (MI).
void RequestAutomove(Ctx& c);

class Automover {
 public:
  // One step: start a pass when it is due (memory pressure, or a request),
  // walk up to `budget` buckets, finish the pass when the walk is done.
  // Returns the records moved in this step.
  uint64_t Step(Ctx& c, uint32_t budget = 16384);
  // Start a pass at once (force: with no memory pressure). False if no
  // class has pages worth emptying (or a pass is running).
  bool Start(Ctx& c, bool force);
  bool active() const { return !plan_.empty(); }
  // The walk is done and the pass waits for the answers (poll slowly).
  bool waiting() const { return active() && asked_end_; }
  // How long the end of a pass waits for the processes asked to give
  // back their cells (their ticks are 100 ms for workers, 500 ms for MI).
  int64_t give_back_wait_ms = 1000;
  // Pages marked in the running pass (tests).
  size_t marked() const;

 private:
  struct ClassPlan {
    int cls;
    std::vector<size_t> pages;
  };
  void Finish(Ctx& c);
  bool GaveBack(Ctx& c);  // asked at the walk's end, answered (or timed out)
  uint64_t WalkTable(Ctx& c, TableHeader& h, uint32_t budget, uint32_t* walked);

  bool cleared_ = false;         // stale marks cleared (first step of a mover)
  int64_t last_check_ms_ = 0;
  uint64_t last_nomem_ = 0;
  std::vector<ClassPlan> plan_;
  std::vector<uint8_t> draining_cls_;  // by class: 1 = has marked pages
  std::vector<mem::GiveBackAsk> asked_;  // processes asked to give back cells
  bool asked_end_ = false;             // asked again at the walk's end
  int64_t asked_ms_ = 0;               // when (MonoMs)
  std::vector<std::string> tables_;    // collections to walk, in order
  size_t table_ = 0;                   // cursor: collection
  uint64_t bucket_ = 0;                // cursor: bucket of that collection
};

}  // namespace cache
