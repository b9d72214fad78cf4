#pragma once
// Sharing found by itself: the sharing tree of a batch from each sequence's token ids (a compressed
// radix tree), and where each segment's tokens come from, so a caller can lay out the KV cache.
//
// A run of tokens that several sequences start with becomes a segment shared by them when it is long
// enough to pay (the cost model's min_shared_tokens, or a fixed length); a shorter one is not shared:
// its tokens go into each sequence's next segment instead. Every sequence ends in a leaf of its own,
// empty where its tokens are all shared (a prompt that another one extends, or two identical ones).
#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "hydragen/shape.hpp"
#include "hydragen/sharing_rates.hpp"
#include "hydragen/sharing_tree.hpp"

namespace hydragen {

struct DetectedSharing {
  // The tokens of one segment: positions [begin, end) of sequence `seq`'s token list (any of the
  // sequences below the segment: they hold the same tokens there).
  struct Span {
    int seq = 0;
    long long begin = 0, end = 0;
  };
  SharingTree tree;
  std::vector<Span> spans;  // [num_segments]
};

// A file of token-id lists: one sequence a line, ids separated by spaces or commas; blank lines and
// lines starting with '#' skipped. Throws std::invalid_argument naming the file, the line and the
// text for anything that is not an id in [0, limit), and for a file with no sequence.
std::vector<std::vector<int>> read_token_lists(const std::string& path, int limit = INT_MAX);

// min_tokens(readers): the shortest run worth sharing among that many sequences (readers >= 2).
// Throws std::invalid_argument for an empty batch or a min_tokens below 1.
DetectedSharing detect_sharing(const std::vector<std::vector<int>>& token_ids,
                               const std::function<long long(int readers)>& min_tokens);
// With the cost model's rule for the problem's shape at the device's rates (min_shared_tokens).
DetectedSharing detect_sharing(const std::vector<std::vector<int>>& token_ids, const AttentionShape& shape,
                               const SharingRates& rates);
// With one length for every node (1: share every common token).
DetectedSharing detect_sharing(const std::vector<std::vector<int>>& token_ids, long long min_tokens);

}  // namespace hydragen
