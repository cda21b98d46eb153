// main() for every GoogleTest binary of the suite: as gtest_main, except that a run in which
// every test was skipped (GTEST_SKIP, with its reason in the output) and none failed exits
// with kSkipExitCode, which ctest reports as "Skipped" (SKIP_RETURN_CODE) instead of "Passed".
#include "harness/skip_main.h"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
  if (rc == 0 && u.skipped_test_count() > 0 && u.successful_test_count() == 0 &&
      u.failed_test_count() == 0)
    return tutti::test::kSkipExitCode;
  return rc;
}
