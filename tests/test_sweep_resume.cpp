// hydragen-sweep keeps what it did: its CSV read back (csv_rows.hpp), and --resume on the real binary
// (finished points skipped, other commits' measured again, --json from every row of the CSV). Its bad
// input is a table in tests/cli/CMakeLists.txt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sweep/csv_rows.hpp"
#include "sweep/grid.hpp"
#include "sweep/point.hpp"
#include "tool_folder.hpp"

namespace hydragen::sweep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

std::string header() {
  std::ostringstream out;
  write_csv_header(out);
  return out.str();
}

std::string text_of(const Row& row) {
  std::ostringstream out;
  write_csv_row(out, row);
  return out.str();
}

Row row_with_detail(const std::string& status, const std::string& detail) {
  Row r{"NVIDIA H100 80GB HBM3", "abc1234",
        make_point("cuda-hydragen:form=wide", ShapePoint{DType::bf16, 64, 2048, 16}), {}};
  r.m.status = status;
  r.m.detail = detail;
  r.m.median_ms = 1.25;
  r.m.min_ms = 1;
  r.m.max_ms = 2;
  r.m.flops = 1e9;
  r.m.bytes = 1e8;
  r.m.floor_ms = 0.5;
  return r;
}

std::string invalid_argument_of(const std::string& text) {
  try {
    parse_sweep_csv(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "parsed";
}

TEST(SweepCsvRows, ReadsBackWhatTheSweepWritesWithCommasQuotesAndLineBreaks) {
  const Row ok = row_with_detail("ok", "");
  const Row error = row_with_detail("error", "cuda: \"launch\" failed, code 7\nat kernel.cu:12");
  const std::vector<CsvRecord> rows = parse_sweep_csv(header() + text_of(ok) + text_of(error));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], csv_record(ok));
  EXPECT_EQ(rows[1][csv_column("detail")], error.m.detail);
  EXPECT_EQ(rows[1][csv_column("backend")], "cuda-hydragen:form=wide");
  EXPECT_EQ(to_json(csv_columns(), rows[0]), to_json(ok));  // --json from the CSV is --json from the rows
  EXPECT_EQ(to_json(csv_columns(), rows[1]), to_json(error));
}

TEST(SweepCsvRows, EmptyTextAndAHeaderAloneHaveNoRows) {
  EXPECT_TRUE(parse_sweep_csv("").empty());
  EXPECT_TRUE(parse_sweep_csv(header()).empty());
}

TEST(SweepCsvRows, RefusesWhatTheSweepDidNotWriteNamingTheLine) {
  const std::string good = text_of(row_with_detail("ok", ""));
  EXPECT_THAT(invalid_argument_of("device,commit\n"),
              StartsWith("line 1: not hydragen-sweep's CSV header (device,commit,"));
  std::string cut = good;
  cut.pop_back();
  EXPECT_EQ(invalid_argument_of(header() + good + cut), "line 3: no line break at its end (a row cut off mid-write)");
  EXPECT_EQ(invalid_argument_of(header() + "\"x,y\n"), "line 2: a quote that is never closed");
  EXPECT_THAT(invalid_argument_of(header() + "\"a\"b,c\n"), StartsWith("line 2: 'b' after a closing quote"));
  EXPECT_EQ(invalid_argument_of(header() + "a,b\n"), "line 2: 2 fields, the header has 24");
  std::string not_number = good;
  not_number.replace(not_number.find(",64,2048,"), 9, ",6x,2048,");
  EXPECT_EQ(invalid_argument_of(header() + not_number), "line 2: column B: '6x' is not a number");
}

// The real binary, run by the shell in a fresh folder.
class SweepBinary : public testing::ToolFolder {
 protected:
  Run sweep(const std::string& args) const { return run(HYDRAGEN_SWEEP_BIN, args); }
  std::vector<CsvRecord> csv() const { return parse_sweep_csv(read("out.csv")); }
};

const std::string kTiny =
    "--backends cpu-flat --batch 2 --prefix 16 --suffix 4,8 --cpu-replays 1 --csv out.csv --json out.json";

TEST_F(SweepBinary, ResumeSkipsFinishedPointsAndMeasuresOtherCommitsAgain) {
  ASSERT_EQ(sweep(kTiny).exit_code, 0);
  ASSERT_EQ(csv().size(), 2u);

  const Run again = sweep(kTiny + " --resume");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("--resume: skipped 2 points already measured on this machine at "));
  EXPECT_THAT(again.err, HasSubstr("kept 2 rows, 0 of them from another device or commit"));
  EXPECT_THAT(again.err, Not(HasSubstr("[1/")));  // nothing measured
  ASSERT_EQ(csv().size(), 2u);

  // The first row now comes from another commit: its point is measured again, the row stays.
  std::string text = read("out.csv");
  const CsvRecord first = csv()[0];
  const std::size_t at = text.find("," + first[csv_column("commit")] + ",");
  text.replace(at, first[csv_column("commit")].size() + 2, ",0000000,");
  write("out.csv", text);
  const Run third = sweep(kTiny + " --resume");
  EXPECT_EQ(third.exit_code, 0) << third.err;
  EXPECT_THAT(third.err, HasSubstr("skipped 1 points"));
  EXPECT_THAT(third.err, HasSubstr("kept 2 rows, 1 of them from another device or commit"));
  const std::vector<CsvRecord> rows = csv();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][csv_column("commit")], "0000000");
  EXPECT_EQ(rows[2][csv_column("S")], first[csv_column("S")]);
  EXPECT_EQ(rows[2][csv_column("commit")], rows[1][csv_column("commit")]);
  EXPECT_THAT(third.out, MatchesRegex("backend .*\ncpu-flat +shared +bf16 +2 +16 +4 [^\n]*\n"));  // this run's row

  const nlohmann::json json = nlohmann::json::parse(read("out.json"));
  ASSERT_EQ(json.size(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(json[i], to_json(csv_columns(), rows[i]));
}

TEST_F(SweepBinary, TreesAreOwnPointsThatResumeTellsApart) {
  const std::string trees = "--backends cpu-hydragen --batch 4 --prefix 16 --suffix 4 --cpu-replays 1 --csv out.csv";
  ASSERT_EQ(sweep(trees + " --tree prefix,2x8").exit_code, 0);
  std::vector<CsvRecord> rows = csv();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][csv_column("tree")], "prefix");
  EXPECT_EQ(rows[1][csv_column("tree")], "2x8");
  // The floor counts the groups' tokens once: more bytes than the prefix-only tree by 2 x 8 tokens.
  EXPECT_GT(std::stod(rows[1][csv_column("floor_ms")]), std::stod(rows[0][csv_column("floor_ms")]));

  const Run again = sweep(trees + " --tree prefix,2x8,2x8/2x2 --resume");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("skipped 2 points"));
  EXPECT_THAT(again.err, HasSubstr("B=4 P=16 S=4 tree=2x8/2x2: "));
  rows = csv();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][csv_column("tree")], "2x8/2x2");
}

TEST_F(SweepBinary, ATokenFileGivesTheTreeItsSequencesShare) {
  // Three prompts: 40 tokens shared by all, then two of them share 30 more.
  std::string text;
  for (int s = 0; s < 3; ++s) {
    for (int t = 0; t < 40; ++t) text += std::to_string(t) + " ";
    for (int t = 0; t < 30; ++t) text += std::to_string(s == 2 ? 500 + t : 100 + t) + " ";
    text += std::to_string(1000 + s) + "\n";
  }
  write("prompts.txt", text);
  const Run run = sweep("--backends cpu-hydragen --tokens prompts.txt --cpu-replays 1 --csv out.csv");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<CsvRecord> rows = csv();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][csv_column("tree")], "tokens:prompts.txt");
  EXPECT_EQ(rows[0][csv_column("B")], "3");
  EXPECT_EQ(rows[0][csv_column("status")], "ok");
  EXPECT_THAT(run.err, HasSubstr("B=3 P=0 S=0 tree=tokens:prompts.txt: "));
  // Refused --tokens and --tree values: the bad_input table in tests/cli/CMakeLists.txt.
}

// --explain: a block per row, the backend and point on its first line, then the plan's rules (a CPU
// plan decides nothing) or, for a row that did not run, why; --resume appends the rows measured then.
TEST_F(SweepBinary, ExplainWritesEachRowsPlanUnderItsPointAndResumeAppendsTheNewRows) {
  const std::string base = "--backends cpu-flat,reference --dtype bf16 --batch 2 --prefix 16 --cpu-replays 1 --csv out.csv "
                           "--explain plans.txt";
  const Run run = sweep(base + " --suffix 4");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(read("plans.txt"),
              MatchesRegex("== cpu-flat:shared bf16 B=2 P=16 S=4 q_len=1 Hq=8 Hkv=1 D=128 tree=prefix [(][^\n]*[)]: ok\n"
                           "its plan decides nothing: it runs one way\n"
                           "== reference:shared bf16 B=2 P=16 S=4 [^\n]*: unsupported\n"
                           "dtype bf16 [(]the reference computes in fp64[^\n]*\n"));
  const Run again = sweep(base + " --suffix 4,8 --resume");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::string plans = read("plans.txt");
  auto count = [&](const std::string& text) {
    int n = 0;
    for (std::size_t at = plans.find(text); at != std::string::npos; at = plans.find(text, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("\n== "), 3);  // four blocks: S = 4's two, then S = 8's
  EXPECT_EQ(count("== cpu-flat:shared bf16 B=2 P=16 S=4 "), 1);
  EXPECT_EQ(count("== cpu-flat:shared bf16 B=2 P=16 S=8 "), 1);
  EXPECT_EQ(count("== reference:shared bf16 B=2 P=16 S=8 "), 1);
  // Refused --explain values (the same file as --csv, with --points, unwritable): tests/cli/CMakeLists.txt.
}

TEST_F(SweepBinary, ResumeOfAFileCutAfterItsHeaderMeasuresEverything) {
  write("out.csv", header());  // killed while the peaks were measured
  const Run run = sweep(kTiny + " --resume");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(csv().size(), 2u);
  EXPECT_EQ(read("out.csv").find(header(), 1), std::string::npos);  // one header
}

TEST_F(SweepBinary, ResumeRefusesAFileThatIsNotASweepCsvAndLeavesItAlone) {
  write("out.csv", "a,b\n1,2\n");
  const Run run = sweep(kTiny + " --resume");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, MatchesRegex("hydragen-sweep: error: --resume: 'out.csv' line 1: not hydragen-sweep's CSV header "
                                    "[(]device,commit,[^\n]*[)]\n"));
  EXPECT_EQ(read("out.csv"), "a,b\n1,2\n");
  EXPECT_FALSE(fs::exists(dir_ / "out.json"));
}

}  // namespace
}  // namespace hydragen::sweep
