#pragma once
// A vocabulary shard's argmax as one orderable word, so that a tensor-parallel decoder finds the
// whole vocabulary's argmax with a max-reduction across ranks (an NCCL all-reduce of uint64 with
// ncclMax): the larger key is the larger logit, and of equal logits the lower token. NaN counts as
// -inf and -0 as +0, so the order is the host runtime's argmax's. Host and device code.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define HYDRAGEN_HOST_DEVICE __host__ __device__
#else
#define HYDRAGEN_HOST_DEVICE
#endif

namespace hydragen::decode {

using ArgmaxKey = std::uint64_t;

// No candidate at all: below every key of a real logit.
inline constexpr ArgmaxKey kNoArgmax = 0;

// The key of `value` at vocabulary index `token` (0 <= token < 2^31).
HYDRAGEN_HOST_DEVICE inline ArgmaxKey argmax_key(float value, int token) {
  std::uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(value);
#else
  std::memcpy(&bits, &value, sizeof bits);
#endif
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits = 0xFF800000u;  // NaN: -inf
  if (bits == 0x80000000u) bits = 0;                          // -0: +0
  // IEEE floats order as sign-magnitude integers: flip negatives whole, set positives' sign bit.
  bits = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (static_cast<ArgmaxKey>(bits) << 32) | (0xFFFFFFFFu - static_cast<std::uint32_t>(token));
}

HYDRAGEN_HOST_DEVICE inline int argmax_token(ArgmaxKey key) {
  return static_cast<int>(0xFFFFFFFFu - static_cast<std::uint32_t>(key));
}

}  // namespace hydragen::decode

#undef HYDRAGEN_HOST_DEVICE
