#pragma once
// Every backend this build has, by name (DESIGN.md section 4): reference, reference-decomposed,
// cpu-flat, cpu-hydragen, and the cuda-* backends when CUDA was built.
#include <string>
#include <string_view>
#include <vector>

#include "hydragen/registry.hpp"

namespace hydragen {

const BackendRegistry& default_registry();
// Throws std::invalid_argument naming the unknown backend and listing the known ones.
const AttentionBackend& backend(std::string_view name);
std::vector<std::string> list_backends();
// True when this build has the CUDA backends (whether or not a GPU is present).
bool built_with_cuda();

}  // namespace hydragen
