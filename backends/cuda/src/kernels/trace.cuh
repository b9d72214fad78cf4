#pragma once
// EXPERIMENT (perf-notes v39): a timeline of one run's launches, built only with -DHYDRAGEN_TRACE
// (cmake -DCMAKE_CUDA_FLAGS=-DHYDRAGEN_TRACE -DCMAKE_CXX_FLAGS=-DHYDRAGEN_TRACE; hydragen-sweep prints it
// to stderr per point). Each event keeps the first and the last %globaltimer (256 ns steps on an H100)
// at which any block reached it: trace[2e] (atomicMin) and trace[2e + 1] (atomicMax). Stamps from
// thousands of warps contend on those two words and delay what follows a release (a cluster barrier):
// the merge kernel's and the combine's stamps were dropped for that.
namespace hydragen::cuda {

enum TraceEvent : int {
  kTraceStart = 0,       // the host's stamp kernel, after the L2 flush, before the graph
  kTraceWideEntry,       // a wgmma block starts
  kTraceWideQ,           // its consumers have Q (q_ready)
  kTraceWideFirstLoad,   // its producer issues the first K tile (item and tensor map read)
  kTraceWideFirstK,      // its warpgroup 0 sees the first K tile land
  kTraceWideTilesDone,   // its warpgroup 0's last product has landed
  kTraceWideEnd,         // its warpgroup 0 has stored its rows
  kTraceLeafEntry,       // a leaf worker starts
  kTraceLeafFirstTile,   // its first tile has landed
  kTraceLeafTilesDone,   // its last item's tiles are done
  kTraceLeafWaited,      // a folding row is past the wait for the wide launch
  kTraceLeafEnd,         // the worker ends
  kTraceStop,            // the host's stamp kernel after the graph
  kTraceWideQOwn,        // a wgmma consumer's own Q copies have landed (before q_ready)
  kTraceEvents
};

// The links of a leaf worker's first item (its tiles done: its last item's), each as the time since
// the worker's entry, summed over the workers with their count: trace[2 * kTraceEvents + 2 * link]
// and [+ 1]. A link's stamp follows the first instruction that needs what the link loads.
enum TraceLink : int {
  kLinkItem = 0,      // the item and the run's last item are in registers (their tables prefetched)
  kLinkSegments,      // lane 0's segment lookups are done (after the worker's sync)
  kLinkFirstTile,     // the first tile has landed
  kLinkFirstProduct,  // the first tile is computed (Q has landed)
  kLinkTilesDone,     // the last item's tiles are computed
  kLinkStored,        // the last item's rows are handed over (a folding row after its wait and fold)
  kLinkEnd,           // the worker ends (a chained worker after its count's atomic)
  kLinkFoldIds,       // EXPERIMENT v48: thread 0's fold has its row ids (before the wait)
  kLinkFoldWaited,    // its wait for the wide launch has returned
  kLinkFoldFirst,     // its first wide row is folded
  kLinkFoldDone,      // every wide row is folded
  kLinkFoldStored,    // O and LSE are stored (issued)
  kTraceLinks
};

__device__ __forceinline__ unsigned long long trace_now() {
  unsigned long long t = 0;
#ifdef HYDRAGEN_TRACE
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
  return t;
}

__device__ __forceinline__ void trace_link([[maybe_unused]] unsigned long long* trace, [[maybe_unused]] int link,
                                           [[maybe_unused]] unsigned long long t0) {
#ifdef HYDRAGEN_TRACE
  if (trace == nullptr) return;
  atomicAdd(trace + 2 * kTraceEvents + 2 * link, trace_now() - t0);
  atomicAdd(trace + 2 * kTraceEvents + 2 * link + 1, 1ull);
#endif
}

// EXPERIMENT v48: the block's thread 0's worker entry, for the fold's links (row_output.cuh).
__device__ __forceinline__ unsigned long long& trace_t0() {
  __shared__ unsigned long long t0;
  return t0;
}

__device__ __forceinline__ void trace_stamp([[maybe_unused]] unsigned long long* trace, [[maybe_unused]] int event) {
#ifdef HYDRAGEN_TRACE
  if (trace == nullptr) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  atomicMin(trace + 2 * event, t);
  atomicMax(trace + 2 * event + 1, t);
#endif
}

}  // namespace hydragen::cuda
