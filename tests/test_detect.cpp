// Sharing found from token ids (issue 19, item 1): the detected tree is the compressed radix tree of
// the sequences, cut where a shared run would be too short to pay, and each sequence's path of
// segments spells out its tokens exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hydragen/cost_model.hpp"
#include "hydragen/detect.hpp"
#include "thread_cpu_time.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Ids = std::vector<std::vector<int>>;

// Sequence s's tokens as its path's spans spell them.
std::vector<int> spelled(const DetectedSharing& d, const Ids& ids, int s) {
  std::vector<int> out;
  for (int segment : d.tree.path(s)) {
    const auto& span = d.spans[static_cast<std::size_t>(segment)];
    const auto& source = ids[static_cast<std::size_t>(span.seq)];
    out.insert(out.end(), source.begin() + span.begin, source.begin() + span.end);
  }
  return out;
}

void expect_paths_spell_every_sequence(const DetectedSharing& d, const Ids& ids) {
  ASSERT_EQ(d.tree.num_seqs(), static_cast<int>(ids.size()));
  ASSERT_EQ(d.spans.size(), static_cast<std::size_t>(d.tree.num_segments()));
  for (int s = 0; s < d.tree.num_seqs(); ++s) EXPECT_EQ(spelled(d, ids, s), ids[static_cast<std::size_t>(s)]) << "sequence " << s;
  for (int seg = 0; seg < d.tree.num_segments(); ++seg) {
    const auto& span = d.spans[static_cast<std::size_t>(seg)];
    EXPECT_EQ(span.end - span.begin, d.tree.length(seg));
    // The span's source is one of the sequences below the segment.
    const auto& below = d.tree.seqs_below(seg);
    EXPECT_NE(std::find(below.begin(), below.end(), span.seq), below.end()) << "segment " << seg;
  }
}

// The segment lengths along sequence s's path.
std::vector<int> path_lengths(const DetectedSharing& d, int s) {
  std::vector<int> out;
  for (int segment : d.tree.path(s)) out.push_back(d.tree.length(segment));
  return out;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(ReadTokenLists, TakesIdsSeparatedBySpacesOrCommasOneSequenceALine) {
  const std::string path = write_file("hydragen_tokens_ok.txt", "# a comment\n1 2 3\n\n1,2, 3 4\n  7  \n");
  EXPECT_EQ(read_token_lists(path, 10), (Ids{{1, 2, 3}, {1, 2, 3, 4}, {7}}));
  std::filesystem::remove(path);
}

TEST(ReadTokenLists, RefusesWhatIsNotATokenIdNamingTheLine) {
  const std::string path = write_file("hydragen_tokens_bad.txt", "1 2\n3 x 4\n");
  EXPECT_THAT([&] { read_token_lists(path, 10); }, ThrowsMessage<std::invalid_argument>(HasSubstr("hydragen_tokens_bad.txt:2: 'x'")));
  const std::string big = write_file("hydragen_tokens_big.txt", "1 10\n");
  EXPECT_THAT([&] { read_token_lists(big, 10); }, ThrowsMessage<std::invalid_argument>(HasSubstr(":1: '10' is not a token id in [0, 10)")));
  const std::string empty = write_file("hydragen_tokens_empty.txt", "\n# nothing\n");
  EXPECT_THAT([&] { read_token_lists(empty, 10); }, ThrowsMessage<std::invalid_argument>(HasSubstr("no sequence")));
  EXPECT_THAT([&] { read_token_lists("/nonexistent/tokens.txt", 10); }, ThrowsMessage<std::invalid_argument>(HasSubstr("cannot read")));
  for (const auto& p : {path, big, empty}) std::filesystem::remove(p);
}

TEST(DetectSharing, RecoversAHandBuiltTwoLevelTree) {
  // A B shared by all; C shared by the first two; then D, E and F G of their own.
  const Ids ids = {{1, 2, 3, 4}, {1, 2, 3, 5}, {1, 2, 6, 7}};
  const DetectedSharing d = detect_sharing(ids, 1);
  expect_paths_spell_every_sequence(d, ids);
  EXPECT_EQ(path_lengths(d, 0), (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(path_lengths(d, 1), (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(path_lengths(d, 2), (std::vector<int>{2, 2}));
  EXPECT_EQ(d.tree.path(0)[0], d.tree.path(2)[0]);  // one copy of A B
  EXPECT_EQ(d.tree.path(0)[1], d.tree.path(1)[1]);  // one copy of C
  EXPECT_EQ(d.tree.num_segments(), 5);
  EXPECT_EQ(d.tree.total_tokens(), 2 + 1 + 1 + 1 + 2);
}

TEST(DetectSharing, IdenticalPromptsShareEverythingAndEndInEmptyLeaves) {
  const Ids ids(4, std::vector<int>{9, 8, 7});
  const DetectedSharing d = detect_sharing(ids, 1);
  expect_paths_spell_every_sequence(d, ids);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(path_lengths(d, s), (std::vector<int>{3, 0}));
  EXPECT_EQ(d.tree.total_tokens(), 3);
}

TEST(DetectSharing, OneSequenceIsOneLeafAndAnEmptyPromptAnEmptyOne) {
  const DetectedSharing one = detect_sharing(Ids{{5, 6, 7}}, 1);
  EXPECT_EQ(one.tree.num_segments(), 1);
  EXPECT_EQ(path_lengths(one, 0), (std::vector<int>{3}));
  const Ids ids = {{}, {1, 2}, {1, 2, 3}};
  const DetectedSharing d = detect_sharing(ids, 1);
  expect_paths_spell_every_sequence(d, ids);
  EXPECT_EQ(path_lengths(d, 0), (std::vector<int>{0}));
}

TEST(DetectSharing, NoCommonPrefixAtAllIsFlat) {
  const Ids ids = {{1, 2, 3}, {4, 5}, {6}, {7, 8, 9, 10}};
  const DetectedSharing d = detect_sharing(ids, 1);
  expect_paths_spell_every_sequence(d, ids);
  EXPECT_EQ(d.tree.depth(), 1);
  EXPECT_EQ(d.tree.total_tokens(), 10);
}

TEST(DetectSharing, PromptsThatArePrefixesOfOneAnotherNest) {
  const Ids ids = {{1, 2}, {1}, {1, 2, 3}};
  const DetectedSharing d = detect_sharing(ids, 1);
  expect_paths_spell_every_sequence(d, ids);
  EXPECT_EQ(path_lengths(d, 1), (std::vector<int>{1, 0}));     // [1], then its own empty leaf
  EXPECT_EQ(path_lengths(d, 0), (std::vector<int>{1, 1, 0}));  // [1] [2], then empty
  EXPECT_EQ(path_lengths(d, 2), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(d.tree.total_tokens(), 3);
}

TEST(DetectSharing, ARunTooShortToPayIsCopiedIntoEachSequenceInstead) {
  // Two tokens shared by all, then 5 more shared by the first two: at min 3 only the 7-token run pays.
  const Ids ids = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 9}, {1, 2, 10, 11}};
  const DetectedSharing d = detect_sharing(ids, 3);
  expect_paths_spell_every_sequence(d, ids);
  EXPECT_EQ(path_lengths(d, 0), (std::vector<int>{7, 1}));
  EXPECT_EQ(path_lengths(d, 2), (std::vector<int>{4}));
  EXPECT_EQ(d.tree.total_tokens(), 7 + 1 + 1 + 4);
}

// The H100's rate (device-rates.csv's partials_share: the partials and their merge at half the DRAM rate).
const SharingRates kH100{0.5, "the H100's"};

TEST(DetectSharing, TheCostModelsRuleSharesLongRunsOnly) {
  const AttentionShape shape = make_shape(2, 1, 8, 1, 128, DType::bf16);
  const long long need = min_shared_tokens(shape, 2, kH100);
  // On the H100 (docs/results/h100-v16-2026-11-25/, detect-shared.csv and detect-flat.csv:
  // cuda-hydragen over a shared run against the run copied into each sequence), sharing lost by 1% at
  // 128 tokens between two sequences and 64 among 1024, and won by 5% at 256 and 128.
  EXPECT_GT(need, 128);
  EXPECT_LT(need, 256);
  EXPECT_GT(min_shared_tokens(shape, 1024, kH100), 64);
  EXPECT_LT(min_shared_tokens(shape, 1024, kH100), 128);
  EXPECT_LE(min_shared_tokens(shape, 64, kH100), need);  // more readers: sharing pays sooner
  std::vector<int> shared(static_cast<std::size_t>(need)), shorter(static_cast<std::size_t>(need - 1));
  std::iota(shared.begin(), shared.end(), 0);
  std::iota(shorter.begin(), shorter.end(), 0);
  auto with_tail = [](std::vector<int> v, int t) { v.push_back(t); return v; };
  EXPECT_EQ(detect_sharing(Ids{with_tail(shared, -1), with_tail(shared, -2)}, shape, kH100).tree.depth(), 2);
  EXPECT_EQ(detect_sharing(Ids{with_tail(shorter, -1), with_tail(shorter, -2)}, shape, kH100).tree.depth(), 1);
  EXPECT_THAT([&] { min_shared_tokens(shape, 1, kH100); }, ThrowsMessage<std::invalid_argument>(HasSubstr("at least 2")));
}

TEST(DetectSharing, WithoutAMeasuredRateThePartialsMoveAtTheKvRate) {
  const AttentionShape shape = make_shape(2, 1, 8, 1, 128, DType::bf16);
  const SharingRates rate_free{};
  EXPECT_EQ(rate_free.partials_share, 1.0);
  EXPECT_EQ(rate_free.describe(), "partials at 1 of the K/V DRAM rate (no measured rate)");
  EXPECT_EQ(kH100.describe(), "partials at 0.5 of the K/V DRAM rate (the H100's)");
  // The partials cost half as much as at the H100's rate: runs about half as long are worth sharing.
  EXPECT_EQ(min_shared_tokens(shape, 2, rate_free), (min_shared_tokens(shape, 2, kH100) + 1) / 2);
  EXPECT_EQ(min_shared_tokens(shape, 1024, rate_free), (min_shared_tokens(shape, 1024, kH100) + 1) / 2);
  for (double share : {0.0, -0.5, 1.5}) {
    EXPECT_THAT([&] { min_shared_tokens(shape, 2, SharingRates{share, "a bad file"}); },
                ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("partials_share must be in (0, 1]"), HasSubstr("(a bad file)"))));
  }
}

TEST(DetectSharing, RandomBatchesAreSpelledExactlyInAnyOrder) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    Ids ids;
    for (int s = 0; s < n; ++s) {
      std::vector<int> seq;
      const int len = static_cast<int>(rng() % 9);
      for (int t = 0; t < len; ++t) seq.push_back(static_cast<int>(rng() % 3));  // few symbols: much sharing
      ids.push_back(seq);
    }
    const DetectedSharing d = detect_sharing(ids, 1 + static_cast<long long>(rng() % 3));
    expect_paths_spell_every_sequence(d, ids);
  }
}

TEST(DetectSharing, TenThousandPromptsInWellUnderASecond) {
  // A 2000-token prompt shared by all, 100 problem descriptions of 300-800 tokens, 100 samples each
  // with 20 tokens of their own.
  std::mt19937 rng(5);
  std::vector<int> few_shot(2000);
  for (int& t : few_shot) t = static_cast<int>(rng() % 32000);
  Ids ids;
  for (int p = 0; p < 100; ++p) {
    std::vector<int> problem = few_shot;
    const int len = 300 + static_cast<int>(rng() % 500);
    for (int t = 0; t < len; ++t) problem.push_back(static_cast<int>(rng() % 32000));
    for (int s = 0; s < 100; ++s) {
      std::vector<int> seq = problem;
      for (int t = 0; t < 20; ++t) seq.push_back(static_cast<int>(rng() % 32000));
      ids.push_back(seq);
    }
  }
  std::shuffle(ids.begin(), ids.end(), rng);
  const double t0 = thread_cpu_seconds();
  const DetectedSharing d = detect_sharing(ids, make_shape(10000, 1, 8, 1, 128, DType::bf16), SharingRates{});
  const double seconds = thread_cpu_seconds() - t0;
  EXPECT_LT(seconds, 1.0);  // the bound: a guard against a quadratic build, not a benchmark
  EXPECT_EQ(d.tree.depth(), 3);  // prompt, problem, sample
  EXPECT_EQ(d.tree.num_segments(), 1 + 100 + 10000);
  std::printf("[ detect  ] 10000 prompts of 2320-2820 tokens: %.3f s\n", seconds);
}

TEST(DetectSharing, RefusesAnEmptyBatchAndAMinimumBelowOne) {
  EXPECT_THAT([] { detect_sharing(Ids{}, 1); }, ThrowsMessage<std::invalid_argument>(HasSubstr("no sequences")));
  EXPECT_THAT([] { detect_sharing(Ids{{1}}, 0); }, ThrowsMessage<std::invalid_argument>(HasSubstr("at least 1")));
}

}  // namespace
}  // namespace hydragen
