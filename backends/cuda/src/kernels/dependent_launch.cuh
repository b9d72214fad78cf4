#pragma once
// Programmatic dependent launch (sm_90): the merge kernel is launched while the segment-attention
// kernel before it on the stream still runs, so its blocks start and read the plan's row tables
// before the partial rows exist; it then waits for that kernel's completion (and its memory) in
// wait_for_primary. The attention kernels allow the early launch once each of their blocks has
// started (wgmma, simt) or reached its last tile (mma.sync): a launch waits for every block's
// allowance, so the merge's blocks only take SMs that no attention block is waiting for.
// The host asks for it only after the launch that ends last: one that leaves half the GPU idle, or
// leaves chained after the wgmma launch (rule overlap_merge). Before sm_90 both are no-ops and the
// host launches the merge in stream order.
namespace hydragen::cuda {

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// The end of one of `workers` workers of a dependent launch that must not end before its primary
// (LaunchRecipe::chained_leaves): the last to arrive at `count` ([1], zero before the launch) waits
// for the primary and leaves the count at zero for the next run; the others leave their SMs at once.
// Waiting in every worker held each leaf block's SM until the wide launch ended (perf-notes v32).
// One thread of each worker calls it, after the worker's last store.
__device__ __forceinline__ void end_after_primary(unsigned* count, int workers) {
  if (atomicAdd(count, 1u) == static_cast<unsigned>(workers - 1)) {
    *count = 0;
    wait_for_primary();
  }
}

}  // namespace hydragen::cuda
