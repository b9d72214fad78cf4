// hydragen-diff --random's pure parts: the generator covers what --help promises, is deterministic,
// and every drawn problem's command line parses back to the same problem; the backends and draw space
// the soak chooses. The soak's output and exit codes are in test_diff_cli.cpp (its test backends).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "diff/options.hpp"
#include "diff/problem_from_options.hpp"
#include "diff/random_problem.hpp"
#include "diff/soak.hpp"
#include "hydragen/attention.hpp"
#include "hydragen/reference/reference.hpp"

namespace hydragen::diff {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

constexpr int kDraws = 2000;

Action parse_args(Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"hydragen-diff"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return options.parse(static_cast<int>(argv.size()), argv.data());
}

// Every field a drawn problem sets, compared one by one so a failure names the field.
void expect_same_problem(const Options& a, const Options& b) {
  EXPECT_EQ(a.tree_source, b.tree_source);
  EXPECT_EQ(a.tree, b.tree);
  EXPECT_EQ(a.parents, b.parents);
  EXPECT_EQ(a.lengths, b.lengths);
  EXPECT_EQ(a.leaves, b.leaves);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.q_len, b.q_len);
  EXPECT_EQ(a.q_heads, b.q_heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.storage, b.storage);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.logit_scale, b.logit_scale);  // exactly: the text is the shortest that parses back
  EXPECT_EQ(a.scale, b.scale);
}

TEST(RandomProblem, CoversWhatTheHelpPromises) {
  std::set<int> depths, q_lens, groups, kv_heads, head_dims, lengths, batches;
  std::set<DType> dtypes;
  std::set<Storage> storages;
  std::set<double> logit_scales;
  int parent_after_child = 0, leaves_out_of_order = 0, uneven_fan_out = 0, mqa_grouped = 0;
  for (int i = 0; i < kDraws; ++i) {
    const Options p = draw_problem(1, i, full_draw_space());
    const SharingTree tree = tree_from_options(p, {});
    const AttentionShape shape = shape_from_options(p, tree);
    ASSERT_NO_THROW(validate_problem(shape, tree)) << repro_command(p, "x");
    depths.insert(tree.depth());
    q_lens.insert(p.q_len);
    groups.insert(shape.group_size());
    kv_heads.insert(p.kv_heads);
    if (p.kv_heads == 1 && shape.group_size() > 1) ++mqa_grouped;
    head_dims.insert(p.head_dim);
    dtypes.insert(p.dtype);
    storages.insert(p.storage);
    logit_scales.insert(p.logit_scale);
    batches.insert(tree.num_seqs());
    std::set<std::size_t> fan_outs;
    for (int s = 0; s < tree.num_segments(); ++s) {
      lengths.insert(tree.length(s));
      if (tree.parent(s) > s) ++parent_after_child;
      if (!tree.is_leaf(s)) fan_outs.insert(tree.children(s).size());
    }
    if (fan_outs.size() > 1) ++uneven_fan_out;
    if (!std::is_sorted(p.leaves.begin(), p.leaves.end())) ++leaves_out_of_order;
  }
  EXPECT_THAT(depths, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(q_lens, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(groups, ElementsAre(1, 2, 3, 4, 8, 16, 32));
  EXPECT_THAT(kv_heads, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(head_dims, ElementsAreArray(full_draw_space().head_dims));
  EXPECT_THAT(dtypes, ElementsAre(DType::fp64, DType::fp32, DType::fp16, DType::bf16));
  EXPECT_THAT(storages, ElementsAre(Storage::shared, Storage::redundant));
  EXPECT_EQ(*batches.begin(), 1);
  EXPECT_EQ(*batches.rbegin(), 8);  // the cap, reached
  EXPECT_TRUE(lengths.count(0) && lengths.count(1)) << "no empty or one-token segment";
  EXPECT_GT(*lengths.rbegin(), 128);
  EXPECT_EQ(*logit_scales.begin(), 1e-3);
  EXPECT_EQ(*logit_scales.rbegin(), 1e4);
  EXPECT_GT(logit_scales.size(), 20u);  // and values in between
  EXPECT_GT(mqa_grouped, 0);
  EXPECT_GT(parent_after_child, 0);
  EXPECT_GT(leaves_out_of_order, 0);
  EXPECT_GT(uneven_fan_out, 0);
}

TEST(RandomProblem, ASeedAndIndexNameOneProblem) {
  for (int i = 0; i < 50; ++i) expect_same_problem(draw_problem(7, i, full_draw_space()), draw_problem(7, i, full_draw_space()));
  std::set<std::string> lines;
  for (std::uint64_t seed : {7, 8}) {
    for (int i = 0; i < 50; ++i) lines.insert(repro_command(draw_problem(seed, i, full_draw_space()), "x"));
  }
  EXPECT_EQ(lines.size(), 100u) << "two seeds, or two indices, drew the same problem";
}

TEST(RandomProblem, TheDrawSpaceBoundsDtypeAndHeadDim) {
  const DrawSpace narrow{{DType::bf16}, {64, 128}};
  for (int i = 0; i < 200; ++i) {
    const Options p = draw_problem(2, i, narrow);
    EXPECT_EQ(p.dtype, DType::bf16);
    EXPECT_TRUE(p.head_dim == 64 || p.head_dim == 128) << p.head_dim;
  }
}

TEST(RandomProblem, TheReproLineParsesBackToTheSameProblem) {
  for (int i = 0; i < 300; ++i) {
    const Options drawn = draw_problem(11, i, full_draw_space());
    const std::string line = repro_command(drawn, "cpu-flat");
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;) words.push_back(w);
    ASSERT_EQ(words.front(), "hydragen-diff");
    words.erase(words.begin());
    ASSERT_EQ(words, problem_args(drawn, "cpu-flat")) << "an argument holds a space: " << line;

    Options parsed;
    ASSERT_EQ(parse_args(parsed, words), Action::run) << line;
    EXPECT_EQ(parsed.backend, "cpu-flat");
    expect_same_problem(drawn, parsed);
    const SharingTree a = tree_from_options(drawn, {}), b = tree_from_options(parsed, {});
    EXPECT_EQ(a.describe(), b.describe());
    for (int s = 0; s < a.num_seqs(); ++s) EXPECT_EQ(a.path(s), b.path(s)) << line;
    EXPECT_EQ(shape_from_options(drawn, a).describe(), shape_from_options(parsed, b).describe());
  }
}

TEST(RandomProblem, TheReproLineKeepsPlanOptions) {
  const Options drawn = draw_problem(1, 0, full_draw_space());
  Options parsed;
  ASSERT_EQ(parse_args(parsed, problem_args(drawn, "reference:form=wide")), Action::run);
  EXPECT_EQ(parsed.backend, "reference");
  EXPECT_EQ(parsed.plan_options.text(), "form=wide");
}

TEST(RandomOptions, ParsesTheBackendList) {
  Options o;
  ASSERT_EQ(parse_args(o, {"--random", "20", "--seed", "4", "--backend", "cpu-flat,cuda-hydragen:form=wide"}),
            Action::random);
  EXPECT_EQ(o.random, 20);
  EXPECT_EQ(o.seed, 4u);
  ASSERT_EQ(o.random_backends.size(), 2u);
  EXPECT_EQ(o.random_backends[0].label(), "cpu-flat");
  EXPECT_EQ(o.random_backends[1].label(), "cuda-hydragen:form=wide");

  Options all;
  ASSERT_EQ(parse_args(all, {"--random", "1"}), Action::random);
  EXPECT_TRUE(all.random_backends.empty());
}

TEST(SoakTargets, DefaultIsEveryAvailableBackendButTheReference) {
  BackendRegistry registry;
  register_reference_backends(registry);
  Options o;
  o.random = 1;
  const std::vector<SoakTarget> targets = soak_targets(o, registry);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].label, "reference-decomposed");

  // The draw space narrows to what they take: fp64 only, any head dim.
  const DrawSpace space = soak_space(targets);
  EXPECT_THAT(space.dtypes, ElementsAre(DType::fp64));
  EXPECT_EQ(space.head_dims, full_draw_space().head_dims);
}

}  // namespace
}  // namespace hydragen::diff
