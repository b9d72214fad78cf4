#pragma once
// The problems of hydragen-diff --random, and the command line that reproduces one of them.
// A drawn problem is an Options of the single-problem mode with its tree given segment by segment
// (--parents, --lengths, --leaves), so the soak checks it as that mode does (diff.hpp) and its repro
// line is parsed back by Options::parse: nothing here compares anything.
#include <cstdint>
#include <string>
#include <vector>

#include "diff/options.hpp"
#include "hydragen/dtype.hpp"

namespace hydragen::diff {

// The dtypes and head dims problems are drawn from. Sizes, trees, heads and scales are fixed by the
// generator; these two are what backends disagree on, so the soak narrows them to what its backends take.
struct DrawSpace {
  std::vector<DType> dtypes;
  std::vector<int> head_dims;
};

// Every dtype, and head dims from 16 to 256 including ones that are not powers of two.
DrawSpace full_draw_space();

// Problem `index` of the soak seeded by `seed`: depends on nothing else (not on N, not on the other
// problems), on any platform. Small by design (at most 8 sequences, 48 query heads, 512-token
// segments), a tree of depth 1-4 whose segments and sequences are listed out of tree order.
// The result has tree_source = segments, storage, dtype and an input seed set; backend empty.
Options draw_problem(std::uint64_t seed, int index, const DrawSpace& space);

// The flags of the single-problem command line for `problem` checked on `backend` (a BackendChoice
// label, plan options included), without the program name. Options::parse of them gives back the
// same problem.
std::vector<std::string> problem_args(const Options& problem, const std::string& backend);

// "hydragen-diff " followed by problem_args joined with spaces (no argument contains a space).
std::string repro_command(const Options& problem, const std::string& backend);

}  // namespace hydragen::diff
