// hydragen-sweep's contract with the plots: the CSV schema of DESIGN.md section 7, the JSON form of
// the same rows, and the presets the paper's figures need.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "sweep/grid.hpp"
#include "sweep/point.hpp"

namespace hydragen::sweep {
namespace {

using ::testing::HasSubstr;

const char* const kHeader =
    "device,commit,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,tree,median_ms,min_ms,max_ms,tflops,gbps,floor_ms,"
    "time_over_floor,nominal_share,status,detail,decisions\n";

Row measured_row() {
  Row r{"NVIDIA H100 80GB HBM3", "abc1234", make_point("cuda-flash:redundant", ShapePoint{DType::bf16, 1024, 16384, 64}), {}};
  r.m.median_ms = 2.0;
  r.m.min_ms = 1.5;
  r.m.max_ms = 2.5;
  r.m.flops = 4e12;   // over 2 ms: 2000 TFLOP/s
  r.m.bytes = 6e9;    // over 2 ms: 3000 GB/s
  r.m.floor_ms = 0.5;
  return r;
}

TEST(SweepCsv, HeaderIsTheDesignSchema) {
  std::ostringstream out;
  write_csv_header(out);
  EXPECT_EQ(out.str(), kHeader);
}

TEST(SweepCsv, AMeasuredRowCarriesRatesAndTimeOverFloor) {
  std::ostringstream out;
  write_csv_row(out, measured_row());
  EXPECT_EQ(out.str(),
            "\"NVIDIA H100 80GB HBM3\",abc1234,cuda-flash,redundant,bf16,1024,16384,64,1,8,1,128,prefix,2,1.5,2.5,2000,3000,"
            "0.5,4.000,,ok,\"\",\"\"\n");
}

TEST(SweepCsv, TheDecisionsColumnHoldsThePlansRulesQuoted) {
  Row r = measured_row();
  r.m.decisions = "device=NVIDIA H100 80GB HBM3;leaf_layout=beside;launch_recipe=leaves_beside";
  std::ostringstream out;
  write_csv_row(out, r);
  EXPECT_THAT(out.str(), HasSubstr(",ok,\"\",\"device=NVIDIA H100 80GB HBM3;leaf_layout=beside;launch_recipe=leaves_beside\"\n"));
  EXPECT_EQ(to_json(r)["decisions"], r.m.decisions);
}

TEST(SweepCsv, TheNominalShareIsTheNominalFloorOverTheTime) {
  Row r = measured_row();
  r.m.nominal_ms = 0.4;  // the physical limit's time: the 2 ms run reaches a fifth of it
  std::ostringstream out;
  write_csv_row(out, r);
  EXPECT_THAT(out.str(), HasSubstr(",0.5,4.000,0.200,ok,"));
}

TEST(SweepCsv, TheTreeColumnNamesLevelsOfGroups) {
  Row r = measured_row();
  r.point.shape.tree = TreeSpec::parse("4x1024/4x256");
  std::ostringstream out;
  write_csv_row(out, r);
  EXPECT_THAT(out.str(), HasSubstr(",1024,16384,64,1,8,1,128,4x1024/4x256,2,"));
  EXPECT_EQ(to_json(r)["tree"], "4x1024/4x256");
}

TEST(SweepCsv, AnOomRowLeavesEveryMeasurementEmptyAndQuotesTheDetail) {
  Row r = measured_row();
  r.m.status = "oom";
  r.m.detail = "cuda memory: out of memory allocating 8 bytes (\"free\", 0)";
  std::ostringstream out;
  write_csv_row(out, r);
  EXPECT_EQ(out.str(),
            "\"NVIDIA H100 80GB HBM3\",abc1234,cuda-flash,redundant,bf16,1024,16384,64,1,8,1,128,prefix,,,,,,,,,oom,"
            "\"cuda memory: out of memory allocating 8 bytes (\"\"free\"\", 0)\",\"\"\n");
}

TEST(SweepCsv, NoFloorWithoutPeaks) {
  Row r = measured_row();
  r.m.floor_ms = 0;
  std::ostringstream out;
  write_csv_row(out, r);
  EXPECT_THAT(out.str(), HasSubstr(",2000,3000,,,,ok,"));
}

TEST(SweepJson, SameFieldsWithNumbersAndNulls) {
  const nlohmann::json ok = to_json(measured_row());
  EXPECT_EQ(ok["backend"], "cuda-flash");
  EXPECT_EQ(ok["B"], 1024.0);
  EXPECT_EQ(ok["time_over_floor"], 4.0);
  Row oom = measured_row();
  oom.m.status = "oom";
  EXPECT_TRUE(to_json(oom)["median_ms"].is_null());
  EXPECT_EQ(ok.size(), 24u);
}

TEST(SweepPresets, PaperFig4IsFourBatchPrefixPairsBySuffix0To512) {
  const Grid g = preset("paper-fig4");
  EXPECT_EQ(g.shapes.size(), 4u * 33u);
  std::set<std::pair<int, int>> pairs;
  std::set<int> suffixes;
  for (const ShapePoint& s : g.shapes) {
    pairs.insert({s.batch, s.prefix});
    suffixes.insert(s.suffix);
    EXPECT_EQ(s.dtype, DType::bf16);
    EXPECT_EQ(s.q_heads, 8);
    EXPECT_EQ(s.kv_heads, 1);
    EXPECT_EQ(s.head_dim, 128);
  }
  EXPECT_EQ(pairs, (std::set<std::pair<int, int>>{{512, 1024}, {1024, 2048}, {2048, 4096}, {4096, 8192}}));
  EXPECT_EQ(*suffixes.begin(), 0);
  EXPECT_EQ(*suffixes.rbegin(), 512);
  EXPECT_THAT(g.backends, ::testing::ElementsAre("cuda-flash:redundant", "cuda-flash:shared", "cuda-hydragen"));
}

TEST(SweepPresets, GridIsEightBatchesFivePrefixesFiveSuffixes) {
  const Grid g = preset("grid");
  EXPECT_EQ(g.shapes.size(), 8u * 5u * 5u);
  EXPECT_EQ(g.shapes.front().batch, 32);
  EXPECT_EQ(g.shapes.back().batch, 4096);
  EXPECT_EQ(g.shapes.back().prefix, 16384);
  EXPECT_EQ(g.shapes.back().suffix, 512);
}

TEST(SweepPresets, MhaIsACodeLlama7BLayer) {
  for (const ShapePoint& s : preset("mha").shapes) {
    EXPECT_EQ(s.q_heads, 32);
    EXPECT_EQ(s.kv_heads, 32);
    EXPECT_EQ(s.head_dim, 128);
  }
}

TEST(SweepPresets, ModelsAreCodeLlama13BGqa4AndHeadDim64) {
  std::set<std::tuple<int, int, int>> configs;
  for (const ShapePoint& s : preset("models").shapes) configs.insert({s.q_heads, s.kv_heads, s.head_dim});
  EXPECT_EQ(configs, (std::set<std::tuple<int, int, int>>{{40, 40, 128}, {32, 8, 128}, {32, 32, 64}}));
}

TEST(SweepPresets, CpuPresetUsesTheCpuBackendsInFp32) {
  const Grid g = preset("cpu");
  EXPECT_THAT(g.backends, ::testing::ElementsAre("cpu-flat:shared", "cpu-hydragen"));
  for (const ShapePoint& s : g.shapes) EXPECT_EQ(s.dtype, DType::fp32);
}

TEST(SweepPresets, AnUnknownNameListsThePresets) {
  EXPECT_THAT([] { preset("fig5"); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("paper-fig4, grid, mha, models, spec, trees, fig6, cpu, quick")));
}

TEST(SweepPresets, TreesPutEachMultiLevelTreeBesideItsPrefixOnlyForm) {
  const Grid g = preset("trees");
  ASSERT_EQ(g.shapes.size(), 8u);  // B in 256, 1024 x two trees x (shared, copied)
  for (std::size_t i = 0; i < g.shapes.size(); i += 2) {
    const ShapePoint& tree = g.shapes[i];
    const ShapePoint& flat = g.shapes[i + 1];
    ASSERT_FALSE(tree.tree.copied);
    EXPECT_TRUE(flat.tree.copied);
    EXPECT_EQ(tree.batch, flat.batch);
    EXPECT_EQ(flat.sharing_tree({}).depth(), 2);
    // The same tokens on every sequence's path: the groups' tokens moved into the suffix.
    const SharingTree t = tree.sharing_tree({}), f = flat.sharing_tree({});
    for (int s = 0; s < tree.batch; ++s) ASSERT_EQ(t.path_length(s), f.path_length(s)) << tree.tree.text();
    EXPECT_LT(t.total_tokens(), f.total_tokens()) << "the groups are stored once";
  }
  EXPECT_EQ(g.shapes[0].tree.text(), "16x1024");
  EXPECT_EQ(g.shapes[2].tree.text(), "4x1024/4x256");
}

TEST(SweepPresets, Fig6IsProblemsOf128SamplesUnderATwoShotPrompt) {
  const Grid g = preset("fig6");
  ASSERT_EQ(g.shapes.size(), 30u);  // 5 batch sizes x 3 suffixes x (shared, copied)
  for (const ShapePoint& s : g.shapes) {
    EXPECT_EQ(s.prefix, 2400);
    ASSERT_EQ(s.tree.levels.size(), 1u);
    EXPECT_EQ(s.batch, 128 * s.tree.levels[0].groups);
    EXPECT_EQ(s.tree.levels[0].length, 300);
    EXPECT_EQ(s.tree.levels[0].longest, 800);
  }
}

TEST(SweepPresets, SpecHasSeveralCausalQueriesPerSequenceOverALongPrefix) {
  const Grid g = preset("spec");
  ASSERT_EQ(g.shapes.size(), 27u);  // B x P x q_len, 3 each
  for (const ShapePoint& s : g.shapes) {
    EXPECT_TRUE(s.q_len == 2 || s.q_len == 4 || s.q_len == 8);
    EXPECT_GE(s.suffix, s.q_len - 1) << "the leaf holds the causal queries";
    EXPECT_GE(s.prefix, 4096);
  }
}

TEST(SweepGrid, ProductVariesTheLastListFastest) {
  const std::vector<ShapePoint> p = product({DType::fp32}, {1, 2}, {10}, {0, 5}, {1}, {8}, {1}, {64});
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].batch, 1);
  EXPECT_EQ(p[0].suffix, 0);
  EXPECT_EQ(p[1].suffix, 5);
  EXPECT_EQ(p[2].batch, 2);
}

TEST(SweepGrid, TreesVaryFastest) {
  const std::vector<ShapePoint> p = product({DType::fp32}, {4}, {10}, {5}, {1}, {8}, {1}, {64},
                                            {TreeSpec{}, TreeSpec::parse("2x3"), TreeSpec::parse("flat")});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].tree_text(), "prefix");
  EXPECT_EQ(p[1].tree_text(), "2x3");
  EXPECT_EQ(p[1].sharing_tree({}).depth(), 3);
  EXPECT_EQ(p[2].tree_text(), "flat");
  EXPECT_EQ(p[2].sharing_tree({}).lengths(), (std::vector<int>{15, 15, 15, 15})) << "each sequence its own P + S";
}

TEST(SweepGrid, BackendSpecNamesTheStorage) {
  EXPECT_EQ(make_point("cpu-flat:redundant", {}).storage, Storage::redundant);
  EXPECT_EQ(make_point("cpu-flat", {}).storage, Storage::shared);
  EXPECT_THROW(make_point("cpu-flat:paged", {}), std::invalid_argument);
}

TEST(SweepGrid, BackendSpecCarriesPlanOptionsIntoTheBackendColumn) {
  const Point p = make_point("cuda-hydragen:form=wide:redundant", {});
  EXPECT_EQ(p.backend, "cuda-hydragen");
  EXPECT_EQ(p.storage, Storage::redundant);
  EXPECT_EQ(p.options.text(), "form=wide");
  EXPECT_EQ(p.label(), "cuda-hydragen:form=wide");
  std::ostringstream csv;
  write_csv_row(csv, Row{"dev", "abc", p, {}});
  EXPECT_NE(csv.str().find(",cuda-hydragen:form=wide,redundant,"), std::string::npos) << csv.str();
}

}  // namespace
}  // namespace hydragen::sweep
