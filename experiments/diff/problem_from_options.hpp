#pragma once
// The problem hydragen-diff generates from its options: shape and sharing tree. Pure functions, no
// I/O; every error is a std::invalid_argument naming the flag (or, from core, the field) and value.
#include <string>
#include <vector>

#include "diff/options.hpp"
#include "hydragen/memory.hpp"
#include "hydragen/shape.hpp"
#include "hydragen/sharing_rates.hpp"
#include "hydragen/sharing_tree.hpp"

namespace hydragen::diff {

// Sequences in the batch: --batch (default Options::default_batch), or the number of --leaves or of
// the --tokens file's sequences (a --batch that disagrees with them throws).
int num_seqs(const Options& options);

// Own tokens per sequence, one entry per sequence: --suffix-lens (its count must equal the batch) or
// --suffix repeated. Throws on a count mismatch (naming both) or a negative length.
std::vector<int> suffix_lengths(const Options& options);

// What detection weighs partials at for the options' tree: for --tokens, the rates of `memory` (the
// backend's: DeviceMemory::sharing_rates); else the rate-free ones, unused (nothing is detected, and a
// GPU's would be looked up for nothing).
SharingRates detection_rates(const Options& options, const DeviceMemory& memory);

// The tree of --tree's shape, of --parents/--lengths/--leaves, or the one detect_sharing finds in
// --tokens' ids by the cost model's rule for the shape at `rates`.
SharingTree tree_from_options(const Options& options, const SharingRates& rates);

// make_shape from the options with num_seqs = tree.num_seqs(), and --scale when given.
AttentionShape shape_from_options(const Options& options, const SharingTree& tree);

// For the summary line: the tree in --tree's grammar (TreeSpec::text) with P and S, "segments" for
// --parents, or "tokens:FILE" as the sweep's tree column writes it and the rates detection used;
// then tree.describe(), e.g. "2x8 P=256 S=32 (7 segments, 4 sequences, depth 3, 400 tokens)".
// Ragged suffixes read S=min..max.
std::string tree_label(const Options& options, const SharingTree& tree, const SharingRates& rates);

}  // namespace hydragen::diff
