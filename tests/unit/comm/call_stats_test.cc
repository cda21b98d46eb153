// Counts and latency histograms per (collective, size bucket, algorithm): the keys kept apart,
// the size buckets, the percentile bounds from known latencies, the most called first, the
// calls past the table counted as dropped, and the flight recorder feeding them (not when off).
#include "comm/call_stats.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "comm/call_trace.h"
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

TEST(CallStats, KeysBucketsAndPercentiles) {
  CallStats stats;
  static const char* const kRing = "ring";
  static const char* const kLine = "line";
  // 100 calls of 1024 floats (4 KiB: bucket 4-8 KiB) by ring: 98 of 1000 ns, 2 of 100 us.
  for (int i = 0; i < 98; ++i) stats.add(allreduce(1024, tuttiFloat32), kRing, 1000);
  for (int i = 0; i < 2; ++i) stats.add(allreduce(1024, tuttiFloat32), kRing, 100000);
  // 3 calls of 2 floats (8 B) by line, and 1 of 1023 floats (4092 B: bucket 2-4 KiB) by ring.
  for (int i = 0; i < 3; ++i) stats.add(allreduce(2, tuttiFloat32), kLine, 300);
  stats.add(allreduce(1023, tuttiFloat32), kRing, 5000);
  const auto lines = stats.lines();
  ASSERT_EQ(lines.size(), 3u);
  // 1000 ns is in [512, 1024) -> "< 1.02 us"; 100 us in [65536, 131072) ns -> "< 131 us".
  EXPECT_EQ(lines[0],
            "allreduce 4 KiB-8 KiB [ring]: 100 calls, mean 2.98 us, p50 < 1.02 us, p99 < 131 "
            "us, max < 131 us");
  EXPECT_EQ(lines[1].rfind("allreduce 8 B-16 B [line]: 3 calls, mean 300 ns", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("allreduce 2 KiB-4 KiB [ring]: 1 calls", 0), 0u) << lines[2];
  EXPECT_EQ(stats.dropped(), 0u);
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
  EXPECT_EQ(lines[0].rfind("allreduce 64 B-128 B [ring]: 20000 calls, mean ", 0), 0u) << lines[0];
  CallTrace off(0);
  off.begin(allreduce(16, tuttiInt32), "ring");
  off.end(true);
  EXPECT_TRUE(off.stats().lines().empty());
}

}  // namespace
}  // namespace tutti
