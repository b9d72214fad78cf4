#include "hydragen/sharing_tree.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace hydragen {

namespace {
std::string item(const char* field, std::size_t index) { return std::string(field) + "[" + std::to_string(index) + "]"; }
}  // namespace

SharingTree SharingTree::from_parents(std::vector<int> parents, std::vector<int> lengths, std::vector<int> seq_leaves) {
  SharingTree t;
  t.parents_ = std::move(parents);
  t.lengths_ = std::move(lengths);
  t.seq_leaves_ = std::move(seq_leaves);
  t.build();
  return t;
}

SharingTree SharingTree::flat(const std::vector<int>& lengths) {
  std::vector<int> parents(lengths.size(), -1);
  std::vector<int> leaves(lengths.size());
  std::iota(leaves.begin(), leaves.end(), 0);
  return from_parents(std::move(parents), lengths, std::move(leaves));
}

SharingTree SharingTree::prefix_suffix(int prefix_len, const std::vector<int>& suffix_lens) {
  return two_level(prefix_len, {}, {suffix_lens});
}

SharingTree SharingTree::two_level(int root_len, const std::vector<int>& group_lens,
                                   const std::vector<std::vector<int>>& suffix_lens) {
  // With no group_lens the suffixes hang directly below the root (prefix + suffix).
  const bool grouped = !group_lens.empty();
  if (grouped && group_lens.size() != suffix_lens.size()) {
    throw std::invalid_argument("SharingTree::two_level: group_lens has " + std::to_string(group_lens.size()) +
                                " entries but suffix_lens has " + std::to_string(suffix_lens.size()) + " groups");
  }
  std::vector<int> parents{-1}, lengths{root_len}, leaves;
  for (std::size_t g = 0; g < suffix_lens.size(); ++g) {
    int parent = 0;
    if (grouped) {
      parent = static_cast<int>(parents.size());
      parents.push_back(0);
      lengths.push_back(group_lens[g]);
    }
    for (int s : suffix_lens[g]) {
      leaves.push_back(static_cast<int>(parents.size()));
      parents.push_back(parent);
      lengths.push_back(s);
    }
  }
  return from_parents(std::move(parents), std::move(lengths), std::move(leaves));
}

void SharingTree::build() {
  const std::size_t n = parents_.size();
  if (lengths_.size() != n) {
    throw std::invalid_argument("SharingTree: parents has " + std::to_string(n) + " entries but lengths has " +
                                std::to_string(lengths_.size()));
  }
  if (seq_leaves_.empty()) throw std::invalid_argument("SharingTree: seq_leaves is empty (a batch needs a sequence)");
  for (std::size_t i = 0; i < n; ++i) {
    if (parents_[i] < -1 || parents_[i] >= static_cast<int>(n) || parents_[i] == static_cast<int>(i)) {
      throw std::invalid_argument("SharingTree: " + item("parents", i) + " = " + std::to_string(parents_[i]) +
                                  " is not -1 or another segment in [0, " + std::to_string(n) + ")");
    }
    if (lengths_[i] < 0) {
      throw std::invalid_argument("SharingTree: " + item("lengths", i) + " = " + std::to_string(lengths_[i]) +
                                  " is negative");
    }
  }
  // Cycle check: walking up from any segment must reach a root within n steps.
  for (std::size_t i = 0; i < n; ++i) {
    int node = static_cast<int>(i);
    for (std::size_t steps = 0; node != -1; ++steps) {
      if (steps > n) {
        throw std::invalid_argument("SharingTree: segment " + std::to_string(i) +
                                    " is on a cycle of parents (no path to a root)");
      }
      node = parents_[node];
    }
  }
  children_.assign(n, {});
  for (std::size_t i = 0; i < n; ++i) {
    if (parents_[i] >= 0) children_[parents_[i]].push_back(static_cast<int>(i));
  }
  std::vector<int> owner(n, -1);
  for (std::size_t s = 0; s < seq_leaves_.size(); ++s) {
    const int leaf = seq_leaves_[s];
    if (leaf < 0 || leaf >= static_cast<int>(n)) {
      throw std::invalid_argument("SharingTree: " + item("seq_leaves", s) + " = " + std::to_string(leaf) +
                                  " is not a segment in [0, " + std::to_string(n) + ")");
    }
    if (!children_[leaf].empty()) {
      throw std::invalid_argument("SharingTree: " + item("seq_leaves", s) + " = " + std::to_string(leaf) +
                                  " has children, so it is not a leaf");
    }
    if (owner[leaf] != -1) {
      throw std::invalid_argument("SharingTree: leaf segment " + std::to_string(leaf) + " is claimed by sequences " +
                                  std::to_string(owner[leaf]) + " and " + std::to_string(s));
    }
    owner[leaf] = static_cast<int>(s);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (children_[i].empty() && owner[i] == -1) {
      throw std::invalid_argument("SharingTree: leaf segment " + std::to_string(i) +
                                  " belongs to no sequence (every leaf needs one in seq_leaves)");
    }
  }
  paths_.assign(seq_leaves_.size(), {});
  path_lengths_.assign(seq_leaves_.size(), 0);
  seqs_below_.assign(n, {});
  depth_ = 0;
  for (std::size_t s = 0; s < seq_leaves_.size(); ++s) {
    for (int node = seq_leaves_[s]; node != -1; node = parents_[node]) {
      paths_[s].push_back(node);
      path_lengths_[s] += lengths_[node];
      seqs_below_[node].push_back(static_cast<int>(s));
    }
    std::reverse(paths_[s].begin(), paths_[s].end());
    depth_ = std::max(depth_, static_cast<int>(paths_[s].size()));
  }
}

long long SharingTree::total_tokens() const {
  return std::accumulate(lengths_.begin(), lengths_.end(), 0LL);
}

SharingTree SharingTree::flattened() const {
  std::vector<int> lengths;
  for (long long l : path_lengths_) {
    if (l > 2147483647LL) throw std::invalid_argument("SharingTree::flattened: a path of " + std::to_string(l) + " tokens exceeds int");
    lengths.push_back(static_cast<int>(l));
  }
  return flat(lengths);
}

std::string SharingTree::describe() const {
  return std::to_string(num_segments()) + " segments, " + std::to_string(num_seqs()) + " sequences, depth " +
         std::to_string(depth_) + ", " + std::to_string(total_tokens()) + " tokens";
}

}  // namespace hydragen
