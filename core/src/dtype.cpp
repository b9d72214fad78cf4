#include "hydragen/dtype.hpp"

#include "parallel.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace hydragen {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::fp64: return 8;
    case DType::fp32: return 4;
    case DType::fp16:
    case DType::bf16: return 2;
  }
  throw std::invalid_argument("dtype_size: unknown dtype");
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "unknown";
}

DType parse_dtype(std::string_view text) {
  for (DType d : {DType::fp64, DType::fp32, DType::fp16, DType::bf16}) {
    if (text == dtype_name(d)) return d;
  }
  throw std::invalid_argument("dtype: '" + std::string(text) + "' is not one of fp64, fp32, fp16, bf16");
}

void require_same_dtype(std::string_view q_name, DType q_dtype, std::string_view name, DType dtype) {
  if (dtype == q_dtype) return;
  throw std::invalid_argument("q, k and v must share one dtype: " + std::string(q_name) + " is " +
                              std::string(dtype_name(q_dtype)) + ", " + std::string(name) + " is " +
                              std::string(dtype_name(dtype)));
}

double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::fp64: return std::ldexp(1.0, -53);
    case DType::fp32: return std::ldexp(1.0, -24);
    case DType::fp16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
  }
  throw std::invalid_argument("unit_roundoff: unknown dtype");
}

DType lse_dtype(DType dtype) { return dtype == DType::fp64 ? DType::fp64 : DType::fp32; }

namespace {
std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

std::uint16_t float_to_half_bits(float value) {
  const std::uint32_t x = float_bits(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // result is subnormal or zero: scale into units of 2^-24 and round
    const float scaled = bits_float(abs) * 16777216.0f;  // exact: multiplies by 2^24
    const float r = std::nearbyint(scaled);              // current mode: ties to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r));
  }
  // Normal: rebias exponent (127 -> 15), keep 10 mantissa bits, round to nearest even.
  const std::uint32_t mant_rounding = 0xfffu + ((abs >> 13) & 1u);
  const std::uint32_t rounded = abs + mant_rounding;
  return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float half_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  const std::uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float value) {
  const std::uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

float bf16_bits_to_float(std::uint16_t bits) { return bits_float(static_cast<std::uint32_t>(bits) << 16); }

double round_through(double value, DType dtype) {
  switch (dtype) {
    case DType::fp64: return value;
    case DType::fp32: return static_cast<float>(value);
    // fp64 -> fp32 -> 16-bit can double-round; inputs come from fp32 draws, so the first step is exact.
    case DType::fp16: return half_bits_to_float(float_to_half_bits(static_cast<float>(value)));
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(value)));
  }
  throw std::invalid_argument("round_through: unknown dtype");
}

void encode_one(double value, DType dtype, std::byte* dst) {
  const float f = static_cast<float>(value);
  switch (dtype) {
    case DType::fp64: std::memcpy(dst, &value, 8); break;
    case DType::fp32: std::memcpy(dst, &f, 4); break;
    case DType::fp16: {
      const std::uint16_t h = float_to_half_bits(f);
      std::memcpy(dst, &h, 2);
      break;
    }
    case DType::bf16: {
      const std::uint16_t b = float_to_bf16_bits(f);
      std::memcpy(dst, &b, 2);
      break;
    }
  }
}

std::vector<std::byte> encode(const std::vector<double>& values, DType dtype) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::byte> out(values.size() * size);
  detail::parallel_chunks(values.size(), [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) encode_one(values[i], dtype, out.data() + i * size);
  });
  return out;
}

std::vector<double> decode_values(const void* bytes, std::size_t count, DType dtype) {
  std::vector<double> out(count);
  const auto* src = static_cast<const std::byte*>(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    const std::byte* p = src + i * dtype_size(dtype);
    switch (dtype) {
      case DType::fp64: std::memcpy(&out[i], p, 8); break;
      case DType::fp32: {
        float f;
        std::memcpy(&f, p, 4);
        out[i] = f;
        break;
      }
      case DType::fp16: {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        out[i] = half_bits_to_float(h);
        break;
      }
      case DType::bf16: {
        std::uint16_t b;
        std::memcpy(&b, p, 2);
        out[i] = bf16_bits_to_float(b);
        break;
      }
    }
  }
  return out;
}

}  // namespace hydragen
