// The exit code of a test binary whose tests were all skipped (tests/harness/skip_main.cc);
// tutti_add_test sets it as the ctest SKIP_RETURN_CODE.
#pragma once

namespace tutti::test {
constexpr int kSkipExitCode = 77;
}  // namespace tutti::test
