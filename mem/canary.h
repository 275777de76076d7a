// perfcached — deliberate faults for the canary (make canary).
// Copyright (c) 2026 the perfcached authors.
#pragma once

// A suite that passes a broken engine proves nothing. In a build with
// -DPERFCACHED_CANARY, PC_CANARY(n) is true when the environment variable
// PERFCACHED_CANARY=n selects fault n; scripts/canary.sh runs the soak, the
// crash points and the engine unit tests against each fault and passes only
// if every fault makes them fail. In every other build PC_CANARY(n) is a
// constant false and the faults compile away.
//   1  readers skip the seqlock re-check (cache/ops.cc Read)
//   2  writers take no bucket lock (cache/ops.cc LockBucket)
//   3  repair keeps the misrouted copies of an interrupted split (maint.cc)
//   4  a process binds to a slot a live process owns (the fork bug, slab.cc)
//   5  an adopter frees a claim before it leaves the slot (defect 1, slab.cc)
//   6  aggregate readers skip the version re-check (cache/dict.cc Validate)
//   7  removing a hash / set frees its record, not its trie (dict.cc FreeValue)
//   8  reads do not record their access (cache/ops.cc TouchRecord)
//   9  a read's access lands in a record no longer linked (TouchRecord)
//  10  a page marked draining still takes claims (slab.cc FindPartial)
//  11  a moved record keeps its version (cache/automove.cc MoveCopy)
//  12  automove swaps a slot outside the seqlock bracket (automove.cc)
//  13  the aging pass ages nothing: idle keys wrap to young (cache/access.cc)
//  14  the route word has no change count: a split undone by a merge looks
//      like no change to a reader's re-check (cache/internal.h NextRoute)
//  15  eviction gives up on a sparse table after its few first residues
//      (cache/evict.cc Sample): spurious -OOM
//  16  the large repair forgets a run at its group's end (large.cc)
//  17  a large free gives back a group other objects still use (large.cc)
//  18  the repair ignores a slot copy left in flight (cache/bucket.h
//      FinishJournal): a position keeps a torn 40-bit Off
//  19  automove frees an overflow node it did not unlink (automove.cc
//      WalkTable: the chain keeps pointing at the freed cell)
//  20  a hash's or set's record whose trie cells automove moved keeps its
//      version (automove.cc PublishTrieMove): readers and optimistic
//      writers that walked the old cells, now freed, do not see the change
//  21  a process asked to give back its cells in draining pages frees its
//      stack's cells there and keeps them on its stack (slab.cc
//      ReturnDrainingStack): they are handed out twice
//  22  the eviction pool keeps what another policy sampled, and a
//      volatile policy takes a pooled key without a TTL (cache/evict.cc
//      EvictByAccess): a switch from allkeys-lru to volatile-lru evicts
//      keys that have no TTL
//  23  volatile policies pick collections by all their keys, even those
//      where a sample found no key with a TTL (cache/evict.cc
//      PickCollection): -OOM while another collection has keys to evict
//  24  the volatile walk charges every bucket to its budget, hint 0 or
//      not (cache/scan.cc SampleStep): one key with a TTL among many
//      without is out of reach and eviction answers -OOM

#ifdef PERFCACHED_CANARY
namespace mem {
int CanaryFault();
}
#define PC_CANARY(n) (::mem::CanaryFault() == (n))
#else
#define PC_CANARY(n) false
#endif
