// The cost model and timed simulation shared by the tuner and tutti-sim: byte counts equal
// the formulas of docs/algorithms.md, times follow the closed forms, grow with the size,
// symmetric mode agrees with exact mode, contention and tuning files work, and a
// 16384-rank job is timed in seconds.
#include "tuning/timed_sim.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/error.h"
#include "tuning/calibration.h"
#include "tuning/cost_model.h"
#include "tuning/tuner.h"

namespace {

// Sanitizer builds run several times slower: scale the time limits.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kSlow = 5.0;
#else
constexpr double kSlow = 1.0;
#endif

using tutti::algo::Coll;
using tutti::algo::CollArgs;
using tutti::tuning::CostModel;
using tutti::tuning::kWindowReadLargeBytes;
using tutti::tuning::kWindowReadSmallBytes;
using tutti::tuning::timeCollective;
using tutti::tuning::TimedOptions;
using tutti::tuning::windowReadPrice;

const tutti::algo::AlgorithmInfo& algoOf(const char* name, Coll c = Coll::kAllReduce) {
  const tutti::algo::AlgorithmInfo* info = tutti::algo::find(c, name);
  EXPECT_NE(info, nullptr) << name;
  return *info;
}

CollArgs args(int n, size_t count, int perHost = 0) {
  CollArgs a;
  a.nranks = n;
  a.count = count;
  if (perHost > 0 && perHost < n) {
    for (int r = 0; r < n; ++r) {
      a.hostOf.push_back(r / perHost);
      a.ringOrder.push_back(r);
    }
  }
  return a;
}

CostModel flat(double alpha, double beta, double gamma) {
  CostModel m = CostModel::builtin();
  m.intraHost = {alpha, beta};
  m.gammaPerByte = gamma;
  return m;
}

TEST(TimedSim, ByteCountsMatchDocsFormulas) {
  CostModel m = CostModel::builtin();
  for (int n : {2, 3, 4, 8, 16}) {
    size_t count = 1024 * 16 * 15;  // divisible by every n, bytes M = 4 count
    double M = 4.0 * count;
    auto ring = timeCollective(algoOf("ring"), args(n, count), m);
    EXPECT_EQ(ring.maxBytesSent, static_cast<size_t>(2.0 * (n - 1) * M / n)) << "ring n=" << n;
    EXPECT_EQ(ring.totalBytesSent, static_cast<size_t>(2.0 * (n - 1) * M)) << "ring n=" << n;
    EXPECT_EQ(ring.rounds, static_cast<size_t>(2 * (n - 1)));
    auto tree = timeCollective(algoOf("tree"), args(n, count), m);
    EXPECT_EQ(tree.totalBytesSent, static_cast<size_t>(2.0 * (n - 1) * M)) << "tree n=" << n;
    if ((n & (n - 1)) == 0) {
      int lg = __builtin_ctz(n);
      auto bf = timeCollective(algoOf("butterfly"), args(n, count), m);
      EXPECT_EQ(bf.maxBytesSent, static_cast<size_t>(M * lg)) << "butterfly n=" << n;
      auto rab = timeCollective(algoOf("rabenseifner"), args(n, count), m);
      EXPECT_EQ(rab.maxBytesSent, static_cast<size_t>(2.0 * (n - 1) * M / n)) << n;
      EXPECT_EQ(rab.rounds, static_cast<size_t>(2 * lg));
    }
  }
}

TEST(TimedSim, RingTimeIsTheClosedForm) {
  double alpha = 5e-6, beta = 1e-9, gamma = 2.5e-10;
  CostModel m = flat(alpha, beta, gamma);
  for (int n : {2, 4, 8, 12}) {
    size_t count = 3 * 1024 * 1024 / 4 * 4;  // divisible by n
    double M = 4.0 * count;
    double want = 2 * (n - 1) * (alpha + M / n * beta) + (n - 1) * M / n * gamma;
    double got = timeCollective(algoOf("ring"), args(n, count), m).seconds;
    EXPECT_NEAR(got, want, want * 1e-9) << "n=" << n;
  }
}

TEST(TimedSim, TimesGrowWithSize) {
  CostModel m = CostModel::builtin();
  for (const auto& info : tutti::algo::registry()) {
    if (info.coll != Coll::kAllReduce) continue;
    double prev = 0;
    bool applied = false;
    for (size_t count = 1; count <= (size_t{1} << 24); count *= 4) {
      CollArgs a = args(8, count, 2);
      if (!info.applicable(a)) continue;
      applied = true;
      double t = timeCollective(info, a, m).seconds;
      EXPECT_GE(t, prev) << info.name << " count " << count;
      prev = t;
    }
    if (applied) {
      EXPECT_GT(prev, 0) << info.name;
    }
  }
}

TEST(TimedSim, SymmetricModeAgreesWithExact) {
  CostModel m = CostModel::builtin();
  m.nicsPerHost = 2;
  TimedOptions exact, sym;
  exact.exactUpTo = 1 << 30;
  sym.exactUpTo = 1;
  for (const char* name : {"ring", "hier", "rabenseifner", "butterfly", "tree", "dbtree"}) {
    CollArgs a = args(64, size_t{1} << 22, 8);
    auto e = timeCollective(algoOf(name), a, m, exact);
    auto s = timeCollective(algoOf(name), a, m, sym);
    EXPECT_TRUE(e.exact);
    EXPECT_FALSE(s.exact);
    EXPECT_LT(s.ranksBuilt, e.ranksBuilt);
    EXPECT_NEAR(s.seconds, e.seconds, e.seconds * 0.02) << name;
    EXPECT_EQ(s.maxBytesSent, e.maxBytesSent) << name;
  }
}

TEST(TimedSim, SharedNicsContend) {
  // Hierarchical all-reduce: every rank of a host sends across hosts in the same rounds.
  CollArgs a = args(8, size_t{1} << 22, 4);
  CostModel one = CostModel::builtin(), four = CostModel::builtin();
  one.nicsPerHost = 1;
  four.nicsPerHost = 4;
  double t1 = timeCollective(algoOf("hier"), a, one).seconds;
  double t4 = timeCollective(algoOf("hier"), a, four).seconds;
  EXPECT_GT(t1, 1.5 * t4);
  // The flat ring crosses each host boundary with one rank: extra NICs do not help it.
  EXPECT_DOUBLE_EQ(timeCollective(algoOf("ring"), a, one).seconds,
                   timeCollective(algoOf("ring"), a, four).seconds);
}

TEST(TimedSim, CoresOversubscriptionScalesIntraHostBytes) {
  CostModel m = flat(0, 1e-9, 0);
  CostModel c = m;
  c.coresPerHost = 2;
  CollArgs a = args(8, size_t{1} << 20);
  double t = timeCollective(algoOf("ring"), a, m).seconds;
  EXPECT_NEAR(timeCollective(algoOf("ring"), a, c).seconds, 4 * t, 1e-12);
}

// A measured price of reading another rank's shared window (calibration) holds at every size,
// where the built-in rule lets a window of small chunks be read for free; the fit of that
// price to a direct all-reduce's time recovers it, and a schedule without window reads has
// none to fit.
TEST(TimedSim, MeasuredWindowReadsPriceDirectAndTheFitRecoversThem) {
  CollArgs a = args(4, 262144);  // 1 MiB of float32
  a.dtype = tuttiFloat32;
  a.op = tuttiSum;
  a.windowBytes = 256 << 10;  // cache-resident chunks: free under the built-in rule
  const auto& direct = algoOf("direct");
  CostModel m = flat(1e-6, 1.0 / 8e9, 1.0 / 20e9);
  const double free = timeCollective(direct, a, m).seconds;
  m.windowReadBeta = 1.0 / 5e9;
  const double priced = timeCollective(direct, a, m).seconds;
  EXPECT_GT(priced, free * 1.5);
  m.windowReadBeta = 1.0 / 10e9;
  EXPECT_LT(timeCollective(direct, a, m).seconds, priced);

  CostModel fitFrom = flat(1e-6, 1.0 / 8e9, 1.0 / 20e9);
  const double fitted = tutti::tuning::fitWindowReadBeta(direct, a, fitFrom, priced);
  EXPECT_NEAR(1e-9 / fitted, 5.0, 0.01);
  // Faster than the model without reads: free (the floor); beyond 0.1 GB/s: no fit.
  EXPECT_DOUBLE_EQ(tutti::tuning::fitWindowReadBeta(direct, a, fitFrom, free * 0.5), 1e-12);
  EXPECT_EQ(tutti::tuning::fitWindowReadBeta(direct, a, fitFrom, 10.0), -1);
  EXPECT_EQ(tutti::tuning::fitWindowReadBeta(algoOf("ring"), a, fitFrom, priced), -1);
}

// With the price measured on 64 KiB calls too, calls up to 64 KiB pay that one, calls from
// 1 MiB the 1 MiB call's, and the sizes between a price between them (log scales); the fit on
// the smaller call recovers its price beside the larger one's, which it leaves alone.
TEST(TimedSim, WindowReadsPricedBySizeAndTheSmallFitRecoversIt) {
  CostModel m = flat(1e-6, 1.0 / 8e9, 1.0 / 20e9);
  EXPECT_LE(windowReadPrice(m, 4096), 0);  // not measured
  m.windowReadBeta = 1.0 / 5e9;
  EXPECT_DOUBLE_EQ(windowReadPrice(m, 4096), m.windowReadBeta);  // no small price: one price
  m.windowReadBetaSmall = 1.0 / 80e9;
  EXPECT_DOUBLE_EQ(windowReadPrice(m, 4096), m.windowReadBetaSmall);
  EXPECT_DOUBLE_EQ(windowReadPrice(m, kWindowReadSmallBytes), m.windowReadBetaSmall);
  EXPECT_DOUBLE_EQ(windowReadPrice(m, kWindowReadLargeBytes), m.windowReadBeta);
  EXPECT_DOUBLE_EQ(windowReadPrice(m, size_t{64} << 20), m.windowReadBeta);
  EXPECT_NEAR(1e-9 / windowReadPrice(m, size_t{256} << 10), 20.0, 1e-9);  // halfway: 80 -> 5

  const auto& direct = algoOf("direct");
  CollArgs small = args(4, kWindowReadSmallBytes / 4);
  small.dtype = tuttiFloat32;
  small.op = tuttiSum;
  small.windowBytes = 256 << 10;
  CollArgs large = small;
  large.count = kWindowReadLargeBytes / 4;
  const double smallTime = timeCollective(direct, small, m).seconds;
  CostModel onePrice = m;
  onePrice.windowReadBetaSmall = -1;
  EXPECT_LT(smallTime, timeCollective(direct, small, onePrice).seconds);
  EXPECT_DOUBLE_EQ(timeCollective(direct, large, m).seconds,
                   timeCollective(direct, large, onePrice).seconds);

  CostModel fitFrom = onePrice;  // the larger call's price fitted first
  EXPECT_NEAR(1e-9 / tutti::tuning::fitWindowReadBeta(direct, small, fitFrom, smallTime), 80.0,
              0.05);
  // Without the larger call's price the small call fits the one price (the old rule).
  CostModel unfitted = fitFrom;
  unfitted.windowReadBeta = -1;
  const double one = tutti::tuning::fitWindowReadBeta(direct, small, unfitted, smallTime);
  unfitted.windowReadBeta = one;
  EXPECT_NEAR(timeCollective(direct, small, unfitted).seconds, smallTime, smallTime * 1e-6);
}

TEST(TimedSim, TunerPicksHierAcrossSlowHosts) {
  CostModel m = CostModel::builtin();
  m.interHost = {100e-6, 8.0 / 1e9};  // 1 Gbit/s
  CollArgs a = args(8, size_t{1} << 24, 2);
  auto c = tutti::tuning::rankCandidates(a, m);
  ASSERT_FALSE(c.empty());
  EXPECT_STREQ(c[0].info->name, "hier");
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LE(c[i - 1].predictedSec, c[i].predictedSec);
}

TEST(TimedSim, SixteenThousandRanksInSeconds) {
  CostModel m = CostModel::builtin();
  m.nicsPerHost = 8;
  auto start = std::chrono::steady_clock::now();
  for (const char* name : {"ring", "hier", "tree", "dbtree", "butterfly", "rabenseifner"}) {
    CollArgs a = args(16384, size_t{1} << 28, 8);
    auto r = timeCollective(algoOf(name), a, m);
    EXPECT_FALSE(r.exact);
    EXPECT_GT(r.seconds, 0) << name;
    EXPECT_LE(r.ranksBuilt, 48) << name;
  }
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(sec, 8.0 * kSlow) << "16384-rank timing took " << sec << " s";
  std::printf("16384 ranks, 6 algorithms: %.2f s\n", sec);
}

std::string tempFile(const std::string& text) {
  char path[] = "/tmp/tutti_tuning_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(TuningFile, RoundTripAndEnvironment) {
  CostModel m = CostModel::builtin();
  m.intraHost = {2.5e-6, 1.0 / 5e9};
  m.interHost = {60e-6, 1.0 / 0.9e9};
  m.gammaPerByte = 1.0 / 6e9;
  m.nicsPerHost = 2;
  m.coresPerHost = 4;
  std::string path = tempFile("");
  tutti::tuning::writeTuningFile(m, path, "test\nsecond line");
  CostModel r = tutti::tuning::loadTuningFile(path);
  EXPECT_NEAR(r.intraHost.alpha, 2.5e-6, 1e-12);
  EXPECT_NEAR(1 / r.intraHost.beta, 5e9, 1e3);
  EXPECT_NEAR(1 / r.interHost.beta, 0.9e9, 1e3);
  EXPECT_NEAR(r.interHost.alpha, 60e-6, 1e-12);
  EXPECT_NEAR(1 / r.gammaPerByte, 6e9, 1e3);
  EXPECT_EQ(r.nicsPerHost, 2);
  EXPECT_EQ(r.coresPerHost, 4);
  EXPECT_EQ(r.origin, path);
  setenv("TUTTI_TUNING_FILE", path.c_str(), 1);
  CostModel fromEnv;
  EXPECT_EQ(fromEnv.origin, path);
  EXPECT_NEAR(fromEnv.interHost.alpha, 60e-6, 1e-12);
  unsetenv("TUTTI_TUNING_FILE");
  EXPECT_EQ(CostModel().origin, "built-in");
  std::remove(path.c_str());
}

TEST(TuningFile, BadFilesNameFileAndLine) {
  std::string path = tempFile("# ok\nshm.gbps 3\nshm.gbps fast\n");
  try {
    tutti::tuning::loadTuningFile(path);
    FAIL() << "no error";
  } catch (const tutti::Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find(path), std::string::npos) << w;
    EXPECT_NE(w.find("line 3"), std::string::npos) << w;
  }
  std::ofstream(path) << "tcp.speed 3\n";
  EXPECT_THROW(tutti::tuning::loadTuningFile(path), tutti::Error);
  std::ofstream(path) << "tcp.gbps 0\n";
  EXPECT_THROW(tutti::tuning::loadTuningFile(path), tutti::Error);
  std::remove(path.c_str());
  EXPECT_THROW(tutti::tuning::loadTuningFile(path), tutti::Error);
}

}  // namespace
