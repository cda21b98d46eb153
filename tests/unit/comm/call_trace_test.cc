// The flight recorder: records in order, ring overwrite, states and times, off switch, and a
// reader thread printing while the calling thread writes (never a torn record).
#include "comm/call_trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tutti {
namespace {

// Describes a tag so that a torn record (tag words from two calls) is visible: the writer
// below always writes tag = {n, 3 * n + 1}.
std::string describe(const CallTag& t) {
  return "call(" + std::to_string(t[0]) + "," + std::to_string(t[1]) + ")";
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(CallTrace, KeepsTheLastCallsInOrderWithTheirStates) {
  CallTrace trace(4, 1);  // every call timed
  EXPECT_EQ(trace.current(describe), "no call made yet");
  for (uint64_t n = 1; n <= 6; ++n) {
    trace.begin({n, 3 * n + 1}, n % 2 ? "ring" : "");
    trace.end(n != 5);
  }
  trace.begin({7, 22}, "tree");
  std::vector<std::string> got = lines(trace.text(describe));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].rfind("#4 call(4,13) done after ", 0), 0u) << got[0];
  EXPECT_EQ(got[1].rfind("#5 call(5,16) [ring] FAILED after ", 0), 0u) << got[1];
  EXPECT_EQ(got[2].rfind("#6 call(6,19) done after ", 0), 0u) << got[2];
  EXPECT_EQ(got[3].rfind("#7 call(7,22) [tree] running for ", 0), 0u) << got[3];
  EXPECT_EQ(trace.current(describe).rfind("in call #7 call(7,22) for ", 0), 0u);
  trace.end(true);
  EXPECT_EQ(trace.current(describe).rfind("between calls, ", 0), 0u);
  EXPECT_NE(trace.current(describe).find("after call #7 call(7,22) (done)"), std::string::npos);
}

TEST(CallTrace, MeasuresTheCallsDuration) {
  CallTrace trace(2);
  trace.begin({1, 4}, "ring");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  trace.end(true);
  std::string line = lines(trace.text(describe)).at(0);
  size_t at = line.find("done after ");
  ASSERT_NE(at, std::string::npos) << line;
  double us = std::stod(line.substr(at + 11));
  EXPECT_GE(us, 25e3) << line;  // sleep_for never returns early; the clock must agree
  EXPECT_LT(us, 30e6) << line;
}

// Short calls: one in kTimeEvery is timed (the first, the 17th, ...), the others are recorded
// without a duration; once a timed call is long, every call is timed until one is short again.
TEST(CallTrace, TimesOneShortCallInSixteenAndEveryLongOne) {
  CallTrace trace(64);
  for (uint64_t n = 1; n <= 20; ++n) {
    trace.begin({n, 4}, "ring");
    trace.end(true);
  }
  std::vector<std::string> got = lines(trace.text(describe));
  ASSERT_EQ(got.size(), 20u);
  for (size_t i = 0; i < got.size(); ++i) {
    const bool timed = i == 0 || i == 16;
    EXPECT_EQ(got[i].find(" done after ") != std::string::npos, timed) << got[i];
    EXPECT_EQ(got[i].size() > 5 && got[i].substr(got[i].size() - 5) == " done", !timed) << got[i];
  }
  // Call 33 is timed and long: 34 and 35 are timed too; 35 is short, so 36 is not.
  for (uint64_t n = 21; n <= 36; ++n) {
    trace.begin({n, 4}, "ring");
    if (n == 33 || n == 34) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    trace.end(true);
  }
  got = lines(trace.text(describe));
  ASSERT_EQ(got.size(), 36u);
  EXPECT_NE(got[32].find(" done after "), std::string::npos) << got[32];
  EXPECT_NE(got[33].find(" done after "), std::string::npos) << got[33];
  EXPECT_NE(got[34].find(" done after "), std::string::npos) << got[34];
  EXPECT_EQ(got[35], "#36 call(36,4) [ring] done");
  // A call that was not timed gets a start when it stalls (a second ago), and an end when it
  // fails: then it says how long it ran (the coarse clock, a few ms).
  trace.begin({37, 4}, "ring");
  EXPECT_EQ(trace.current(describe), "in call #37 call(37,4)");
  trace.stalled(1.0);
  EXPECT_EQ(trace.current(describe).rfind("in call #37 call(37,4) for 1.0 s", 0), 0u)
      << trace.current(describe);
  trace.end(false);
  const std::string last = lines(trace.text(describe)).back();
  EXPECT_EQ(last.rfind("#37 call(37,4) [ring] FAILED after 1.0", 0), 0u) << last;
  EXPECT_NE(last.find(" s ago"), std::string::npos) << last;
}

TEST(CallTrace, OffRecordsNothing) {
  CallTrace trace(0);
  trace.begin({1, 4}, "ring");
  trace.end(true);
  EXPECT_EQ(trace.text(describe), "");
  EXPECT_EQ(trace.current(describe), "call recording off (TUTTI_TRACE_CALLS=0)");
}

TEST(CallTrace, ReaderOnAnotherThreadNeverSeesATornRecord) {
  CallTrace trace(8);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t n = 1; n <= 200000; ++n) {
      trace.begin({n, 3 * n + 1}, "ring");
      trace.end(true);
    }
    done = true;
  });
  int printed = 0;
  while (!done || printed == 0) {
    for (const std::string& l : lines(trace.text(describe))) {
      // "#N call(N,3N+1) ...": number and both tag words from one call
      unsigned long long number = 0, a = 0, b = 0;
      ASSERT_EQ(std::sscanf(l.c_str(), "#%llu call(%llu,%llu)", &number, &a, &b), 3) << l;
      ASSERT_EQ(number, a) << l;
      ASSERT_EQ(b, 3 * a + 1) << l;
      ++printed;
    }
  }
  writer.join();
  EXPECT_GT(printed, 0);
}

}  // namespace
}  // namespace tutti
