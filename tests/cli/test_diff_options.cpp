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
  EXPECT_EQ(o.tree, TreeKind::prefix);
  EXPECT_EQ(o.seed, 0u);
  EXPECT_EQ(o.logit_scale, 1.0);
  EXPECT_FALSE(o.scale.has_value());
}

TEST(DiffOptions, ParsesEveryFlag) {
  const Options o = parsed({"--backend", "reference", "--batch", "5", "--prefix", "7", "--suffix-lens", "1,0,2,3,4",
                            "--q-len", "2", "--q-heads", "16", "--kv-heads", "4", "--head-dim", "64", "--dtype",
                            "fp64", "--storage", "redundant", "--tree", "two-level", "--groups", "3", "--group-len",
                            "9", "--seed", "42", "--logit-scale", "1e4", "--scale", "0.5"});
  EXPECT_EQ(o.batch, 5);
  EXPECT_EQ(o.prefix, 7);
  EXPECT_EQ(o.suffix_lens, (std::vector<int>{1, 0, 2, 3, 4}));
  EXPECT_EQ(o.q_len, 2);
  EXPECT_EQ(o.q_heads, 16);
  EXPECT_EQ(o.kv_heads, 4);
  EXPECT_EQ(o.head_dim, 64);
  EXPECT_EQ(o.dtype, DType::fp64);
  EXPECT_EQ(o.storage, Storage::redundant);
  EXPECT_EQ(o.tree, TreeKind::two_level);
  EXPECT_EQ(o.groups, 3);
  EXPECT_EQ(o.group_len, 9);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.logit_scale, 1e4);
  EXPECT_EQ(o.scale, 0.5);
}

TEST(DiffOptions, CustomTreeListsMayStartWithMinusOne) {
  const Options o = parsed({"--backend", "x", "--tree", "custom", "--parents", "-1,0,0", "--lengths", "16,4,5",
                            "--leaves", "1,2"});
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
                           "--q-heads", "--kv-heads", "--head-dim", "--dtype", "--storage", "--tree", "--groups",
                           "--group-len", "--parents", "--lengths", "--leaves", "--seed", "--logit-scale", "--scale"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
}

TEST(DiffOptions, BackendSpecCarriesPlanOptionsAndMayNameTheStorage) {
  const Options o = parsed({"--backend", "cuda-hydragen:form=wide:kernel=mma"});
  EXPECT_EQ(o.backend, "cuda-hydragen");
  EXPECT_EQ(o.plan_options.text(), "form=wide:kernel=mma");
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
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "radix"}), HasSubstr("--tree: 'radix'"));
  EXPECT_THAT(parse_error({"--backend", "x", "--suffix", "3", "--suffix-lens", "1,2"}), HasSubstr("excludes"));
  EXPECT_THAT(parse_error({"--backend", "x", "--groups", "3"}), HasSubstr("--groups applies only to --tree two-level"));
  EXPECT_THAT(parse_error({"--backend", "x", "--leaves", "1"}), HasSubstr("--leaves applies only to --tree custom"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "custom", "--parents", "-1", "--lengths", "3"}),
              HasSubstr("--tree custom needs --leaves"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "custom", "--prefix", "3", "--parents", "-1", "--lengths", "3",
                           "--leaves", "0"}),
              HasSubstr("--prefix does not apply to --tree custom"));
  EXPECT_THAT(parse_error({"--backend", "x", "--tree", "custom", "--parents", "-1,x", "--lengths", "3", "--leaves", "0"}),
              HasSubstr("--parents: entry 1 ('x')"));
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
  const SharingTree t = tree_from_options(o);
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, 0, 0, 0}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{10, 4, 4, 4}));
  EXPECT_EQ(t.num_seqs(), 3);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(tree_label(o, t), "prefix P=10 S=4 (" + t.describe() + ")");
}

TEST(DiffProblem, RaggedSuffixesIncludingZero) {
  Options o;
  o.batch = 3;
  o.prefix = 1;
  o.suffix_lens = std::vector<int>{64, 0, 17};
  const SharingTree t = tree_from_options(o);
  EXPECT_EQ(t.lengths(), (std::vector<int>{1, 64, 0, 17}));
  EXPECT_EQ(tree_label(o, t), "prefix P=1 S=0..64 (" + t.describe() + ")");
}

TEST(DiffProblem, SuffixLensCountMismatchNamesBoth) {
  Options o;
  o.suffix_lens = std::vector<int>{1, 2, 3};  // the default batch is 4
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--suffix-lens has 3 entries but --batch is 4"));
  o.batch = 2;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--suffix-lens has 3 entries but --batch is 2"));
}

TEST(DiffProblem, NegativeOrZeroSizesNameTheFlag) {
  Options o;
  o.prefix = -1;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--prefix must be >= 0, got -1"));
  o = Options{};
  o.suffix = -2;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--suffix must be >= 0, got -2"));
  o = Options{};
  o.batch = 2;
  o.suffix_lens = std::vector<int>{1, -3};
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--suffix-lens[1] must be >= 0, got -3"));
  o = Options{};
  o.batch = 0;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--batch must be positive, got 0"));
}

TEST(DiffProblem, FlatTreeHasNoSharing) {
  Options o;
  o.tree = TreeKind::flat;
  o.batch = 3;
  o.prefix = 10;
  o.suffix_lens = std::vector<int>{1, 0, 5};
  const SharingTree t = tree_from_options(o);
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{11, 10, 15}));
  EXPECT_EQ(t.depth(), 1);
  EXPECT_EQ(tree_label(o, t), "flat P+S=10+0..5 (" + t.describe() + ")");
}

TEST(DiffProblem, GroupSizesAreNearEqual) {
  EXPECT_EQ(group_sizes(10, 3), (std::vector<int>{4, 3, 3}));
  EXPECT_EQ(group_sizes(11, 3), (std::vector<int>{4, 4, 3}));
  EXPECT_EQ(group_sizes(4, 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(group_sizes(7, 1), (std::vector<int>{7}));
  EXPECT_THAT(error_of([] { group_sizes(3, 4); }), HasSubstr("--groups must be in [1, --batch = 3], got 4"));
  EXPECT_THAT(error_of([] { group_sizes(3, 0); }), HasSubstr("got 0"));
}

TEST(DiffProblem, TwoLevelSplitsTheBatchIntoGroups) {
  Options o;
  o.tree = TreeKind::two_level;
  o.batch = 5;
  o.prefix = 100;
  o.groups = 2;
  o.group_len = 8;
  o.suffix_lens = std::vector<int>{1, 2, 3, 4, 5};
  const SharingTree t = tree_from_options(o);
  // root, group 0 (sequences 0-2), its 3 suffixes, group 1 (sequences 3-4), its 2 suffixes.
  EXPECT_EQ(t.parents(), (std::vector<int>{-1, 0, 1, 1, 1, 0, 5, 5}));
  EXPECT_EQ(t.lengths(), (std::vector<int>{100, 8, 1, 2, 3, 8, 4, 5}));
  EXPECT_EQ(t.seqs_below(1), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.seqs_below(5), (std::vector<int>{3, 4}));
  for (int s = 0; s < 5; ++s) EXPECT_EQ(t.path_length(s), 100 + 8 + (s + 1));
  EXPECT_EQ(t.depth(), 3);
  EXPECT_EQ(tree_label(o, t), "two-level P=100 groups=2x8 S=1..5 (" + t.describe() + ")");

  o.groups = 6;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--groups"));
  o.groups = 2;
  o.group_len = -1;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--group-len must be >= 0, got -1"));
}

TEST(DiffProblem, CustomTreeFromParents) {
  Options o;
  o.tree = TreeKind::custom;
  o.parents = {-1, 0, 0};
  o.lengths = {16, 4, 5};
  o.leaves = {1, 2};
  const SharingTree t = tree_from_options(o);
  EXPECT_EQ(num_seqs(o), 2);  // from --leaves when --batch is not given
  EXPECT_EQ(t.num_seqs(), 2);
  EXPECT_EQ(t.path_length(0), 20);
  EXPECT_EQ(t.path_length(1), 21);
  EXPECT_EQ(tree_label(o, t), "custom (" + t.describe() + ")");
  EXPECT_EQ(shape_from_options(o, t).num_seqs, 2);

  o.batch = 3;
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("--batch is 3 but --leaves names 2 sequences"));
  o.batch = 2;
  EXPECT_NO_THROW(tree_from_options(o));
}

TEST(DiffProblem, CustomTreeErrorsComeFromTheTree) {
  Options o;
  o.tree = TreeKind::custom;
  o.parents = {1, 0, -1};
  o.lengths = {4, 4, 4};
  o.leaves = {2};
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("cycle"));
  o.parents = {-1, 0};
  o.lengths = {4, -4};
  o.leaves = {1};
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("lengths[1] = -4 is negative"));
  o.lengths = {4, 4, 4};
  EXPECT_THAT(error_of([&] { tree_from_options(o); }), HasSubstr("lengths has 3"));
}

TEST(DiffProblem, ShapeTakesScaleOrDefault) {
  Options o;
  o.batch = 2;
  o.head_dim = 64;
  o.q_heads = 8;
  o.kv_heads = 2;
  o.q_len = 3;
  o.dtype = DType::bf16;
  const SharingTree t = tree_from_options(o);
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
