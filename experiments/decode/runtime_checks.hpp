#pragma once
// The argument checks every Runtime makes before an operation: operands of the runtime's dtype,
// shapes that agree between them, ld >= cols, no null pointer where there is data. One definition,
// so that the host and CUDA runtimes refuse the same calls with the same message: each throws
// std::invalid_argument "<operation>: <operand> ..." (e.g. "linear: w is 64x32, expected ...").
// Values in memory (tokens, leaf lengths) are not checked here: a device runtime cannot read them
// without waiting.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "decode/runtime.hpp"

namespace hydragen::decode {

// The bytes of `count` elements of dtype (zeros, upload).
std::size_t element_bytes(const char* op, std::int64_t count, DType dtype);

// What a bf16 runtime's upload() sends: each value's bf16 bits, every value exactly a bf16 (NaN
// aside), else std::invalid_argument naming the first that is not. On all host threads: a 13b
// layer's 317 M values took 1.2 s on one thread, 0.8 s on two (the development machine, 2026-11-25),
// so a whole model's upload on one took tens of seconds per decode point.
std::vector<std::uint16_t> exact_bf16_bits(const std::vector<float>& values);

void check_download(DType dtype, const Matrix& m);
void check_embed(DType dtype, const int* tokens, const Matrix& table, const Matrix& x);
void check_rms_norm(DType dtype, const Matrix& x, const void* w, const Matrix& out);
void check_linear(DType dtype, const Matrix& a, const Matrix& w, const Matrix& c);
void check_rope_append(DType dtype, const Matrix& qkv, int q_heads, int kv_heads, const Rotary& rotary,
                       const CacheWrite& cache, const Matrix& q);
void check_swiglu(DType dtype, const Matrix& gate_up, const Matrix& out);
// out: the tokens or keys written (out_name says which); first_token: the shard's column 0's token.
void check_argmax(DType dtype, const Matrix& logits, std::int64_t valid, const void* out, const char* out_name = "tokens",
                  std::int64_t first_token = 0);
void check_tokens_of(const ArgmaxKey* keys, int count, const int* tokens);
void check_advance(const int* leaf_length, int count);

}  // namespace hydragen::decode
