#pragma once
// CUDA backends (DESIGN.md section 4): cuda-naive, cuda-flash, cuda-hydragen. None is built yet;
// backends/src/registry.cpp already calls this when HYDRAGEN_WITH_CUDA, so it registers nothing.
#include "hydragen/registry.hpp"

namespace hydragen {

void register_cuda_backends(BackendRegistry& registry);

}  // namespace hydragen
