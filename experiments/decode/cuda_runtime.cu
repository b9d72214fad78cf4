#include "decode/cuda_runtime.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <math_constants.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "decode/runtime_checks.hpp"
#include "hydragen/cuda/block_reduce.cuh"
#include "hydragen/cuda/check.hpp"
#include "hydragen/cuda/device.hpp"
#include "hydragen/cuda/element.cuh"
#include "hydragen/cuda/handles.hpp"
#include "hydragen/cuda/memory.hpp"

namespace hydragen::decode {
namespace {

using cuda::from_float;
using cuda::to_float;
using Element = __nv_bfloat16;  // dtype(): weights, activations and the KV cache

constexpr int kThreads = 256;  // per block: whole warps; a 4096-8192 wide row gives each 16-32 elements
// cuBLAS's recommended workspace on Hopper, given by hand so that a captured GEMM allocates nothing.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

// A Matrix's rows on the device, typed.
template <typename T>
struct Rows {
  T* data;          // [rows, ld]
  std::int64_t ld;  // elements from one row to the next
  __device__ T* operator[](std::int64_t r) const { return data + r * ld; }
};

template <typename T>
Rows<T> rows_of(const Matrix& m) {
  return {static_cast<T*>(m.data), m.ld};
}

unsigned blocks_for(std::int64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

// One block per token. A token outside the table (the host runtime refuses it; this one cannot read
// it without waiting) gives a row of NaN, so the mistake shows downstream.
template <typename T>
__global__ void embed_kernel(const int* tokens, Rows<const T> table, std::int64_t vocab, std::int64_t hidden, Rows<T> x) {
  // tokens: [T]; table: [vocab, hidden]; x: [T, hidden]
  const std::int64_t t = blockIdx.x;
  const int token = tokens[t];
  const bool known = token >= 0 && token < vocab;
  for (std::int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    x[t][j] = known ? table[token][j] : from_float<T>(CUDART_NAN_F);
  }
}

// One block per row: the sum of squares in fp32 over the block, then x * scale * w rounded once.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(Rows<const T> x, const T* w, float eps, std::int64_t hidden, Rows<T> out) {
  // x, out: [T, hidden] (they may be the same rows: each thread reads its elements before writing them); w: [hidden]
  __shared__ float scratch[kThreads / 32];
  const std::int64_t t = blockIdx.x;
  float sum = 0;
  for (std::int64_t j = threadIdx.x; j < hidden; j += kThreads) {
    const float v = to_float(x[t][j]);
    sum += v * v;
  }
  sum = cuda::block_reduce<kThreads>(sum, [](float a, float b) { return a + b; }, scratch);
  const float scale = 1.0f / sqrtf(sum / static_cast<float>(hidden) + eps);
  for (std::int64_t j = threadIdx.x; j < hidden; j += kThreads) {
    out[t][j] = from_float<T>(to_float(x[t][j]) * scale * to_float(w[j]));
  }
}

template <typename T>
struct RopeParams {
  Rows<const T> qkv;        // [tokens, (Hq + 2 Hkv) D]: Q heads, then K, then V
  Rows<T> q;                // [tokens, Hq D]
  T* const* k_leaf;         // [B] -> [capacity, Hkv, D]
  T* const* v_leaf;         // [B] -> [capacity, Hkv, D]
  const int* leaf_length;   // [B], this step's tokens counted
  std::int64_t tokens;      // B * q_len
  int q_heads, kv_heads, head_dim, q_len;
  int position_offset;      // position of a leaf's first token
  const int* seq_offset;    // [B] added per sequence (its group's tokens), or null
  const float* rotary;      // [rotary_positions][2][D / 2]: each position's cosines, then its sines
  int rotary_positions;
};

constexpr int kRopeChunk = 8;  // elements of a 16-byte load or store

// Eight elements of a head from `lo` and the eight D/2 after them from `hi`, turned by their
// cosines c and sines s (element i with i + D/2), in fp32.
template <typename T>
__device__ __forceinline__ void turn_chunk(const T* __restrict__ lo, const T* __restrict__ hi, const float* __restrict__ c,
                                           const float* __restrict__ s, float poison, T* __restrict__ out_lo,
                                           T* __restrict__ out_hi) {  // each [8]
  const uint4 a_bits = *reinterpret_cast<const uint4*>(lo), b_bits = *reinterpret_cast<const uint4*>(hi);
  const float4 c0 = *reinterpret_cast<const float4*>(c), c1 = *reinterpret_cast<const float4*>(c + 4);
  const float4 s0 = *reinterpret_cast<const float4*>(s), s1 = *reinterpret_cast<const float4*>(s + 4);
  const float cs[kRopeChunk] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  const float ss[kRopeChunk] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
  const T* a = reinterpret_cast<const T*>(&a_bits);
  const T* b = reinterpret_cast<const T*>(&b_bits);
  uint4 x_bits, y_bits;
  T* x = reinterpret_cast<T*>(&x_bits);
  T* y = reinterpret_cast<T*>(&y_bits);
#pragma unroll
  for (int e = 0; e < kRopeChunk; ++e) {
    const float u = to_float(a[e]), v = to_float(b[e]), cos_e = cs[e] + poison, sin_e = ss[e] + poison;
    x[e] = from_float<T>(u * cos_e - v * sin_e);
    y[e] = from_float<T>(v * cos_e + u * sin_e);
  }
  *reinterpret_cast<uint4*>(out_lo) = x_bits;
  *reinterpret_cast<uint4*>(out_hi) = y_bits;
}

// A thread per 16-byte unit of a token's work, every unit's loads independent of the others: a chunk
// pair (8 elements and the 8 D/2 after them) of each Q and K head, turned by the rotary table's row
// for the token's position, then each 8-element chunk of its V, copied. (A block per token, its 128
// threads striding over the token's elements in 2-byte loads, took 9.6 us for 1024 tokens of 15 heads
// under ncu with its angles read from the table, 10.8 us with them computed in fp64: perf-notes v32.)
template <typename T>
__global__ void __launch_bounds__(kThreads) rope_append_kernel(const RopeParams<T> p) {
  const int half = p.head_dim / 2, pairs = half / kRopeChunk;  // chunk pairs of a head
  const int turned = (p.q_heads + p.kv_heads) * pairs, units = turned + p.kv_heads * p.head_dim / kRopeChunk;
  const std::int64_t unit = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::int64_t t = unit / units;
  if (t >= p.tokens) return;
  const int w = static_cast<int>(unit - t * units);
  const int seq = static_cast<int>(t / p.q_len);
  const int index = p.leaf_length[seq] - p.q_len + static_cast<int>(t % p.q_len);  // in the leaf
  // A leaf shorter than its step (the host runtime refuses it): Q turned, no cache write.
  const bool append = index >= 0;
  const std::int64_t d = p.head_dim, kv_row = p.kv_heads * d;  // kv_row: one token of a leaf's K or V
  const T* __restrict__ x = p.qkv[t];  // [(Hq + 2 Hkv) D]: Q heads, K heads, V heads
  if (w >= turned) {  // a chunk of V
    if (!append) return;
    const int e = (w - turned) * kRopeChunk;
    *reinterpret_cast<uint4*>(p.v_leaf[seq] + index * kv_row + e) =
        *reinterpret_cast<const uint4*>(x + (p.q_heads + p.kv_heads) * d + e);
    return;
  }
  const int h = w / pairs, c = w % pairs * kRopeChunk;
  if (h >= p.q_heads && !append) return;
  const int position = index + p.position_offset + (p.seq_offset != nullptr ? p.seq_offset[seq] : 0);
  // A position outside the table (the decoder sizes it for every position it makes): NaN, never a
  // wrong turn. NaN + x is NaN, 0 + x is x exactly.
  const bool known = position >= 0 && position < p.rotary_positions;
  const float poison = known ? 0.0f : __int_as_float(0x7fc00000);
  const float* cosines = p.rotary + static_cast<std::int64_t>(known ? position : 0) * d;  // [D / 2]
  T* out = h < p.q_heads ? p.q[t] + h * d : p.k_leaf[seq] + index * kv_row + (h - p.q_heads) * d;  // [D]
  turn_chunk(x + h * d + c, x + h * d + c + half, cosines + c, cosines + half + c, poison, out + c, out + c + half);
}

// One thread per output element.
template <typename T>
__global__ void swiglu_kernel(Rows<const T> gate_up, std::int64_t tokens, std::int64_t ffn, Rows<T> out) {
  // gate_up: [tokens, 2 ffn] (gate, then up); out: [tokens, ffn]
  const std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= tokens * ffn) return;
  const std::int64_t t = item / ffn, j = item % ffn;
  const float g = to_float(gate_up[t][j]), u = to_float(gate_up[t][ffn + j]);
  out[t][j] = from_float<T>(g / (1.0f + expf(-g)) * u);
}

// A candidate for a row's largest value. NaN counts as -inf, which makes `better` a total order:
// the result does not depend on the reduction's order, and equals the host runtime's.
struct Best {
  float value;
  int index;
};
__device__ __forceinline__ Best better(Best a, Best b) {
  return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

// Where argmax_kernel puts a row's best: its column as a token, or its key of a vocabulary shard.
struct TokenOut {
  int* tokens;  // [T]
  __device__ void operator()(std::int64_t row, Best best) const { tokens[row] = best.index; }
};
struct KeyOut {
  ArgmaxKey* keys;  // [T]
  int first_token;  // the shard's column 0
  __device__ void operator()(std::int64_t row, Best best) const {
    keys[row] = best.index == INT_MAX ? kNoArgmax : argmax_key(best.value, first_token + best.index);
  }
};

// One block per row.
template <typename T, typename Out>
__global__ void __launch_bounds__(kThreads) argmax_kernel(Rows<const T> logits, int valid, Out out) {
  // logits: [T, N], the first `valid` columns searched
  __shared__ Best scratch[kThreads / 32];
  const T* row = logits[blockIdx.x];
  Best best{-CUDART_INF_F, INT_MAX};
  for (int j = threadIdx.x; j < valid; j += kThreads) {
    const float v = to_float(row[j]);
    best = better(best, {isnan(v) ? -CUDART_INF_F : v, j});
  }
  for (int x = 16; x > 0; x >>= 1) {
    best = better(best, {__shfl_xor_sync(0xffffffffu, best.value, x), __shfl_xor_sync(0xffffffffu, best.index, x)});
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kThreads / 32; ++w) best = better(best, scratch[w]);
  out(blockIdx.x, best);
}

__global__ void tokens_of_kernel(const ArgmaxKey* keys, int count, int* tokens) {  // keys, tokens: [count]
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t < count) tokens[t] = argmax_token(keys[t]);
}

__global__ void advance_kernel(int* leaf_length, int count, int by) {  // leaf_length: [count]
  const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s < count) leaf_length[s] += by;
}

// cuBLAS takes int dimensions.
int cublas_int(std::int64_t value) {
  if (value > INT_MAX) throw std::invalid_argument("linear: dimension " + std::to_string(value) + " exceeds cuBLAS's int");
  return static_cast<int>(value);
}

struct GraphDeleter {
  void operator()(cudaGraph_t graph) const { (void)cudaGraphDestroy(graph); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t exec) const { (void)cudaGraphExecDestroy(exec); }
};
using OwnedGraph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;
using OwnedGraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

class CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(OwnedGraphExec exec, cudaStream_t stream) : exec_(std::move(exec)), stream_(stream) {}
  void replay() override { CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream_)); }

 private:
  OwnedGraphExec exec_;
  cudaStream_t stream_;  // the runtime's
};

class CudaRuntime final : public Runtime {
 public:
  CudaRuntime()
      : name_("cuda bf16 (" + cuda::query_device().name + ")"), workspace_(cuda::device_memory(), kCublasWorkspaceBytes) {
    CUBLAS_CHECK(cublasSetStream(cublas_.get(), stream_.get()));
    CUBLAS_CHECK(cublasSetWorkspace(cublas_.get(), workspace_.data(), workspace_.bytes()));
  }

  std::string name() const override { return name_; }
  DType dtype() const override { return DType::bf16; }
  const DeviceMemory& memory() const override { return cuda::device_memory(); }
  Stream stream() const override { return {stream_.get()}; }

  // upload and zeros are complete when they return, as DeviceMemory's copies are, so the buffer
  // may be written next by any means (DeviceMemory::copy_from_host runs on another stream).
  Buffer upload(const std::vector<float>& values) const override {
    const std::vector<std::uint16_t> bits = exact_bf16_bits(values);
    Buffer buffer(memory(), bits.size() * sizeof(std::uint16_t));
    if (buffer.bytes() != 0) {
      CUDA_CHECK(cudaMemcpyAsync(buffer.data(), bits.data(), buffer.bytes(), cudaMemcpyHostToDevice, stream_.get()));
    }
    synchronize();  // bits must outlive the copy
    return buffer;
  }
  Buffer zeros(std::int64_t count) const override {
    Buffer buffer(memory(), element_bytes("zeros", count, dtype()));
    if (buffer.bytes() != 0) CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, buffer.bytes(), stream_.get()));
    synchronize();
    return buffer;
  }
  std::vector<float> download(const Matrix& m) const override {
    check_download(dtype(), m);
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(m.rows * m.cols));
    if (!bits.empty()) {
      const std::size_t row_bytes = static_cast<std::size_t>(m.cols) * sizeof(std::uint16_t);
      CUDA_CHECK(cudaMemcpy2DAsync(bits.data(), row_bytes, m.data, static_cast<std::size_t>(m.ld) * sizeof(std::uint16_t),
                                   row_bytes, static_cast<std::size_t>(m.rows), cudaMemcpyDeviceToHost, stream_.get()));
    }
    synchronize();
    std::vector<float> values(bits.size());
    std::transform(bits.begin(), bits.end(), values.begin(), bf16_bits_to_float);
    return values;
  }

  void embed(const int* tokens, const Matrix& table, const Matrix& x) override {
    check_embed(dtype(), tokens, table, x);
    if (x.rows == 0 || x.cols == 0) return;
    embed_kernel<<<static_cast<unsigned>(x.rows), kThreads, 0, stream_.get()>>>(
        tokens, rows_of<const Element>(table), table.rows, x.cols, rows_of<Element>(x));
    cuda::check_launch("embed_kernel");
  }

  void rms_norm(const Matrix& x, const void* w, float eps, const Matrix& out) override {
    check_rms_norm(dtype(), x, w, out);
    if (x.rows == 0 || x.cols == 0) return;
    rms_norm_kernel<<<static_cast<unsigned>(x.rows), kThreads, 0, stream_.get()>>>(
        rows_of<const Element>(x), static_cast<const Element*>(w), eps, x.cols, rows_of<Element>(out));
    cuda::check_launch("rms_norm_kernel");
  }

  // Row-major c = a w^T is column-major c^T = w a^T, where row-major w [N, K] reads as a
  // column-major K x N matrix (hence its transpose) and a [T, K] as K x T. Accumulating, cuBLAS may
  // round a w^T to bf16 before adding c, as a bf16 model's residual add does: on an H100 (CUDA 13)
  // its kernel for K = 512 did at every element, its split-K kernels (K = 4096) rounded once.
  void linear(const Matrix& a, const Matrix& w, const Matrix& c, bool accumulate) override {
    check_linear(dtype(), a, w, c);
    if (c.rows == 0 || c.cols == 0) return;
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    CUBLAS_CHECK(cublasGemmEx(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, cublas_int(w.rows), cublas_int(a.rows),
                              cublas_int(a.cols), &alpha, w.data, CUDA_R_16BF, cublas_int(w.ld), a.data, CUDA_R_16BF,
                              cublas_int(a.ld), &beta, c.data, CUDA_R_16BF, cublas_int(c.ld), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  }

  void rope_append(const Matrix& qkv, int q_heads, int kv_heads, const Rotary& rotary, const CacheWrite& cache,
                   const Matrix& q) override {
    check_rope_append(dtype(), qkv, q_heads, kv_heads, rotary, cache, q);
    auto aligned = [](const Matrix& m) { return reinterpret_cast<std::uintptr_t>(m.data) % 16 == 0 && m.ld % kRopeChunk == 0; };
    if (rotary.head_dim % (2 * kRopeChunk) != 0 || !aligned(qkv) || !aligned(q)) {
      throw std::invalid_argument("rope_append: the CUDA runtime moves 16-byte chunks: head_dim " + std::to_string(rotary.head_dim) +
                                  " must be a multiple of 16, and qkv's and q's rows 16-byte aligned");
    }
    if (qkv.rows == 0) return;
    const RopeParams<Element> p{rows_of<const Element>(qkv),
                                rows_of<Element>(q),
                                reinterpret_cast<Element* const*>(cache.k_leaf),
                                reinterpret_cast<Element* const*>(cache.v_leaf),
                                cache.leaf_length,
                                qkv.rows,
                                q_heads,
                                kv_heads,
                                rotary.head_dim,
                                cache.q_len,
                                cache.position_offset,
                                cache.seq_offset,
                                rotary.table,
                                rotary.positions};
    const std::int64_t units = (q_heads + kv_heads) * (rotary.head_dim / 2 / kRopeChunk) + kv_heads * rotary.head_dim / kRopeChunk;
    rope_append_kernel<<<blocks_for(qkv.rows * units), kThreads, 0, stream_.get()>>>(p);
    cuda::check_launch("rope_append_kernel");
  }

  void swiglu(const Matrix& gate_up, const Matrix& out) override {
    check_swiglu(dtype(), gate_up, out);
    if (out.rows == 0 || out.cols == 0) return;
    swiglu_kernel<<<blocks_for(out.rows * out.cols), kThreads, 0, stream_.get()>>>(
        rows_of<const Element>(gate_up), out.rows, out.cols, rows_of<Element>(out));
    cuda::check_launch("swiglu_kernel");
  }

  void argmax(const Matrix& logits, std::int64_t valid, int* tokens) override {
    check_argmax(dtype(), logits, valid, tokens);
    launch_argmax(logits, valid, TokenOut{tokens});
  }

  void argmax_keys(const Matrix& logits, std::int64_t valid, std::int64_t first_token, ArgmaxKey* keys) override {
    check_argmax(dtype(), logits, valid, keys, "keys", first_token);
    launch_argmax(logits, valid, KeyOut{keys, static_cast<int>(first_token)});
  }

  void tokens_of(const ArgmaxKey* keys, int count, int* tokens) override {
    check_tokens_of(keys, count, tokens);
    if (count == 0) return;
    tokens_of_kernel<<<blocks_for(count), kThreads, 0, stream_.get()>>>(keys, count, tokens);
    cuda::check_launch("tokens_of_kernel");
  }

  void advance(int* leaf_length, int count, int by) override {
    check_advance(leaf_length, count);
    if (count == 0) return;
    advance_kernel<<<blocks_for(count), kThreads, 0, stream_.get()>>>(leaf_length, count, by);
    cuda::check_launch("advance_kernel");
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes != 0) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
  }

  std::unique_ptr<StepGraph> capture(const std::function<void()>& step) override {
    CUDA_CHECK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal));
    try {
      step();
    } catch (...) {
      abandon_capture();
      throw;
    }
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream_.get(), &graph));
    const OwnedGraph owned(graph);  // the instantiated graph no longer needs it
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    return std::make_unique<CudaStepGraph>(OwnedGraphExec(exec), stream_.get());
  }

  void synchronize() const override { CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

 private:
  template <typename Out>
  void launch_argmax(const Matrix& logits, std::int64_t valid, Out out) {
    if (logits.rows == 0) return;
    argmax_kernel<<<static_cast<unsigned>(logits.rows), kThreads, 0, stream_.get()>>>(
        rows_of<const Element>(logits), static_cast<int>(valid), out);
    cuda::check_launch("argmax_kernel");
  }

  // Ends the capture a throwing step left open, so the stream takes work again; drops what it
  // recorded, and the failure of a capture the error invalidated (the step's exception says why).
  void abandon_capture() noexcept {
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream_.get(), &graph);
    const OwnedGraph owned(graph);
    (void)cudaGetLastError();
  }

  std::string name_;
  cuda::OwnedStream stream_;
  Buffer workspace_;         // [kCublasWorkspaceBytes] for cublas_, which is destroyed first
  cuda::OwnedCublas cublas_;
};

}  // namespace

std::unique_ptr<Runtime> cuda_runtime() { return std::make_unique<CudaRuntime>(); }

}  // namespace hydragen::decode
