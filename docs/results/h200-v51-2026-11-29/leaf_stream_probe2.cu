// How fast one SM streams K/V-like tiles from DRAM into shared memory, by copy path and bytes in flight
// (perf-notes v50): warps on the first SMS SMs each stream their own contiguous region in TILE-byte tiles
// through STAGES stages, as the leaf warps do, either with cp.async (16 bytes a lane) or with one bulk copy
// (cp.async.bulk, the copy engine) per CHUNK bytes, issued by lane 0 on a stage mbarrier. Nothing reads
// the tiles (WORK 0), or each landed tile is read as the token product reads it (16 ldmatrix.x4, WORK 1), and
// fed to 16 mma.sync (WORK 2). Prints B/ns per SM for each variant.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1); } } while (0)

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

template <int STAGES, int TILE, bool BULK, int CHUNK, int WORK>
__global__ void stream(const char* src, long long per_warp, int sms, int warps_per_block, unsigned long long* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bars[16][STAGES];
  unsigned smid; asm("mov.u32 %0, %%smid;" : "=r"(smid));
  if (smid >= static_cast<unsigned>(sms)) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // this warp's region: by SM and slot, so each streams distinct bytes
  __shared__ int slot_base;
  if (threadIdx.x == 0) slot_base = atomicAdd(reinterpret_cast<unsigned*>(sink) + 2 + smid, 1);
  __syncthreads();
  const long long gw = (static_cast<long long>(smid) * 64 + slot_base * warps_per_block + warp);
  const char* base = src + gw * per_warp;
  unsigned char* st = smem + warp * STAGES * TILE;
  const int tiles = static_cast<int>(per_warp / TILE);
  if (BULK) {
    if (lane == 0) for (int s = 0; s < STAGES; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bars[warp][s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncwarp();
  }
  auto issue = [&](int t) {
    const int s = t % STAGES;
    const char* g = base + static_cast<long long>(t) * TILE;
    if (BULK) {
      if (lane == 0) {
        const unsigned bar = smem_addr(&bars[warp][s]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(TILE) : "memory");
        for (int c = 0; c < TILE; c += CHUNK)
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                       ::"r"(smem_addr(st + s * TILE + c)), "l"(g + c), "r"(CHUNK), "r"(bar) : "memory");
      }
    } else {
      for (int c = lane * 16; c < TILE; c += 512)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(st + s * TILE + c)), "l"(g + c) : "memory");
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
  };
  for (int t = 0; t < STAGES - 1 && t < tiles; ++t) issue(t);
  unsigned acc = 0;
  for (int t = 0; t < tiles; ++t) {
    if (t + STAGES - 1 < tiles) issue(t + STAGES - 1);
    else if (!BULK) asm volatile("cp.async.commit_group;" ::: "memory");  // keep the group count
    if (BULK) {
      const unsigned bar = smem_addr(&bars[warp][t % STAGES]), parity = (t / STAGES) & 1;
      asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}" ::"r"(bar), "r"(parity) : "memory");
    } else {
      asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1) : "memory");
    }
    __syncwarp();
    if (WORK == 0) {
      acc += st[(t % STAGES) * TILE + lane * 4];  // one read of the landed tile
    } else {
      // the token product's reads: 8 ldmatrix.x4 over K's 4 KB, 8 .trans over V's (swizzled as tile_offset)
      float c[4] = {0.f, 0.f, 0.f, 0.f};
      const unsigned tile = smem_addr(st + (t % STAGES) * TILE);
#pragma unroll
      for (int k = 0; k < 16; ++k) {
        const int row = lane % 16, chunk = (2 * (k % 8) + lane / 16) ^ (row % 8);
        const unsigned at = tile + (k / 8) * 4096 + row * 256 + chunk * 16;
        unsigned r0, r1, r2, r3;
        if (k < 8) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
        else asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
        if (WORK == 1) {
          acc ^= r0 ^ r1 ^ r2 ^ r3;
        } else {
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                       : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(r0), "r"(r1));
        }
      }
      acc += __float_as_uint(c[0] + c[1] + c[2] + c[3]);
    }
    __syncwarp();
  }
  if (acc == 0xffffffffu) sink[0] = acc;
}

template <int STAGES, int TILE, bool BULK, int CHUNK, int WORK = 0>
void run(const char* name, const char* src, int sms, int warps_per_block, int blocks_per_sm, long long per_warp,
         unsigned long long* sink, int num_sms) {
  auto k = stream<STAGES, TILE, BULK, CHUNK, WORK>;
  const int smem = warps_per_block * STAGES * TILE;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int fit = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, k, 32 * warps_per_block, smem));
  if (fit < blocks_per_sm) { std::printf("%-34s warps %2d: %d blocks fit, not %d\n", name, warps_per_block * blocks_per_sm, fit, blocks_per_sm); return; }
  std::vector<float> ms;
  cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
  for (int r = 0; r < 7; ++r) {
    CHECK(cudaMemset(sink, 0, 8 * (2 + 256)));
    CHECK(cudaEventRecord(a));
    k<<<num_sms * blocks_per_sm, 32 * warps_per_block, smem>>>(src, per_warp, sms, warps_per_block, sink);
    CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK(cudaGetLastError());
    float t; CHECK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t);
  }
  std::vector<unsigned> count(2 * (2 + 256));
  CHECK(cudaMemcpy(count.data(), sink, 8 * (2 + 256), cudaMemcpyDeviceToHost));
  unsigned lo = 1u << 30, hi = 0;
  for (int i = 0; i < sms; ++i) { lo = std::min(lo, count[2 + i]); hi = std::max(hi, count[2 + i]); }
  if (lo != static_cast<unsigned>(blocks_per_sm) || hi != lo) std::printf("  (blocks per streaming SM %u-%u, not %d)\n", lo, hi, blocks_per_sm);
  std::sort(ms.begin(), ms.end());
  const double bytes = static_cast<double>(per_warp) * warps_per_block * blocks_per_sm * sms;
  std::printf("%-34s warps %2d in flight %6d B: %7.1f B/ns per SM (%.3f ms)\n", name, warps_per_block * blocks_per_sm,
              warps_per_block * blocks_per_sm * (STAGES - 1) * TILE, bytes / (ms[3] * 1e6) / sms, ms[3]);
}

int main(int argc, char** argv) {
  const int sms = argc > 1 ? std::atoi(argv[1]) : 16;
  int dev = 0, num_sms = 0; CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("%s, %d SMs, streaming on %d of them\n", prop.name, num_sms, sms);
  const long long per_warp = 1 << 20;
  char* src; CHECK(cudaMalloc(&src, static_cast<size_t>(num_sms) * 64 * per_warp));
  CHECK(cudaMemset(src, 1, static_cast<size_t>(num_sms) * 64 * per_warp));
  unsigned long long* sink; CHECK(cudaMalloc(&sink, 8 * (2 + 256)));
  // the leaf warps' shape: 8 KB tiles (16 tokens of K and V at D 128), two stages, four warps a block, three blocks
  run<2, 8192, false, 0, 0>("cp.async, 2 stages", src, sms, 4, 3, per_warp, sink, num_sms);
  run<2, 8192, false, 0, 1>("cp.async + 16 LDSM a tile", src, sms, 4, 3, per_warp, sink, num_sms);
  run<2, 8192, false, 0, 2>("cp.async + 16 LDSM + 16 HMMA", src, sms, 4, 3, per_warp, sink, num_sms);
  run<3, 8192, false, 0, 1>("cp.async 3 st + 16 LDSM", src, sms, 4, 2, per_warp, sink, num_sms);
  run<2, 8192, true, 8192, 1>("bulk 8 KB + 16 LDSM", src, sms, 4, 3, per_warp, sink, num_sms);
  run<2, 8192, false, 0, 0>("cp.async, 2 stages", src, sms, 2, 3, per_warp, sink, num_sms);
  run<2, 8192, false, 0, 1>("cp.async + 16 LDSM a tile", src, sms, 2, 3, per_warp, sink, num_sms);
  CHECK(cudaFree(src)); CHECK(cudaFree(sink));
  return 0;
}
