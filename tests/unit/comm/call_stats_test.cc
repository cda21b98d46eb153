// Counts and latency histograms per (collective, size bucket, algorithm): the keys kept apart,
// the size buckets, the percentile bounds from known latencies, the most called first, the
// calls past the table counted as dropped, and the flight recorder feeding them (not when off).
#include "comm/call_stats.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>

#include "comm/call_trace.h"
#include "common/cycle_clock.h"
#include "interfaces/algorithm.h"

namespace tutti {
namespace {

CallTag allreduce(size_t count, tuttiDataType_t dtype) {
  algo::CollArgs a;
  a.coll = algo::Coll::kAllReduce;
  a.count = count;
  a.dtype = dtype;
  return collectiveCallTag(a, tuttiSum, false, 1);
}

// Ticks of the cycle clock for ns nanoseconds.
uint64_t ticks(double ns) {
  return static_cast<uint64_t>(ns / (CycleClock::secondsPerTick() * 1e9));
}

// "12.5 us" / "850 ns" / "3.2 ms" in nanoseconds.
double nanos(const std::string& text) {
  double v = 0;
  char unit[3] = {0};
  EXPECT_EQ(std::sscanf(text.c_str(), "%lf %2s", &v, unit), 2) << text;
  const std::string u = unit;
  return u == "ns" ? v : u == "us" ? v * 1e3 : u == "ms" ? v * 1e6 : v * 1e9;
}

// The time after `label` in a line ("p50 < 1.02 us," -> 1020).
double after(const std::string& line, const std::string& label) {
  const size_t at = line.find(label);
  EXPECT_NE(at, std::string::npos) << line;
  return at == std::string::npos ? 0 : nanos(line.substr(at + label.size()));
}

TEST(CallStats, KeysBucketsAndPercentiles) {
  CallStats stats;
  static const char* const kRing = "ring";
  static const char* const kLine = "line";
  // 100 calls of 1024 floats (4 KiB: bucket 4-8 KiB) by ring: 98 of 1000 ns, 2 of 100 us.
  for (int i = 0; i < 98; ++i) stats.add(allreduce(1024, tuttiFloat32), kRing, ticks(1000));
  for (int i = 0; i < 2; ++i) stats.add(allreduce(1024, tuttiFloat32), kRing, ticks(100000));
  // 3 calls of 2 floats (8 B) by line, and 1 of 1023 floats (4092 B: bucket 2-4 KiB) by ring.
  for (int i = 0; i < 3; ++i) stats.add(allreduce(2, tuttiFloat32), kLine, ticks(300));
  stats.add(allreduce(1023, tuttiFloat32), kRing, ticks(5000));
  const auto lines = stats.lines();
  ASSERT_EQ(lines.size(), 3u);
  const std::string& l = lines[0];
  EXPECT_EQ(l.rfind("allreduce 4 KiB-8 KiB [ring]: 100 calls: mean ", 0), 0u) << l;
  // Bounds are the tops of power-of-two buckets of ticks: above the value, below twice it.
  EXPECT_NEAR(after(l, "mean "), 2980, 40) << l;
  EXPECT_GT(after(l, "p50 < "), 1000 * 0.99) << l;
  EXPECT_LT(after(l, "p50 < "), 2000 * 1.01) << l;
  EXPECT_GT(after(l, "p99 < "), 100000 * 0.99) << l;
  EXPECT_LT(after(l, "p99 < "), 200000 * 1.01) << l;
  EXPECT_DOUBLE_EQ(after(l, "max < "), after(l, "p99 < ")) << l;
  EXPECT_EQ(lines[1].rfind("allreduce 8 B-16 B [line]: 3 calls: mean ", 0), 0u) << lines[1];
  EXPECT_NEAR(after(lines[1], "mean "), 300, 10) << lines[1];
  EXPECT_EQ(lines[2].rfind("allreduce 2 KiB-4 KiB [ring]: 1 calls", 0), 0u) << lines[2];
  EXPECT_EQ(stats.dropped(), 0u);
  // Untimed calls are counted, without latency.
  stats.add(allreduce(2, tuttiFloat32), kLine, 0);
  EXPECT_EQ(stats.lines()[1].rfind("allreduce 8 B-16 B [line]: 4 calls, 3 timed: mean ", 0), 0u)
      << stats.lines()[1];
}

TEST(CallStats, CountsWhatTheTableCannotKeep) {
  CallStats stats;
  static const char kAlgos[CallStats::kEntries + 5][8] = {};
  for (size_t i = 0; i < CallStats::kEntries + 5; ++i)
    stats.add(allreduce(8, tuttiFloat32), kAlgos[i], 100);  // a distinct key each
  EXPECT_EQ(stats.dropped(), 5u);
  EXPECT_EQ(stats.lines().back(), "5 calls of further kinds not kept");
}

TEST(CallStats, TheFlightRecorderFeedsThemAndAReaderMayPrintMeanwhile) {
  CallTrace trace(8);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) (void)trace.stats().lines();
  });
  for (int i = 0; i < 20000; ++i) {
    trace.begin(allreduce(16, tuttiInt32), "ring");
    trace.end(true);
  }
  done = true;
  reader.join();
  const auto lines = trace.stats().lines();
  ASSERT_EQ(lines.size(), 1u);
  // Short calls: one in CallTrace::kTimeEvery is timed, every one counted (more are timed
  // after a call that a busy machine made long).
  EXPECT_EQ(lines[0].rfind("allreduce 64 B-128 B [ring]: 20000 calls, ", 0), 0u) << lines[0];
  int timed = 0;
  ASSERT_EQ(std::sscanf(lines[0].c_str(), "allreduce 64 B-128 B [ring]: 20000 calls, %d timed",
                        &timed),
            1)
      << lines[0];
  EXPECT_GE(timed, 1250) << lines[0];
  EXPECT_LT(timed, 20000) << lines[0];
  CallTrace off(0);
  off.begin(allreduce(16, tuttiInt32), "ring");
  off.end(true);
  EXPECT_TRUE(off.stats().lines().empty());
}

}  // namespace
}  // namespace tutti
