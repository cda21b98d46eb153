#include "tuning/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/dtype.h"
#include "reduce/reduce.h"
#include "tuning/timed_sim.h"

namespace tutti::tuning {

PointFeatures featuresOf(const algo::AlgorithmInfo& info, const algo::CollArgs& args, FitLink link,
                         int cores) {
  const bool tcp = link == FitLink::kTcp;
  auto unit = [&](double al, double be, double ga) {
    CostModel m = CostModel::builtin();
    m.intraHost = tcp ? LinkCost{0, 0} : LinkCost{al, be};
    m.interHost = tcp ? LinkCost{al, be} : LinkCost{0, 0};
    m.gammaPerByte = ga;
    m.coresPerHost = cores;
    return timeCollective(info, args, m).seconds;
  };
  return {unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)};
}

double fitWindowReadBeta(const algo::AlgorithmInfo& info, const algo::CollArgs& args,
                         const CostModel& m, double seconds) {
  const bool small =
      m.windowReadBeta > 0 && args.count * dtypeSize(args.dtype) <= kWindowReadSmallBytes;
  auto predicted = [&](double readBeta) {
    CostModel c = m;
    (small ? c.windowReadBetaSmall : c.windowReadBeta) = readBeta;
    return timeCollective(info, args, c).seconds;
  };
  double lo = 1e-12, hi = 1e-8;  // the predicted time grows with the price
  const double fastest = predicted(lo), slowest = predicted(hi);
  if (!(slowest > fastest) || !(seconds <= slowest)) return -1;
  if (seconds <= fastest) return lo;
  for (int i = 0; i < 40; ++i) {
    const double mid = std::sqrt(lo * hi);  // bisect on a log scale: prices span 4 decades
    (predicted(mid) < seconds ? lo : hi) = mid;
  }
  return hi;
}

std::pair<double, double> fitAlphaBeta(const std::vector<double>& seconds,
                                       const std::vector<PointFeatures>& f, double gamma) {
  double saa = 0, sab = 0, sbb = 0, sat = 0, sbt = 0;
  for (size_t i = 0; i < seconds.size(); ++i) {
    double w = 1.0 / (seconds[i] * seconds[i]);
    double t = seconds[i] - gamma * f[i].gamma;
    saa += w * f[i].alpha * f[i].alpha;
    sab += w * f[i].alpha * f[i].beta;
    sbb += w * f[i].beta * f[i].beta;
    sat += w * f[i].alpha * t;
    sbt += w * f[i].beta * t;
  }
  double det = saa * sbb - sab * sab;
  double alpha = det != 0 ? (sat * sbb - sbt * sab) / det : 0;
  double beta = det != 0 ? (saa * sbt - sab * sat) / det : 0;
  if (alpha < 0 || det == 0) alpha = 0, beta = sbb > 0 ? sbt / sbb : 0;
  if (beta <= 0) beta = 1e-12, alpha = saa > 0 ? std::max(0.0, sat / saa) : 0;
  return {alpha, beta};
}

double measureGammaPerByte(size_t bytes, int reps) {
  size_t count = std::max<size_t>(1, bytes / sizeof(float));
  std::vector<float> a(count, 1.0f), b(count, 2.0f);
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    reduce::reduce(a.data(), a.data(), b.data(), count, tuttiFloat32, tuttiSum);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best / static_cast<double>(count * sizeof(float));
}

}  // namespace tutti::tuning
