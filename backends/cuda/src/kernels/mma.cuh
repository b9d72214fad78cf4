#pragma once
// Thin wrappers over the sm_80+ instructions the tensor-core kernel uses: asynchronous copies,
// ldmatrix and mma.sync m16n8k16 with fp32 accumulators. Fragment layouts are PTX's (ISA,
// "Matrix Fragments for mma.m16n8k16"): lane = 4 * group + thread_in_group.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace hydragen::cuda {

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Dynamic shared memory starts after the kernel's static shared memory, only 16-byte aligned: a
// kernel that needs ALIGN asks for ALIGN - 16 more bytes and starts here.
template <int ALIGN>
__device__ __forceinline__ unsigned char* align_shared(unsigned char* raw) {
  return raw + (ALIGN - smem_address(raw) % ALIGN) % ALIGN;
}

// 16 bytes global -> shared, bypassing L1; src_bytes = 0 writes zeros (rows past the end).
__device__ __forceinline__ void cp_async_16(void* smem, const void* global, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem)), "l"(global),
               "r"(src_bytes));
}
// The same, all 16 bytes read.
__device__ __forceinline__ void cp_async_16(void* smem, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(smem)), "l"(global));
}
// L2 eviction priorities for the lines a copy reads (the cache-hint operand, sm_80+): first for data
// read once that should not push out what is read again, last for data many blocks read.
// The cp.async priorities are the values `createpolicy.fractional.L2::evict_*.b64 p, 1.0` gives, which
// a GPU test checks (tests/cuda/l2_policy_test.cu), spelled as constants so that ptxas selects them in
// uniform registers: from createpolicy's result it copied the policy into a new uniform pair for every
// copy, 32 R2UR of a leaf warp's 329 instructions a tile (kernel-notes: l2-policy-constants).
inline constexpr unsigned long long kL2EvictNormal = 0x16F0000000000000ull;
inline constexpr unsigned long long kL2EvictFirst = 0x12F0000000000000ull;
// The TMA loads' priority stays createpolicy's: as a constant, ptxas held it in registers across the
// wgmma kernel, and the cluster kernels' spills grew from 76 to 188 bytes.
__device__ __forceinline__ unsigned long long l2_evict_last() {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// cp_async_16 under an L2 policy.
__device__ __forceinline__ void cp_async_16(void* smem, const void* global, int src_bytes, unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(smem_address(smem)),
               "l"(global), "r"(src_bytes), "l"(policy));
}
__device__ __forceinline__ void cp_async_16(void* smem, const void* global, unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem)), "l"(global),
               "l"(policy));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Pulls the 128-byte line holding `global` into L1 (and L2) without waiting for it.
__device__ __forceinline__ void prefetch_l1(const void* global) {
  asm volatile("prefetch.global.L1 [%0];\n" ::"l"(global));
}
// Every line of [begin, begin + bytes), thread `thread` of THREADS taking every THREADS-th.
template <int THREADS>
__device__ __forceinline__ void prefetch_range_l1(const void* begin, long long bytes, int thread) {
  const char* const b = static_cast<const char*>(begin) - reinterpret_cast<unsigned long long>(begin) % 128;
  const long long span = bytes + (static_cast<const char*>(begin) - b);
  for (long long at = 128LL * thread; at < span; at += 128LL * THREADS) prefetch_l1(b + at);
}

// Four 8x8 16-bit matrices; lanes 8m..8m+7 give the row addresses of matrix m.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem)));
}

// An 8x8 16-bit matrix held as mma fragments (lane 4g + t: row g, columns 2t and 2t + 1) turned to
// its transpose in the same layout: the lane then holds rows 2t and 2t + 1 of column g.
__device__ __forceinline__ unsigned movmatrix_trans(unsigned x) {
  unsigned y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// d[0..3] += a * b for a 16x16 (row) by 16x8 (col) product of 16-bit values, fp32 accumulate.
template <typename T>
__device__ __forceinline__ void mma_16816(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float* d, const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float* d, const unsigned (&a)[4], unsigned b0,
                                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace hydragen::cuda
