// Built and run as: nvcc -O2 -arch=sm_90a -o protocol-cost protocol-cost.cu && ./protocol-cost
// (a measurement, not part of the build; its output on an H200 is protocol-cost-h200.txt)
// The timing protocol's own cost (DESIGN.md section 6, backends/cuda/src/timing.cu), on graphs of
// empty kernels: L2 flushed (memset + a read of 2x L2) before each replay, events around the graph
// launch, median of 50 replays.
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
__global__ void empty_kernel(int* p) { if (p != nullptr && threadIdx.x == 1023) *p = 1; }
__global__ void one_load(const int* p, int* q) { if (threadIdx.x == 0 && blockIdx.x == 0) { int v = *p; if (v == 12345) *q = v; } }
__global__ void read_words(const uint4* x, long long n, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    uint4 w = x[i]; acc ^= w.x ^ w.y ^ w.z ^ w.w; }
  if (acc == 0x9e3779b9u) *sink = acc;
}
int main() {
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  size_t flush = 2 * (size_t)prop.l2CacheSize;
  void* buf; cudaMalloc(&buf, flush);
  int* data; cudaMalloc(&data, 1 << 20); cudaMemset(data, 0, 1 << 20);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto measure = [&](const char* name, int kernels, int blocks, bool loads, bool do_flush) {
    cudaGraph_t g; cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    for (int k = 0; k < kernels; ++k) {
      if (loads) one_load<<<blocks, 128, 0, s>>>(data + 4096 * k, data + 200000);
      else empty_kernel<<<blocks, 128, 0, s>>>(nullptr);
    }
    cudaStreamEndCapture(s, &g); cudaGraphInstantiate(&e, g, 0);
    std::vector<float> ms; int run = 0;
    for (int i = 0; i < 51; ++i) {
      if (do_flush) { cudaMemsetAsync(buf, ++run & 0xff, flush, s);
        read_words<<<4 * prop.multiProcessorCount, 512, 0, s>>>((const uint4*)buf, flush / 16, (unsigned*)buf); }
      cudaEventRecord(a, s); cudaGraphLaunch(e, s); cudaEventRecord(b, s); cudaEventSynchronize(b);
      float t; cudaEventElapsedTime(&t, a, b); if (i) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-40s kernels %d blocks %4d flush %d: median %.2f us (min %.2f, max %.2f)\n", name, kernels, blocks, do_flush,
                1e3 * ms[ms.size() / 2], 1e3 * ms.front(), 1e3 * ms.back());
    cudaGraphExecDestroy(e); cudaGraphDestroy(g);
  };
  std::printf("%s\n", prop.name);
  for (int f = 1; f >= 0; --f) {
    measure("empty kernel", 1, 1, false, f);
    measure("empty kernel", 1, 132, false, f);
    measure("empty kernels in a chain", 2, 132, false, f);
    measure("empty kernels in a chain", 3, 132, false, f);
    measure("one dependent DRAM load", 1, 1, true, f);
    measure("one DRAM load per kernel, chained", 2, 1, true, f);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) { std::printf("CUDA error: %s\n", cudaGetErrorString(err)); return 1; }
}
