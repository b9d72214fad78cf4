#pragma once
// Where cuda-hydragen's leaves run beside a wgmma launch of the shared segments (host code, no CUDA).
//
// After (the default layout): the wgmma launch takes one SM per block, as many blocks as the split
// makes (about one wave), and the leaves run on the SMs it leaves and then on every SM it frees:
// prefix time, then leaf time. A wgmma block holds a whole SM's registers, so nothing runs beside it.
// Beside: the wgmma launch split into fewer parts (W blocks), and the leaves, a warp per item, on
// other SMs from the start (ItemKernel::sm_warps): max(prefix time on W SMs, leaf time on theirs,
// both launches' DRAM reads), then the merge. Beside pays where the leaves stream many bytes and the prefix's parts are short
// enough that fewer, longer ones still end with the leaves (MHA shards: Fig. 3b's 5 heads, 32 heads).
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {

// The cost model's rates, measured on an H100 (perf-notes v19); times in ns.
inline constexpr double kWgmmaSmFlopsPerNs = 5300;  // a wgmma block's steady rate (700 TFLOP/s over 132 SMs)
inline constexpr double kLeafSmBytesPerNs = 50;     // an SM of twelve leaf warps streaming K/V (47-52 GB/s)
inline constexpr double kLeafDramBytesPerNs = 2600;  // the DRAM rate K/V reads reach (leaves on many SMs)
inline constexpr double kMergeNs = 6000;            // the merge kernel after a launch that filled the GPU
// Beside was measured with leaves of 16 to 128 tokens (64 and 128 in the attention A/B, the
// decoder's buckets of 16); auto keeps longer ones (on average) after, where four-warp blocks may
// run them (a warp per item was up to 1.16x slower from 20 tiles, perf-notes v15), until beside is
// measured there.
inline constexpr double kBesideMaxLeafTokens = 128;
// Beside must be predicted this much faster than after: the model's error on the points it was
// fitted to was up to 15% (after) and 8% (beside).
inline constexpr double kBesideMargin = 0.85;

struct LeafPlacement {
  Schedule schedule;                   // beside: its schedule (wgmma blocks fewer than the SMs); empty otherwise
  bool beside = false;                 // the leaves on SMs the wgmma blocks leave (ItemKernel::sm_warps)
  int leaf_sms = 0;                    // beside: how many of those SMs the leaves take
  double after_ns = 0, beside_ns = 0;  // the model's times; beside_ns: the best beside layout's, 0 where none exists
};

// The model's choice for cuda-hydragen's segment schedule `after` (made with `options`, wide items on
// wgmma): beside where it is predicted kBesideMargin faster and the leaf items average at most
// kBesideMaxLeafTokens, or always (`force`) where some beside
// layout exists: a wide target R x p (R row blocks of the shared segments, p parts each) whose wgmma
// blocks leave at least one SM. The best beside layout is the one of least predicted time.
LeafPlacement place_leaves(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options,
                           const Schedule& after, bool force);

}  // namespace hydragen::cuda
