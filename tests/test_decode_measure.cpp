// hydragen-decode's points and rows: the presets reproduce the paper's grids, a point that cannot
// fit is `x` from the memory estimate in well under a second (never attempted), a small point runs,
// and the CSV has the columns DESIGN.md section 7 names (the plots read them); points of one shard
// upload its weights once; on ranks (--gpus), the ranks agree on admission and rank 0's row carries
// the all-reduces' share.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "decode/communicator.hpp"
#include "decode/host_runtime.hpp"
#include "decode/measure.hpp"
#include "decode/presets.hpp"
#include "decode/weight_cache.hpp"
#include "decode_counting_weights.hpp"
#include "thread_cpu_time.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// The fields of one CSV line (no quoting needed here: the lines split are unquoted), empty ones kept.
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields(1);
  for (char c : line) {
    if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

TEST(Presets, Fig3bIsTheFivePrefixesAtB1024InEveryModeWithOneCeiling) {
  const std::vector<DecodePoint> points = preset_points("fig3b");
  std::set<int> prefixes;
  int no_attention = 0;
  for (const DecodePoint& p : points) {
    EXPECT_EQ(p.model, "codellama-13b");
    EXPECT_EQ(p.tp, 8);
    EXPECT_EQ(p.batch, 1024);
    EXPECT_EQ(p.gen_tokens, 128);
    prefixes.insert(p.prompt_len);
    no_attention += p.mode == Mode::no_attention ? 1 : 0;
  }
  EXPECT_EQ(prefixes, (std::set<int>{1024, 2048, 4096, 8192, 16256}));
  EXPECT_EQ(points.size(), 3u * 5u + 1u);
  EXPECT_EQ(no_attention, 1);
}

TEST(Presets, TablesCoverAppendixC1sBatchesAndPrefixesAndFig5ItsDocument) {
  int rows_7b_128 = 0;
  for (const DecodePoint& p : preset_points("tables")) {
    if (p.model == "codellama-7b" && p.gen_tokens == 128 && p.mode == Mode::hydragen) ++rows_7b_128;
    if (p.gen_tokens == 256) {
      EXPECT_NE(p.prompt_len, 16256);  // 16128 + 256 = 16384 positions
    }
  }
  EXPECT_EQ(rows_7b_128, 7 * 5);  // Table 1: B 32..2048, P 1K..16K
  for (const DecodePoint& p : preset_points("fig5")) {
    EXPECT_EQ(p.model, "yi-6b-200k");
    EXPECT_EQ(p.prompt_len, 19947);
    EXPECT_EQ(p.tp, 4);
  }
  EXPECT_THAT([] { preset_points("fig9"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("known: fig3a, fig3b")));
}

TEST(Presets, Fig6IsProblemsOf128SamplesWithDescriptionsSharedCopiedOrReadFlat) {
  const std::vector<DecodePoint> points = preset_points("fig6");
  ASSERT_EQ(points.size(), 15u);  // 1 to 16 problems: two-level, single-level and flat over two-level's pages
  int paged = 0;
  for (const DecodePoint& p : points) {
    if (p.mode == Mode::paged) {
      ++paged;
      EXPECT_EQ(p.groups.rfind("copy:", 0), std::string::npos) << "paged reads the shared groups' pages";
    } else {
      EXPECT_EQ(p.mode, Mode::hydragen);
    }
    EXPECT_EQ(p.model, "codellama-7b");
    EXPECT_EQ(p.prompt_len, 2400);
    EXPECT_EQ(p.gen_tokens, 512);
    const std::string levels = std::to_string(p.batch / 128) + "x300-800";
    EXPECT_TRUE(p.groups == levels || p.groups == "copy:" + levels) << p.groups;
  }
  EXPECT_EQ(paged, 5);
}

TEST(MeasurePoint, GroupsArePrefilledOnceAndTheirTreeSetsTheFloor) {
  const std::unique_ptr<Runtime> runtime = host_runtime();
  DecodePoint p;
  p.model = "smoke";
  p.batch = 4;
  p.prompt_len = 40;
  p.gen_tokens = 8;
  p.groups = "2x10-30";
  MeasureConfig config;
  config.runs = 1;
  config.peaks = {1e12, 1e11};
  const DecodeRow shared = measure_point(*runtime, p, config);
  ASSERT_EQ(shared.status, "ok") << shared.note;
  EXPECT_GT(shared.groups_prefill_ms, 0);
  p.groups = "copy:2x10-30";
  const DecodeRow copied = measure_point(*runtime, p, config);
  ASSERT_EQ(copied.status, "ok") << copied.note;
  EXPECT_GT(copied.attention_floor_ms, shared.attention_floor_ms) << "the copies' bytes are read once per sequence";
  p.groups = "2x10/2x5";
  EXPECT_EQ(measure_point(*runtime, p, config).status, "error");
}

TEST(MeasurePoint, APointThatCannotFitIsXFromTheEstimateInUnderASecond) {
  const std::unique_ptr<Runtime> runtime = host_runtime();
  DecodePoint p;
  p.model = "codellama-34b";  // 34e9 parameters and B x P of KV: petabytes
  p.tp = 1;
  p.mode = Mode::flash;
  p.batch = 4096;
  p.prompt_len = 16256;
  p.gen_tokens = 128;
  const double t0 = thread_cpu_seconds();
  const DecodeRow row = measure_point(*runtime, p, MeasureConfig{});
  EXPECT_LT(thread_cpu_seconds() - t0, 1.0);
  EXPECT_EQ(row.status, "x");
  EXPECT_THAT(row.note, HasSubstr("KV cache"));
  EXPECT_GT(row.memory_gb, 1e4);
}

TEST(MeasurePoint, ASmallPointRunsAndItsRowHasTheColumnsThePlotsRead) {
  const std::unique_ptr<Runtime> runtime = host_runtime();
  DecodePoint p;
  p.model = "smoke";
  p.mode = Mode::hydragen;
  p.batch = 4;
  p.prompt_len = 40;
  p.question_len = 3;
  p.gen_tokens = 8;
  MeasureConfig config;
  config.runs = 2;
  const DecodeRow row = measure_point(*runtime, p, config);
  ASSERT_EQ(row.status, "ok") << row.note;
  EXPECT_GT(row.tokens_per_s, 0);
  EXPECT_NEAR(row.tokens_per_s, 4 * 8 / (row.step_ms * 8 / 1e3), row.tokens_per_s * 1e-6);
  EXPECT_GE(row.answer_ms, row.step_ms * 8);
  EXPECT_GT(row.build_ms, 0);
  EXPECT_GT(row.prefill_ms, 0);
  EXPECT_GT(row.attention_ms, 0);
  const std::vector<std::string> header = split(decode_csv_header().substr(0, decode_csv_header().size() - 1));
  for (const char* column : {"device", "commit", "model", "tp", "gpus", "mode", "backend", "B", "P", "gen_tokens",
                             "tokens_per_s", "step_ms", "attention_floor_ms", "attention_ms", "spread", "status"}) {
    EXPECT_THAT(header, ::testing::Contains(column));
  }
  const std::string line = decode_csv_row("host fp32", "abc", row);
  EXPECT_EQ(split(line.substr(0, line.size() - 1)).size(), header.size());
  DecodeRow x = row;
  x.status = "x";
  x.note = "needs 9 MB, \"1\" free";  // a comma and quotes: one quoted field
  EXPECT_THAT(decode_csv_row("host fp32", "abc", x), ::testing::EndsWith(",x,\"needs 9 MB, \"\"1\"\" free\"\n"));
}

DecodePoint smoke_point(Mode mode, int tp = 1) {
  DecodePoint p;
  p.model = "smoke";
  p.tp = tp;
  p.mode = mode;
  p.batch = 4;
  p.prompt_len = 40;
  p.gen_tokens = 8;
  return p;
}

int tensors_of(const std::string& model) { return static_cast<int>(tensor_specs(model_config(model)).size()); }

// Points measured with a weight cache and weights that count their loads.
class CountedWeights : public ::testing::Test {
 protected:
  CountedWeights() {
    config.runs = 1;
    config.weights = &weights;
  }
  const std::unique_ptr<Runtime> runtime = host_runtime();
  const CountingWeights weights{1};
  MeasureConfig config;
  WeightCache cache{*runtime};
};

TEST_F(CountedWeights, PointsOfOneShardLoadAndUploadItsWeightsOnce) {
  std::vector<DecodeRow> rows;
  for (Mode mode : {Mode::hydragen, Mode::paged, Mode::no_attention}) {
    rows.push_back(measure_point(*runtime, smoke_point(mode), config, nullptr, &cache));
  }
  for (const DecodeRow& row : rows) ASSERT_EQ(row.status, "ok") << row.note;
  EXPECT_FALSE(rows[0].weights_reused);
  EXPECT_TRUE(rows[1].weights_reused);
  EXPECT_TRUE(rows[2].weights_reused);
  EXPECT_EQ(cache.builds(), 1);
  EXPECT_EQ(weights.loads(), tensors_of("smoke"));
  EXPECT_EQ(rows[2].attention_ms, 0) << "a model without attention has none to time";
  // Without a cache, each point makes its own.
  measure_point(*runtime, smoke_point(Mode::hydragen), config);
  EXPECT_EQ(weights.loads(), 2 * tensors_of("smoke"));
}

// Options the decoder refuses end the point before its shard's weights are made.
TEST_F(CountedWeights, ARefusedPointMakesNoWeights) {
  config.backend = "reference";  // fp64 only: the host runtime is fp32
  const DecodeRow row = measure_point(*runtime, smoke_point(Mode::hydragen), config, nullptr, &cache);
  EXPECT_EQ(row.status, "error");
  EXPECT_THAT(row.note, HasSubstr("fp64"));
  EXPECT_EQ(weights.loads(), 0);
  EXPECT_EQ(cache.builds(), 0);
}

// One shard's weights held at a time: a point of another shard (tp, layers, weight seed) releases
// them and builds its own; held weights count as free memory, and an x row's note says so.
TEST(WeightCache, APointOfAnotherShardReplacesTheHeldWeights) {
  const std::unique_ptr<Runtime> runtime = host_runtime();
  MeasureConfig config;
  config.runs = 1;
  WeightCache cache(*runtime);
  auto run = [&](const DecodePoint& p) {
    const DecodeRow row = measure_point(*runtime, p, config, nullptr, &cache);
    EXPECT_EQ(row.status, "ok") << row.note;
    return row.weights_reused;
  };
  EXPECT_FALSE(run(smoke_point(Mode::hydragen)));
  const std::size_t whole = cache.held_bytes();
  EXPECT_TRUE(cache.holds(shard(model_config("smoke"), 1), *random_weights(1), 0));
  EXPECT_FALSE(run(smoke_point(Mode::hydragen, 2)));  // rank 0 of tp 2 alone
  EXPECT_LT(cache.held_bytes(), whole) << "only the tp 2 shard's weights are held";
  EXPECT_FALSE(cache.holds(shard(model_config("smoke"), 1), *random_weights(1), 0));
  EXPECT_TRUE(run(smoke_point(Mode::paged, 2)));
  DecodePoint one_layer = smoke_point(Mode::paged, 2);
  one_layer.layers = 1;
  EXPECT_FALSE(run(one_layer));
  config.seed = 2;
  EXPECT_FALSE(run(one_layer));
  EXPECT_EQ(cache.builds(), 4);
  config.memory_fraction = 0;
  const DecodeRow x = measure_point(*runtime, one_layer, config, nullptr, &cache);
  EXPECT_EQ(x.status, "x");
  EXPECT_THAT(x.note, HasSubstr("MB of it the weights held from an earlier point"));
}

// --gpus: each rank's cache serves its shard to rank 0's run alone and to the ranks' run together.
TEST(MeasurePointRanks, EachRanksCacheServesItsShardToEveryRunOfItsPoints) {
  const CountingWeights weights(1);
  MeasureConfig config;
  config.runs = 1;
  config.weights = &weights;
  std::vector<std::vector<DecodeRow>> rows(2);
  std::vector<int> builds(2);
  run_host_ranks(2, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    WeightCache cache(*runtime);
    const auto rank = static_cast<std::size_t>(comm.rank());
    for (Mode mode : {Mode::hydragen, Mode::paged}) {
      rows[rank].push_back(measure_point_ranks(*runtime, smoke_point(mode, 2), config, comm, &cache));
    }
    builds[rank] = cache.builds();
  });
  for (const auto& rank_rows : rows) {
    for (const DecodeRow& row : rank_rows) ASSERT_EQ(row.status, "ok") << row.note;
  }
  EXPECT_EQ(builds, (std::vector<int>{1, 1}));
  EXPECT_FALSE(rows[0][0].weights_reused) << "rank 0's row tells of its run alone, which built them";
  EXPECT_FALSE(rows[1][0].weights_reused);
  EXPECT_TRUE(rows[0][1].weights_reused);
  EXPECT_TRUE(rows[1][1].weights_reused);
  EXPECT_EQ(weights.loads(), 2 * tensors_of("smoke"));
}

// --gpus on host ranks: rank 0 times its shard alone, then both ranks decode with the all-reduces and
// time one step's collectives replayed alone; rank 0's row says 2 GPUs and the difference.
TEST(MeasurePointRanks, TwoRanksRunATp2PointAndReportTheAllReducesShare) {
  DecodePoint p;
  p.model = "smoke";
  p.tp = 2;
  p.mode = Mode::hydragen;
  p.batch = 4;
  p.prompt_len = 40;
  p.gen_tokens = 8;
  MeasureConfig config;
  config.runs = 2;
  std::vector<DecodeRow> rows(2);
  run_host_ranks(2, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    rows[static_cast<std::size_t>(comm.rank())] = measure_point_ranks(*runtime, p, config, comm);
  });
  for (const DecodeRow& row : rows) ASSERT_EQ(row.status, "ok") << row.note;
  EXPECT_EQ(rows[0].gpus, 2);
  EXPECT_GT(rows[0].tokens_per_s, 0);
  // A difference of two timings (its size and sign the host's noise, threads sharing its cores), set
  // on rank 0 only.
  EXPECT_NE(rows[0].allreduce_derived_ms, 0);
  EXPECT_EQ(rows[1].allreduce_derived_ms, 0);
  EXPECT_EQ(rows[1].gpus, 2);
  for (const DecodeRow& row : rows) {  // measured on each rank
    EXPECT_GT(row.allreduce_ms, 0);
    EXPECT_GT(row.allreduce_busbw_gbps, 0);
  }
}

// A point that fits on one rank but not on another is x on both, before either builds its shard.
TEST(MeasurePointRanks, APointThatDoesNotFitOnOneRankIsXOnAll) {
  DecodePoint p;
  p.model = "smoke";
  p.tp = 2;
  p.batch = 4;
  p.prompt_len = 40;
  p.gen_tokens = 8;
  std::vector<DecodeRow> rows(2);
  run_host_ranks(2, [&](Communicator& comm) {
    const std::unique_ptr<Runtime> runtime = host_runtime();
    MeasureConfig config;
    if (comm.rank() == 1) config.memory_fraction = 0;  // rank 1's memory "full"
    rows[static_cast<std::size_t>(comm.rank())] = measure_point(*runtime, p, config, &comm);
  });
  EXPECT_EQ(rows[0].status, "x");
  EXPECT_THAT(rows[0].note, HasSubstr("another GPU has less"));
  EXPECT_EQ(rows[1].status, "x");
}

}  // namespace
}  // namespace hydragen::decode
