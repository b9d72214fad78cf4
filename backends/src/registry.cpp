#include "hydragen/backends.hpp"

#include <string>

#include "hydragen/cpu/cpu_backends.hpp"
#include "hydragen/errors.hpp"
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

const DeviceMemory& memory_named(std::string_view name) {
  std::string names;
  for (const AttentionBackend* b : default_registry().all()) {
    if (b->memory().name() == name) return b->memory();
    if (names.find(b->memory().name()) == std::string::npos) names += (names.empty() ? "" : ", ") + std::string(b->memory().name());
  }
  throw std::invalid_argument("no backend of this build uses memory '" + std::string(name) + "' (there are: " + names + ")");
}

const AttentionBackend& default_backend(std::string_view memory, const AttentionShape& shape, const SharingTree& tree) {
  validate_problem(shape, tree);
  std::string reasons;
  for (const char* name : {"cuda-hydragen", "cpu-hydragen", "reference"}) {
    if (!default_registry().contains(name)) continue;
    const AttentionBackend& b = backend(name);
    if (b.memory().name() != memory) continue;
    std::string why = b.memory().unavailable_reason();
    if (why.empty()) {
      const Support support = b.supports(shape, tree);
      if (support.ok) return b;
      why = support.reason;
    }
    reasons += (reasons.empty() ? "" : "; ") + std::string(name) + ": " + why;
  }
  throw Unsupported("no backend for " + shape.describe() + " in " + std::string(memory) + " memory" +
                    (reasons.empty() ? " (this build has none there)" : ": " + reasons));
}

}  // namespace hydragen
