// One rank of the tcp slice of the collective correctness matrix, launched by
// `tuttirun --hosts` across network namespaces (collectives_netns_test.cc): every collective x
// every algorithm (and the automatic choice) x in/out-of-place at counts {0, 1, 7, 1023,
// 64 Ki+3}, and every dtype x op through each reducing collective's default algorithm, checked
// against the float64 / exact-integer reference of tests/multiproc/collective_cases.cc.
// Then the compressed all-reduce over the same connections: "none" and top-k exactly the
// rank-order sums of what each rank sends, QSGD bitwise identical on every rank.
// Prints "rank R transports T", "rank R: K cases OK" and exits 0, or names each wrong case on
// stderr and exits 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "tutti/tutti.h"

namespace {

using tutti::test::C;
using tutti::test::Case;
using tutti::test::CollDesc;
using tutti::test::colls;

std::vector<Case> tcpSlice(int n) {
  std::vector<Case> cases;
  const size_t big = (size_t{1} << 16) + 3;  // 256 KiB of float32: several chunks per step
  for (const CollDesc& cd : colls()) {
    for (const char* algo : cd.algos) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, big}) {
        for (bool inPlace : {false, true}) {
          if (cd.coll == C::kAllToAll && inPlace) continue;
          std::vector<int> roots = {0};
          const bool rooted = cd.coll == C::kBroadcast || cd.coll == C::kReduce ||
                              cd.coll == C::kGather || cd.coll == C::kScatter;
          if (rooted && n > 1) roots.push_back(n - 1);
          for (int root : roots)
            cases.push_back({&cd, algo, tuttiFloat32, tuttiSum, count, inPlace, root});
        }
      }
    }
  }
  const tuttiDataType_t types[] = {tuttiInt8,    tuttiUint8,  tuttiInt32,   tuttiUint32,
                                   tuttiInt64,   tuttiUint64, tuttiFloat16, tuttiBfloat16,
                                   tuttiFloat32, tuttiFloat64};
  const tuttiRedOp_t ops[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax, tuttiAvg};
  for (const CollDesc& cd : colls()) {
    if (!cd.hasOp) continue;
    for (tuttiDataType_t t : types)
      for (tuttiRedOp_t op : ops)
        for (bool inPlace : {false, true})
          cases.push_back({&cd, "auto", t, op, 1023, inPlace, n - 1});
  }
  return cases;
}

// Distinct magnitudes (no ties for top-k), different on every rank.
std::vector<float> gradient(int rank, size_t d) {
  std::vector<float> g(d);
  for (size_t i = 0; i < d; ++i)
    g[i] = std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(rank)) *
           (1.0f + static_cast<float>((i * 7 + rank) % 13));
  return g;
}

// Returns "" or what is wrong with the compressed all-reduce across these hosts.
std::string checkCompressed(tuttiComm_t comm, int rank, int n) {
  const size_t d = 40009, k = 400;  // top-k ratio 0.01 -> k = 400
  std::vector<float> g = gradient(rank, d), out(d), none(d, 0.0f), topk(d, 0.0f);
  for (int r = 0; r < n; ++r) {
    std::vector<float> gr = gradient(r, d);
    std::vector<size_t> idx(d);
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](size_t a, size_t b) { return std::fabs(gr[a]) > std::fabs(gr[b]); });
    for (size_t j = 0; j < k; ++j) topk[idx[j]] += gr[idx[j]];
    for (size_t i = 0; i < d; ++i) none[i] += gr[i];
  }
  auto call = [&](const char* spec) -> std::string {
    tuttiResult_t r =
        tuttiAllReduceCompressed(g.data(), out.data(), d, tuttiFloat32, spec, 11, 0, comm, nullptr);
    if (r != tuttiSuccess)
      return std::string(spec) + ": " + tuttiGetErrorString(r) + " (" + tuttiGetLastError(comm) +
             ")";
    return "";
  };
  std::string err = call("none");
  if (err.empty() && std::memcmp(out.data(), none.data(), d * 4) != 0)
    err = "none: not the rank-order sum";
  if (err.empty()) err = call("topk:ratio=0.01");
  if (err.empty() && std::memcmp(out.data(), topk.data(), d * 4) != 0)
    err = "topk:ratio=0.01: not the sum of every rank's top-k entries";
  if (err.empty()) err = call("qsgd:s=4");
  if (err.empty()) {
    std::vector<float> all(d * n);
    tuttiResult_t r = tuttiAllGather(out.data(), all.data(), d, tuttiFloat32, comm, nullptr);
    if (r != tuttiSuccess) return std::string("all-gather of the QSGD results failed");
    for (int p = 0; p < n && err.empty(); ++p)
      if (std::memcmp(all.data() + p * d, out.data(), d * 4) != 0)
        err = "qsgd:s=4: rank " + std::to_string(p) + "'s result differs from this rank's";
    // QSGD's variance bound (B = 512, s = 4): E|Q(g) - g|^2 <= sqrt(B)/s |g|^2 per rank, and
    // the ranks' errors are independent: allow twice the sum of the bounds.
    double err2 = 0, bound = 0;
    for (size_t i = 0; i < d; ++i) err2 += (out[i] - none[i]) * (out[i] - none[i]);
    for (int r = 0; r < n; ++r)
      for (float v : gradient(r, d)) bound += std::sqrt(512.0) / 4 * v * v;
    if (err.empty() && !(err2 <= 2 * bound))
      err = "qsgd:s=4: squared error " + std::to_string(err2) + " above twice its bound " +
            std::to_string(bound);
  }
  return err;
}

}  // namespace

int main() {
  const char* env = std::getenv("TUTTI_RANK");
  int rank = env ? std::atoi(env) : -1;
  tuttiComm_t comm = nullptr;
  tuttiResult_t r = tuttiCommInitFromEnv(&comm, nullptr);
  if (r != tuttiSuccess) {
    std::fprintf(stderr, "rank %d: tuttiCommInitFromEnv failed: %s (%s)\n", rank,
                 tuttiGetErrorString(r), tuttiGetLastError(comm));
    return 1;
  }
  int n = 0;
  tuttiCommCount(comm, &n);
  tuttiCommUserRank(comm, &rank);
  std::vector<Case> cases = tcpSlice(n);
  int failures = 0;
  for (const Case& c : cases) {
    std::string err = tutti::test::runCase(comm, c, rank, n);
    if (err.empty()) continue;
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, tutti::test::describe(c, n).c_str(),
                 err.c_str());
    if (++failures > 10 || err.rfind("call failed", 0) == 0) break;
  }
  if (failures == 0) {
    std::string err = checkCompressed(comm, rank, n);
    if (!err.empty()) {
      std::fprintf(stderr, "rank %d: compressed all-reduce: %s\n", rank, err.c_str());
      ++failures;
    }
  }
  std::printf("rank %d transports %s\n", rank, tuttiCommTransports(comm));
  if (failures == 0) r = tuttiBarrier(comm, nullptr);  // nobody leaves while rank 0 serves
  tuttiCommDestroy(comm);
  if (failures == 0 && r == tuttiSuccess)
    std::printf("rank %d: %zu cases and the compressed all-reduce OK\n", rank, cases.size());
  return failures == 0 && r == tuttiSuccess ? 0 : 1;
}
