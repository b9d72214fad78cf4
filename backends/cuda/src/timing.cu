#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device.hpp"
#include "hydragen/cuda/device_array.hpp"
#include "hydragen/cuda/element.cuh"
#include "hydragen/cuda/handles.hpp"
#include "hydragen/cuda/memory.hpp"
#include "hydragen/cuda/timing.hpp"

namespace hydragen::cuda {

TimingResult summarize(std::vector<double> ms) {
  if (ms.empty()) throw std::invalid_argument("summarize: no timed runs");
  std::sort(ms.begin(), ms.end());
  return TimingResult{ms[ms.size() / 2], ms.front(), ms.back(), static_cast<int>(ms.size())};
}

namespace {

// Median of `runs` timed runs of `enqueue` after one warm-up (no L2 flush: the peaks' buffers are
// far larger than L2).
double median_ms(const std::function<void(cudaStream_t)>& enqueue, int runs) {
  RunTimer timer(false);
  enqueue(timer.stream());
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) ms.push_back(timer.time_ms(enqueue));
  return summarize(ms).median_ms;
}

template <typename T>
__global__ void fill_random_kernel(T* x, long long n, unsigned seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;  // a hash, not a quality RNG: never zeros
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    constexpr float kSqrt3 = 1.7320508f;  // [-sqrt 3, sqrt 3): unit variance, as N(0, 1) inputs have
    x[i] = from_float<T>(((static_cast<float>(h & 0xffffu) + 0.5f) / 32768.f - 1.f) * kSqrt3);
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

}  // namespace

void fill_random(void* data, DType dtype, std::size_t count, unsigned seed, cudaStream_t stream) {
  if (count == 0) return;
  const auto n = static_cast<long long>(count);
  switch (dtype) {
    case DType::fp32: fill_random_kernel<<<1024, 256, 0, stream>>>(static_cast<float*>(data), n, seed); break;
    case DType::fp16: fill_random_kernel<<<1024, 256, 0, stream>>>(static_cast<__half*>(data), n, seed); break;
    case DType::bf16: fill_random_kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n, seed); break;
    default: throw std::invalid_argument("fill_random: no CUDA element type for " + std::string(dtype_name(dtype)));
  }
  check_launch("fill_random");
}

namespace {
// The flush's buffer: twice L2, so that reading it leaves none of a run's lines there.
std::size_t flush_buffer_bytes(const DeviceInfo& device) { return 2 * device.l2_bytes; }
}  // namespace

std::size_t RunTimer::flush_bytes() { return flush_buffer_bytes(query_device()); }

RunTimer::RunTimer(bool flush_l2) {
  const DeviceInfo device = query_device();
  flush_bytes_ = flush_l2 ? flush_buffer_bytes(device) : 0;
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
  CUDA_CHECK(cudaEventRecord(start_, stream_));
  enqueue(stream_);
  CUDA_CHECK(cudaEventRecord(stop_, stream_));
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

CapturedGraph::CapturedGraph(const std::function<void(cudaStream_t)>& enqueue, cudaStream_t stream) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);  // leave the stream usable
    if (broken != nullptr) (void)cudaGraphDestroy(broken);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
  if (const cudaError_t e = cudaGraphInstantiate(&exec_, graph_, 0); e != cudaSuccess) {
    (void)cudaGraphDestroy(graph_);
    CUDA_CHECK(e);
  }
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
}

CapturedGraph::CapturedGraph(CapturedGraph&& other) noexcept : graph_(other.graph_), exec_(other.exec_) {
  other.graph_ = nullptr;
  other.exec_ = nullptr;
}

void CapturedGraph::launch(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

TimingResult time_graph(const std::function<void(cudaStream_t)>& enqueue, const TimingOptions& options) {
  RunTimer timer(options.flush_l2);
  const cudaStream_t stream = timer.stream();
  for (int i = 0; i < options.warmup; ++i) enqueue(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const CapturedGraph graph(enqueue, stream);
  std::vector<double> ms;
  for (int i = 0; i < options.replays; ++i) {
    ms.push_back(timer.time_ms([&](cudaStream_t s) { graph.launch(s); }));
  }
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
  fill_random(a.data(), DType::bf16, static_cast<std::size_t>(elems), 1u, stream);
  fill_random(b.data(), DType::bf16, static_cast<std::size_t>(elems), 2u, stream);
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
