// hydragen-diff --npy-dir end to end, in-process: a generated problem written with our .npy writer,
// an "external" O (the reference, rounded to the file's dtype) checked against the fp64 reference;
// a corrupted element fails (exit 1); a wrong shape, a missing file or a bad spec is exit 2, one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "diff/cli.hpp"
#include "diff/npy.hpp"
#include "hydragen/problem.hpp"
#include "hydragen/reference/reference.hpp"
#include "hydragen/registry.hpp"

namespace hydragen::diff {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct CliRun {
  int code;
  std::string out, err;
};

const BackendRegistry& registry() {
  static const BackendRegistry r = [] {
    BackendRegistry made;
    register_reference_backends(made);
    return made;
  }();
  return r;
}

CliRun run(std::vector<std::string> args) {
  std::vector<const char*> argv{"hydragen-diff"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), registry(), out, err);
  return {code, out.str(), err.str()};
}

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

// Writes spec.json, q, k<i>, v<i> (inputs in `dtype`) and o, lse (the reference rounded to o_dtype).
class NpyDir : public ::testing::Test {
 protected:
  void write(DType dtype, DType o_dtype, bool with_lse = true) {
    dir = (fs::temp_directory_path() / ("hydragen_npy_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    fs::remove_all(dir);
    fs::create_directories(dir);
    const SharingTree tree = SharingTree::from_parents({-1, 0, 0, 1}, {16, 4, 5, 3}, {2, 3});
    AttentionShape shape = make_shape(tree.num_seqs(), 2, 4, 2, 16, dtype);
    const Problem problem = make_problem(shape, tree, 7);
    std::ofstream(dir + "/spec.json") << R"({"q_heads": 4, "kv_heads": 2, "head_dim": 16, "q_len": 2,
                                           "parents": [-1, 0, 0, 1], "lengths": [16, 4, 5, 3], "leaves": [2, 3]})";
    write_npy(dir + "/q.npy", dtype, {2, 2, 4, 16}, problem.q);
    for (int i = 0; i < tree.num_segments(); ++i) {
      write_npy(dir + "/k" + std::to_string(i) + ".npy", dtype, {sz(tree.length(i)), 2, 16}, problem.k[sz(i)]);
      write_npy(dir + "/v" + std::to_string(i) + ".npy", dtype, {sz(tree.length(i)), 2, 16}, problem.v[sz(i)]);
    }
    ref = run_backend(registry().get("reference"), with_dtype(problem, DType::fp64));
    write_npy(dir + "/o.npy", o_dtype, {2, 2, 4, 16}, ref.o);
    if (with_lse) write_npy(dir + "/lse.npy", lse_dtype(o_dtype), {2, 2, 4}, ref.lse);
  }
  void TearDown() override {
    if (!dir.empty()) fs::remove_all(dir);
  }

  std::string dir;
  Results ref;
};

TEST_F(NpyDir, PassesForEachDtype) {
  for (DType dtype : {DType::fp16, DType::bf16, DType::fp32, DType::fp64}) {
    write(dtype, dtype);
    const CliRun r = run({"--npy-dir", dir});
    EXPECT_EQ(r.code, exit_pass) << r.out << r.err;
    EXPECT_THAT(r.out, StartsWith("npy=" + dir + " B=2 q_len=2 Hq=4 Hkv=2 D=16 " + std::string(dtype_name(dtype))));
    EXPECT_THAT(r.out, HasSubstr("o=" + std::string(dtype_name(dtype)) + " lse=given"));
    EXPECT_THAT(r.out, EndsWith(" PASS\n"));
    EXPECT_EQ(r.err, "");
  }
}

TEST_F(NpyDir, LseIsOptional) {
  write(DType::fp32, DType::fp32, false);
  const CliRun r = run({"--npy-dir", dir});
  EXPECT_EQ(r.code, exit_pass) << r.err;
  EXPECT_THAT(r.out, HasSubstr("lse=absent"));
}

TEST_F(NpyDir, CorruptedElementFails) {
  write(DType::fp32, DType::fp32);
  std::vector<double> o = ref.o;
  o[37] += 1.0;
  write_npy(dir + "/o.npy", DType::fp32, {2, 2, 4, 16}, o);
  const CliRun r = run({"--npy-dir", dir});
  EXPECT_EQ(r.code, exit_fail);
  EXPECT_THAT(r.out, HasSubstr("o_failed=1/256"));
  EXPECT_THAT(r.out, EndsWith(" FAIL\n"));
  EXPECT_EQ(r.err, "");
}

TEST_F(NpyDir, WrongLseFails) {
  write(DType::fp32, DType::fp32);
  std::vector<double> lse = ref.lse;
  lse[3] += 0.5;
  write_npy(dir + "/lse.npy", DType::fp32, {2, 2, 4}, lse);
  const CliRun r = run({"--npy-dir", dir});
  EXPECT_EQ(r.code, exit_fail);
  EXPECT_THAT(r.out, HasSubstr("lse_failed=1/16"));
}

// An outside kernel's LSE is judged by what a merge at its O's precision can see (u of O's dtype on
// top of the strict bound): bf16 O with LSEs off by 1.7e-4, as FlashInfer's tensor-core decode's are,
// is usable; off by 5e-3 (more than bf16's u = 3.9e-3) it is not; --strict-lse applies our bound.
TEST_F(NpyDir, ExternalLseIsJudgedByWhatAMergeCanSee) {
  write(DType::bf16, DType::bf16);
  std::vector<double> lse = ref.lse;
  lse[3] += 1.7e-4;
  write_npy(dir + "/lse.npy", DType::fp32, {2, 2, 4}, lse);
  const CliRun merge = run({"--npy-dir", dir});
  EXPECT_EQ(merge.code, exit_pass) << merge.out;
  EXPECT_THAT(merge.out, ContainsRegex("lse 3\\.91e-03\\+1\\.[0-9]+e-05 merge\\)"));
  const CliRun strict = run({"--npy-dir", dir, "--strict-lse"});
  EXPECT_EQ(strict.code, exit_fail) << strict.out;
  EXPECT_THAT(strict.out, ContainsRegex("lse 1\\.[0-9]+e-05 strict\\)"));
  EXPECT_THAT(strict.out, HasSubstr("lse_failed=1/16"));
  lse[3] += 5e-3;
  write_npy(dir + "/lse.npy", DType::fp32, {2, 2, 4}, lse);
  const CliRun far = run({"--npy-dir", dir});
  EXPECT_EQ(far.code, exit_fail) << far.out;
  EXPECT_THAT(far.out, HasSubstr("lse_failed=1/16"));
}

TEST_F(NpyDir, Fp16OutputsGetFp16sMergeBound) {
  write(DType::fp16, DType::fp16);
  std::vector<double> lse = ref.lse;
  lse[0] += 6e-4;  // over fp16's u = 4.9e-4 plus 1e-5 max(1, |r|)
  write_npy(dir + "/lse.npy", DType::fp32, {2, 2, 4}, lse);
  const CliRun r = run({"--npy-dir", dir});
  EXPECT_EQ(r.code, exit_fail) << r.out;
  EXPECT_THAT(r.out, ContainsRegex("lse 4\\.88e-04\\+1\\.[0-9]+e-05 merge\\)"));
}

void expect_usage_error(const CliRun& r, const std::string& part) {
  EXPECT_EQ(r.code, exit_usage);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("hydragen-diff: error: "));
  EXPECT_THAT(r.err, HasSubstr(part));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(NpyDir, BadFilesAreUsageErrors) {
  write(DType::fp32, DType::fp32);
  write_npy(dir + "/o.npy", DType::fp32, {2, 2, 4, 8}, std::vector<double>(128, 0.0));
  expect_usage_error(run({"--npy-dir", dir}), "o.npy: shape (2, 2, 4, 8) does not match the spec's (2, 2, 4, 16)");

  write(DType::fp32, DType::fp32);
  write_npy(dir + "/v1.npy", DType::fp16, {4, 2, 16}, std::vector<double>(128, 0.0));
  expect_usage_error(run({"--npy-dir", dir}), "v1.npy: dtype fp16 is not q.npy's fp32");

  write(DType::fp32, DType::fp32);
  fs::resize_file(dir + "/k2.npy", fs::file_size(dir + "/k2.npy") - 3);
  expect_usage_error(run({"--npy-dir", dir}), "k2.npy: .npy: truncated data");

  write(DType::fp32, DType::fp32);
  fs::remove(dir + "/k3.npy");
  expect_usage_error(run({"--npy-dir", dir}), "k3.npy: cannot open");

  write(DType::fp32, DType::fp32);
  std::ofstream(dir + "/spec.json") << R"({"q_heads": 4, "kv_heads": 2, "head_dim": 16, "parents": [-1, 0], )";
  expect_usage_error(run({"--npy-dir", dir}), "spec.json: ");

  std::ofstream(dir + "/spec.json") << R"({"q_heads": 4, "kv_heads": 2, "head_dim": 16, "parents": [-1, 0, 0, 1],
                                          "lengths": [16, 4, 5, 3], "leaves": [2, 3], "qlen": 2})";
  expect_usage_error(run({"--npy-dir", dir}), "spec.json: unknown key \"qlen\"");

  expect_usage_error(run({"--npy-dir", dir, "--backend", "reference"}), "--backend does not apply with --npy-dir");
  expect_usage_error(run({"--write-reference", dir}), "--write-reference needs --npy-dir");
}

TEST_F(NpyDir, WritesTheReference) {
  write(DType::bf16, DType::bf16);
  const std::string out_dir = dir + "/ref";
  fs::create_directories(out_dir);
  fs::remove(dir + "/o.npy");
  fs::remove(dir + "/lse.npy");
  const CliRun r = run({"--npy-dir", dir, "--write-reference", out_dir});
  EXPECT_EQ(r.code, exit_pass) << r.err;
  EXPECT_THAT(r.out, HasSubstr("no o.npy: nothing compared"));
  const NpyArray o = read_npy(out_dir + "/o.npy");
  EXPECT_EQ(o.dtype, DType::fp64);
  EXPECT_EQ(o.values(), ref.o);
  EXPECT_EQ(read_npy(out_dir + "/lse.npy").values(), ref.lse);
  // Fed back as the external output, it passes at fp64 tolerance.
  fs::copy_file(out_dir + "/o.npy", dir + "/o.npy");
  const CliRun back = run({"--npy-dir", dir});
  EXPECT_EQ(back.code, exit_pass) << back.out;
  EXPECT_THAT(back.out, HasSubstr("o=fp64"));

  // In the inputs' dtype: O rounded to bf16, LSE in fp32; it passes at bf16 tolerance.
  const CliRun bf = run({"--npy-dir", dir, "--write-reference", out_dir, "--reference-dtype", "bf16"});
  EXPECT_EQ(bf.code, exit_pass) << bf.err;
  EXPECT_EQ(read_npy(out_dir + "/o.npy").dtype, DType::bf16);
  EXPECT_EQ(read_npy(out_dir + "/lse.npy").dtype, DType::fp32);
  fs::copy_file(out_dir + "/o.npy", dir + "/o.npy", fs::copy_options::overwrite_existing);
  const CliRun back_bf = run({"--npy-dir", dir});
  EXPECT_EQ(back_bf.code, exit_pass) << back_bf.out;
  EXPECT_THAT(back_bf.out, HasSubstr("o=bf16"));
  expect_usage_error(run({"--npy-dir", dir, "--reference-dtype", "bf16"}), "--reference-dtype needs --write-reference");
}

// Several outputs of one problem (a peer's forms) are judged against one reference: written once,
// read back by --reference-dir, with the verdicts computing it would give; REF must belong to the same
// inputs and be fp64.
TEST_F(NpyDir, JudgesAgainstAWrittenReference) {
  write(DType::bf16, DType::bf16);
  const std::string ref_dir = dir + "/ref";
  fs::create_directories(ref_dir);
  const CliRun computed = run({"--npy-dir", dir, "--write-reference", ref_dir});
  ASSERT_EQ(computed.code, exit_pass) << computed.err;
  const CliRun read = run({"--npy-dir", dir, "--reference-dir", ref_dir});
  EXPECT_EQ(read.code, exit_pass) << read.err;
  EXPECT_THAT(read.out, HasSubstr("reference=" + ref_dir + " "));
  const std::string verdict = computed.out.substr(computed.out.find(" B=2 "));
  EXPECT_EQ(read.out.substr(read.out.find(" B=2 ")), verdict) << "the same comparison as computing the reference";

  std::vector<double> o = ref.o;
  o[37] += 1.0;
  write_npy(dir + "/o.npy", DType::bf16, {2, 2, 4, 16}, o);
  const CliRun corrupted = run({"--npy-dir", dir, "--reference-dir", ref_dir});
  EXPECT_EQ(corrupted.code, exit_fail);
  EXPECT_THAT(corrupted.out, HasSubstr("o_failed=1/256"));

  std::vector<double> q = read_npy(dir + "/q.npy").values();
  q[5] = -q[5] + 1.0;
  write_npy(dir + "/q.npy", DType::bf16, {2, 2, 4, 16}, q);
  expect_usage_error(run({"--npy-dir", dir, "--reference-dir", ref_dir}), "holds the reference of other inputs");

  const CliRun bf = run({"--npy-dir", dir, "--write-reference", ref_dir, "--reference-dtype", "bf16"});
  ASSERT_NE(bf.code, exit_usage) << bf.err;
  expect_usage_error(run({"--npy-dir", dir, "--reference-dir", ref_dir}), "a reference to judge against is fp64");

  expect_usage_error(run({"--npy-dir", dir, "--reference-dir", dir + "/none"}), "--reference-dir " + dir + "/none: no such directory");
  expect_usage_error(run({"--npy-dir", dir, "--reference-dir", ref_dir, "--write-reference", ref_dir}), "give one of them");
  expect_usage_error(run({"--reference-dir", ref_dir}), "--reference-dir needs --npy-dir");
}

}  // namespace
}  // namespace hydragen::diff
