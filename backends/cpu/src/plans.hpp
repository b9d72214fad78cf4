#pragma once
// The two CPU plans. Both fold tiles with attend_tokens; they differ in what they batch.
#include <cstddef>
#include <memory>

#include "hydragen/attention.hpp"

namespace hydragen::cpu {

// cpu-flat: one task per (sequence, KV head) walks the sequence's whole path, so a shared segment
// is read again by every sequence below it.
std::unique_ptr<AttentionPlan> make_flat_plan(const AttentionShape& shape, const SharingTree& tree);

// cpu-hydragen: one task per (segment, KV head, chunk) attends the stacked queries of every
// sequence below the segment (one GEMM per tile), then each sequence merges its partials.
std::unique_ptr<AttentionPlan> make_hydragen_plan(const AttentionShape& shape, const SharingTree& tree);

// The host bytes each plan allocates (AttentionBackend::workspace_bytes).
std::size_t flat_workspace_bytes(const AttentionShape& shape, const SharingTree& tree);
std::size_t hydragen_workspace_bytes(const AttentionShape& shape, const SharingTree& tree);

}  // namespace hydragen::cpu
