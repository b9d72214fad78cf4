#pragma once
// Where cuda-hydragen's leaves run beside a wgmma launch of the shared segments (host code, no CUDA).
//
// After (the default layout): the wgmma launch takes one SM per block, as many blocks as the split
// makes (about one wave), and the leaves run on the SMs it leaves and then on every SM it frees. A
// wgmma block holds a whole SM's registers, so nothing runs beside it.
// Beside: the shared segments' row blocks cut into p parts each, dealt m at a time to W < sms
// persistent wgmma blocks (ScheduleOptions::wide_workers), and the leaves, a warp per item, on SMs
// of their own from the start (ItemKernel::sm_warps): max(m parts' time, leaf time on theirs, both
// launches' DRAM reads), then the merge. Beside pays where the leaves stream many bytes beside a
// compute-bound prefix.
#include "hydragen/shape.hpp"
#include "hydragen/sharing_tree.hpp"
#include "schedule.hpp"

namespace hydragen::cuda {

// The cost model's rates, measured on an H100 (perf-notes v19, v20); times in ns.
inline constexpr double kWgmmaSmFlopsPerNs = 4700;  // a wgmma block's steady rate (1.8 us a 128-token tile at D 128)
inline constexpr double kLeafSmBytesPerNs = 50;     // an SM of twelve leaf warps streaming K/V (47-53 GB/s)
inline constexpr double kLeafDramBytesPerNs = 2600;  // the DRAM rate K/V reads reach (leaves on many SMs)
// Leaves on some of the SMs streamed at most this share of the DRAM rate that leaves on every SM
// reach (268 MB in 113 us beside a short prefix, 2.37 TB/s: perf-notes v20).
inline constexpr double kBesideLeafDramShare = 0.95;
inline constexpr double kMergeNs = 6000;            // the merge kernel after a launch that filled the GPU
inline constexpr double kPartSwitchNs = 9000;       // a persistent wgmma block's move to its next part
inline constexpr double kFixedNs = 12000;           // either layout's launches, pipeline fills and last tail
// Beside was measured with leaves of 16 to 512 tokens (the attention A/B at 64 to 512, the
// decoder's buckets of 16); auto keeps longer ones (on average) after until beside is measured there.
inline constexpr double kBesideMaxLeafTokens = 512;
// Beside must be predicted this much faster than after. Since the after launch is list-scheduled
// (v21) the model's ratio beside / after was within 0.06 of the measured one at the 12 points that
// put it between 0.93 and 1.0; at 0.97 beside is taken at (1024, 2048, 288..384), 1.01x to 1.13x
// faster, and loses at most 1.3% ((4096, 1024, 256)). v20's 0.95 made up for an after model that
// overstated several waves.
inline constexpr double kBesideMargin = 0.97;
// Beside layouts considered: at most this many parts per persistent wgmma block.
inline constexpr int kMaxPartsPerWorker = 8;

struct LeafPlacement {
  Schedule schedule;                   // beside: its schedule (persistent wgmma blocks on the other SMs); empty otherwise
  bool beside = false;                 // the leaves on SMs the wgmma blocks leave (ItemKernel::sm_warps)
  int leaf_sms = 0;                    // the best beside layout's SMs for the leaves (the plan's where beside)
  double after_ns = 0, beside_ns = 0;  // the model's times; beside_ns: the best beside layout's, 0 where none exists
};

// The model's choice for cuda-hydragen's segment schedule `after` (made with `options`, wide items on
// wgmma): beside where it is predicted kBesideMargin faster and the leaf items average at most
// kBesideMaxLeafTokens, or always (`force`) where the device has an SM for each side. The beside
// layout is the (p, m) of least predicted time (the first found where several tie: fewest parts,
// then fewest per block).
LeafPlacement place_leaves(const AttentionShape& shape, const SharingTree& tree, const ScheduleOptions& options,
                           const Schedule& after, bool force);

}  // namespace hydragen::cuda
