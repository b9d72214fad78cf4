#include "hydragen/cuda/cuda_backends.hpp"

namespace hydragen {

void register_cuda_backends(BackendRegistry&) {}

}  // namespace hydragen
