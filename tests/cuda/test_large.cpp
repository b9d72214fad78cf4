// Paper-scale problems against the fp64 reference, on every element of O and LSE (DESIGN.md
// section 5's rules at the sizes of section 6): the headline point B = 1024, P = 16384, S = 64 (bf16,
// Hq = 8, Hkv = 1, D = 128), two large MHA cases (one with enough leaves for persistent workers), a
// large causal q_len = 4 case with ragged suffixes, two on half a wave of wgmma blocks, one on a
// part per row block and one with the leaves beside persistent wgmma blocks, and two whose scores spread
// 30x (the wgmma kernel's softmax paths).
// Each case's problem and reference are computed once and shared by its backends: cuda-naive,
// cuda-flash with shared and with redundant storage (1024 copies of a 16448-token path: 8.6 GB on
// the GPU), cuda-hydragen (also with narrow_kernel=token_warps, the narrow kernel its auto rule leaves out for
// many short leaves, with leaf_launch=stream and with narrow_product=rows), and cuda-hydragen-cublas (whose prefix at B = 1024 takes two GEMM chunks).
// GPU only: without one every test skips with the reason.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hydragen/backends.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

struct LargeCase {
  std::string name;  // part of the test name
  int q_len, q_heads, kv_heads, head_dim;
  int prefix;
  std::vector<int> suffixes;  // one per sequence
  std::uint64_t seed;
  double q_scale = 1.0;  // make_problem's: the scores' spread

  SharingTree tree() const { return SharingTree::prefix_suffix(prefix, suffixes); }
  AttentionShape shape() const {
    return make_shape(static_cast<int>(suffixes.size()), q_len, q_heads, kv_heads, head_dim, DType::bf16);
  }
};

// Suffix lengths 3..67, every value present (37 and 65 are coprime), in a scrambled order.
std::vector<int> ragged_suffixes(int batch) {
  std::vector<int> lens;
  for (int i = 0; i < batch; ++i) lens.push_back(3 + (i * 37) % 65);
  return lens;
}

const std::vector<LargeCase>& large_cases() {
  static const std::vector<LargeCase> cases = {
      // Few leaves beside a long prefix: cuda-hydragen runs them in the wgmma blocks' leaf warps (rule leaf_layout inside).
      {"paper_B1024_P16384_S64_mqa_hq8_d128", 1, 8, 1, 128, 16384, std::vector<int>(1024, 64), 16384},
      {"mha_B64_P8192_S64_h32_d128", 1, 32, 32, 128, 8192, std::vector<int>(64, 64), 8192},
      // A prefix alone at B = 1024: each 128-row block's two parts run as a cluster of two wgmma blocks that
      // combine their rows on chip (rule part_merge), with no merge kernel.
      {"pairs_B1024_P4096_S0_mqa_hq8_d128", 1, 8, 1, 128, 4096, std::vector<int>(1024, 0), 4096},
      // 512 x 32 one-tile leaves: enough that cuda-hydragen runs them on persistent warps (and with
      // narrow_kernel=token_warps on persistent blocks).
      {"mha_B512_P1024_S64_h32_d64", 1, 32, 32, 64, 1024, std::vector<int>(512, 64), 1024},
      {"causal_q4_B256_P4096_S3to67_gqa4_d64", 4, 8, 2, 64, 4096, ragged_suffixes(256), 4096},
      // Two sequences: a few blocks cut into 32 split parts each, so the merge kernel folds 32 or 33
      // partial rows per query, four warps to a query (the other cases have 1 to 5).
      {"split_B2_P8192_S64_mqa_hq8_d128", 1, 8, 1, 128, 8192, std::vector<int>(2, 64), 2},
      // A prefix longer than one GEMM chunk holds (kMaxChunkTokens): cuda-hydragen-cublas merges three.
      {"long_prefix_B2_P40000_S64_mqa_hq8_d128", 1, 8, 1, 128, 40000, std::vector<int>(2, 64), 40000},
      // A wave of wgmma blocks would cut 256-token parts here: cuda-hydragen runs half a wave, four
      // parts a row block, and the leaves fold the merge (rule wide_target_blocks), at g = 8 and g = 4.
      {"half_wave_B256_P2048_S64_mqa_hq8_d128", 1, 8, 1, 128, 2048, std::vector<int>(256, 64), 2048},
      {"half_wave_B64_P2048_S64_gqa4_d128", 1, 32, 8, 128, 2048, std::vector<int>(64, 64), 64},
      // CodeLlama-13b's TP-8 shard decoding (5 heads, MHA): its one-row leaves stream longer than a
      // 1024-token part computes, so the wgmma launch is one part per row block, 40 blocks, with the
      // leaves beside it on the other SMs as its dependent launch, then the merge (rules wide_target_blocks,
      // chain_leaves).
      {"one_part_B1024_P1024_S3to67_mha_h5_d128", 1, 5, 5, 128, 1024, ragged_suffixes(1024), 1024},
      // The same shard at P = 4096 with 32-token leaves: the leaves on SMs of their own beside persistent
      // wgmma blocks (rule leaf_layout), as their dependent launch (rule chain_leaves), then the merge.
      {"beside_B1024_P4096_S32_mha_h5_d128", 1, 5, 5, 128, 4096, std::vector<int>(1024, 32), 4096},
      // Scores spread 30x: rows' maxima still move by more than 2^8 after the first tile, so the wgmma
      // kernel's 192-token tiles take both softmax paths, the exps against the running max and the
      // exps after the tile's max (kernel-notes: exps-before-max): on whole row blocks, and on a row
      // block's two parts as a cluster.
      {"moving_max_B2048_P8192_S0_mqa_hq8_d128", 1, 8, 1, 128, 8192, std::vector<int>(2048, 0), 2048, 30.0},
      {"moving_max_pairs_B1024_P8192_S0_mqa_hq8_d128", 1, 8, 1, 128, 8192, std::vector<int>(1024, 0), 1024, 30.0},
  };
  return cases;
}

// The problem and its fp64 reference output, computed on first use and kept for the other backends.
struct Expected {
  Problem problem;
  Results reference;
};

const Expected& expected(std::size_t case_index) {
  static std::map<std::size_t, std::unique_ptr<Expected>> cache;
  std::unique_ptr<Expected>& slot = cache[case_index];
  if (!slot) {
    const LargeCase& c = large_cases()[case_index];
    const auto start = std::chrono::steady_clock::now();
    Problem problem = make_problem(c.shape(), c.tree(), c.seed, c.q_scale);
    Results reference = run_backend(backend("reference"), with_dtype(problem, DType::fp64));
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::cout << "[ reference] " << c.name << ": problem and fp64 reference in " << took.count() << " s\n";
    slot.reset(new Expected{std::move(problem), std::move(reference)});
  }
  return *slot;
}

struct LargeParam {
  std::size_t case_index;
  std::string backend;
  Storage storage;
  PlanOptions options = {};

  std::string label() const { return BackendChoice{backend, storage, false, options}.label(); }
};

void PrintTo(const LargeParam& p, std::ostream* os) {
  *os << large_cases()[p.case_index].name << " / " << p.label() << " / " << storage_name(p.storage);
}

std::vector<LargeParam> large_params() {
  std::vector<LargeParam> params;
  for (std::size_t c = 0; c < large_cases().size(); ++c) {
    params.push_back({c, "cuda-naive", Storage::shared});
    params.push_back({c, "cuda-flash", Storage::shared});
    params.push_back({c, "cuda-flash", Storage::redundant});
    params.push_back({c, "cuda-hydragen", Storage::shared});
    params.push_back({c, "cuda-hydragen", Storage::shared, PlanOptions::parse("narrow_kernel=token_warps")});
    // Auto chains the leaves after or beside a wgmma launch (rule chain_leaves: the one-part and beside
    // cases' plans); the side stream they ran on before stays an option.
    params.push_back({c, "cuda-hydragen", Storage::shared, PlanOptions::parse("leaf_launch=stream")});
    // Auto takes the token product for leaves of at most 8 rows that do not fold (rule narrow_product).
    params.push_back({c, "cuda-hydragen", Storage::shared, PlanOptions::parse("narrow_product=rows")});
    params.push_back({c, "cuda-hydragen-cublas", Storage::shared});
  }
  return params;
}

std::string large_name(const ::testing::TestParamInfo<LargeParam>& info) {
  std::string backend = info.param.label();  // e.g. cuda_hydragen_narrow_blocks
  for (char& ch : backend) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return large_cases()[info.param.case_index].name + "__" + backend + "__" + std::string(storage_name(info.param.storage));
}

class LargeProblem : public ::testing::TestWithParam<LargeParam> {};

TEST_P(LargeProblem, MatchesTheFp64ReferenceOnEveryElement) {
  const LargeParam& p = GetParam();
  const AttentionBackend& b = backend(p.backend);
  const std::string unavailable = b.memory().unavailable_reason();
  if (!unavailable.empty()) GTEST_SKIP() << p.backend << " cannot run here: " << unavailable;
  const LargeCase& c = large_cases()[p.case_index];
  const SharingTree tree = c.tree();
  const Support support = b.supports(c.shape(), p.storage == Storage::shared ? tree : tree.flattened());
  ASSERT_TRUE(support.ok) << p.backend << " refuses " << c.shape().describe() << ": " << support.reason;

  const Expected& e = expected(p.case_index);
  const AttentionShape& shape = e.problem.shape;
  const Results out = run_backend(b, e.problem, p.storage, p.options);  // outputs poisoned with NaN first
  const Comparison cmp = compare(out, e.reference, tolerance_for(DType::bf16, logit_bound(e.problem)));
  EXPECT_TRUE(cmp.pass) << shape.describe() << ", " << tree.describe() << ", seed " << c.seed << ", "
                        << storage_name(p.storage) << " storage\n  " << cmp.summary() << "\n  worst O element "
                        << index_name(shape, cmp.worst_index, false) << ": " << cmp.worst_value << " vs "
                        << cmp.worst_reference << "\n  worst LSE element " << index_name(shape, cmp.lse_worst_index, true)
                        << ": " << out.lse[cmp.lse_worst_index] << " vs " << e.reference.lse[cmp.lse_worst_index];
}

INSTANTIATE_TEST_SUITE_P(CudaBackends, LargeProblem, ::testing::ValuesIn(large_params()), large_name);

}  // namespace
}  // namespace hydragen
