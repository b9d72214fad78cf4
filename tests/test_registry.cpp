// registry.hpp / backends.hpp: the name -> backend table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "hydragen/backends.hpp"
#include "hydragen/errors.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class NamedBackend final : public AttentionBackend {
 public:
  explicit NamedBackend(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "test double"; }
  const DeviceMemory& memory() const override { return host_memory(); }
  Support supports(const AttentionShape&, const SharingTree&) const override { return Support::no("test double"); }

 protected:
  std::unique_ptr<AttentionPlan> make_plan(const AttentionShape&, const SharingTree&, const PlanOptions&) const override {
    return nullptr;
  }

 private:
  std::string name_;
};

TEST(BackendRegistry, KeepsBackendsInRegistrationOrder) {
  BackendRegistry r;
  r.add(std::make_unique<NamedBackend>("b"));
  r.add(std::make_unique<NamedBackend>("a"));
  EXPECT_THAT(r.names(), ElementsAre("b", "a"));
  ASSERT_EQ(r.all().size(), 2u);
  EXPECT_EQ(r.all()[1]->name(), "a");
  EXPECT_EQ(r.get("a").name(), "a");
  EXPECT_TRUE(r.contains("b"));
  EXPECT_FALSE(r.contains("c"));
}

TEST(BackendRegistry, RejectsANameRegisteredTwice) {
  BackendRegistry r;
  r.add(std::make_unique<NamedBackend>("twin"));
  EXPECT_THAT([&] { r.add(std::make_unique<NamedBackend>("twin")); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'twin' is registered twice")));
}

TEST(DefaultRegistry, HasBothReferencesWithUniqueNames) {
  const std::vector<std::string> names = list_backends();
  EXPECT_THAT(names, Contains("reference"));
  EXPECT_THAT(names, Contains("reference-decomposed"));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names, default_registry().names());
}

TEST(DefaultRegistry, EveryBackendIsFoundByItsNameAndDescribesItself) {
  for (const std::string& name : list_backends()) {
    const AttentionBackend& b = backend(name);
    EXPECT_EQ(b.name(), name);
    EXPECT_FALSE(b.summary().empty()) << name;
    EXPECT_FALSE(b.memory().name().empty()) << name;
  }
}

TEST(DefaultRegistry, EveryVariantOfEveryBackendResolvesAgainstItsOptions) {
  for (const AttentionBackend* b : default_registry().all()) {
    const std::vector<PlanOptions> variants = b->variants();
    ASSERT_FALSE(variants.empty()) << b->name();
    EXPECT_TRUE(variants.front().empty()) << b->name() << ": the first variant is the defaults";
    for (const PlanOptions& v : variants) EXPECT_NO_THROW(resolve_options(b->name(), b->options(), v)) << b->name();
  }
}

TEST(DefaultRegistry, HasCudaBackendsOnlyWhenBuiltWithCuda) {
  if (built_with_cuda()) GTEST_SKIP() << "this build has the CUDA backends";
  for (const std::string& name : list_backends()) EXPECT_NE(name.rfind("cuda", 0), 0u) << name;
}

TEST(MemoryNamed, FindsTheHostAndNamesWhatThereIsForAnUnknownName) {
  EXPECT_EQ(&memory_named("host"), &host_memory());
  if (built_with_cuda()) {
    EXPECT_EQ(memory_named("cuda").name(), "cuda");
  }
  EXPECT_THAT([] { memory_named("tpu"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("memory 'tpu' (there are: host")));
}

TEST(DefaultBackend, IsCpuHydragenOnTheHostAndTheReferenceForFp64) {
  const SharingTree tree = SharingTree::prefix_suffix(16, {2, 3});
  EXPECT_EQ(default_backend("host", make_shape(2, 1, 4, 1, 64, DType::bf16), tree).name(), "cpu-hydragen");
  EXPECT_EQ(default_backend("host", make_shape(2, 1, 4, 1, 64, DType::fp64), tree).name(), "reference");
}

TEST(DefaultBackend, IsCudaHydragenInCudaMemoryOrSaysWhyNot) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build has no CUDA backends";
  const SharingTree tree = SharingTree::prefix_suffix(16, {2, 3});
  const AttentionShape shape = make_shape(2, 1, 4, 1, 64, DType::bf16);
  const std::string why = backend("cuda-hydragen").memory().unavailable_reason();
  if (why.empty()) {
    EXPECT_EQ(default_backend("cuda", shape, tree).name(), "cuda-hydragen");
  } else {
    EXPECT_THAT([&] { default_backend("cuda", shape, tree); },
                ThrowsMessage<Unsupported>(HasSubstr("in cuda memory: cuda-hydragen: " + why)));
  }
}

TEST(DefaultBackend, NamesEachCandidatesReasonWhenNoneTakesTheProblem) {
  const SharingTree tree = SharingTree::prefix_suffix(16, {2, 3});
  EXPECT_THAT([&] { default_backend("host", make_shape(2, 1, 4, 1, 512, DType::fp32), tree); },
              ThrowsMessage<Unsupported>(AllOf(HasSubstr("no backend for B=2"), HasSubstr("in host memory: cpu-hydragen: head_dim 512"),
                                               HasSubstr("; reference: dtype fp32"))));
  EXPECT_THAT([&] { default_backend("host", make_shape(3, 1, 4, 1, 64, DType::fp32), tree); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("the sharing tree has 2 sequences")));
  EXPECT_THAT([&] { default_backend("tpu", make_shape(2, 1, 4, 1, 64, DType::fp32), tree); },
              ThrowsMessage<Unsupported>(HasSubstr("in tpu memory (this build has none there)")));
}

}  // namespace
}  // namespace hydragen
