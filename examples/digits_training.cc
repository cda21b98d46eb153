// Data-parallel softmax regression on the UCI digits (tests/data/digits.csv.gz) with the
// gradient all-reduced four ways: dense float32 (tuttiAllReduce), top-k 1% without and with
// error feedback, and QSGD s=4 (tuttiAllReduceCompressed). Run under the launcher:
//   tuttirun -np 8 examples/digits_training [--steps 3000] [--seeds 1] [--data FILE]
// Model: W (65 x 10), features/16 plus a bias column, W0 = 0, loss cross-entropy +
// (1e-4/2)||W||^2; rows permuted once (fixed), then 1440 train (sharded evenly over ranks)
// and 357 test; batch 32 per rank drawn with replacement; learning rate 0.5.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef TUTTI_HAVE_ZLIB
#include <zlib.h>
#endif

#include "tutti/tutti.h"

namespace {

constexpr int kFeat = 65, kClasses = 10, kParams = kFeat * kClasses, kTrain = 1440;
constexpr double kLambda = 1e-4, kLr = 0.5;
constexpr int kBatch = 32;

struct Data {
  std::vector<float> x;  // rows of kFeat
  std::vector<int> y;
  size_t rows() const { return y.size(); }
};

void parseLine(const char* line, Data& d) {
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

Data load(const std::string& path) {
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

// A fixed split: the file is ordered by writer, so rows are permuted (Fisher-Yates with a
// hand-written 64-bit LCG: the same on every platform and every rank).
void shuffleRows(Data& d) {
  uint64_t state = 20260101;
  for (size_t i = d.rows() - 1; i > 0; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    size_t j = static_cast<size_t>((state >> 33) % (i + 1));
    std::swap(d.y[i], d.y[j]);
    std::swap_ranges(d.x.begin() + i * kFeat, d.x.begin() + (i + 1) * kFeat,
                     d.x.begin() + j * kFeat);
  }
}

// Adds the mean cross-entropy gradient over `rows` to grad; returns the mean loss.
double lossGrad(const Data& d, const std::vector<float>& w, const std::vector<size_t>& rows,
                std::vector<float>* grad) {
  double loss = 0;
  for (size_t r : rows) {
    const float* x = &d.x[r * kFeat];
    double z[kClasses], zmax = -1e300, sum = 0;
    for (int c = 0; c < kClasses; ++c) {
      double s = 0;
      for (int j = 0; j < kFeat; ++j) s += static_cast<double>(x[j]) * w[j * kClasses + c];
      z[c] = s;
      zmax = std::max(zmax, s);
    }
    for (int c = 0; c < kClasses; ++c) sum += (z[c] = std::exp(z[c] - zmax));
    loss += -std::log(z[d.y[r]] / sum);
    if (grad == nullptr) continue;
    for (int c = 0; c < kClasses; ++c) {
      double g = (z[c] / sum - (c == d.y[r] ? 1.0 : 0.0)) / static_cast<double>(rows.size());
      for (int j = 0; j < kFeat; ++j) (*grad)[j * kClasses + c] += static_cast<float>(g * x[j]);
    }
  }
  return loss / static_cast<double>(rows.size());
}

double regularisedLoss(const Data& d, const std::vector<float>& w,
                       const std::vector<size_t>& rows) {
  double sq = 0;
  for (float v : w) sq += static_cast<double>(v) * v;
  return lossGrad(d, w, rows, nullptr) + kLambda / 2 * sq;
}

double accuracy(const Data& d, const std::vector<float>& w, size_t from, size_t to) {
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

void check(tuttiResult_t r, tuttiComm_t comm, const char* what) {
  if (r != tuttiSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", what, tuttiGetErrorString(r), tuttiGetLastError(comm));
    std::exit(1);
  }
}

struct Method {
  const char* name;
  const char* compressor;  // nullptr: plain tuttiAllReduce
  int errorFeedback;
};

}  // namespace

int main(int argc, char** argv) {
  int steps = 3000, seeds = 1, every = 500;
  std::string path = TUTTI_DIGITS_PATH;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--steps")
      steps = std::atoi(argv[i + 1]);
    else if (a == "--seeds")
      seeds = std::atoi(argv[i + 1]);
    else if (a == "--every")
      every = std::atoi(argv[i + 1]);
    else if (a == "--data")
      path = argv[i + 1];
  }
  tuttiComm_t comm = nullptr;
  check(tuttiCommInitFromEnv(&comm, nullptr), nullptr, "tuttiCommInitFromEnv");
  int rank = 0, nranks = 1;
  check(tuttiCommUserRank(comm, &rank), comm, "tuttiCommUserRank");
  check(tuttiCommCount(comm, &nranks), comm, "tuttiCommCount");
  Data d = load(path);
  if (d.rows() <= kTrain) throw std::runtime_error("digits: too few rows in " + path);
  shuffleRows(d);
  const size_t shard = kTrain / nranks, first = shard * rank;
  std::vector<size_t> trainRows(kTrain);
  for (size_t r = 0; r < kTrain; ++r) trainRows[r] = r;

  const Method methods[] = {{"dense float32", nullptr, 0},
                            {"top-k 1% no EF", "topk:ratio=0.01", 0},
                            {"top-k 1% + EF", "topk:ratio=0.01", 1},
                            {"QSGD s=4 b=512", "qsgd:s=4,b=512", 0}};
  std::vector<std::string> summary;
  for (int m = 0; m < 4; ++m) {
    const Method& method = methods[m];
    double sumLoss = 0, sumAcc = 0, sumBytes = 0;
    for (int seed = 0; seed < seeds; ++seed) {
      const uint64_t key = static_cast<uint64_t>(m) * 1000 + seed;
      std::vector<float> w(kParams, 0.0f), grad(kParams), sum(kParams);
      std::mt19937_64 rng(0x5eed + 7919 * seed + 104729 * rank);
      std::uniform_int_distribution<size_t> pick(first, first + shard - 1);
      std::vector<size_t> batch(kBatch);
      uint64_t bytes = 0;
      if (rank == 0)
        std::printf("== %s, %d ranks, seed %d ==\n%6s %10s %9s %14s\n", method.name, nranks, seed,
                    "step", "loss", "test acc", "wire B/rank");
      for (int step = 1; step <= steps; ++step) {
        for (auto& b : batch) b = pick(rng);
        std::fill(grad.begin(), grad.end(), 0.0f);
        lossGrad(d, w, batch, &grad);
        if (method.compressor == nullptr) {
          check(tuttiAllReduce(grad.data(), sum.data(), kParams, tuttiFloat32, tuttiSum, comm,
                               nullptr),
                comm, "tuttiAllReduce");
          bytes = 4 * kParams;
        } else {
          check(
              tuttiAllReduceCompressed(grad.data(), sum.data(), kParams, tuttiFloat32,
                                       method.compressor, key, method.errorFeedback, comm, nullptr),
              comm, "tuttiAllReduceCompressed");
          tuttiCompressionStats_t st{};
          check(tuttiCompressionStats(comm, &st), comm, "tuttiCompressionStats");
          bytes = st.wireBytesLastCall;
        }
        for (int i = 0; i < kParams; ++i)
          w[i] -= static_cast<float>(kLr * (sum[i] / nranks + kLambda * w[i]));
        if (rank == 0 && (step % every == 0 || step == steps))
          std::printf("%6d %10.4f %9.4f %14llu\n", step, regularisedLoss(d, w, trainRows),
                      accuracy(d, w, kTrain, d.rows()), static_cast<unsigned long long>(bytes));
      }
      sumLoss += regularisedLoss(d, w, trainRows);
      sumAcc += accuracy(d, w, kTrain, d.rows());
      sumBytes += static_cast<double>(bytes);
      check(tuttiCompressionResetKey(comm, key), comm, "tuttiCompressionResetKey");
    }
    char line[200];
    std::snprintf(line, sizeof(line), "| %-16s | %8.4f | %8.4f | %6.0f |", method.name,
                  sumLoss / seeds, sumAcc / seeds, sumBytes / seeds);
    summary.push_back(line);
  }
  if (rank == 0) {
    std::printf("\nmean over %d seed(s), %d steps, %d ranks\n", seeds, steps, nranks);
    std::printf("| %-16s | %8s | %8s | %6s |\n", "all-reduce", "loss", "test acc", "B/rank");
    for (const auto& s : summary) std::printf("%s\n", s.c_str());
  }
  check(tuttiCommDestroy(comm), comm, "tuttiCommDestroy");
  return 0;
}
