#include "hydragen/memory_need.hpp"

#include <algorithm>
#include <cstdio>

namespace hydragen {

namespace {

std::size_t query_elements(const AttentionShape& shape) {
  return static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads * shape.head_dim;
}
std::size_t lse_elements(const AttentionShape& shape) {
  return static_cast<std::size_t>(shape.num_seqs) * shape.q_len * shape.q_heads;
}
std::size_t kv_elements(const AttentionShape& shape, long long tokens) {
  return static_cast<std::size_t>(tokens) * shape.kv_heads * shape.head_dim;
}

}  // namespace

std::size_t problem_bytes(const AttentionShape& shape, const SharingTree& tree) {
  return (query_elements(shape) + 2 * kv_elements(shape, tree.total_tokens())) * sizeof(double);
}

std::size_t results_bytes(const AttentionShape& shape) {
  return (query_elements(shape) + lse_elements(shape)) * sizeof(double);
}

StagingBytes staging_bytes(const AttentionShape& shape, const SharingTree& tree, Storage storage) {
  const std::size_t elem = dtype_size(shape.dtype);
  const std::size_t q = query_elements(shape) * elem;
  const std::size_t shared_kv = kv_elements(shape, tree.total_tokens()) * elem;
  const std::size_t outputs = query_elements(shape) * elem + lse_elements(shape) * dtype_size(lse_dtype(shape.dtype));
  StagingBytes b;
  // Each kind is encoded whole on the host (every segment at once), then copied.
  b.host = std::max(q, shared_kv);
  if (storage == Storage::shared) {
    b.resident = q + 2 * shared_kv + outputs;
    b.peak = b.resident;
  } else {
    long long path_tokens = 0;
    for (int s = 0; s < tree.num_seqs(); ++s) path_tokens += tree.path_length(s);
    const std::size_t redundant_kv = kv_elements(shape, path_tokens) * elem;
    b.resident = q + 2 * redundant_kv + outputs;
    b.peak = q + 2 * shared_kv + 2 * redundant_kv;  // the paths are copied from the staged segments
    b.peak = std::max(b.peak, b.resident);
  }
  return b;
}

MemoryNeed backend_need(const AttentionBackend& backend, const AttentionShape& shape, const SharingTree& tree,
                        Storage storage, const PlanOptions& options) {
  const StagingBytes staged = staging_bytes(shape, tree, storage);
  const std::size_t workspace =
      backend.workspace_bytes(shape, storage == Storage::shared ? tree : tree.flattened(), options);
  if (&backend.memory() == &host_memory()) return {staged.host + staged.peak + workspace, 0};
  return {staged.host, staged.peak + workspace};
}

std::string format_bytes(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) * 1e-9);
  return text;
}

std::string memory_refusal(const DeviceMemory& memory, std::size_t need, const std::string& parts) {
  const std::size_t have = memory.available_bytes();
  if (need <= have) return {};
  return "needs " + format_bytes(need) + " of " + std::string(memory.name()) + " memory (" + parts + "), " +
         format_bytes(have) + " available";
}

std::string memory_refusal(const MemoryNeed& need, const DeviceMemory& device, const std::string& host_parts,
                           const std::string& device_parts) {
  std::string why = memory_refusal(host_memory(), need.host, host_parts);
  if (why.empty() && need.device > 0) why = memory_refusal(device, need.device, device_parts);
  return why;
}

}  // namespace hydragen
