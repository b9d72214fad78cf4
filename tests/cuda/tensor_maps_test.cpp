// The TMA descriptors of the wgmma kernel refuse, by name, what TMA cannot describe; both checks
// come before the driver is asked, so they run without a GPU. The descriptors themselves are
// exercised on the GPU by every cuda-hydragen case of the backend harness.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tensor_maps.hpp"

namespace hydragen::cuda {
namespace {

std::string message_of(DType dtype, const void* data) {
  try {
    kv_tensor_map(data, dtype, 256, 1, 128);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TensorMaps, RefuseDtypesWithoutWgmmaKernels) {
  alignas(16) static const float data[16] = {};
  EXPECT_NE(message_of(DType::fp32, data).find("dtype fp32 (fp16 or bf16 only)"), std::string::npos);
}

TEST(TensorMaps, RefuseDataThatIsNot16ByteAligned) {
  alignas(16) static const unsigned char data[64] = {};
  EXPECT_NE(message_of(DType::bf16, data + 2).find("16-byte aligned"), std::string::npos);
}

}  // namespace
}  // namespace hydragen::cuda
