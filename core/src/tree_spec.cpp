#include "hydragen/tree_spec.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace hydragen {

namespace {

// A whole positive (groups) or non-negative (length) decimal number.
int whole_number(std::string_view text, std::string_view spec, const char* what, int least) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < least) {
    throw std::invalid_argument("tree '" + std::string(spec) + "': " + what + " '" + std::string(text) + "' is not " +
                                (least > 0 ? "a positive" : "a non-negative") + " integer");
  }
  return value;
}

}  // namespace

TreeSpec TreeSpec::parse(std::string_view text) {
  TreeSpec spec;
  if (text == "prefix") return spec;
  if (text.empty()) throw std::invalid_argument("tree '': expected prefix or levels like 16x1024 or 4x1024/4x256");
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find('/', begin), text.size());
    const std::string_view level = text.substr(begin, end - begin);
    const std::size_t x = level.find('x');
    if (x == std::string_view::npos) {
      throw std::invalid_argument("tree '" + std::string(text) + "': level '" + std::string(level) +
                                  "' is not GROUPSxLENGTH (prefix, 16x1024 or 4x1024/4x256)");
    }
    spec.levels.push_back({whole_number(level.substr(0, x), text, "group count", 1),
                           whole_number(level.substr(x + 1), text, "length", 0)});
    begin = end + 1;
  }
  return spec;
}

std::string TreeSpec::text() const {
  if (levels.empty()) return "prefix";
  std::string out;
  for (const Level& l : levels) out += (out.empty() ? "" : "/") + std::to_string(l.groups) + "x" + std::to_string(l.length);
  return out;
}

long long TreeSpec::innermost_groups() const {
  long long n = 1;
  for (const Level& l : levels) n = std::min(n * l.groups, 1LL << 40);  // past any batch, never overflowing
  return n;
}

SharingTree TreeSpec::build(int batch, int prefix, int suffix) const {
  const long long groups = innermost_groups();
  if (batch < 1 || batch % groups != 0) {
    throw std::invalid_argument("tree " + text() + " has " + std::to_string(groups) + " innermost groups of equal size: B = " +
                                std::to_string(batch) + " is not a positive multiple of " + std::to_string(groups));
  }
  // Segments level by level: the root, each level's nodes in order, then one leaf per sequence.
  std::vector<int> parents{-1}, lengths{prefix}, leaves;
  std::vector<int> above{0};  // the previous level's segments
  for (const Level& l : levels) {
    std::vector<int> level;
    for (int parent : above) {
      for (int g = 0; g < l.groups; ++g) {
        level.push_back(static_cast<int>(parents.size()));
        parents.push_back(parent);
        lengths.push_back(l.length);
      }
    }
    above = std::move(level);
  }
  const long long per_group = batch / groups;
  for (int s = 0; s < batch; ++s) {
    leaves.push_back(static_cast<int>(parents.size()));
    parents.push_back(above[static_cast<std::size_t>(s / per_group)]);
    lengths.push_back(suffix);
  }
  return SharingTree::from_parents(std::move(parents), std::move(lengths), std::move(leaves));
}

bool TreeSpec::operator==(const TreeSpec& other) const {
  if (levels.size() != other.levels.size()) return false;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    if (levels[i].groups != other.levels[i].groups || levels[i].length != other.levels[i].length) return false;
  }
  return true;
}

}  // namespace hydragen
