#pragma once
// The query row of a work item's row: computed where the plan found the item's rows affine
// (WorkItem::first_query), so that a kernel's first copies of Q wait on the item alone, not also on
// the row table's lines (kernel-notes: item-links).
#include "params.hpp"

namespace hydragen::cuda {

__device__ __forceinline__ int item_query(const SegmentAttentionParams& p, const WorkItem& item, int r) {
  if (item.first_query >= 0) return item.first_query + (r >> p.group_shift) * p.q_heads + (r & ((1 << p.group_shift) - 1));
  return p.row_query[item.first_row + r];
}

}  // namespace hydragen::cuda
