#pragma once
// The kernels' one item-scheduling convention: a launch's workers (blocks, or the warp kernels'
// warps) each take a contiguous run of its items. The host gives the runs (params.worker_items,
// Schedule::wide_worker_items: dealt parts of about equal length per worker), or leaves them to an
// even share of the items by count, which is one item each when there are as many workers as items.
#include "params.hpp"

namespace hydragen::cuda {

// The items [first, last] of a worker; first > last when it has none (the last warp kernel block's
// spare warps).
struct ItemRange {
  int first, last;
};

__device__ __forceinline__ ItemRange worker_items(const SegmentAttentionParams& p, int worker, int workers) {
  if (p.worker_items != nullptr) return {p.worker_items[worker], p.worker_items[worker + 1] - 1};
  if (workers == p.num_items) return {worker, worker};  // the common launch, without the divisions
  workers = min(workers, p.num_items);
  if (worker >= workers) return {0, -1};
  return {static_cast<int>(static_cast<long long>(p.num_items) * worker / workers),
          static_cast<int>(static_cast<long long>(p.num_items) * (worker + 1) / workers) - 1};
}

}  // namespace hydragen::cuda
