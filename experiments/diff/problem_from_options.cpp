#include "diff/problem_from_options.hpp"

#include <algorithm>
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

// --tokens: the file's token-id lists, one per sequence.
std::vector<std::vector<int>> token_lists(const Options& options) {
  std::vector<std::vector<int>> ids = read_token_lists(options.tokens);
  const int batch = static_cast<int>(ids.size());
  if (options.batch && *options.batch != batch) {
    throw std::invalid_argument("--batch is " + std::to_string(*options.batch) + " but --tokens holds " +
                                std::to_string(batch) + " sequences");
  }
  return ids;
}

}  // namespace

int num_seqs(const Options& options) {
  switch (options.tree_source) {
    case TreeSource::tokens: return static_cast<int>(token_lists(options).size());
    case TreeSource::segments: {
      const int leaves = static_cast<int>(options.leaves.size());
      if (options.batch && *options.batch != leaves) {
        throw std::invalid_argument("--batch is " + std::to_string(*options.batch) + " but --leaves names " +
                                    std::to_string(leaves) + " sequences");
      }
      return leaves;
    }
    case TreeSource::shape: break;
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

SharingRates detection_rates(const Options& options, const DeviceMemory& memory) {
  return options.tree_source == TreeSource::tokens ? memory.sharing_rates() : SharingRates{};
}

SharingTree tree_from_options(const Options& options, const SharingRates& rates) {
  switch (options.tree_source) {
    case TreeSource::tokens: {
      const std::vector<std::vector<int>> ids = token_lists(options);
      const AttentionShape shape = make_shape(static_cast<int>(ids.size()), options.q_len, options.q_heads, options.kv_heads,
                                              options.head_dim, options.dtype);
      return detect_sharing(ids, shape, rates).tree;
    }
    case TreeSource::segments:
      num_seqs(options);  // checks --batch against --leaves
      return SharingTree::from_parents(options.parents, options.lengths, options.leaves);
    case TreeSource::shape: break;
  }
  require_non_negative("--prefix", options.prefix);
  const std::vector<int> suffixes = suffix_lengths(options);
  try {
    return options.tree.build(options.prefix, suffixes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--tree: ") + e.what());
  }
}

AttentionShape shape_from_options(const Options& options, const SharingTree& tree) {
  AttentionShape shape = make_shape(tree.num_seqs(), options.q_len, options.q_heads, options.kv_heads,
                                    options.head_dim, options.dtype);
  if (options.scale) shape.scale = static_cast<float>(*options.scale);
  return shape;
}

std::string tree_label(const Options& options, const SharingTree& tree, const SharingRates& rates) {
  std::string label;
  switch (options.tree_source) {
    case TreeSource::shape:
      label = options.tree.text() + " P=" + std::to_string(options.prefix) + " S=" + suffix_label(suffix_lengths(options));
      break;
    case TreeSource::segments: label = "segments"; break;
    case TreeSource::tokens:  // as the sweep's tree column writes it, then the rate detection used
      label = "tokens:" + options.tokens + " detected at " + rates.describe();
      break;
  }
  return label + " (" + tree.describe() + ")";
}

}  // namespace hydragen::diff
