// The digits data set and the softmax regression model the digits examples train
// (digits_training.cc, digits_shrink.cc): loading tests/data/digits.csv.gz, the fixed
// train/test split, the loss and its gradient, accuracy.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef TUTTI_HAVE_ZLIB
#include <zlib.h>
#endif

namespace digits {

constexpr int kFeat = 65, kClasses = 10, kParams = kFeat * kClasses, kTrain = 1440;
constexpr double kLambda = 1e-4, kLr = 0.5;
constexpr int kBatch = 32;

struct Data {
  std::vector<float> x;  // rows of kFeat
  std::vector<int> y;
  size_t rows() const { return y.size(); }
};

inline void parseLine(const char* line, Data& d) {
  std::vector<int> v;
  const char* p = line;
  while (*p != '\0' && *p != '\n') {
    char* end = nullptr;
    long n = std::strtol(p, &end, 10);
    if (end == p) break;
    v.push_back(static_cast<int>(n));
    p = *end == ',' ? end + 1 : end;
  }
  if (v.empty()) return;
  if (v.size() != 65) throw std::runtime_error("digits: a row without 65 integers");
  for (int j = 0; j < 64; ++j) d.x.push_back(static_cast<float>(v[j]) / 16.0f);
  d.x.push_back(1.0f);  // bias
  d.y.push_back(v[64]);
}

inline Data load(const std::string& path) {
  Data d;
  char line[4096];
#ifdef TUTTI_HAVE_ZLIB
  gzFile f = gzopen(path.c_str(), "rb");  // also reads uncompressed files
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  while (gzgets(f, line, sizeof(line)) != nullptr) parseLine(line, d);
  gzclose(f);
#else
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  while (std::fgets(line, sizeof(line), f) != nullptr) parseLine(line, d);
  std::fclose(f);
#endif
  return d;
}

// The fixed split, reordering the rows to [1440 train | 357 test] (the same on every rank and
// platform). "interleaved" (default): row i is a test row iff floor((i+1)*357/1797) >
// floor(i*357/1797), i.e. every ~5th row, evenly spread over the file (which is ordered by
// writer), train rows kept in file order. "head": rows [0, 1440) train, the rest test (the test
// set is then the last writers only). "shuffled": a Fisher-Yates permutation from a 64-bit LCG
// seeded with --split-seed, then head.
inline void splitRows(Data& d, const std::string& split, uint64_t state) {
  const size_t n = d.rows(), nTest = n - kTrain;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (split == "interleaved") {
    std::stable_partition(order.begin(), order.end(),
                          [&](size_t i) { return (i + 1) * nTest / n == i * nTest / n; });
  } else if (split == "shuffled") {
    for (size_t i = n - 1; i > 0; --i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(order[i], order[static_cast<size_t>((state >> 33) % (i + 1))]);
    }
  } else if (split != "head") {
    throw std::runtime_error("--split must be interleaved, head or shuffled, not " + split);
  }
  Data out;
  for (size_t i : order) {
    out.y.push_back(d.y[i]);
    out.x.insert(out.x.end(), d.x.begin() + i * kFeat, d.x.begin() + (i + 1) * kFeat);
  }
  d = std::move(out);
}

// The forward pass: per row of `rows`, the softmax output minus the one-hot target, over
// rows.size() (the factor of x in the gradient); *loss (when given) gets the mean loss.
inline std::vector<double> forwardDelta(const Data& d, const std::vector<float>& w,
                                        const std::vector<size_t>& rows, double* loss = nullptr) {
  std::vector<double> delta(rows.size() * kClasses);
  double sumLoss = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    const float* x = &d.x[rows[k] * kFeat];
    double z[kClasses], zmax = -1e300, sum = 0;
    for (int c = 0; c < kClasses; ++c) {
      double s = 0;
      for (int j = 0; j < kFeat; ++j) s += static_cast<double>(x[j]) * w[j * kClasses + c];
      z[c] = s;
      zmax = std::max(zmax, s);
    }
    for (int c = 0; c < kClasses; ++c) sum += (z[c] = std::exp(z[c] - zmax));
    sumLoss += -std::log(z[d.y[rows[k]]] / sum);
    for (int c = 0; c < kClasses; ++c)
      delta[k * kClasses + c] =
          (z[c] / sum - (c == d.y[rows[k]] ? 1.0 : 0.0)) / static_cast<double>(rows.size());
  }
  if (loss != nullptr) *loss = sumLoss / static_cast<double>(rows.size());
  return delta;
}

// The backward pass for features [from, to): adds their gradient, params [from * kClasses,
// to * kClasses), to grad (rows in order, so a pass in parts adds the same values as one pass).
inline void gradFeatures(const Data& d, const std::vector<size_t>& rows,
                         const std::vector<double>& delta, int from, int to,
                         std::vector<float>* grad) {
  for (size_t k = 0; k < rows.size(); ++k) {
    const float* x = &d.x[rows[k] * kFeat];
    for (int c = 0; c < kClasses; ++c)
      for (int j = from; j < to; ++j)
        (*grad)[j * kClasses + c] += static_cast<float>(delta[k * kClasses + c] * x[j]);
  }
}

// Adds the mean cross-entropy gradient over `rows` to grad (when given); returns the mean loss.
inline double lossGrad(const Data& d, const std::vector<float>& w, const std::vector<size_t>& rows,
                       std::vector<float>* grad) {
  double loss = 0;
  const std::vector<double> delta = forwardDelta(d, w, rows, &loss);
  if (grad != nullptr) gradFeatures(d, rows, delta, 0, kFeat, grad);
  return loss;
}

inline double regularisedLoss(const Data& d, const std::vector<float>& w,
                              const std::vector<size_t>& rows) {
  double sq = 0;
  for (float v : w) sq += static_cast<double>(v) * v;
  return lossGrad(d, w, rows, nullptr) + kLambda / 2 * sq;
}

inline double accuracy(const Data& d, const std::vector<float>& w, size_t from, size_t to) {
  size_t ok = 0;
  for (size_t r = from; r < to; ++r) {
    const float* x = &d.x[r * kFeat];
    int best = 0;
    double bestZ = -1e300;
    for (int c = 0; c < kClasses; ++c) {
      double s = 0;
      for (int j = 0; j < kFeat; ++j) s += static_cast<double>(x[j]) * w[j * kClasses + c];
      if (s > bestZ) bestZ = s, best = c;
    }
    ok += best == d.y[r];
  }
  return static_cast<double>(ok) / static_cast<double>(to - from);
}

}  // namespace digits
