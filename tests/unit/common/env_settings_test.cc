// Settings read from the environment: TUTTI_TIMEOUT is checked and deadlines saturate
// (clock.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <climits>
#include <cmath>
#include <string>

#include "common/clock.h"
#include "common/error.h"

namespace tutti {
namespace {

tuttiResult_t codeOf(const char* timeout, std::string* message) {
  setenv("TUTTI_TIMEOUT", timeout, 1);
  try {
    double s = timeoutFromEnv();
    unsetenv("TUTTI_TIMEOUT");
    return s > 0 ? tuttiSuccess : tuttiInternalError;
  } catch (const Error& e) {
    unsetenv("TUTTI_TIMEOUT");
    *message = e.what();
    return e.code();
  }
}

TEST(Timeout, NonPositiveAndNanAreRefusedNamingTheVariable) {
  for (const char* bad : {"-5", "0", "nan", "-inf", "-0"}) {
    std::string msg;
    EXPECT_EQ(codeOf(bad, &msg), tuttiInvalidArgument) << bad;
    EXPECT_NE(msg.find("TUTTI_TIMEOUT="), std::string::npos) << msg;
    EXPECT_NE(msg.find("positive"), std::string::npos) << msg;
  }
  for (const char* good : {"0.001", "60", "3e6", "1e300", "inf"}) {
    std::string msg;
    EXPECT_EQ(codeOf(good, &msg), tuttiSuccess) << good << ": " << msg;
  }
  std::string msg;
  EXPECT_EQ(codeOf("abc", &msg), tuttiInvalidArgument);
  EXPECT_EQ(checkTimeout("config.timeoutMs", 0.5), 0.5);
  EXPECT_THROW(checkTimeout("x", std::nan("")), Error);
}

TEST(Deadline, MsLeftSaturatesInsteadOfOverflowing) {
  // ~2.15e6 s is INT_MAX ms: every value from there up to inf must stay far in the future.
  for (double s : {2.1475e6, 2.2e6, 3e6, 1e9, 1e12, 1e300, double(INFINITY)}) {
    Deadline d(s);
    EXPECT_FALSE(d.expired()) << s;
    EXPECT_EQ(d.msLeft(), INT_MAX) << s;
    EXPECT_GT(d.secondsLeft(), 1e6) << s;
    EXPECT_EQ(d.totalSeconds(), s);
  }
  Deadline half(0.5);
  EXPECT_GT(half.msLeft(), 0);
  EXPECT_LE(half.msLeft(), 501);
  Deadline past(0);
  EXPECT_TRUE(past.expired());
  EXPECT_EQ(past.msLeft(), 0);
  Deadline negative(-5);
  EXPECT_TRUE(negative.expired());
  EXPECT_EQ(negative.msLeft(), 0);
}

}  // namespace
}  // namespace tutti
