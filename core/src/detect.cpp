#include "hydragen/detect.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

#include "hydragen/cost_model.hpp"

namespace hydragen {

namespace {

// Builds the tree over sequences sorted by their tokens: a range of them with a common run from
// `start` to their longest common prefix becomes one shared segment when that run is long enough,
// then each group of the range that continues with the same token is built below it.
class Builder {
 public:
  Builder(const std::vector<std::vector<int>>& ids, const std::function<long long(int)>& min_tokens)
      : ids_(ids), min_tokens_(min_tokens), order_(ids.size()), leaf_of_(ids.size(), -1) {
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) { return ids_[a] < ids_[b]; });
  }

  DetectedSharing build() {
    range(0, order_.size(), 0, -1);
    DetectedSharing out{SharingTree::from_parents(parents_, lengths_, leaf_of_), std::move(spans_)};
    return out;
  }

 private:
  long long size(std::size_t i) const { return static_cast<long long>(ids_[order_[i]].size()); }
  int token(std::size_t i, long long at) const { return ids_[order_[i]][static_cast<std::size_t>(at)]; }

  int add(int parent, int seq, long long begin, long long end) {
    parents_.push_back(parent);
    lengths_.push_back(static_cast<int>(end - begin));
    spans_.push_back({seq, begin, end});
    return static_cast<int>(parents_.size()) - 1;
  }

  // Sequences order_[lo, hi) (sorted, so their common prefix is that of the first and the last),
  // whose segments start at token `start`, below segment `parent` (-1: roots).
  void range(std::size_t lo, std::size_t hi, long long start, int parent) {
    if (hi - lo == 1) {
      const int seq = order_[lo];
      leaf_of_[seq] = add(parent, seq, start, size(lo));
      return;
    }
    const auto& first = ids_[order_[lo]];
    const auto& last = ids_[order_[hi - 1]];
    const auto common = static_cast<long long>(
        std::mismatch(first.begin(), first.end(), last.begin(), last.end()).first - first.begin());
    const int readers = static_cast<int>(hi - lo);
    const long long need = min_tokens_(readers);
    if (need < 1) throw std::invalid_argument("detect_sharing: min_tokens(" + std::to_string(readers) + ") = " + std::to_string(need));
    long long next_start = start;
    int next_parent = parent;
    if (common - start >= need) {  // worth one copy for all of them
      next_parent = add(parent, order_[lo], start, common);
      next_start = common;
    }
    // Groups by the token after the common run; sequences that end there come first (sorted).
    std::size_t i = lo;
    while (i < hi && size(i) == common) {
      const int seq = order_[i];
      leaf_of_[seq] = add(next_parent, seq, next_start, common);  // empty when the run was shared
      ++i;
    }
    while (i < hi) {
      std::size_t j = i + 1;
      while (j < hi && token(j, common) == token(i, common)) ++j;
      range(i, j, next_start, next_parent);
      i = j;
    }
  }

  const std::vector<std::vector<int>>& ids_;
  const std::function<long long(int)>& min_tokens_;
  std::vector<int> order_;  // sequence indices, sorted by their tokens
  std::vector<int> parents_, lengths_, leaf_of_;
  std::vector<DetectedSharing::Span> spans_;
};

}  // namespace

std::vector<std::vector<int>> read_token_lists(const std::string& path, int limit) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read token ids from '" + path + "'");
  std::vector<std::vector<int>> lists;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream words(line);
    std::vector<int> tokens;
    for (std::string word; words >> word;) {
      if (tokens.empty() && word[0] == '#') break;
      std::size_t used = 0;
      long long value = -1;
      try {
        value = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || value < 0 || value >= limit) {
        throw std::invalid_argument(path + ":" + std::to_string(number) + ": '" + word + "' is not a token id in [0, " +
                                    std::to_string(limit) + ")");
      }
      tokens.push_back(static_cast<int>(value));
    }
    if (!tokens.empty()) lists.push_back(std::move(tokens));
  }
  if (lists.empty()) throw std::invalid_argument(path + ": no sequence (one sequence of token ids a line)");
  return lists;
}

DetectedSharing detect_sharing(const std::vector<std::vector<int>>& token_ids,
                               const std::function<long long(int readers)>& min_tokens) {
  if (token_ids.empty()) throw std::invalid_argument("detect_sharing: no sequences");
  for (const auto& ids : token_ids) {
    if (ids.size() > 2147483647u) throw std::invalid_argument("detect_sharing: a sequence of more than 2^31 tokens");
  }
  return Builder(token_ids, min_tokens).build();
}

DetectedSharing detect_sharing(const std::vector<std::vector<int>>& token_ids, const AttentionShape& shape,
                               const SharingRates& rates) {
  return detect_sharing(token_ids, [&](int readers) { return min_shared_tokens(shape, readers, rates); });
}

DetectedSharing detect_sharing(const std::vector<std::vector<int>>& token_ids, long long min_tokens) {
  if (min_tokens < 1) throw std::invalid_argument("detect_sharing: min_tokens must be at least 1, got " + std::to_string(min_tokens));
  return detect_sharing(token_ids, [min_tokens](int) { return min_tokens; });
}

}  // namespace hydragen
