// Issue 68's F1 (fused_identity_cases.h): ranks whose grouped all-reduces differ in their
// counts while the counts add up alike (16 + 32 against 32 + 16), packed alone or fused with an
// all-gather, over shm and tcp at 2-4 ranks. Every rank fails within the timeout naming
// mismatched collective calls; none returns tuttiSuccess; a packed call's outputs stay as they
// were. fused_identity_mutation_test.cc shows these cases fail when the check is removed.
#include <gtest/gtest.h>

#include "fused_identity_cases.h"

namespace tutti::test {
namespace {

constexpr int kTimeoutMs = 5000;

class FusedIdentity : public ::testing::TestWithParam<IdentityCase> {};

TEST_P(FusedIdentity, DifferentMembersFailEveryRankWithAMismatch) {
  const IdentityCase& c = GetParam();
  const IdentityOutcome o = runIdentityCase(c, kTimeoutMs);
  EXPECT_TRUE(o.ranAll) << o.ranks;
  EXPECT_EQ(o.wrongResults, 0) << "tuttiSuccess with wrong data: " << o.firstWrong;
  EXPECT_EQ(o.rightResults, 0) << "ranks whose calls differ succeeded";
  EXPECT_EQ(o.otherErrors, 0) << o.firstError;
  EXPECT_EQ(o.mismatchErrors, c.ranks) << o.firstError;
  EXPECT_EQ(o.touchedOutputs, 0) << "a failed packed call changed its outputs";
  EXPECT_LT(o.slowestSeconds, kTimeoutMs / 1000.0) << o.firstError;
  const char* named = c.mixed ? "fused group" : "packed all-reduce";
  EXPECT_NE(o.firstError.find(named), std::string::npos) << o.firstError;
}

INSTANTIATE_TEST_SUITE_P(F1, FusedIdentity, ::testing::ValuesIn(identityCases()),
                         [](const ::testing::TestParamInfo<IdentityCase>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace tutti::test
