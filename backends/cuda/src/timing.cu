#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "hydragen/cuda/handles.hpp"
#include "hydragen/cuda/memory.hpp"
#include "hydragen/cuda/timing.hpp"
#include "kernels/trace.cuh"

namespace hydragen::cuda {

namespace {

struct GraphHolder {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphHolder() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

TimingResult summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return TimingResult{ms[ms.size() / 2], ms.front(), ms.back(), static_cast<int>(ms.size())};
}

// Median of `runs` timed runs of `enqueue` after one warm-up (no L2 flush: the peaks' buffers are
// far larger than L2).
double median_ms(const std::function<void(cudaStream_t)>& enqueue, int runs) {
  RunTimer timer(false);
  enqueue(timer.stream());
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) ms.push_back(timer.time_ms(enqueue));
  return summarize(ms).median_ms;
}

__global__ void fill_random_bf16(__nv_bfloat16* x, long long n, unsigned seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;  // a hash, not a quality RNG: never zeros
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2bfloat16_rn((static_cast<float>(h & 0xffffu) + 0.5f) / 32768.f - 1.f);
  }
}

// Reads x (n 16-byte words), evicting the dirty lines of the write before it: L2 ends up holding
// clean lines, which the timed work can evict for free. sink is written only if the words' XOR is
// one particular value, so that the loads are not optimized away.
__global__ void read_words(const uint4* x, long long n, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const uint4 w = x[i];
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void trace_reset(unsigned long long* trace) {
  if (threadIdx.x < kTraceEvents) {
    trace[2 * threadIdx.x] = ~0ull;
    trace[2 * threadIdx.x + 1] = 0;
  }
  if (threadIdx.x < 2 * kTraceLinks) trace[2 * kTraceEvents + threadIdx.x] = 0;
}

__global__ void trace_host_stamp(unsigned long long* trace, int event) { trace_stamp(trace, event); }

// The traced replays: each event's first and last stamp, relative to the stamp before the graph,
// medians over the replays, in microseconds.
[[maybe_unused]] void print_trace(RunTimer& timer, cudaGraphExec_t exec, int replays) {
  unsigned long long* const trace = trace_buffer();
  static const char* const names[kTraceEvents] = {
      "start",        "wide entry",  "wide Q",      "wide first load", "wide first K", "wide tiles done",
      "wide end",     "leaf entry",  "leaf first tile", "leaf tiles done", "leaf waited", "leaf end",
      "stop",         "wide Q own"};
  static const char* const link_names[kTraceLinks] = {"item", "segments", "first tile", "first product",
                                                     "tiles done", "stored", "end", "fold ids", "fold waited",
                                                     "fold first row", "fold rows done", "fold stored"};
  std::vector<std::vector<double>> first(kTraceEvents), last(kTraceEvents), link(kTraceLinks);
  std::vector<double> timed;
  for (int r = 0; r < replays; ++r) {
    trace_reset<<<1, 32, 0, timer.stream()>>>(trace);
    timed.push_back(timer.time_ms([&](cudaStream_t s) {
      trace_host_stamp<<<1, 1, 0, s>>>(trace, kTraceStart);
      CUDA_CHECK(cudaGraphLaunch(exec, s));
      trace_host_stamp<<<1, 1, 0, s>>>(trace, kTraceStop);
    }));
    unsigned long long host[2 * kTraceEvents + 2 * kTraceLinks];
    CUDA_CHECK(cudaMemcpy(host, trace, sizeof(host), cudaMemcpyDeviceToHost));
    for (int l = 0; l < kTraceLinks; ++l) {
      const unsigned long long* sum = host + 2 * kTraceEvents + 2 * l;
      if (sum[1] > 0) link[l].push_back(static_cast<double>(sum[0]) / static_cast<double>(sum[1]) * 1e-3);
    }
    for (int e = 0; e < kTraceEvents; ++e) {
      if (host[2 * e + 1] == 0) continue;
      first[e].push_back((static_cast<double>(host[2 * e]) - static_cast<double>(host[0])) * 1e-3);
      last[e].push_back((static_cast<double>(host[2 * e + 1]) - static_cast<double>(host[0])) * 1e-3);
    }
  }
  std::fprintf(stderr, "trace: %d replays, events timed %.2f us (median, with the stamps)\n", replays,
               summarize(timed).median_ms * 1e3);
  for (int e = 0; e < kTraceEvents; ++e) {
    if (first[e].empty()) continue;
    std::fprintf(stderr, "trace: %-16s first %7.2f us  last %7.2f us\n", names[e], summarize(first[e]).median_ms,
                 summarize(last[e]).median_ms);
  }
  for (int l = 0; l < kTraceLinks; ++l) {
    if (link[l].empty()) continue;
    std::fprintf(stderr, "trace: leaf link %-13s %7.2f us after the worker's entry (mean over workers, median over replays)\n",
                 link_names[l], summarize(link[l]).median_ms);
  }
}

}  // namespace

unsigned long long* trace_buffer() {
#ifdef HYDRAGEN_TRACE
  static unsigned long long* buffer = [] {
    unsigned long long* b = nullptr;
    CUDA_CHECK(cudaMalloc(&b, (2 * kTraceEvents + 2 * kTraceLinks) * sizeof(unsigned long long)));
    return b;
  }();
  return buffer;
#else
  return nullptr;
#endif
}

__global__ void touch_words(const unsigned char* x, long long words, long long stride, unsigned* sink) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < words && *reinterpret_cast<const volatile unsigned*>(x + i * stride) == 0x9e3779b9u) *sink = 1;
}

void touch_pages(const void* ptr, std::size_t bytes, std::size_t stride, cudaStream_t stream) {
  if (ptr == nullptr || bytes == 0) return;
  const long long words = static_cast<long long>((bytes + stride - 1) / stride);
  static unsigned* sink = [] {
    unsigned* s = nullptr;
    CUDA_CHECK(cudaMalloc(&s, 4));
    return s;
  }();
  touch_words<<<static_cast<unsigned>((words + 127) / 128), 128, 0, stream>>>(static_cast<const unsigned char*>(ptr), words,
                                                                         static_cast<long long>(stride), sink);
  check_launch("touch_words");
}

RunTimer::RunTimer(bool flush_l2) {
  const DeviceInfo device = query_device();
  // EXPERIMENT (perf-notes v48): HYDRAGEN_FLUSH_SCALE, the flush's size in L2s (2 by default).
  const char* scale = std::getenv("HYDRAGEN_FLUSH_SCALE");
  flush_bytes_ = flush_l2 ? static_cast<std::size_t>((scale != nullptr ? std::atof(scale) : 2.0) * device.l2_bytes) / 16 * 16 : 0;
  read_blocks_ = 4 * device.multiprocessors;
  // Members are raw handles so the destructor can release whatever the constructor got to.
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
    flush_ = device_memory().allocate(flush_bytes_);
  } catch (...) {
    release();
    throw;
  }
}

RunTimer::~RunTimer() { release(); }

void RunTimer::release() noexcept {
  device_memory().release(flush_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

double RunTimer::time_ms(const std::function<void(cudaStream_t)>& enqueue) {
  if (flush_bytes_ > 0) {
    CUDA_CHECK(cudaMemsetAsync(flush_, ++runs_ & 0xff, flush_bytes_, stream_));
    read_words<<<read_blocks_, 512, 0, stream_>>>(
        static_cast<const uint4*>(flush_), static_cast<long long>(flush_bytes_ / 16), static_cast<unsigned*>(flush_));
    check_launch("read_words (L2 flush)");
  }
  if (after_flush) after_flush(stream_);
  CUDA_CHECK(cudaEventRecord(start_, stream_));
  enqueue(stream_);
  CUDA_CHECK(cudaEventRecord(stop_, stream_));
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

TimingResult time_graph(const std::function<void(cudaStream_t)>& enqueue, const TimingOptions& options) {
  RunTimer timer(options.flush_l2);
  timer.after_flush = options.after_flush;
  const cudaStream_t stream = timer.stream();
  for (int i = 0; i < options.warmup; ++i) enqueue(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  GraphHolder g;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);  // leave the stream usable
    if (broken != nullptr) (void)cudaGraphDestroy(broken);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &g.graph));
  CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
  std::vector<double> ms;
  for (int i = 0; i < options.replays; ++i) {
    ms.push_back(timer.time_ms([&](cudaStream_t s) { CUDA_CHECK(cudaGraphLaunch(g.exec, s)); }));
  }
#ifdef HYDRAGEN_TRACE
  print_trace(timer, g.exec, options.replays);
#endif
  return summarize(ms);
}

Peaks measure_peaks() {
  OwnedStream owned;  // for the setup work; the timed runs use RunTimer's stream after it
  const cudaStream_t stream = owned.get();
  // Copy: 1 GiB each way, counting the bytes read and the bytes written.
  constexpr std::size_t kCopyBytes = std::size_t{1} << 30;
  DeviceArray<unsigned char> src(kCopyBytes), dst(kCopyBytes);
  CUDA_CHECK(cudaMemsetAsync(src.data(), 1, kCopyBytes, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const double copy_ms = median_ms(
      [&](cudaStream_t s) { CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), kCopyBytes, cudaMemcpyDeviceToDevice, s)); },
      10);
  // GEMM: bf16 in, fp32 accumulate, 8192^3, random data (zeros would run faster than real data).
  constexpr int n = 8192;
  const long long elems = static_cast<long long>(n) * n;
  DeviceArray<__nv_bfloat16> a(static_cast<std::size_t>(elems)), b(static_cast<std::size_t>(elems)),
      c(static_cast<std::size_t>(elems));
  fill_random_bf16<<<1024, 256, 0, stream>>>(a.data(), elems, 1u);
  fill_random_bf16<<<1024, 256, 0, stream>>>(b.data(), elems, 2u);
  check_launch("fill_random_bf16");
  CUDA_CHECK(cudaStreamSynchronize(stream));
  OwnedCublas cublas;
  const float alpha = 1.f, beta = 0.f;
  const double gemm_ms = median_ms(
      [&](cudaStream_t s) {
        CUBLAS_CHECK(cublasSetStream(cublas.get(), s));
        CUBLAS_CHECK(cublasGemmEx(cublas.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), CUDA_R_16BF, n, b.data(),
                                  CUDA_R_16BF, n, &beta, c.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
      },
      10);
  return Peaks{2.0 * n * static_cast<double>(n) * n / (gemm_ms * 1e-3), 2.0 * kCopyBytes / (copy_ms * 1e-3)};
}

}  // namespace hydragen::cuda
