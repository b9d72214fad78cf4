#include "diff/problem_from_options.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "hydragen/detect.hpp"
#include "hydragen/tree_spec.hpp"

namespace hydragen::diff {

namespace {

void require_non_negative(const std::string& flag, int value) {
  if (value < 0) throw std::invalid_argument(flag + " must be >= 0, got " + std::to_string(value));
}

std::string suffix_label(const std::vector<int>& suffixes) {
  const auto [lo, hi] = std::minmax_element(suffixes.begin(), suffixes.end());
  return *lo == *hi ? std::to_string(*lo) : std::to_string(*lo) + ".." + std::to_string(*hi);
}

}  // namespace

// --tree tokens: the tree found in the file's token ids, for the shape's cost model.
SharingTree detected_tree(const Options& options) {
  const std::vector<std::vector<int>> ids = read_token_lists(options.tokens);
  const int batch = static_cast<int>(ids.size());
  if (options.batch && *options.batch != batch) {
    throw std::invalid_argument("--batch is " + std::to_string(*options.batch) + " but --tokens holds " +
                                std::to_string(batch) + " sequences");
  }
  return detect_sharing(ids, make_shape(batch, options.q_len, options.q_heads, options.kv_heads, options.head_dim,
                                        options.dtype)).tree;
}

int num_seqs(const Options& options) {
  if (options.tree == TreeKind::tokens) return detected_tree(options).num_seqs();
  if (options.tree == TreeKind::custom) {
    const int leaves = static_cast<int>(options.leaves.size());
    if (options.batch && *options.batch != leaves) {
      throw std::invalid_argument("--batch is " + std::to_string(*options.batch) + " but --leaves names " +
                                  std::to_string(leaves) + " sequences");
    }
    return leaves;
  }
  const int batch = options.batch.value_or(Options::default_batch);
  if (batch <= 0) throw std::invalid_argument("--batch must be positive, got " + std::to_string(batch));
  return batch;
}

std::vector<int> suffix_lengths(const Options& options) {
  const int batch = num_seqs(options);
  if (!options.suffix_lens) {
    require_non_negative("--suffix", options.suffix);
    return std::vector<int>(static_cast<std::size_t>(batch), options.suffix);
  }
  const std::vector<int>& lens = *options.suffix_lens;
  if (static_cast<int>(lens.size()) != batch) {
    throw std::invalid_argument("--suffix-lens has " + std::to_string(lens.size()) + " entries but --batch is " +
                                std::to_string(batch) + " (one suffix length per sequence)");
  }
  for (std::size_t i = 0; i < lens.size(); ++i) require_non_negative("--suffix-lens[" + std::to_string(i) + "]", lens[i]);
  return lens;
}

std::vector<int> group_sizes(int batch, int groups) {
  if (groups < 1 || groups > batch) {
    throw std::invalid_argument("--groups must be in [1, --batch = " + std::to_string(batch) + "], got " +
                                std::to_string(groups) + " (every group needs a sequence)");
  }
  std::vector<int> sizes(static_cast<std::size_t>(groups), batch / groups);
  for (int g = 0; g < batch % groups; ++g) ++sizes[static_cast<std::size_t>(g)];
  return sizes;
}

SharingTree tree_from_options(const Options& options) {
  if (options.tree == TreeKind::tokens) return detected_tree(options);
  if (options.tree == TreeKind::custom) {
    num_seqs(options);  // checks --batch against --leaves
    return SharingTree::from_parents(options.parents, options.lengths, options.leaves);
  }
  require_non_negative("--prefix", options.prefix);
  const std::vector<int> suffixes = suffix_lengths(options);
  switch (options.tree) {
    case TreeKind::prefix: return SharingTree::prefix_suffix(options.prefix, suffixes);
    case TreeKind::flat: {
      std::vector<int> lengths;
      for (int s : suffixes) {
        if (s > std::numeric_limits<int>::max() - options.prefix) {
          throw std::invalid_argument("--prefix + suffix = " + std::to_string(options.prefix) + " + " +
                                      std::to_string(s) + " exceeds int");
        }
        lengths.push_back(options.prefix + s);
      }
      return SharingTree::flat(lengths);
    }
    case TreeKind::two_level: {
      require_non_negative("--group-len", options.group_len);
      const std::vector<int> sizes = group_sizes(static_cast<int>(suffixes.size()), options.groups);
      std::vector<std::vector<int>> grouped;
      auto next = suffixes.begin();
      for (int size : sizes) {
        grouped.emplace_back(next, next + size);
        next += size;
      }
      return SharingTree::two_level(options.prefix, std::vector<int>(sizes.size(), options.group_len), grouped);
    }
    case TreeKind::levels:
      try {
        return TreeSpec::parse(options.levels).build(static_cast<int>(suffixes.size()), options.prefix, options.suffix);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--levels: ") + e.what());
      }
    case TreeKind::custom:
    case TreeKind::tokens: break;  // handled above
  }
  throw std::logic_error("tree_from_options: unhandled tree kind");
}

AttentionShape shape_from_options(const Options& options, const SharingTree& tree) {
  AttentionShape shape = make_shape(tree.num_seqs(), options.q_len, options.q_heads, options.kv_heads,
                                    options.head_dim, options.dtype);
  if (options.scale) shape.scale = static_cast<float>(*options.scale);
  return shape;
}

std::string tree_label(const Options& options, const SharingTree& tree) {
  std::string label(tree_kind_name(options.tree));
  switch (options.tree) {
    case TreeKind::prefix:
      label += " P=" + std::to_string(options.prefix) + " S=" + suffix_label(suffix_lengths(options));
      break;
    case TreeKind::flat:
      label += " P+S=" + std::to_string(options.prefix) + "+" + suffix_label(suffix_lengths(options));
      break;
    case TreeKind::two_level:
      label += " P=" + std::to_string(options.prefix) + " groups=" + std::to_string(options.groups) + "x" +
               std::to_string(options.group_len) + " S=" + suffix_label(suffix_lengths(options));
      break;
    case TreeKind::levels:
      label += " P=" + std::to_string(options.prefix) + " " + options.levels + " S=" + std::to_string(options.suffix);
      break;
    case TreeKind::custom: break;
    case TreeKind::tokens: label += " " + options.tokens; break;
  }
  return label + " (" + tree.describe() + ")";
}

}  // namespace hydragen::diff
