// Every collective and algorithm over the ibverbs transport (TUTTI_TRANSPORT=ibverbs) with
// 2 and 4 forked ranks, data verified against a float64 reference: a slice of the collective
// matrix (tests/multiproc/collectives_test.cc) sized for Soft-RoCE in an emulated VM.
// Skips without an RDMA device.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "common/dtype.h"
#include "harness/fork_harness.h"
#include "transports/ibverbs/ib_transport.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

enum class C { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll };
struct Coll {
  C coll;
  const char* name;
  std::vector<const char*> algos;
  bool hasOp;
};
const std::vector<Coll> kColls = {
    {C::kAllReduce,
     "allreduce",
     {"naive", "ps", "ring", "tree", "dbtree", "butterfly", "rabenseifner", "auto"},
     true},
    {C::kBroadcast, "broadcast", {"chain", "binomial", "auto"}, false},
    {C::kReduce, "reduce", {"chain", "binomial", "auto"}, true},
    {C::kAllGather, "allgather", {"ring", "rd", "bruck", "auto"}, false},
    {C::kReduceScatter, "reducescatter", {"ring", "rhalving", "auto"}, true},
    {C::kAllToAll, "alltoall", {"pairwise"}, false},
};

struct Case {
  const Coll* coll;
  const char* algo;
  tuttiDataType_t dtype;
  tuttiRedOp_t op;
  size_t count;
  bool inPlace;
  int root;
};

double inputValue(tuttiRedOp_t op, int r, size_t i) {
  switch (op) {
    case tuttiProd:
      return ((r + i) % 4 == 0) ? 2.0 : 1.0;
    case tuttiMin:
    case tuttiMax:
      return static_cast<double>((r * 3 + i) % 11);
    default:
      return static_cast<double>((r + i) % 3 + 1);
  }
}

void put(void* b, tuttiDataType_t t, size_t i, double v) {
  switch (t) {
    case tuttiInt8:
      static_cast<int8_t*>(b)[i] = static_cast<int8_t>(v);
      break;
    case tuttiInt32:
      static_cast<int32_t*>(b)[i] = static_cast<int32_t>(v);
      break;
    case tuttiInt64:
      static_cast<int64_t*>(b)[i] = static_cast<int64_t>(v);
      break;
    case tuttiFloat16:
      static_cast<uint16_t*>(b)[i] = floatToHalf(static_cast<float>(v));
      break;
    case tuttiBfloat16:
      static_cast<uint16_t*>(b)[i] = floatToBf16(static_cast<float>(v));
      break;
    case tuttiFloat32:
      static_cast<float*>(b)[i] = static_cast<float>(v);
      break;
    case tuttiFloat64:
      static_cast<double*>(b)[i] = v;
      break;
    default:
      break;
  }
}
double get(const void* b, tuttiDataType_t t, size_t i) {
  switch (t) {
    case tuttiInt8:
      return static_cast<const int8_t*>(b)[i];
    case tuttiInt32:
      return static_cast<const int32_t*>(b)[i];
    case tuttiInt64:
      return static_cast<double>(static_cast<const int64_t*>(b)[i]);
    case tuttiFloat16:
      return halfToFloat(static_cast<const uint16_t*>(b)[i]);
    case tuttiBfloat16:
      return bf16ToFloat(static_cast<const uint16_t*>(b)[i]);
    case tuttiFloat32:
      return static_cast<const float*>(b)[i];
    case tuttiFloat64:
      return static_cast<const double*>(b)[i];
    default:
      return NAN;
  }
}

double reduced(tuttiRedOp_t op, tuttiDataType_t t, int n, size_t i) {
  double acc = inputValue(op, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(op, r, i);
    acc = op == tuttiProd  ? acc * v
          : op == tuttiMin ? std::min(acc, v)
          : op == tuttiMax ? std::max(acc, v)
                           : acc + v;
  }
  if (op == tuttiAvg) acc = dtypeIsFloat(t) ? acc / n : std::trunc(acc / n);
  return acc;
}

std::string runCase(tuttiComm_t comm, const Case& c, int rank, int n) {
  size_t es = dtypeSize(c.dtype);
  size_t inE = c.count, outE = c.count;
  if (c.coll->coll == C::kAllGather) outE *= n;
  if (c.coll->coll == C::kReduceScatter) inE *= n;
  if (c.coll->coll == C::kAllToAll) inE = outE = c.count * n;
  std::vector<std::byte> inB(std::max<size_t>(inE, 1) * es), outB(std::max<size_t>(outE, 1) * es);
  void* in = inB.data();
  void* out = outB.data();
  tuttiRedOp_t op = c.coll->hasOp ? c.op : tuttiSum;
  for (size_t i = 0; i < outE; ++i) put(out, c.dtype, i, 99);
  auto fill = [&](void* dst, size_t e) {
    for (size_t i = 0; i < e; ++i) put(dst, c.dtype, i, inputValue(op, rank, i));
  };
  if (c.inPlace && c.coll->coll == C::kAllGather) {
    in = static_cast<std::byte*>(out) + rank * c.count * es;
    fill(in, c.count);
  } else if (c.inPlace && c.coll->coll == C::kReduceScatter) {
    fill(in, inE);
    out = static_cast<std::byte*>(in) + rank * c.count * es;
  } else if (c.inPlace) {
    fill(out, inE);
    in = out;
  } else {
    fill(in, inE);
  }
  std::string spec = std::string(c.coll->name) + ":" + c.algo;
  if (std::string(c.algo) == "auto")
    unsetenv("TUTTI_ALGO");
  else
    setenv("TUTTI_ALGO", spec.c_str(), 1);
  tuttiResult_t r = tuttiSuccess;
  switch (c.coll->coll) {
    case C::kAllReduce:
      r = tuttiAllReduce(in, out, c.count, c.dtype, op, comm, nullptr);
      break;
    case C::kBroadcast:
      r = tuttiBroadcast(in, out, c.count, c.dtype, c.root, comm, nullptr);
      break;
    case C::kReduce:
      r = tuttiReduce(in, out, c.count, c.dtype, op, c.root, comm, nullptr);
      break;
    case C::kAllGather:
      r = tuttiAllGather(in, out, c.count, c.dtype, comm, nullptr);
      break;
    case C::kReduceScatter:
      r = tuttiReduceScatter(in, out, c.count, c.dtype, op, comm, nullptr);
      break;
    case C::kAllToAll:
      r = tuttiAllToAll(in, out, c.count, c.dtype, comm, nullptr);
      break;
  }
  unsetenv("TUTTI_ALGO");
  if (r == tuttiInvalidArgument &&
      std::string(tuttiGetLastError(comm)).find("does not apply") != std::string::npos)
    return "";
  if (r != tuttiSuccess)
    return std::string("call failed: ") + tuttiGetErrorString(r) + ": " + tuttiGetLastError(comm);
  auto check = [&](size_t i, double want) -> std::string {
    double got = get(out, c.dtype, i);
    double tol =
        op == tuttiAvg && dtypeIsFloat(c.dtype) ? 1e-2 * std::max(1.0, std::fabs(want)) : 0;
    if (std::fabs(got - want) <= tol) return "";
    return "element " + std::to_string(i) + ": got " + std::to_string(got) + ", want " +
           std::to_string(want);
  };
  std::string err;
  for (size_t i = 0; err.empty() && i < c.count; ++i) {
    switch (c.coll->coll) {
      case C::kAllReduce:
        err = check(i, reduced(op, c.dtype, n, i));
        break;
      case C::kReduce:
        if (rank == c.root) err = check(i, reduced(op, c.dtype, n, i));
        break;
      case C::kBroadcast:
        err = check(i, inputValue(op, c.root, i));
        break;
      case C::kReduceScatter:
        err = check(i, reduced(op, c.dtype, n, rank * c.count + i));
        break;
      case C::kAllGather:
        for (int s = 0; s < n && err.empty(); ++s)
          err = check(s * c.count + i, inputValue(op, s, i));
        break;
      case C::kAllToAll:
        for (int s = 0; s < n && err.empty(); ++s)
          err = check(s * c.count + i, inputValue(op, s, rank * c.count + i));
        break;
    }
  }
  return err;
}

std::vector<Case> slice(int n) {
  std::vector<Case> cases;
  const size_t big = (1u << 18) + 3;  // 1 MiB of float32: chunked, pipelined, zero-copy
  for (const Coll& cd : kColls) {
    for (const char* algo : cd.algos) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, big}) {
        for (bool inPlace : {false, true}) {
          if (cd.coll == C::kAllToAll && inPlace) continue;
          if (inPlace && count != 1023) continue;
          int root =
              (cd.coll == C::kBroadcast || cd.coll == C::kReduce) && count == 1023 ? n - 1 : 0;
          cases.push_back({&cd, algo, tuttiFloat32, tuttiSum, count, inPlace, root});
        }
      }
    }
  }
  // Every dtype and op through the default allreduce and reduce-scatter.
  for (tuttiDataType_t t :
       {tuttiInt8, tuttiInt32, tuttiInt64, tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64})
    for (tuttiRedOp_t op : {tuttiSum, tuttiProd, tuttiMin, tuttiMax, tuttiAvg}) {
      cases.push_back({&kColls[0], "auto", t, op, 257, false, 0});
      cases.push_back({&kColls[4], "auto", t, op, 33, false, 0});
    }
  return cases;
}

class VerbsCollectives : public ::testing::TestWithParam<int> {};
TEST_P(VerbsCollectives, EveryCollectiveAndAlgorithmOverIbverbs) {
  std::string why = transport::ibProbe();
  if (!why.empty())
    GTEST_SKIP() << "no RDMA device here (" << why
                 << "); run the verbs tests in the Soft-RoCE VM: ctest -L verbs";
  int n = GetParam();
  setenv("TUTTI_TRANSPORT", "ibverbs", 1);
  tuttiUniqueId id = makeId();
  auto cases = slice(n);
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        int failures = 0;
        for (const Case& c : cases) {
          std::string err = runCase(comm, c, rank, n);
          if (err.empty()) continue;
          ADD_FAILURE() << "rank " << rank << " " << c.coll->name << ":" << c.algo << " "
                        << dtypeName(c.dtype) << " " << opName(c.op) << " count " << c.count
                        << (c.inPlace ? " in-place" : "") << " root " << c.root << ": " << err;
          if (++failures > 5 || err.rfind("call failed", 0) == 0) break;
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      600);
  unsetenv("TUTTI_TRANSPORT");
  std::printf("%zu cases on %d ranks over ibverbs in %.1f s\n", cases.size(), n, result.seconds);
  EXPECT_TRUE(result.allOk()) << result.describe();
}
INSTANTIATE_TEST_SUITE_P(Ranks, VerbsCollectives, ::testing::Values(2, 4));

}  // namespace
}  // namespace tutti::test
