// hydragen-diff end to end, in-process: run_cli against a registry holding the reference backends
// and test backends that break in known ways (a wrong element, an exception, no memory, no device),
// so the FAIL and runtime-failure exit codes are checked without a broken real backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "diff/cli.hpp"
#include "hydragen/compare.hpp"
#include "hydragen/errors.hpp"
#include "hydragen/memory.hpp"
#include "hydragen/reference/reference.hpp"
#include "hydragen/registry.hpp"

namespace hydragen::diff {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Host memory that can claim to be unavailable, or fail every allocation.
class TestMemory : public DeviceMemory {
 public:
  TestMemory(std::string unavailable, bool out_of_memory)
      : unavailable_(std::move(unavailable)), out_of_memory_(out_of_memory) {}
  std::string_view name() const override { return "test"; }
  std::string unavailable_reason() const override { return unavailable_; }
  void* allocate(std::size_t bytes) const override {
    if (out_of_memory_) throw OutOfMemory("TestMemory::allocate", bytes, "the test memory is full");
    return host_memory().allocate(bytes);
  }
  void release(void* ptr) const noexcept override { host_memory().release(ptr); }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) const override {
    host_memory().copy_from_host(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) const override {
    host_memory().copy_to_host(dst, src, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) const override { host_memory().copy(dst, src, bytes); }
  void fill(void* dst, unsigned char byte, std::size_t bytes) const override { host_memory().fill(dst, byte, bytes); }
  void synchronize() const override {}
  std::size_t available_bytes() const override { return host_memory().available_bytes(); }

 private:
  std::string unavailable_;
  bool out_of_memory_;
};

enum class Fault { none, perturb_one_element, throw_while_running };

// Runs a real (fp64, host) backend, then applies a fault to its outputs.
class FaultyPlan : public AttentionPlan {
 public:
  FaultyPlan(std::unique_ptr<AttentionPlan> inner, Fault fault, std::size_t index)
      : inner_(std::move(inner)), fault_(fault), index_(index) {}
  void run(const AttentionInputs& inputs, const AttentionOutputs& outputs, Stream stream) override {
    inner_->run(inputs, outputs, stream);
    // Modulo: the soak's random problems may hold fewer elements than index_.
    if (fault_ == Fault::perturb_one_element) static_cast<double*>(outputs.o.data)[index_ % outputs.o.numel] += 1e-6;
    if (fault_ == Fault::throw_while_running) throw std::runtime_error("the test kernel exploded");
  }

 private:
  std::unique_ptr<AttentionPlan> inner_;
  Fault fault_;
  std::size_t index_;
};

class FaultyBackend : public AttentionBackend {
 public:
  FaultyBackend(std::string name, const AttentionBackend& inner, Fault fault, std::size_t index = 0,
                std::string unavailable = {}, bool out_of_memory = false, int only_head_dim = 0)
      : name_(std::move(name)), inner_(inner), fault_(fault), index_(index), memory_(std::move(unavailable), out_of_memory),
        only_head_dim_(only_head_dim) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "test backend wrapping " + inner_.name(); }
  const DeviceMemory& memory() const override { return memory_; }
  Support supports(const AttentionShape& shape, const SharingTree& tree) const override {
    if (only_head_dim_ != 0 && shape.head_dim != only_head_dim_) return Support::no("head_dim is not " + std::to_string(only_head_dim_));
    return inner_.supports(shape, tree);
  }

 protected:
  std::unique_ptr<AttentionPlan> make_plan(const AttentionShape& shape, const SharingTree& tree,
                                           const PlanOptions&) const override {
    return std::make_unique<FaultyPlan>(inner_.plan(shape, tree), fault_, index_);
  }

 private:
  std::string name_;
  const AttentionBackend& inner_;
  Fault fault_;
  std::size_t index_;
  TestMemory memory_;
  int only_head_dim_;  // 0: any
};

// Memory of a device that measured its partials' rate (as a CUDA memory gives the planner's).
class MeasuredMemory : public TestMemory {
 public:
  MeasuredMemory() : TestMemory("", false) {}
  SharingRates sharing_rates() const override { return {0.5, "measured on the test device"}; }
};

// test-exact in that memory.
class MeasuredBackend : public FaultyBackend {
 public:
  explicit MeasuredBackend(const AttentionBackend& inner) : FaultyBackend("test-measured", inner, Fault::none) {}
  const DeviceMemory& memory() const override { return memory_; }

 private:
  MeasuredMemory memory_;
};

constexpr std::size_t kPerturbed = 37;

BackendRegistry test_registry() {
  BackendRegistry r;
  register_reference_backends(r);
  const AttentionBackend& exact = r.get("reference-decomposed");
  r.add(std::make_unique<FaultyBackend>("test-exact", exact, Fault::none));
  r.add(std::make_unique<FaultyBackend>("test-wrong-element", exact, Fault::perturb_one_element, kPerturbed));
  r.add(std::make_unique<FaultyBackend>("test-throws", exact, Fault::throw_while_running));
  r.add(std::make_unique<FaultyBackend>("test-oom", exact, Fault::none, 0, "", true));
  r.add(std::make_unique<FaultyBackend>("test-no-device", exact, Fault::none, 0, "no test device here"));
  r.add(std::make_unique<FaultyBackend>("test-d64-only", exact, Fault::none, 0, "", false, 64));
  r.add(std::make_unique<MeasuredBackend>(exact));
  return r;
}

struct CliRun {
  int code;
  std::string out, err;
};

CliRun run_cli_with(std::vector<std::string> args) {
  static const BackendRegistry registry = test_registry();
  std::vector<const char*> argv{"hydragen-diff"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), registry, out, err);
  return {code, out.str(), err.str()};
}

// A small fp64 problem: B=2, P=16, S=3, Hq=2, Hkv=1, D=16; a flag in `more` replaces the base's
// (hydragen-diff refuses a flag given twice).
std::vector<std::string> small(const std::string& backend, std::vector<std::string> more = {}) {
  std::vector<std::string> args{"--backend", backend};
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--dtype", "fp64"}, {"--batch", "2"}, {"--prefix", "16"}, {"--suffix", "3"}, {"--q-heads", "2"},
           {"--head-dim", "16"}}) {
    if (std::find(more.begin(), more.end(), flag) == more.end()) args.insert(args.end(), {flag, value});
  }
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

long lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

void expect_one_error_line(const CliRun& r, int code, const std::string& prefix) {
  EXPECT_EQ(r.code, code);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith(prefix));
}

TEST(DiffCli, PassPrintsOneSummaryLine) {
  const CliRun r = run_cli_with({"--backend", "reference-decomposed", "--dtype", "fp64", "--batch", "3", "--prefix",
                                 "16", "--suffix-lens", "4,0,7", "--q-heads", "4", "--kv-heads", "2", "--head-dim", "16"});
  EXPECT_EQ(r.code, exit_pass);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(lines(r.out), 1);
  EXPECT_THAT(r.out, StartsWith("backend=reference-decomposed storage=shared B=3 q_len=1 Hq=4 Hkv=2 D=16 fp64 "));
  EXPECT_THAT(r.out, HasSubstr(" tree=prefix P=16 S=0..7 (4 segments, 3 sequences, depth 2, 27 tokens) "));
  for (const char* field : {" max_abs_err=", " rel_l2_err=", " lse_err=", " tol=(rtol 1.00e-12", " o_failed=0/192 ",
                            " lse_failed=0/12 ", " worst_o=[b=", " worst_lse=[b="}) {
    EXPECT_THAT(r.out, HasSubstr(field));
  }
  EXPECT_THAT(r.out, EndsWith(" PASS\n"));
}

TEST(DiffCli, PassesEveryTreeAndStorage) {
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--storage", "redundant"},
           {"--tree", "flat"},
           {"--tree", "2x5", "--q-len", "3"},
           {"--tree", "copy:2x1-9", "--suffix", "0"},
           {"--logit-scale", "1e4"},
           {"--scale", "0.01", "--seed", "7"}}) {
    const CliRun r = run_cli_with(small("test-exact", extra));
    EXPECT_EQ(r.code, exit_pass) << r.out << r.err;
    EXPECT_THAT(r.out, EndsWith(" PASS\n"));
  }
  const CliRun segments = run_cli_with({"--backend", "test-exact", "--dtype", "fp64", "--head-dim", "16", "--parents",
                                        "-1,0,0,1", "--lengths", "16,4,5,3", "--leaves", "2,3"});
  EXPECT_EQ(segments.code, exit_pass) << segments.err;
  EXPECT_THAT(segments.out, HasSubstr(" B=2 "));
  EXPECT_THAT(segments.out, HasSubstr(" tree=segments (4 segments, 2 sequences, depth 3, 28 tokens) "));
}

// The summary line writes the tree in --tree's grammar, so the text can be given back as it reads.
TEST(DiffCli, TheSummaryWritesTheTreeAsTreeTakesIt) {
  for (const char* tree : {"prefix", "flat", "2x5", "2x1-9", "copy:2x5/1x3"}) {
    const CliRun r = run_cli_with(small("test-exact", {"--tree", tree}));
    EXPECT_EQ(r.code, exit_pass) << r.err;
    EXPECT_THAT(r.out, HasSubstr(std::string(" tree=") + tree + " P=16 S=3 ("));
  }
}

// --tokens finds the tree at the partials' rate of the memory the backend runs in, and says which.
TEST(DiffCli, DetectsATreeInTokenIdsAtTheRateOfTheBackendsDevice) {
  // Ten tokens between two sequences: worth a segment where the partials move at the K/V's rate (from
  // 7 tokens at Hq 4, Hkv 2, D 16, fp64), not at half of it (from 13).
  const std::string file = (std::filesystem::temp_directory_path() / "hydragen_diff_rates_tokens.txt").string();
  std::ofstream(file) << "1 2 3 4 5 6 7 8 9 10 11\n1 2 3 4 5 6 7 8 9 10 12\n";
  auto run = [&](const char* backend, bool explain) {
    std::vector<std::string> args{"--backend", backend, "--dtype", "fp64", "--q-heads", "4", "--kv-heads", "2", "--head-dim", "16",
                                  "--tokens", file};
    if (explain) args.push_back("--explain");
    return run_cli_with(args);
  };
  const CliRun host = run("test-exact", false);
  EXPECT_EQ(host.code, exit_pass) << host.err;
  EXPECT_THAT(host.out, HasSubstr(" detected at partials at 1 of the K/V DRAM rate (no measured rate) (3 segments, 2 sequences, depth 2,"));
  const CliRun measured = run("test-measured", true);
  EXPECT_EQ(measured.code, exit_pass) << measured.err;
  EXPECT_THAT(measured.out, StartsWith("detect_sharing: partials at 0.5 of the K/V DRAM rate (measured on the test device)\n"));
  EXPECT_THAT(measured.out,
              HasSubstr(" detected at partials at 0.5 of the K/V DRAM rate (measured on the test device) (2 segments, 2 sequences, depth 1,"));
  std::filesystem::remove(file);
}

TEST(DiffCli, OneWrongElementFailsAndIsNamed) {
  const CliRun r = run_cli_with(small("test-wrong-element"));
  EXPECT_EQ(r.code, exit_fail);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(lines(r.out), 1);
  // kPerturbed = 37 in [B=2, q_len=1, Hq=2, D=16]: b=1, h=0, d=5.
  EXPECT_THAT(r.out, HasSubstr(" o_failed=1/64 "));
  EXPECT_THAT(r.out, HasSubstr(" worst_o=[b=1, t=0, h=0, d=5] "));
  EXPECT_THAT(r.out, EndsWith(" FAIL\n"));
}

TEST(DiffCli, FailureWhileRunningExitsOne) {
  expect_one_error_line(run_cli_with(small("test-throws")), exit_fail,
                        "hydragen-diff: failed while running: the test kernel exploded");
  const CliRun oom = run_cli_with(small("test-oom"));
  expect_one_error_line(oom, exit_fail, "hydragen-diff: out of memory: ");
  EXPECT_THAT(oom.err, HasSubstr("the test memory is full"));
}

TEST(DiffCli, UnavailableBackendIsBadUsage) {
  expect_one_error_line(run_cli_with(small("test-no-device")), exit_usage,
                        "hydragen-diff: error: backend 'test-no-device' cannot run here: no test device here");
}

TEST(DiffCli, InvalidProblemsAreBadUsage) {
  const CliRun ratio = run_cli_with(small("reference", {"--q-heads", "6", "--kv-heads", "4"}));
  expect_one_error_line(ratio, exit_usage, "hydragen-diff: error: ");
  EXPECT_THAT(ratio.err, HasSubstr("q_heads (6) must be a multiple of kv_heads (4)"));

  const CliRun unsupported = run_cli_with({"--backend", "reference", "--batch", "2", "--prefix", "4", "--suffix", "1"});
  expect_one_error_line(unsupported, exit_usage, "hydragen-diff: error: backend 'reference' does not support ");
  EXPECT_THAT(unsupported.err, HasSubstr("dtype fp32"));

  const CliRun unknown = run_cli_with(small("nope"));
  expect_one_error_line(unknown, exit_usage, "hydragen-diff: error: backend 'nope' is not registered");
  EXPECT_THAT(unknown.err, HasSubstr("reference, reference-decomposed"));

  const CliRun option = run_cli_with(small("reference:form=wide"));
  expect_one_error_line(option, exit_usage, "hydragen-diff: error: backend 'reference' has no option 'form' (it takes none)");

  const CliRun causal = run_cli_with(small("reference", {"--q-len", "5"}));
  expect_one_error_line(causal, exit_usage, "hydragen-diff: error: ");
  EXPECT_THAT(causal.err, HasSubstr("q_len = 5"));

  expect_one_error_line(run_cli_with(small("reference", {"--bogus"})), exit_usage, "hydragen-diff: error: ");
}

TEST(DiffCli, ListAndHelp) {
  const CliRun list = run_cli_with({"--list"});
  EXPECT_EQ(list.code, exit_pass);
  EXPECT_EQ(list.err, "");
  EXPECT_EQ(lines(list.out), 9);
  EXPECT_THAT(list.out, HasSubstr("reference             host  available  fp64 Eigen"));
  EXPECT_THAT(list.out, HasSubstr("test-no-device        test  unavailable (no test device here)  test backend"));

  const CliRun help = run_cli_with({"--help"});
  EXPECT_EQ(help.code, exit_pass);
  EXPECT_EQ(help.err, "");
  EXPECT_THAT(help.out, HasSubstr("--backend NAME"));
}

// ---- --random: the soak, against the test backends (fp64 only: the draw narrows to fp64) ----------

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(DiffRandom, PassingSoakPrintsOnlyTheSummary) {
  const CliRun r = run_cli_with({"--random", "30", "--seed", "3", "--backend", "test-exact,reference-decomposed"});
  EXPECT_EQ(r.code, exit_pass) << r.out;
  EXPECT_EQ(lines(r.out), 1);
  EXPECT_THAT(r.out, StartsWith("random seed=3 problems=30 checks=60 passed=60 failed=0 skipped=0 seconds="));
  EXPECT_THAT(r.out, HasSubstr(" | test-exact checks=30 passed=30 failed=0 skipped=0 | reference-decomposed checks=30 "));
  EXPECT_THAT(r.err, HasSubstr("hydragen-diff: random 30/30 problems, 0 failed, "));
  EXPECT_THAT(r.err, HasSubstr(" s elapsed, ETA "));
}

TEST(DiffRandom, UnsupportedProblemsAreCountedAsSkipped) {
  const CliRun r = run_cli_with({"--random", "40", "--backend", "test-exact,test-d64-only"});
  EXPECT_EQ(r.code, exit_pass) << r.out;
  const std::vector<std::string> words = split_words(r.out);
  // test-d64-only takes the draws of D = 64 and skips the rest: both happen in 40 problems.
  const auto d64 = std::find(words.begin(), words.end(), "test-d64-only");
  ASSERT_NE(d64, words.end()) << r.out;
  ASSERT_GE(words.end() - d64, 5);
  const int checks = std::stoi(d64[1].substr(7)), skipped = std::stoi(d64[4].substr(8));
  EXPECT_GT(checks, 0) << r.out;
  EXPECT_GT(skipped, 0) << r.out;
  EXPECT_EQ(checks + skipped, 40);
  EXPECT_THAT(r.out, HasSubstr(" | test-exact checks=40 passed=40 failed=0 skipped=0 "));
}

TEST(DiffRandom, EachFailurePrintsACommandThatReproducesIt) {
  const CliRun r = run_cli_with({"--random", "12", "--seed", "5", "--backend", "test-exact,test-wrong-element"});
  EXPECT_EQ(r.code, exit_fail);
  const std::vector<std::string> out = split_lines(r.out);
  ASSERT_EQ(out.size(), 13u) << r.out;  // 12 failures, then the summary
  EXPECT_THAT(out.back(), HasSubstr(" failed=12 "));
  EXPECT_THAT(out.back(), HasSubstr("| test-wrong-element checks=12 passed=0 failed=12 skipped=0"));
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    EXPECT_THAT(out[i], StartsWith("hydragen-diff --parents "));
    EXPECT_THAT(out[i], HasSubstr(" --backend test-wrong-element  # FAIL problem " + std::to_string(i) + "/12: "));
    EXPECT_THAT(out[i], EndsWith(" FAIL"));
    // The command before the comment, run as a single problem, fails the same way.
    std::vector<std::string> args = split_words(out[i].substr(0, out[i].find("  # ")));
    args.erase(args.begin());  // the program name
    const CliRun single = run_cli_with(args);
    EXPECT_EQ(single.code, exit_fail) << out[i];
    EXPECT_THAT(single.out, StartsWith("backend=test-wrong-element "));
    // And the same problem on a correct backend passes: the failure is the backend's, not the problem's.
    args.back() = "test-exact";
    EXPECT_EQ(run_cli_with(args).code, exit_pass) << out[i];
  }
}

TEST(DiffRandom, AnExceptionIsAFailureWithItsMessage) {
  const CliRun r = run_cli_with({"--random", "3", "--backend", "test-throws"});
  EXPECT_EQ(r.code, exit_fail);
  const std::vector<std::string> out = split_lines(r.out);
  ASSERT_EQ(out.size(), 4u) << r.out;
  EXPECT_THAT(out[0], HasSubstr(" --backend test-throws  # FAIL problem 0/3: error: the test kernel exploded"));
}

TEST(DiffRandom, BadUsageExitsTwoWithOneLine) {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--random", "0"}, "--random must be at least 1, got 0"},
           {{"--random", "-3"}, "--random must be at least 1, got -3"},
           {{"--random", "5", "--prefix", "8"}, "--prefix does not apply with --random"},
           {{"--random", "5", "--dtype", "fp32"}, "--dtype does not apply with --random"},
           {{"--random", "5", "--backend", "nope"}, "backend 'nope' is not registered"},
           {{"--random", "5", "--backend", "test-no-device"}, "backend 'test-no-device' cannot run here"},
           {{"--random", "5", "--backend", "test-exact:redundant"}, "the soak draws the storage"},
           {{"--random", "5", "--backend", "test-exact,test-exact"}, "--backend names test-exact twice"},
           {{"--random", "5", "--backend", "test-exact,"}, "an empty name in the list"},
           {{"--random", "5", "--backend", "reference:form=wide"}, "backend 'reference' has no option 'form'"},
           {{"--random", "5", "--npy-dir", "."}, "--random does not apply with --npy-dir"}}) {
    const CliRun r = run_cli_with(args);
    expect_one_error_line(r, exit_usage, "hydragen-diff: error: ");
    EXPECT_THAT(r.err, HasSubstr(message)) << args[0] << " " << args[1];
  }
}

}  // namespace
}  // namespace hydragen::diff
