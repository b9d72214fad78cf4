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

// The memory called `name` ("host", "cuda") that this build's backends use. Throws
// std::invalid_argument naming it and the memories there are (a build without CUDA has no "cuda").
const DeviceMemory& memory_named(std::string_view name);

// The backend a caller who names none gets for tensors in the memory called `memory`: the first of
// cuda-hydragen, cpu-hydragen and reference (fp64, which only it takes) that uses that memory, can
// run here and supports the problem. Throws std::invalid_argument from validate_problem, or
// Unsupported naming each candidate's reason.
const AttentionBackend& default_backend(std::string_view memory, const AttentionShape& shape, const SharingTree& tree);

}  // namespace hydragen
