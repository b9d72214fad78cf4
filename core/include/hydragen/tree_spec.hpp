#pragma once
// A sharing tree by its shape: the one grammar of `--tree` in hydragen-diff and hydragen-sweep, and
// how the sweep's `tree` column and hydragen-diff's summary line write a tree (docs/tools.md#trees):
//   prefix             one shared prefix of P tokens, then each sequence's own S (depth 2)
//   flat               no sharing: each sequence one segment of its P + S tokens (depth 1)
//   16x1024            16 groups of B / 16 consecutive sequences under the prefix, each group adding
//                      1024 tokens its sequences share, then their own S (two-level, depth 3)
//   4x1024/4x256       levels of groups outermost first: 4 groups of 1024 tokens, each split into 4
//                      groups of 256, then the leaves (depth 4); and so on
//   8x300-800          ragged groups: the 8 children of a node get lengths spread evenly over
//                      [300, 800] (the midpoints of 8 equal bins: 331, 393, ..., 768)
//   copy:8x300-800     the same sequences sharing the prefix alone: each group's tokens copied into
//                      every sequence below it, ahead of its own S (single-level sharing)
// Every group of a level has the same number of sequences, so B must be a multiple of the product
// of the levels' group counts: one rule for the diff, the sweep and hydragen-decode --groups, whose
// KV cache holds groups of B / N sequences. Uneven trees are given segment by segment instead
// (SharingTree::from_parents; hydragen-diff --parents).
#include <string>
#include <string_view>
#include <vector>

#include "hydragen/sharing_tree.hpp"

namespace hydragen {

struct TreeSpec {
  struct Level {
    int groups = 0;            // children of each node of the level above
    int length = 0;            // tokens each adds; the shortest of a ragged level
    int longest = 0;           // the longest of a ragged level; == length when all are equal
    int length_of(int child) const;  // of the node's child-th group, child in [0, groups)
  };
  std::vector<Level> levels;  // outermost first; empty: prefix + suffix (or flat)
  bool copied = false;        // the levels' tokens copied into every leaf instead of shared
  bool flat = false;          // nothing shared, not even the prefix (no levels, not copied)

  // Throws std::invalid_argument naming what is wrong with `text`; a word --tree took before this
  // grammar (two-level, levels, custom, tokens) is refused with what to write instead.
  static TreeSpec parse(std::string_view text);
  std::string text() const;  // parse(text()) == *this
  // Groups of the innermost level: the leaves' parents (1 for prefix + suffix and flat).
  long long innermost_groups() const;
  // Throws std::invalid_argument unless `batch` sequences fill the innermost groups equally.
  void check_batch(int batch) const;
  // The tree of suffixes.size() sequences under a root of `prefix` tokens, sequence s with its own
  // suffixes[s] tokens. Throws std::invalid_argument as check_batch does, and for a flat sequence
  // whose P + S exceeds int.
  SharingTree build(int prefix, const std::vector<int>& suffixes) const;
  // The same with every sequence's own `suffix` tokens.
  SharingTree build(int batch, int prefix, int suffix) const;

  bool operator==(const TreeSpec& other) const;
};

}  // namespace hydragen
