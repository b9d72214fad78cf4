#pragma once
// The arithmetic of a decoder step on one kind of device. The decoder (decoder.hpp) writes the
// Llama layer once in these operations; HostRuntime (Eigen, fp32, host memory) and CudaRuntime
// (cuBLAS and small kernels, bf16, one stream) implement them. Every operation is enqueued on the
// runtime's stream in order (the host runtime computes at once), reads and writes only the runtime's
// memory, and allocates nothing, so that a CUDA runtime's step can be captured in a CUDA graph.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "decode/argmax_key.hpp"
#include "hydragen/attention.hpp"
#include "hydragen/memory.hpp"

namespace hydragen::decode {

// A row-major matrix in the runtime's memory: rows x cols elements of dtype, rows `ld` elements
// apart (ld >= cols).
struct Matrix {
  void* data = nullptr;
  DType dtype = DType::fp32;
  std::int64_t rows = 0, cols = 0, ld = 0;

  // Rows first_row, first_row + row_step, ... (n_rows of them), columns [first_col, first_col + n_cols).
  Matrix view(std::int64_t first_row, std::int64_t n_rows, std::int64_t row_step, std::int64_t first_col,
              std::int64_t n_cols) const {
    auto* base = static_cast<char*>(data) + (first_row * ld + first_col) * static_cast<std::int64_t>(dtype_size(dtype));
    return {base, dtype, n_rows, n_cols, ld * row_step};
  }
  Matrix columns(std::int64_t first_col, std::int64_t n_cols) const { return view(0, rows, 1, first_col, n_cols); }
};

// Where a step's tokens enter the KV cache, and their rotary positions. Token t of the step belongs
// to sequence s = t / q_len and is the (leaf_length[s] - q_len + t % q_len)-th token of s's leaf
// (leaf_length counts this step's tokens already); its position is that index + position_offset
// (+ seq_offset[s] when given: the tokens of s's group between the prompt and its leaf).
struct CacheWrite {
  void* const* k_leaf = nullptr;     // [B] in runtime memory -> [capacity, Hkv, D]: each sequence's leaf K
  void* const* v_leaf = nullptr;     // [B] -> [capacity, Hkv, D]: its V
  const int* leaf_length = nullptr;  // [B] in runtime memory
  int q_len = 1;                     // tokens per sequence in this step (the step has B * q_len)
  int position_offset = 0;           // position of a leaf's first token: P where it follows a prefix of P
  const int* seq_offset = nullptr;   // [B] in runtime memory, added per sequence; or null
};

// The rotary embedding's turns for positions [0, positions) (rotary_table(), rotary.hpp): element i
// of a head and element i + D/2 turned by position * theta^(-2i/D).
struct Rotary {
  const float* table = nullptr;  // [positions][2][D / 2] fp32 in runtime memory: each position's cosines, then sines
  int positions = 0, head_dim = 0;
};

// A recorded step that can be run again (a CUDA graph; on the host, the step itself).
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual void replay() = 0;  // enqueues the step on the runtime's stream
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;              // "host fp32", "cuda bf16 (NVIDIA H100 80GB HBM3)"
  virtual DType dtype() const = 0;                   // of weights, activations and the KV cache
  virtual const DeviceMemory& memory() const = 0;    // where every buffer lives; the attention backend's too
  virtual Stream stream() const = 0;                 // attention plans run on it

  // A buffer of `values` (host floats exactly representable in dtype()), or of `count` zeros.
  virtual Buffer upload(const std::vector<float>& values) const = 0;
  virtual Buffer zeros(std::int64_t count) const = 0;
  // The matrix's values as host floats (waits for the stream).
  virtual std::vector<float> download(const Matrix& m) const = 0;

  // x[t] = table[tokens[t]]: tokens [T] int, table [V, H], x [T, H].
  virtual void embed(const int* tokens, const Matrix& table, const Matrix& x) = 0;
  // out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, in fp32: x and out [T, H], w [H] (dtype()).
  virtual void rms_norm(const Matrix& x, const void* w, float eps, const Matrix& out) = 0;
  // c = a w^T, or c += a w^T when accumulate (the residual add), fp32 accumulation: a [T, K], w [N, K], c [T, N].
  virtual void linear(const Matrix& a, const Matrix& w, const Matrix& c, bool accumulate) = 0;
  // The rotary embedding (Hugging Face's rotate-half pairing: element i with i + D/2, by the table's
  // turn for the token's position; D = rotary.head_dim) of the Q and K parts of qkv [T, (Hq + 2 Hkv) D]
  // (Q heads, then K, then V): q [T, Hq D] gets the rotated queries, the cache the rotated keys and
  // the values. A position past the table: the host runtime throws; the CUDA one writes NaN for that
  // token's Q and K (it cannot read the positions without waiting). The CUDA runtime moves 16-byte
  // chunks: D a multiple of 16, qkv's, q's and the leaves' rows 16-byte aligned (else it throws, or
  // for the leaves, which it cannot read, the caller's duty).
  virtual void rope_append(const Matrix& qkv, int q_heads, int kv_heads, const Rotary& rotary, const CacheWrite& cache,
                           const Matrix& q) = 0;
  // out = silu(gate) * up, in fp32: gate_up [T, 2F] (gate columns, then up), out [T, F].
  virtual void swiglu(const Matrix& gate_up, const Matrix& out) = 0;
  // tokens[t] = the column of row t's largest value among its first `valid` (the lowest on ties):
  // logits [T, N], tokens [T] int.
  virtual void argmax(const Matrix& logits, std::int64_t valid, int* tokens) = 0;
  // The same of a vocabulary shard whose column 0 is token first_token, as keys for a max across
  // ranks (argmax_key.hpp): keys [T] ArgmaxKey. tokens_of(keys, count, tokens): the keys' tokens.
  virtual void argmax_keys(const Matrix& logits, std::int64_t valid, std::int64_t first_token, ArgmaxKey* keys) = 0;
  virtual void tokens_of(const ArgmaxKey* keys, int count, int* tokens) = 0;
  // leaf_length[s] += by for s < count: a step's first operation, its tokens entering the cache.
  virtual void advance(int* leaf_length, int count, int by) = 0;
  // Copies bytes within the runtime's memory, in stream order.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;

  // Records what `step` enqueues (a CUDA runtime captures its stream into a graph; `step` must only
  // enqueue this runtime's operations and attention runs on its stream).
  virtual std::unique_ptr<StepGraph> capture(const std::function<void()>& step) = 0;
  virtual void synchronize() const = 0;  // waits for everything enqueued
};

}  // namespace hydragen::decode
