// Fitting the cost model's link to measured calls: what tutti-tune does from perf-test CSVs
// and what self-tuning does at a host's first communicator (docs/tuning.md, "Self-tuning").
// A point is one algorithm at one size on one placement with its measured time; its features
// are the seconds one unit of each parameter adds (the timing of timed_sim.h at unit values);
// a weighted (relative error) least squares gives alpha and beta.
#pragma once

#include <utility>
#include <vector>

#include "interfaces/algorithm.h"
#include "tuning/cost_model.h"

namespace tutti::tuning {

enum class FitLink { kShm, kTcp };

struct PointFeatures {
  double alpha = 0, beta = 0, gamma = 0;
};

// The features of `info` on `args` for `link`: the other link costs nothing, cores_per_host
// is `cores` (0: unlimited).
PointFeatures featuresOf(const algo::AlgorithmInfo& info, const algo::CollArgs& args, FitLink link,
                         int cores);

// min sum ((T - gamma G - alpha A - beta B) / T)^2 with alpha, beta >= 0; returns {alpha, beta}
// (seconds per message, seconds per byte).
std::pair<double, double> fitAlphaBeta(const std::vector<double>& seconds,
                                       const std::vector<PointFeatures>& features,
                                       double gammaPerByte);

// The price of reading another rank's shared window (seconds per byte) at which m's time of
// `info` on `args` (a window algorithm) equals the measured `seconds`, m's other values kept:
// CostModel::windowReadBetaSmall where args' message is at most kWindowReadSmallBytes per rank
// and m has windowReadBeta (fitted first, on the larger call), else windowReadBeta; between 1e-12
// (1000 GB/s, also when the other terms alone take longer) and 1e-8 (0.1 GB/s). -1 when the
// schedule reads no peer's window or even 0.1 GB/s does not reach `seconds`.
double fitWindowReadBeta(const algo::AlgorithmInfo& info, const algo::CollArgs& args,
                         const CostModel& m, double seconds);

// Seconds per byte of the float32 sum kernel on `bytes` (the best of `reps`).
double measureGammaPerByte(size_t bytes, int reps);

}  // namespace tutti::tuning
