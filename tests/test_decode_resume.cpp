// hydragen-decode keeps what it did: its CSV read back (resume.hpp), and --resume on the real binary
// (points done here at this commit skipped, the rest appended).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "decode/measure.hpp"
#include "decode/resume.hpp"
#include "tool_folder.hpp"

namespace hydragen::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

DecodeRow row_of(Mode mode, int batch, const std::string& backend, const std::string& note) {
  DecodeRow r;
  r.point.model = "smoke";
  r.point.mode = mode;
  r.point.batch = batch;
  r.point.prompt_len = 32;
  r.point.gen_tokens = 8;
  r.backend = backend;
  r.note = note;
  return r;
}

std::string invalid_argument_of(const std::string& text) {
  try {
    read_resumed(text, "host fp32", "abc1234");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "parsed";
}

TEST(DecodeResume, FindsThePointsOfThisDeviceAndCommitByTheBackendTheirRowsName) {
  const DecodeRow hydragen = row_of(Mode::hydragen, 4, "cpu-hydragen", "a note, \"quoted\"\nover two lines");
  const DecodeRow ceiling = row_of(Mode::no_attention, 4, "none", "");
  const std::string text = decode_csv_header() + decode_csv_row("host fp32", "abc1234", hydragen) +
                           decode_csv_row("host fp32", "abc1234", ceiling) + decode_csv_row("cuda bf16", "abc1234", hydragen) +
                           decode_csv_row("host fp32", "0000000", hydragen);
  const Resumed resumed = read_resumed(text, "host fp32", "abc1234");
  EXPECT_TRUE(resumed.has_header);
  EXPECT_EQ(resumed.elsewhere, 2u);
  EXPECT_EQ(resumed.done.size(), 2u);
  EXPECT_EQ(resumed.done.count(point_key(hydragen.point, 1, "cpu-hydragen")), 1u);
  EXPECT_EQ(resumed.done.count(point_key(ceiling.point, 1, "none")), 1u);
  EXPECT_EQ(resumed.done.count(point_key(hydragen.point, 1, "cpu-flat")), 0u) << "another backend";
  EXPECT_EQ(resumed.done.count(point_key(hydragen.point, 2, "cpu-hydragen")), 0u) << "on two ranks";
  DecodePoint other = hydragen.point;
  other.layers = 1;
  EXPECT_EQ(resumed.done.count(point_key(other, 1, "cpu-hydragen")), 0u) << "fewer layers";
  other = hydragen.point;
  other.layers = model_config("smoke").layers;
  EXPECT_EQ(resumed.done.count(point_key(other, 1, "cpu-hydragen")), 1u) << "the model's own layers, named";
}

TEST(DecodeResume, EmptyTextHasNoHeaderAndAHeaderAloneNoPoints) {
  EXPECT_FALSE(read_resumed("", "host fp32", "abc1234").has_header);
  const Resumed header_only = read_resumed(decode_csv_header(), "host fp32", "abc1234");
  EXPECT_TRUE(header_only.has_header);
  EXPECT_TRUE(header_only.done.empty());
}

TEST(DecodeResume, RefusesWhatTheDecoderDidNotWriteNamingTheLine) {
  const std::string good = decode_csv_row("host fp32", "abc1234", row_of(Mode::paged, 2, "cpu-flat", ""));
  EXPECT_THAT(invalid_argument_of("device,commit\n"), HasSubstr("line 1: not hydragen-decode's CSV header"));
  EXPECT_EQ(invalid_argument_of(decode_csv_header() + good + "a,b\n"), "line 3: 2 fields, the header has 30");
  EXPECT_EQ(invalid_argument_of(decode_csv_header() + good.substr(0, good.size() - 1)),
            "line 2: no line break at its end (a row cut off mid-write)");
}

// The real binary on the host runtime, in a fresh folder.
class DecodeBinary : public testing::ToolFolder {
 protected:
  Run decode(const std::string& args) const { return run(HYDRAGEN_DECODE_BIN, args); }
  std::size_t rows() const {
    const std::string text = read("out.csv");
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) - 1;
  }
};

std::string smoke(const std::string& batch) {
  return "--device host --batch " + batch + " --prefix 16 --mode hydragen,no-attention --gen-tokens 2 --runs 1 --csv out.csv";
}

TEST_F(DecodeBinary, ResumeSkipsThePointsDoneAndAppendsTheRest) {
  ASSERT_EQ(decode(smoke("2")).exit_code, 0);
  ASSERT_EQ(rows(), 2u);
  const std::string first = read("out.csv");

  const Run more = decode(smoke("2,4") + " --resume");
  EXPECT_EQ(more.exit_code, 0) << more.err;
  EXPECT_THAT(more.err, HasSubstr("--resume: 2 of 4 points already in out.csv from this device at this commit; 0 rows from elsewhere kept"));
  ASSERT_EQ(rows(), 4u);
  EXPECT_EQ(read("out.csv").substr(0, first.size()), first) << "the earlier rows kept as they were";

  const Run none = decode(smoke("2,4") + " --resume");
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_THAT(none.err, HasSubstr("4 of 4 points already in out.csv"));
  EXPECT_THAT(none.err, Not(HasSubstr("[1/")));  // nothing measured
  EXPECT_EQ(rows(), 4u);

  const Run other_backend = decode(smoke("2") + " --backend cpu-flat --resume");
  EXPECT_EQ(other_backend.exit_code, 0) << other_backend.err;
  EXPECT_THAT(other_backend.err, HasSubstr("1 of 2 points already in out.csv")) << "no-attention's row names no backend";
  EXPECT_EQ(rows(), 5u);
}

TEST_F(DecodeBinary, ResumeOfAMissingFileStartsIt) {
  const Run fresh = decode(smoke("2") + " --resume");
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_THAT(fresh.err, HasSubstr("0 of 2 points already in out.csv"));
  EXPECT_EQ(rows(), 2u);
}

}  // namespace
}  // namespace hydragen::decode
