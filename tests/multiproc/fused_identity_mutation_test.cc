// The mutation check of issue 68's F1: with the members' shapes taken out of packed and fused
// calls' tags (tuttiTestFusedIdentityOff, defined here; src/api/group_fusion.cc), every case of
// fused_identity_cases.h must return tuttiSuccess with wrong data on some rank -- the defect
// fused_identity_test.cc guards against, shown to be caught by its cases.
#include <gtest/gtest.h>

#include "fused_identity_cases.h"

extern "C" __attribute__((visibility("default"))) bool tuttiTestFusedIdentityOff() { return true; }

namespace tutti::test {
namespace {

class FusedIdentityOff : public ::testing::TestWithParam<IdentityCase> {};

TEST_P(FusedIdentityOff, CasesCatchTheMissingCheck) {
  const IdentityCase& c = GetParam();
  const IdentityOutcome o = runIdentityCase(c, 5000);
  EXPECT_GT(o.wrongResults, 0) << "no rank returned wrong data without the check: "
                               << o.mismatchErrors << " mismatch errors, " << o.otherErrors
                               << " other errors (" << o.firstError << "), " << o.rightResults
                               << " right results";
}

INSTANTIATE_TEST_SUITE_P(F1, FusedIdentityOff, ::testing::ValuesIn(identityCases()),
                         [](const ::testing::TestParamInfo<IdentityCase>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace tutti::test
