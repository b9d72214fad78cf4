// plan_options.hpp and the backend specs of the command lines: how a caller names a backend's
// variant ("cuda-hydragen:form=wide"), and how a backend checks what it was given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "hydragen/attention.hpp"
#include "hydragen/problem.hpp"

namespace hydragen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

const std::vector<PlanOption> kDeclared = {{"form", {"auto", "wide", "narrow"}, "which blocks"},
                                           {"kernel", {"auto", "mma"}, "which tensor-core kernel"}};

TEST(PlanOptions, ParseKeepsTheOrderGivenAndWritesItBack) {
  const PlanOptions o = PlanOptions::parse("kernel=mma:form=wide");
  EXPECT_EQ(o.at("kernel"), "mma");
  EXPECT_EQ(o.at("form"), "wide");
  EXPECT_EQ(o.text(), "kernel=mma:form=wide");
  EXPECT_TRUE(PlanOptions::parse("").empty());
  EXPECT_EQ(PlanOptions::parse("").text(), "");
}

TEST(PlanOptions, RefuseMalformedOrRepeatedFields) {
  EXPECT_THAT([] { PlanOptions::parse("form"); }, ThrowsMessage<std::invalid_argument>(HasSubstr("'form' is not name=value")));
  EXPECT_THAT([] { PlanOptions::parse("form=wide:form=narrow"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'form' is given twice")));
  EXPECT_THROW(PlanOptions::parse("=wide"), std::invalid_argument);
  EXPECT_THROW(PlanOptions::parse("form="), std::invalid_argument);
  EXPECT_THROW(PlanOptions().set("a", "b=c"), std::invalid_argument);
  EXPECT_THROW(PlanOptions().at("form"), std::out_of_range);
}

TEST(ResolveOptions, FillsEveryDeclaredOptionWithItsDefaultInDeclarationOrder) {
  EXPECT_EQ(resolve_options("b", kDeclared, {}).text(), "form=auto:kernel=auto");
  EXPECT_EQ(resolve_options("b", kDeclared, PlanOptions::parse("kernel=mma")).text(), "form=auto:kernel=mma");
  EXPECT_TRUE(resolve_options("b", {}, {}).empty());
}

TEST(ResolveOptions, NamesTheBackendTheOptionAndWhatItAccepts) {
  EXPECT_THAT([] { resolve_options("cuda-x", kDeclared, PlanOptions::parse("tile=64")); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("backend 'cuda-x' has no option 'tile'"),
                                                         HasSubstr("form=auto|wide|narrow"))));
  EXPECT_THAT([] { resolve_options("cuda-x", kDeclared, PlanOptions::parse("form=tall")); },
              ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("form=tall is not one of auto, wide, narrow"))));
  EXPECT_THAT([] { resolve_options("cpu-x", {}, PlanOptions::parse("form=wide")); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("it takes none")));
}

TEST(BackendChoice, ParsesTheNameStorageAndOptionsInAnyOrder) {
  const BackendChoice a = parse_backend_choice("cuda-hydragen:redundant:kernel=mma:form=wide");
  EXPECT_EQ(a.backend, "cuda-hydragen");
  EXPECT_EQ(a.storage, Storage::redundant);
  EXPECT_EQ(a.options.text(), "kernel=mma:form=wide");
  EXPECT_EQ(a.label(), "cuda-hydragen:kernel=mma:form=wide");
  const BackendChoice b = parse_backend_choice("cpu-flat");
  EXPECT_EQ(b.storage, Storage::shared);
  EXPECT_TRUE(b.options.empty());
  EXPECT_EQ(b.label(), "cpu-flat");
}

TEST(BackendChoice, RefusesAFieldThatIsNeitherAStorageNorAnOption) {
  EXPECT_THAT([] { parse_backend_choice("cpu-flat:paged"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("'paged' is neither a storage")));
  EXPECT_THAT([] { parse_backend_choice("cpu-flat:shared:redundant"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("names the storage twice")));
  EXPECT_THROW(parse_backend_choice(":shared"), std::invalid_argument);
  EXPECT_THROW(parse_backend_choice("x:form=a:form=b"), std::invalid_argument);
}

// A backend with options: plan() resolves them before make_plan sees them, and refuses unknown ones.
class OptionedBackend final : public AttentionBackend {
 public:
  std::string name() const override { return "optioned"; }
  std::string summary() const override { return "test double"; }
  const DeviceMemory& memory() const override { return host_memory(); }
  Support supports(const AttentionShape&, const SharingTree&) const override { return Support::yes(); }
  std::vector<PlanOption> options() const override { return kDeclared; }
  mutable PlanOptions seen;

 protected:
  std::unique_ptr<AttentionPlan> make_plan(const AttentionShape&, const SharingTree&, const PlanOptions& o) const override {
    seen = o;
    return nullptr;
  }
};

TEST(AttentionBackend, PlanHandsMakePlanEveryOptionAndRefusesUnknownOnes) {
  const OptionedBackend b;
  const AttentionShape shape = make_shape(1, 1, 2, 1, 64, DType::fp32);
  const SharingTree tree = SharingTree::prefix_suffix(4, {1});
  b.plan(shape, tree, PlanOptions::parse("form=narrow"));
  EXPECT_EQ(b.seen.text(), "form=narrow:kernel=auto");
  EXPECT_THAT([&] { b.plan(shape, tree, PlanOptions::parse("speed=max")); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("backend 'optioned' has no option 'speed'")));
}

}  // namespace
}  // namespace hydragen
