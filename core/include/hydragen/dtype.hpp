#pragma once
// Element types and their exact host-side conversions.
//
// fp16 and bf16 travel as raw 16-bit patterns (uint16_t) so that core needs no CUDA or compiler
// extension; the patterns are bit-compatible with __half / __nv_bfloat16 and with NumPy's float16 /
// ml_dtypes' bfloat16. Conversions round to nearest, ties to even, like the hardware does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hydragen {

enum class DType { fp64, fp32, fp16, bf16 };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses "fp64" | "fp32" | "fp16" | "bf16"; throws std::invalid_argument naming the text otherwise.
DType parse_dtype(std::string_view text);

// The rule that q, k and v share one dtype; throws std::invalid_argument naming both tensors and
// the rule ("q, k and v must share one dtype: q is fp64, k[0] is fp32") when `name`'s differs.
void require_same_dtype(std::string_view q_name, DType q_dtype, std::string_view name, DType dtype);

// Unit roundoff: half the distance from 1 to the next representable number.
double unit_roundoff(DType dtype);

// The dtype of the LSE output for inputs of `dtype`: fp64 for the fp64 reference, fp32 otherwise.
DType lse_dtype(DType dtype);

std::uint16_t float_to_half_bits(float value);
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(std::uint16_t bits);

// The value `value` becomes when stored as `dtype` (exact for fp64; fp32 rounding first for 16-bit).
double round_through(double value, DType dtype);

// Writes `value` as one element of `dtype` (rounding to nearest even) at dst.
void encode_one(double value, DType dtype, std::byte* dst);

// Packs fp64 values into the byte representation of `dtype`, and back.
std::vector<std::byte> encode(const std::vector<double>& values, DType dtype);
std::vector<double> decode_values(const void* bytes, std::size_t count, DType dtype);

}  // namespace hydragen
