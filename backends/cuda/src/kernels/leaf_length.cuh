#pragma once
// AttentionInputs::leaf_lengths on the device: a plan made for leaf capacities runs with each
// sequence's leaf holding fewer tokens (a decode loop's KV cache growing), the rows that end in a
// leaf seeing only its first tokens.
#include "params.hpp"

namespace hydragen::cuda {

// The tokens sequence `seq`'s leaf holds in this run, clamped to [0, capacity]: a plan cannot check
// values in device memory without waiting for them.
__device__ __forceinline__ int leaf_tokens(const int* leaf_lengths, int seq, int capacity) {
  return leaf_lengths == nullptr ? capacity : min(max(leaf_lengths[seq], 0), capacity);
}

// Positions of its item's token list that partial row `row` may see: the schedule's limit, less
// what the row's leaf lacks of its capacity in this run (the leaf ends the list).
__device__ __forceinline__ int visible_limit(const SegmentAttentionParams& p, int row) {
  const int limit = p.row_limit[row];
  const int seq = p.leaf_lengths == nullptr ? -1 : p.row_leaf[row];
  if (seq < 0) return limit;
  const int capacity = p.leaf_capacity[seq];
  return max(0, limit - (capacity - leaf_tokens(p.leaf_lengths, seq, capacity)));
}

}  // namespace hydragen::cuda
