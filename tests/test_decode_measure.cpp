// hydragen-decode's points and rows: the presets reproduce the paper's grids, a point that cannot
// fit is `x` from the memory estimate in well under a second (never attempted), a small point runs,
// and the CSV has the columns DESIGN.md section 7 names (the plots read them); on ranks (--gpus), the
// ranks agree on admission and rank 0's row carries the all-reduces' share.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "decode/communicator.hpp"
#include "decode/host_runtime.hpp"
#include "decode/measure.hpp"
#include "decode/presets.hpp"

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
  const auto t0 = std::chrono::steady_clock::now();
  const DecodeRow row = measure_point(*runtime, p, MeasureConfig{});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
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
  const std::vector<std::string> header = split(decode_csv_header().substr(0, decode_csv_header().size() - 1));
  for (const char* column : {"device", "commit", "model", "tp", "gpus", "mode", "backend", "B", "P", "gen_tokens",
                             "tokens_per_s", "step_ms", "attention_floor_ms", "spread", "status"}) {
    EXPECT_THAT(header, ::testing::Contains(column));
  }
  const std::string line = decode_csv_row("host fp32", "abc", row);
  EXPECT_EQ(split(line.substr(0, line.size() - 1)).size(), header.size());
  DecodeRow x = row;
  x.status = "x";
  x.note = "needs 9 MB, \"1\" free";  // a comma and quotes: one quoted field
  EXPECT_THAT(decode_csv_row("host fp32", "abc", x), ::testing::EndsWith(",x,\"needs 9 MB, \"\"1\"\" free\"\n"));
}

// --gpus on host ranks: rank 0 times its shard alone, then both ranks decode with the all-reduces;
// rank 0's row says 2 GPUs and the difference.
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
  EXPECT_NE(rows[0].allreduce_ms, 0);
  EXPECT_EQ(rows[1].allreduce_ms, 0);
  EXPECT_EQ(rows[1].gpus, 2);
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
