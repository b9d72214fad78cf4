#pragma once
// Storage dtype <-> fp32 for the CPU backends: one dispatch switch, a template per storage type.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "hydragen/dtype.hpp"

namespace hydragen::cpu {

struct Fp16 {};  // tags for the two 16-bit formats, both stored as uint16_t
struct Bf16 {};

template <typename Tag>
inline void widen_row(const void* src, float* dst, int n) {
  if constexpr (std::is_same_v<Tag, float>) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else if constexpr (std::is_same_v<Tag, Bf16>) {
    const auto* s = static_cast<const std::uint16_t*>(src);
    for (int i = 0; i < n; ++i) {
      const std::uint32_t bits = static_cast<std::uint32_t>(s[i]) << 16;
      std::memcpy(dst + i, &bits, 4);
    }
  } else {
    const auto* s = static_cast<const std::uint16_t*>(src);
    int i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    }
#endif
    for (; i < n; ++i) dst[i] = half_bits_to_float(s[i]);
  }
}

template <typename Tag>
inline void narrow_row(const float* src, void* dst, int n) {
  if constexpr (std::is_same_v<Tag, float>) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else {
    auto* d = static_cast<std::uint16_t*>(dst);
    for (int i = 0; i < n; ++i) d[i] = std::is_same_v<Tag, Bf16> ? float_to_bf16_bits(src[i]) : float_to_half_bits(src[i]);
  }
}

// Calls f(Tag{}) with the tag of a storage dtype the CPU backends handle; throws for the others.
template <typename F>
decltype(auto) dispatch_storage(DType dtype, F&& f) {
  switch (dtype) {
    case DType::fp32: return f(float{});
    case DType::fp16: return f(Fp16{});
    case DType::bf16: return f(Bf16{});
    default: break;
  }
  throw std::invalid_argument("cpu backends: dtype " + std::string(dtype_name(dtype)) + " is not fp32, fp16 or bf16");
}

}  // namespace hydragen::cpu
