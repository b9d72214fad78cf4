#pragma once
// Thin wrappers over the sm_90a warpgroup instructions (wgmma) the Hopper segment-attention kernel
// uses. A warpgroup is 4 consecutive warps; one wgmma multiplies a 64-row A (shared memory, or
// registers in the mma.sync A-fragment layout per warp) by a shared-memory B into fp32 registers
// that have the layout of four stacked mma.m16n8 accumulators: warp w holds rows 16w..16w+15, and
// d[4j..4j+3] are rows (lane/4, lane/4 + 8) x columns 8j + 2(lane%4) + {0, 1}.
//
// Shared-memory operands are described by a 64-bit descriptor (PTX ISA, "Matrix Descriptor
// Format"). Every operand here uses the 128-byte swizzle: rows of 128 bytes (64 16-bit values), the
// 16-byte chunk c of row r stored at chunk c ^ (r % 8), atoms of 8 rows (1024 bytes) 1024-aligned.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mma.cuh"

namespace hydragen::cuda {

// Byte offset of 16-bit element (row, col) in a 128-byte-swizzled block of 64-column rows.
__device__ __forceinline__ int swizzle128(int row, int col) {
  return row * 128 + ((((col >> 3) ^ row) & 7) << 4) + (col & 7) * 2;
}

// Descriptor of a 128-byte-swizzled operand at `smem` (shared address). K-major operands (Q and K,
// the reduced dimension contiguous) step 8-row groups by `stride_bytes` = 1024 and ignore `leading`;
// MN-major ones (V: tokens are the reduced dimension) step 8-row groups of tokens by `stride_bytes`
// and 64-column blocks by `leading_bytes`.
__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned smem, unsigned leading_bytes,
                                                               unsigned stride_bytes) {
  return static_cast<unsigned long long>((smem & 0x3FFFF) >> 4) |
         static_cast<unsigned long long>((leading_bytes >> 4) & 0x3FFF) << 16 |
         static_cast<unsigned long long>((stride_bytes >> 4) & 0x3FFF) << 32 | 1ull << 62;  // 1: 128B swizzle
}

// Orders register writes before the next wgmma reads them (accumulators rescaled, A rebuilt).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of `r` across a wgmma issue or wait.
template <int N>
__device__ __forceinline__ void wgmma_hold(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
// Changes this warpgroup's register allocation (all its threads execute it): producers give
// registers back, consumers take them.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// The same for P's A fragments, which an issued wgmma reads until it completes.
template <int N>
__device__ __forceinline__ void wgmma_hold(unsigned (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
  }
}

// Makes this thread's generic-proxy shared-memory writes (cp.async) visible to wgmma's async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// d (+)= A B, m64nNk16, A and B from shared memory (descriptors), both K-major; accumulate = 0 overwrites.
template <typename T, int N>
__device__ void wgmma_ss(float (&d)[N / 2], unsigned long long a, unsigned long long b, int accumulate);
// d (+)= A B, m64nNk16, A from registers (per warp: the m16n8k16 A fragment), B MN-major in shared memory.
template <typename T, int N>
__device__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long b, int accumulate);

// The instructions name every accumulator register, "{%0, ..., %K-1}" with K = N / 2, as in-out
// operands; the macros below write one specialization per element type (PTX spells it f16 or bf16).
#define HG_ACC32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define HG_ACC64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define HG_OUT32(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define HG_OUT64(d) \
    HG_OUT32(d), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define HG_ACC96 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define HG_OUT96(d) \
    HG_OUT64(d), \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])

// S = Q K^T: N tokens, N / 2 accumulators; then the A and B descriptors and accumulate.
#define HG_WGMMA_SS(T, PTX, N, ACC, OUT, A_REG, B_REG, ACCUMULATE_REG)                                     \
  template <>                                                                                           \
  __device__ __forceinline__ void wgmma_ss<T, N>(float(&d)[N / 2], unsigned long long a, unsigned long long b, \
                                                 int accumulate) {                                      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ACCUMULATE_REG ", 0;\n"                             \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " " ACC ", " A_REG ", " B_REG \
                 ", p, 1, 1, 0, 0;\n}\n"                                                              \
                 : OUT(d)                                                                               \
                 : "l"(a), "l"(b), "r"(accumulate));                                                    \
  }
// O += P V: A fragments (4 registers) follow the accumulators, then the B descriptor and accumulate.
#define HG_WGMMA_RS(T, PTX, N, ACC, OUT, A_REGS, B_REG, ACCUMULATE_REG)                                     \
  template <>                                                                                           \
  __device__ __forceinline__ void wgmma_rs<T, N>(float(&d)[N / 2], const unsigned(&a)[4], unsigned long long b, \
                                                 int accumulate) {                                      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ACCUMULATE_REG ", 0;\n"                             \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " " ACC ", " A_REGS ", " B_REG \
                 ", p, 1, 1, 1;\n}\n"                                                                   \
                 : OUT(d)                                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                \
  }

HG_WGMMA_SS(__nv_bfloat16, "bf16", 128, HG_ACC64, HG_OUT64, "%64", "%65", "%66")
HG_WGMMA_SS(__half, "f16", 128, HG_ACC64, HG_OUT64, "%64", "%65", "%66")
HG_WGMMA_SS(__nv_bfloat16, "bf16", 192, HG_ACC96, HG_OUT96, "%96", "%97", "%98")
HG_WGMMA_SS(__half, "f16", 192, HG_ACC96, HG_OUT96, "%96", "%97", "%98")
HG_WGMMA_RS(__nv_bfloat16, "bf16", 64, HG_ACC32, HG_OUT32, "{%32, %33, %34, %35}", "%36", "%37")
HG_WGMMA_RS(__half, "f16", 64, HG_ACC32, HG_OUT32, "{%32, %33, %34, %35}", "%36", "%37")
HG_WGMMA_RS(__nv_bfloat16, "bf16", 128, HG_ACC64, HG_OUT64, "{%64, %65, %66, %67}", "%68", "%69")
HG_WGMMA_RS(__half, "f16", 128, HG_ACC64, HG_OUT64, "{%64, %65, %66, %67}", "%68", "%69")

#undef HG_WGMMA_RS
#undef HG_WGMMA_SS
#undef HG_OUT96
#undef HG_ACC96
#undef HG_OUT64
#undef HG_OUT32
#undef HG_ACC64
#undef HG_ACC32

}  // namespace hydragen::cuda
