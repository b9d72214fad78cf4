#pragma once
// --tree, the same in hydragen-diff and hydragen-sweep: one grammar (hydragen/tree_spec.hpp), one
// help text, one way of naming the flag in its errors. docs/tools.md#trees defines the grammar.
#include <stdexcept>
#include <string>

#include "hydragen/tree_spec.hpp"

namespace hydragen::flags {

inline constexpr const char* kTreeHelp =
    "the sharing tree's shape: prefix (P shared, then each sequence's own S) | flat (nothing shared) | levels "
    "of N equal groups of consecutive sequences, each adding L shared tokens, outermost first: NxL (16x1024), "
    "4x1024/4x256, NxA-B (lengths spread over A..B) | copy:LEVELS (the groups' tokens copied into each "
    "sequence, the prefix alone shared); B a multiple of the groups (docs/tools.md#trees)";

// TreeSpec::parse, its message prefixed with "--tree: ".
inline TreeSpec parse_tree(const std::string& text) {
  try {
    return TreeSpec::parse(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--tree: ") + e.what());
  }
}

}  // namespace hydragen::flags
