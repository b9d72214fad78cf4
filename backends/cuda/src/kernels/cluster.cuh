#pragma once
// Thread-block clusters (sm_90): a block's rank and the cluster's size, the cluster-wide barrier, and
// loads from another block's shared memory (distributed shared memory). Used where a wide row block's
// parts run as one cluster and combine their rows on chip (rule part_merge).

namespace hydragen::cuda {

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

__device__ __forceinline__ unsigned cluster_size() {
  unsigned size;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(size));
  return size;
}

// Every thread of the cluster that has not exited arrives, then waits for the others: release and
// acquire, so each block's shared (and global) writes before it are visible to every block after it.
// Not .aligned: the warps reach it from different code paths.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release;\n"
      "barrier.cluster.wait.acquire;\n" ::
          : "memory");
}

// The same without ordering memory: only that every thread has reached it (that a block's shared memory
// is no longer read by the others before it exits). A release here waited for the stores before it
// (ncu: membar stalls at the combine's end).
__device__ __forceinline__ void cluster_sync_relaxed() {
  asm volatile(
      "barrier.cluster.arrive.relaxed;\n"
      "barrier.cluster.wait;\n" ::
          : "memory");
}

// The address in block `rank`'s shared memory of what `local` addresses in this block's.
__device__ __forceinline__ unsigned cluster_address(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

__device__ __forceinline__ float4 load_cluster_float4(unsigned address) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

__device__ __forceinline__ float load_cluster_float(unsigned address) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(address) : "memory");
  return v;
}

}  // namespace hydragen::cuda
