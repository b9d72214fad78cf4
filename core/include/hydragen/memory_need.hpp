#pragma once
// What a problem needs in memory, counted from its shape and tree alone, before anything is drawn
// or allocated: a problem that cannot fit is refused in under a second instead of being drawn for
// minutes and failing on its last allocation (issue 17). The counts follow the allocations of
// make_problem, StagedProblem and the plans; tests/test_memory_need.cpp and the GPU memory test
// hold them to what is actually allocated.
#include <cstddef>
#include <string>

#include "hydragen/attention.hpp"
#include "hydragen/memory.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {

// Peak bytes in host memory and in the CUDA device's memory.
struct MemoryNeed {
  std::size_t host = 0;
  std::size_t device = 0;
};

// make_problem's fp64 tensors: Q and every segment's K and V.
std::size_t problem_bytes(const AttentionShape& shape, const SharingTree& tree);

// Results in fp64 (O and LSE): what StagedProblem::fetch returns, and what the harness keeps of
// the reference.
std::size_t results_bytes(const AttentionShape& shape);

// A StagedProblem of `tree` (the shared one; redundant storage copies each sequence's path).
struct StagingBytes {
  std::size_t peak = 0;      // in its memory: redundant holds the shared K, V while copying paths
  std::size_t resident = 0;  // in its memory once built: Q, K, V in the storage's layout, O, LSE
  std::size_t host = 0;      // on the host while staging: the encoded tensor being copied (Q, all K, all V)
};
StagingBytes staging_bytes(const AttentionShape& shape, const SharingTree& tree, Storage storage);

// What running `backend` on a problem needs beyond the caller's own copies of it: its staging in
// `storage` (in the backend's memory, plus the tensor encoded on the host meanwhile) and its plan's
// workspace (AttentionBackend::workspace_bytes, on the tree the storage plans).
MemoryNeed backend_need(const AttentionBackend& backend, const AttentionShape& shape, const SharingTree& tree,
                        Storage storage, const PlanOptions& options);

// "1.50 GB" (decimal units, as nvidia-smi and free -h -si).
std::string format_bytes(std::size_t bytes);

// memory_refusal of need.host in host memory, then of need.device in `device` (when not zero).
std::string memory_refusal(const MemoryNeed& need, const DeviceMemory& device, const std::string& host_parts,
                           const std::string& device_parts);

// Empty when `need` bytes fit what `memory` has available now, else one line naming both numbers:
// "needs 137.44 GB of cuda memory (inputs 137.44 GB, plan 0.01 GB), 84.52 GB available".
// `parts` says what the need is made of.
std::string memory_refusal(const DeviceMemory& memory, std::size_t need, const std::string& parts);

}  // namespace hydragen
