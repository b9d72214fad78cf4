#pragma once
// The KV of a batch as a forest of segments. Each segment (node) is a run of tokens stored once;
// each sequence is the path from a root to its own leaf, and attends every token on that path.
// A segment with several sequences below it is shared: Hydragen batches their queries over it.
//
// A SharingTree is valid by construction: every builder validates and throws std::invalid_argument
// naming the offending field and value.
#include <string>
#include <vector>

namespace hydragen {

class SharingTree {
 public:
  // General form. parents[i]: parent segment of segment i, or -1 for a root. lengths[i]: tokens in
  // segment i (>= 0). seq_leaves[s]: the leaf segment of sequence s; every leaf belongs to exactly
  // one sequence and a sequence's segment must be a leaf (no children).
  static SharingTree from_parents(std::vector<int> parents, std::vector<int> lengths, std::vector<int> seq_leaves);
  // No sharing: sequence s owns one segment of lengths[s] tokens.
  static SharingTree flat(const std::vector<int>& lengths);
  // One shared prefix of prefix_len tokens, then one own suffix per sequence.
  static SharingTree prefix_suffix(int prefix_len, const std::vector<int>& suffix_lens);
  // A root of root_len tokens; group i adds group_lens[i] tokens shared by its sequences, whose own
  // suffixes are suffix_lens[i] (one entry per sequence of the group).
  static SharingTree two_level(int root_len, const std::vector<int>& group_lens,
                               const std::vector<std::vector<int>>& suffix_lens);

  int num_segments() const { return static_cast<int>(parents_.size()); }
  int num_seqs() const { return static_cast<int>(seq_leaves_.size()); }
  int parent(int segment) const { return parents_.at(segment); }
  int length(int segment) const { return lengths_.at(segment); }
  int leaf(int seq) const { return seq_leaves_.at(seq); }
  // The general form's tables, as from_parents takes them: [num_segments], [num_segments], [num_seqs].
  const std::vector<int>& parents() const { return parents_; }
  const std::vector<int>& lengths() const { return lengths_; }
  const std::vector<int>& seq_leaves() const { return seq_leaves_; }
  bool is_leaf(int segment) const { return children_.at(segment).empty(); }
  const std::vector<int>& children(int segment) const { return children_.at(segment); }
  // Segments from root to leaf.
  const std::vector<int>& path(int seq) const { return paths_.at(seq); }
  // Tokens on the sequence's path.
  long long path_length(int seq) const { return path_lengths_.at(seq); }
  // Sequences whose path contains the segment, ascending.
  const std::vector<int>& seqs_below(int segment) const { return seqs_below_.at(segment); }
  int depth() const { return depth_; }  // segments on the longest path
  long long total_tokens() const;       // sum of segment lengths: distinct tokens stored

  // The same sequences with no sharing: sequence s owns one segment of path_length(s) tokens.
  // This is the `redundant` storage (each sequence holds a full copy of its path).
  SharingTree flattened() const;

  std::string describe() const;  // e.g. "3 segments, 2 sequences, depth 2, 1030 tokens"

 private:
  SharingTree() = default;
  void build();  // validates and fills the derived tables

  std::vector<int> parents_;
  std::vector<int> lengths_;
  std::vector<int> seq_leaves_;
  std::vector<std::vector<int>> children_;
  std::vector<std::vector<int>> paths_;
  std::vector<long long> path_lengths_;
  std::vector<std::vector<int>> seqs_below_;
  int depth_ = 0;
};

}  // namespace hydragen
