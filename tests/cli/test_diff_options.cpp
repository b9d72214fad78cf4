// hydragen-diff's pure parts: option parsing and the problem (tree, shape) built from the options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "diff/options.hpp"
#include "diff/problem_from_options.hpp"

namespace hydragen::diff {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The message of the std::invalid_argument that f throws; fails the test if it throws nothing.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

Action parse_into(Options& options, std::vector<std::string> args) {
  std::vector<const char*> argv{"hydragen-diff"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return options.parse(static_cast<int>(argv.size()), argv.data());
}

Options parsed(std::vector<std::string> args) {
  Options options;
  EXPECT_EQ(parse_into(options, std::move(args)), Action::run);
  return options;
}

std::string parse_error(std::vector<std::string> args) {
  return error_of([&] {
    Options options;
    parse_into(options, std::move(args));
  });
}

// ---- parsing ------------------------------------------------------------------------------------

TEST(DiffOptions, DefaultsMatchTheContract) {
  const Options o = parsed({"--backend", "cpu-hydragen"});
  EXPECT_EQ(o.backend, "cpu-hydragen");
  EXPECT_FALSE(o.batch.has_value());
  EXPECT_EQ(num_seqs(o), 4);
  EXPECT_EQ(o.prefix, 256);
  EXPECT_EQ(o.suffix, 32);
  EXPECT_FALSE(o.suffix_lens.has_value());
  EXPECT_EQ(o.q_len, 1);
  EXPECT_EQ(o.q_heads, 8);
  EXPECT_EQ(o.kv_heads, 1);
  EXPECT_EQ(o.head_dim, 128);
  EXPECT_EQ(o.dtype, DType::fp32);
  EXPECT_EQ(o.storage, Storage::shared);
  EXPECT_EQ(o.tree_source, TreeSource::shape);
  EXPECT_EQ(o.tree.text(), "prefix");
  EXPECT_EQ(o.seed, 0u);
  EXPECT_EQ(o.logit_scale, 1.0);
  EXPECT_FALSE(o.scale.has_value());
}

TEST(DiffOptions, ParsesEveryFlag) {
  const Options o = parsed({"--backend", "reference", "--batch", "5", "--prefix", "7", "--suffix-lens", "1,0,2,3,4",
                            "--q-len", "2", "--q-heads", "16", "--kv-heads", "4", "--head-dim", "64", "--dtype",
                            "fp64", "--storage", "redundant", "--tree", "5x9", "--seed", "42", "--logit-scale", "1e4",
                            "--scale", "0.5"});
  EXPECT_EQ(o.batch, 5);
  EXPECT_EQ(o.prefix, 7);
  EXPECT_EQ(o.suffix_lens, (std::vector<int>{1, 0, 2, 3, 4}));
  EXPECT_EQ(o.q_len, 2);
  EXPECT_EQ(o.q_heads, 16);
  EXPECT_EQ(o.kv_heads, 4);
  EXPECT_EQ(o.head_dim, 64);
  EXPECT_EQ(o.dtype, DType::fp64);
  EXPECT_EQ(o.storage, Storage::redundant);
  EXPECT_EQ(o.tree, TreeSpec::parse("5x9"));
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.logit_scale, 1e4);
  EXPECT_EQ(o.scale, 0.5);
}

TEST(DiffOptions, ParentsLengthsAndLeavesGiveTheTreeSegmentBySegment) {
  const Options o = parsed({"--backend", "x", "--parents", "-1,0,0", "--lengths", "16,4,5", "--leaves", "1,2"});
  EXPECT_EQ(o.tree_source, TreeSource::segments);
  EXPECT_EQ(o.parents, (std::vector<int>{-1, 0, 0}));
  EXPECT_EQ(o.lengths, (std::vector<int>{16, 4, 5}));
  EXPECT_EQ(o.leaves, (std::vector<int>{1, 2}));
}

TEST(DiffOptions, ARepeatedFlagIsRefused) {
  EXPECT_THAT(parse_error({"--backend", "a", "--q-heads", "4", "--q-heads", "6"}), HasSubstr("--q-heads is given twice"));
  EXPECT_THAT(parse_error({"--list", "--list", "--list"}), HasSubstr("--list is given 3 times"));
}

TEST(DiffOptions, HelpAndListNeedNoBackend) {
  Options help, list;
  EXPECT_EQ(parse_into(help, {"--help"}), Action::help);
  EXPECT_EQ(parse_into(list, {"--list"}), Action::list);
  const std::string usage = Options::usage();
  for (const char* flag : {"--backend", "--list", "--batch", "--prefix", "--suffix", "--suffix-lens", "--q-len",
                           "--q-heads", "--kv-heads", "--head-dim", "--dtype", "--storage", "--tree", "--parents",
                           "--lengths", "--leaves", "--tokens", "--seed", "--logit-scale", "--scale"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_THAT(usage, HasSubstr("docs/tools.md#trees"));
  for (const char* retired : {"--groups", "--group-len", "--levels"}) EXPECT_THAT(usage, Not(HasSubstr(retired)));
}

TEST(DiffOptions, BackendSpecCarriesPlanOptionsAndMayNameTheStorage) {
  const Options o = parsed({"--backend", "cuda-hydragen:form=wide:wide_kernel=mma64"});
  EXPECT_EQ(o.backend, "cuda-hydragen");
  EXPECT_EQ(o.plan_options.text(), "form=wide:wide_kernel=mma64");
  EXPECT_EQ(o.storage, Storage::shared);
  EXPECT_EQ(parsed({"--backend", "cpu-flat:redundant"}).storage, Storage::redundant);
  EXPECT_EQ(parsed({"--backend", "cpu-flat", "--storage", "redundant"}).storage, Storage::redundant);
  EXPECT_THAT(parse_error({"--backend", "cpu-flat:shared", "--storage", "redundant"}),
              HasSubstr("--storage conflicts with the storage named in --backend cpu-flat:shared"));
  EXPECT_THAT(parse_error({"--backend", "cpu-flat:wide"}), HasSubstr("'wide' is neither a storage"));
}

TEST(DiffOptions, BadUsageNamesTheFlag) {
  EXPECT_THAT(parse_error({}), HasSubstr("--backend NAME is required"));
  EXPECT_THAT(parse_error({"--backend", "x", "--bogus"}), HasSubstr("--bogus"));
  EXPECT_THAT(parse_error({"--backend", "x", "--batch", "abc"}), HasSubstr("--batch"));
  EXPECT_THAT(parse_error({"--backend", "x", "--dtype", "fp8"}), HasSubstr("'fp8'"));
  EXPECT_THAT(parse_error({"--backend", "x", "--storage", "paged"}), HasSubstr("'paged'"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "radix"}),
              HasSubstr("--tree: tree 'radix': expected prefix, flat, or levels like 16x1024"));
  EXPECT_THAT(parse_error({"--backend", "x", "--suffix", "3", "--suffix-lens", "1,2"}), HasSubstr("excludes"));
}

TEST(DiffOptions, TheSegmentsAndTheTokensAreFlagsOfTheirOwnInsteadOfTree) {
  EXPECT_EQ(parsed({"--backend", "x", "--tokens", "t.txt"}).tree_source, TreeSource::tokens);
  const std::vector<std::string> segments = {"--parents", "-1", "--lengths", "3", "--leaves", "0"};
  auto with_segments = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--backend", "x"});
    args.insert(args.end(), segments.begin(), segments.end());
    return args;
  };
  EXPECT_THAT(parse_error(with_segments({"--tree", "2x4"})),
              HasSubstr("--tree does not apply with --parents, --lengths and --leaves (they give every segment)"));
  EXPECT_THAT(parse_error(with_segments({"--prefix", "3"})),
              HasSubstr("--prefix does not apply with --parents, --lengths and --leaves"));
  EXPECT_THAT(parse_error(with_segments({"--tokens", "t.txt"})),
              HasSubstr("--tokens does not apply with --parents, --lengths and --leaves"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "2x4", "--tokens", "t.txt"}),
              HasSubstr("--tree does not apply with --tokens (the file gives every sequence)"));
  EXPECT_THAT(parse_error({"--backend", "x", "--suffix", "2", "--tokens", "t.txt"}),
              HasSubstr("--suffix does not apply with --tokens"));
  EXPECT_THAT(parse_error({"--backend", "x", "--leaves", "1"}), HasSubstr("a tree given segment by segment needs --parents"));
  EXPECT_THAT(parse_error({"--backend", "x", "--parents", "-1", "--lengths", "3"}),
              HasSubstr("a tree given segment by segment needs --leaves"));
  EXPECT_THAT(parse_error({"--backend", "x", "--parents", "-1,x", "--lengths", "3", "--leaves", "0"}),
              HasSubstr("--parents: entry 1 ('x')"));
}

// --tree's words and flags before the tools shared one grammar: each refused with what to write now.
TEST(DiffOptions, TheOldTreeWordsAndFlagsSayWhatToWriteInstead) {
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "two-level", "--groups", "3", "--group-len", "32"}),
              HasSubstr("--tree two-level --groups 3 --group-len 32 is now --tree 3x32 (3 groups of 32 shared tokens)"));
  EXPECT_THAT(parse_error({"--backend", "x", "--groups", "3"}), HasSubstr("is now --tree 3x64"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "two-level"}),
              HasSubstr("--tree: tree 'two-level': two-level is now GROUPSxLENGTH: 2x64 is 2 groups of 64 shared tokens"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "levels", "--levels", "4x1024/4x256"}),
              HasSubstr("--levels is gone: --tree levels --levels 4x1024/4x256 is now --tree 4x1024/4x256"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "levels"}), HasSubstr("--tree: tree 'levels': levels is gone"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "custom", "--parents", "-1", "--lengths", "3", "--leaves", "0"}),
              HasSubstr("--tree: tree 'custom': custom is gone: give --parents, --lengths and --leaves alone"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "tokens", "--tokens", "t.txt"}),
              HasSubstr("--tree: tree 'tokens': tokens is gone: give --tokens FILE alone"));
  EXPECT_THAT(parse_error({"--random", "3", "--groups", "2"}), HasSubstr("--groups and --group-len are gone"));
}

TEST(DiffOptions, ParseIntList) {
  EXPECT_EQ(parse_int_list("--f", "1, 2 ,3"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parse_int_list("--f", "-1"), (std::vector<int>{-1}));
  EXPECT_EQ(parse_int_list("--f", ""), (std::vector<int>{}));
  EXPECT_THAT(error_of([] { parse_int_list("--f", "1,,2"); }), HasSubstr("--f: entry 1 ('')"));
  EXPECT_THAT(error_of([] { parse_int_list("--f", "1,2,"); }), HasSubstr("entry 2"));
  EXPECT_THAT(error_of([] { parse_int_list("--f", "1.5"); }), HasSubstr("'1.5'"));
  EXPECT_THAT(error_of([] { parse_int_list("--f", "99999999999"); }), HasSubstr("'99999999999'"));
}

// ---- the problem built from the options ----------------------------------------------------------

TEST(DiffProblem, PrefixTreeIsPrefixSuffix) {
  Options o;
  o.batch = 3;
  o.prefix = 10;
  o.suffix = 4;
  const SharingTree t = tree_from_options(o, {});
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, 0, 0, 0}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{10, 4, 4, 4}));
  EXPECT_EQ(t.num_seqs(), 3);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(tree_label(o, t, {}), "prefix P=10 S=4 (" + t.describe() + ")");
}

TEST(DiffProblem, RaggedSuffixesIncludingZero) {
  Options o;
  o.batch = 3;
  o.prefix = 1;
  o.suffix_lens = std::vector<int>{64, 0, 17};
  const SharingTree t = tree_from_options(o, {});
  EXPECT_EQ(t.lengths(), (std::vector<int>{1, 64, 0, 17}));
  EXPECT_EQ(tree_label(o, t, {}), "prefix P=1 S=0..64 (" + t.describe() + ")");
}

TEST(DiffProblem, SuffixLensCountMismatchNamesBoth) {
  Options o;
  o.suffix_lens = std::vector<int>{1, 2, 3};  // the default batch is 4
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--suffix-lens has 3 entries but --batch is 4"));
  o.batch = 2;
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--suffix-lens has 3 entries but --batch is 2"));
}

TEST(DiffProblem, NegativeOrZeroSizesNameTheFlag) {
  Options o;
  o.prefix = -1;
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--prefix must be >= 0, got -1"));
  o = Options{};
  o.suffix = -2;
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--suffix must be >= 0, got -2"));
  o = Options{};
  o.batch = 2;
  o.suffix_lens = std::vector<int>{1, -3};
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--suffix-lens[1] must be >= 0, got -3"));
  o = Options{};
  o.batch = 0;
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--batch must be positive, got 0"));
}

TEST(DiffProblem, FlatTreeHasNoSharing) {
  Options o;
  o.tree = TreeSpec::parse("flat");
  o.batch = 3;
  o.prefix = 10;
  o.suffix_lens = std::vector<int>{1, 0, 5};
  const SharingTree t = tree_from_options(o, {});
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{11, 10, 15}));
  EXPECT_EQ(t.depth(), 1);
  EXPECT_EQ(tree_label(o, t, {}), "flat P=10 S=0..5 (" + t.describe() + ")");
  o.prefix = 2147483647;
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--tree: tree flat: P + S = 2147483647 + 1 exceeds int"));
}

TEST(DiffProblem, LevelsSplitTheBatchIntoEqualGroupsOfConsecutiveSequences) {
  Options o;
  o.tree = TreeSpec::parse("2x8");
  o.batch = 6;
  o.prefix = 100;
  o.suffix_lens = std::vector<int>{1, 2, 3, 4, 5, 6};
  const SharingTree t = tree_from_options(o, {});
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{100, 8, 8, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.seqs_below(1), (std::vector<int>{0, 1, 2}));
  for (int s = 0; s < 6; ++s) EXPECT_EQ(t.path_length(s), 100 + 8 + (s + 1));
  EXPECT_EQ(tree_label(o, t, {}), "2x8 P=100 S=1..6 (" + t.describe() + ")");

  o.batch = 5;
  o.suffix_lens = std::vector<int>{1, 2, 3, 4, 5};
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }),
              HasSubstr("--tree: tree 2x8 splits the batch into 2 equal groups of consecutive sequences: B = 5 is not "
                        "a positive multiple of 2"));
}

TEST(DiffProblem, TreeFromParents) {
  Options o;
  o.tree_source = TreeSource::segments;
  o.parents = {-1, 0, 0};
  o.lengths = {16, 4, 5};
  o.leaves = {1, 2};
  const SharingTree t = tree_from_options(o, {});
  EXPECT_EQ(num_seqs(o), 2);  // from --leaves when --batch is not given
  EXPECT_EQ(t.num_seqs(), 2);
  EXPECT_EQ(t.path_length(0), 20);
  EXPECT_EQ(t.path_length(1), 21);
  EXPECT_EQ(tree_label(o, t, {}), "segments (" + t.describe() + ")");
  EXPECT_EQ(shape_from_options(o, t).num_seqs, 2);

  o.batch = 3;
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("--batch is 3 but --leaves names 2 sequences"));
  o.batch = 2;
  EXPECT_NO_THROW(tree_from_options(o, {}));
}

TEST(DiffProblem, TreeFromParentsErrorsComeFromTheTree) {
  Options o;
  o.tree_source = TreeSource::segments;
  o.parents = {1, 0, -1};
  o.lengths = {4, 4, 4};
  o.leaves = {2};
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("cycle"));
  o.parents = {-1, 0};
  o.lengths = {4, -4};
  o.leaves = {1};
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("lengths[1] = -4 is negative"));
  o.lengths = {4, 4, 4};
  EXPECT_THAT(error_of([&] { tree_from_options(o, {}); }), HasSubstr("lengths has 3"));
}

TEST(DiffProblem, ShapeTakesScaleOrDefault) {
  Options o;
  o.batch = 2;
  o.head_dim = 64;
  o.q_heads = 8;
  o.kv_heads = 2;
  o.q_len = 3;
  o.dtype = DType::bf16;
  const SharingTree t = tree_from_options(o, {});
  AttentionShape s = shape_from_options(o, t);
  EXPECT_EQ(s.num_seqs, 2);
  EXPECT_EQ(s.q_len, 3);
  EXPECT_EQ(s.q_heads, 8);
  EXPECT_EQ(s.kv_heads, 2);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.dtype, DType::bf16);
  EXPECT_FLOAT_EQ(s.scale, 0.125f);
  o.scale = 0.25;
  s = shape_from_options(o, t);
  EXPECT_FLOAT_EQ(s.scale, 0.25f);
}

}  // namespace
}  // namespace hydragen::diff
