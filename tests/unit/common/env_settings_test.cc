// Settings read from the environment: TUTTI_TIMEOUT is checked and deadlines saturate
// (clock.h); unknown TUTTI_DEBUG / TUTTI_DEBUG_SUBSYS values are reported by a warning.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <climits>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "harness/temp_dir.h"

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

std::string logged(const char* level, const char* subsys) {
  test::TempDir dir;
  std::string file = dir.path() + "/log.txt";
  setenv("TUTTI_DEBUG_FILE", file.c_str(), 1);
  if (level) setenv("TUTTI_DEBUG", level, 1);
  if (subsys) setenv("TUTTI_DEBUG_SUBSYS", subsys, 1);
  log::reconfigure();
  unsetenv("TUTTI_DEBUG_FILE");
  unsetenv("TUTTI_DEBUG");
  unsetenv("TUTTI_DEBUG_SUBSYS");
  log::reconfigure();  // back to stderr, closing the file
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LogSettings, UnknownLevelIsAWarning) {
  std::string out = logged("LOUD", nullptr);
  EXPECT_NE(out.find("WARN INIT TUTTI_DEBUG=LOUD is not a log level"), std::string::npos) << out;
  EXPECT_EQ(logged("INFO", nullptr), "");
  EXPECT_EQ(logged("none", "FOO"), "");  // logging off: silent
}

TEST(LogSettings, UnknownSubsystemIsAWarning) {
  std::string out = logged(nullptr, "INIT,FOO,BAR");
  EXPECT_NE(out.find("TUTTI_DEBUG_SUBSYS=INIT,FOO,BAR: unknown subsystem(s) FOO, BAR ignored"),
            std::string::npos)
      << out;
  EXPECT_EQ(logged(nullptr, "^TOPO,coll"), "");
  EXPECT_EQ(logged(nullptr, "ALL"), "");
}

}  // namespace
}  // namespace tutti
