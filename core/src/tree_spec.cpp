#include "hydragen/tree_spec.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>
#include <utility>

namespace hydragen {

namespace {

constexpr std::string_view kCopy = "copy:";
constexpr std::string_view kFlat = "flat";

// The words hydragen-diff's --tree took before the tools shared this grammar, and what to write now.
constexpr std::pair<std::string_view, std::string_view> kRetired[] = {
    {"two-level", "two-level is now GROUPSxLENGTH: 2x64 is 2 groups of 64 shared tokens under the prefix "
                  "(two-level's --groups 2 --group-len 64), and the batch must divide into the groups"},
    {"levels", "levels is gone: write the levels themselves, e.g. 4x1024/4x256 (what --levels took)"},
    {"custom", "custom is gone: give --parents, --lengths and --leaves alone, without --tree (a tree given "
               "segment by segment is not a shape)"},
    {"tokens", "tokens is gone: give --tokens FILE alone, without --tree (a tree found in token ids is not a shape)"},
};

[[noreturn]] void fail(std::string_view spec, const std::string& why) {
  throw std::invalid_argument("tree '" + std::string(spec) + "': " + why);
}

// A whole positive (groups) or non-negative (length) decimal number.
int whole_number(std::string_view text, std::string_view spec, const char* what, int least) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < least) {
    fail(spec, std::string(what) + " '" + std::string(text) + "' is not " + (least > 0 ? "a positive" : "a non-negative") +
                   " integer");
  }
  return value;
}

TreeSpec::Level parse_level(std::string_view level, std::string_view spec) {
  const std::size_t x = level.find('x');
  if (x == std::string_view::npos) {
    fail(spec, "level '" + std::string(level) + "' is not GROUPSxLENGTH or GROUPSxSHORTEST-LONGEST (16x1024, 8x300-800)");
  }
  TreeSpec::Level l;
  l.groups = whole_number(level.substr(0, x), spec, "group count", 1);
  const std::string_view lengths = level.substr(x + 1);
  const std::size_t dash = lengths.find('-', 1);  // a leading '-' is a negative length
  l.length = whole_number(lengths.substr(0, dash), spec, "length", 0);
  l.longest = dash == std::string_view::npos ? l.length : whole_number(lengths.substr(dash + 1), spec, "length", 0);
  if (l.longest < l.length) fail(spec, "lengths " + std::string(lengths) + " run backwards");
  return l;
}

}  // namespace

int TreeSpec::Level::length_of(int child) const {
  // The midpoint of the child-th of `groups` equal bins of [length, longest].
  return length + static_cast<int>((static_cast<long long>(longest - length) * (2 * child + 1)) / (2LL * groups));
}

TreeSpec TreeSpec::parse(std::string_view text) {
  const std::string_view spec = text;
  TreeSpec out;
  if (text == "prefix") return out;
  if (text == kFlat) {
    out.flat = true;
    return out;
  }
  // The word before any ':' too: the sweep's tree column writes a detected tree as tokens:FILE.
  for (const auto& [word, instead] : kRetired) {
    if (text.substr(0, text.find(':')) == word) fail(spec, std::string(instead));
  }
  if (text.substr(0, kCopy.size()) == kCopy) {
    out.copied = true;
    text.remove_prefix(kCopy.size());
  }
  if (text.empty() || text[0] < '0' || text[0] > '9') {  // a word, not levels
    fail(spec, "expected prefix, flat, or levels like 16x1024, 4x1024/4x256, 8x300-800 (copy: before them to copy them)");
  }
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find('/', begin), text.size());
    out.levels.push_back(parse_level(text.substr(begin, end - begin), spec));
    begin = end + 1;
  }
  return out;
}

std::string TreeSpec::text() const {
  if (flat) return std::string(kFlat);
  if (levels.empty()) return "prefix";
  std::string out = copied ? std::string(kCopy) : "";
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const Level& l = levels[i];
    out += (i ? "/" : "") + std::to_string(l.groups) + "x" + std::to_string(l.length);
    if (l.longest != l.length) out += "-" + std::to_string(l.longest);
  }
  return out;
}

long long TreeSpec::innermost_groups() const {
  long long n = 1;
  for (const Level& l : levels) n = std::min(n * l.groups, 1LL << 40);  // past any batch, never overflowing
  return n;
}

void TreeSpec::check_batch(int batch) const {
  const long long groups = innermost_groups();
  if (batch < 1 || batch % groups != 0) {
    throw std::invalid_argument("tree " + text() + " splits the batch into " + std::to_string(groups) +
                                " equal groups of consecutive sequences: B = " + std::to_string(batch) +
                                " is not a positive multiple of " + std::to_string(groups));
  }
}

SharingTree TreeSpec::build(int batch, int prefix, int suffix) const {
  check_batch(batch);  // before a vector of `batch` entries
  return build(prefix, std::vector<int>(static_cast<std::size_t>(batch), suffix));
}

SharingTree TreeSpec::build(int prefix, const std::vector<int>& suffixes) const {
  const int batch = static_cast<int>(suffixes.size());
  check_batch(batch);
  const long long groups = innermost_groups();
  if (flat) {
    std::vector<int> lengths;
    for (int s : suffixes) {
      if (static_cast<long long>(prefix) + s > std::numeric_limits<int>::max()) {
        throw std::invalid_argument("tree flat: P + S = " + std::to_string(prefix) + " + " + std::to_string(s) + " exceeds int");
      }
      lengths.push_back(prefix + s);
    }
    return SharingTree::flat(lengths);
  }
  // Segments level by level: the root, each level's nodes in order, then one leaf per sequence.
  std::vector<int> parents{-1}, lengths{prefix};
  std::vector<int> above{0}, above_tokens{0};  // the previous level's segments, and tokens below the root on their paths
  for (const Level& l : levels) {
    std::vector<int> level, level_tokens;
    for (std::size_t a = 0; a < above.size(); ++a) {
      for (int g = 0; g < l.groups; ++g) {
        level.push_back(static_cast<int>(parents.size()));
        level_tokens.push_back(above_tokens[a] + l.length_of(g));
        parents.push_back(above[a]);
        lengths.push_back(l.length_of(g));
      }
    }
    above = std::move(level);
    above_tokens = std::move(level_tokens);
  }
  if (copied) {  // the groups' tokens move into the leaves: prefix + suffix
    std::vector<int> own;
    for (int s = 0; s < batch; ++s) {
      own.push_back(above_tokens[static_cast<std::size_t>(s / (batch / groups))] + suffixes[static_cast<std::size_t>(s)]);
    }
    return SharingTree::prefix_suffix(prefix, own);
  }
  std::vector<int> leaves;
  for (int s = 0; s < batch; ++s) {
    leaves.push_back(static_cast<int>(parents.size()));
    parents.push_back(above[static_cast<std::size_t>(s / (batch / groups))]);
    lengths.push_back(suffixes[static_cast<std::size_t>(s)]);
  }
  return SharingTree::from_parents(std::move(parents), std::move(lengths), std::move(leaves));
}

bool TreeSpec::operator==(const TreeSpec& other) const {
  if (flat != other.flat || copied != other.copied || levels.size() != other.levels.size()) return false;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const Level &a = levels[i], &b = other.levels[i];
    if (a.groups != b.groups || a.length != b.length || a.longest != b.longest) return false;
  }
  return true;
}

}  // namespace hydragen
