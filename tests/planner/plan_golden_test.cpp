// The planner decides today what it decided when the golden table was written: for every preset
// point and harness case, every form and both devices, the same kernels, launches and schedule.
// HYDRAGEN_WRITE_GOLDEN=1 rewrites the table instead (only where a rule changed on purpose: the
// commit says which and why).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "plan_golden.hpp"

namespace hydragen::cuda::golden {
namespace {

const char* const kTable = HYDRAGEN_PLAN_GOLDEN;  // tests/planner/plan_decisions.golden
const std::string kSeparator = " => ";

TEST(PlanGolden, EveryPointDecidesAsRecorded) {
  const std::vector<Line> lines = plan_lines();
  if (std::getenv("HYDRAGEN_WRITE_GOLDEN") != nullptr) {
    std::ofstream out(kTable);
    for (const Line& l : lines) out << l.key << kSeparator << l.decided << "\n";
    GTEST_SKIP() << "wrote " << lines.size() << " lines to " << kTable;
  }
  std::ifstream in(kTable);
  ASSERT_TRUE(in) << "no golden table at " << kTable;
  std::map<std::string, std::string> recorded;
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(kSeparator);
    ASSERT_NE(at, std::string::npos) << "malformed golden line: " << line;
    recorded[line.substr(0, at)] = line.substr(at + kSeparator.size());
  }
  EXPECT_EQ(recorded.size(), lines.size()) << "the presets or harness cases changed: the table covers other points";
  int differ = 0;
  for (const Line& l : lines) {
    const auto it = recorded.find(l.key);
    if (it == recorded.end()) {
      ADD_FAILURE() << "not in the table: " << l.key;
    } else if (it->second != l.decided) {
      if (++differ <= 20) ADD_FAILURE() << l.key << "\n  recorded: " << it->second << "\n  now:      " << l.decided;
    }
  }
  EXPECT_EQ(differ, 0) << differ << " of " << lines.size() << " points decide differently";
}

}  // namespace
}  // namespace hydragen::cuda::golden
