#pragma once
// A work item's token list in shared memory: its segments laid end to end, so a kernel can find
// the K/V row of any position of the list.
#include "params.hpp"
#include "tile_config.hpp"

namespace hydragen::cuda {

template <typename T>
struct ItemSegments {
  int count;
  int start[kMaxItemSegments + 1];  // position of each segment's first token; start[count] = total
  const T* k[kMaxItemSegments];     // [length, Hkv, D] of each segment
  const T* v[kMaxItemSegments];

  // Called by one thread; the block must synchronize before the others read.
  __device__ void fill(const SegmentAttentionParams& p, const WorkItem& item) {
    count = item.num_segments;
    int total = 0;
    for (int i = 0; i < count; ++i) {
      const int segment = p.item_segments[item.first_segment + i];
      start[i] = total;
      total += p.segment_length[segment];
      k[i] = static_cast<const T*>(p.k[segment]);
      v[i] = static_cast<const T*>(p.v[segment]);
    }
    start[count] = total;
  }

  // Called by every thread of the block; thread 0 fills, then all wait.
  __device__ void load(const SegmentAttentionParams& p, const WorkItem& item) {
    if (threadIdx.x == 0) fill(p, item);
    __syncthreads();
  }

  // The segment holding list position `pos` (< start[count]); empty segments are stepped over.
  __device__ int find(int pos) const {
    int i = 0;
    while (pos >= start[i + 1]) ++i;
    return i;
  }

  // Element offset of (position, kv_head, column) within segment i's tensor.
  __device__ long long offset(int i, int pos, int kv_heads, int kv_head, int head_dim, int column) const {
    return (static_cast<long long>(pos - start[i]) * kv_heads + kv_head) * head_dim + column;
  }
};

}  // namespace hydragen::cuda
