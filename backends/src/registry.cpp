#include "hydragen/backends.hpp"

#include "hydragen/cpu/cpu_backends.hpp"
#include "hydragen/reference/reference.hpp"
#ifdef HYDRAGEN_WITH_CUDA
#include "hydragen/cuda/cuda_backends.hpp"
#endif

namespace hydragen {

const BackendRegistry& default_registry() {
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    register_reference_backends(r);
    register_cpu_backends(r);
#ifdef HYDRAGEN_WITH_CUDA
    register_cuda_backends(r);
#endif
    return r;
  }();
  return registry;
}

const AttentionBackend& backend(std::string_view name) { return default_registry().get(name); }

std::vector<std::string> list_backends() { return default_registry().names(); }

bool built_with_cuda() {
#ifdef HYDRAGEN_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace hydragen
