#include "collective_cases.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace tutti::test {

const std::vector<CollDesc>& colls() {
  static const std::vector<CollDesc> v = {
      {C::kAllReduce,
       "allreduce",
       {"naive", "ps", "ring", "tree", "dbtree", "butterfly", "rabenseifner", "direct", "auto"},
       true},
      {C::kBroadcast, "broadcast", {"chain", "binomial", "auto"}, false},
      {C::kReduce, "reduce", {"chain", "binomial", "auto"}, true},
      {C::kAllGather, "allgather", {"ring", "rd", "bruck", "direct", "auto"}, false},
      {C::kReduceScatter, "reducescatter", {"ring", "rhalving", "direct", "auto"}, true},
      {C::kAllToAll, "alltoall", {"pairwise"}, false},
  };
  return v;
}

static const tuttiDataType_t kAllTypes[] = {tuttiInt8,    tuttiUint8,  tuttiInt32,   tuttiUint32,
                                            tuttiInt64,   tuttiUint64, tuttiFloat16, tuttiBfloat16,
                                            tuttiFloat32, tuttiFloat64};
static const tuttiRedOp_t kAllOps[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax, tuttiAvg};

static bool isSigned(tuttiDataType_t t) {
  return t == tuttiInt8 || t == tuttiInt32 || t == tuttiInt64 || dtypeIsFloat(t);
}

// The value rank r contributes at element i; small integers, exact in every dtype.
static double inputValue(tuttiRedOp_t op, tuttiDataType_t t, int r, size_t i) {
  switch (op) {
    case tuttiProd:
      return ((r + i) % 4 == 0) ? 2.0 : 1.0;
    case tuttiMin:
    case tuttiMax: {
      double v = static_cast<double>((r * 3 + i) % 11);
      return isSigned(t) ? v - 5.0 : v;
    }
    default:
      return static_cast<double>((r + i) % 3 + 1);
  }
}

static void store(void* buf, tuttiDataType_t t, size_t i, double v) {
  switch (t) {
    case tuttiInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case tuttiUint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case tuttiInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case tuttiUint32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case tuttiInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case tuttiUint64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
    case tuttiFloat16:
      static_cast<uint16_t*>(buf)[i] = floatToHalf(static_cast<float>(v));
      break;
    case tuttiBfloat16:
      static_cast<uint16_t*>(buf)[i] = floatToBf16(static_cast<float>(v));
      break;
    case tuttiFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case tuttiFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    default:
      break;
  }
}

static double load(const void* buf, tuttiDataType_t t, size_t i) {
  switch (t) {
    case tuttiInt8:
      return static_cast<const int8_t*>(buf)[i];
    case tuttiUint8:
      return static_cast<const uint8_t*>(buf)[i];
    case tuttiInt32:
      return static_cast<const int32_t*>(buf)[i];
    case tuttiUint32:
      return static_cast<const uint32_t*>(buf)[i];
    case tuttiInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case tuttiUint64:
      return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case tuttiFloat16:
      return halfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case tuttiBfloat16:
      return bf16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case tuttiFloat32:
      return static_cast<const float*>(buf)[i];
    case tuttiFloat64:
      return static_cast<const double*>(buf)[i];
    default:
      return NAN;
  }
}

static double reduceRef(tuttiRedOp_t op, tuttiDataType_t t, int n, size_t i) {
  double acc = inputValue(op, t, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(op, t, r, i);
    switch (op) {
      case tuttiProd:
        acc *= v;
        break;
      case tuttiMin:
        acc = std::min(acc, v);
        break;
      case tuttiMax:
        acc = std::max(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op == tuttiAvg) acc = dtypeIsFloat(t) ? acc / n : std::trunc(acc / n);
  return acc;
}

static bool close(double got, double want, tuttiDataType_t t, tuttiRedOp_t op) {
  if (op != tuttiAvg || !dtypeIsFloat(t)) return got == want;
  double tol = t == tuttiFloat16 || t == tuttiBfloat16 ? 1e-2 : (t == tuttiFloat32 ? 1e-6 : 1e-12);
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

std::string describe(const Case& c, int n) {
  return std::string(c.coll->name) + ":" + c.algo + " n=" + std::to_string(n) + " " +
         dtypeName(c.dtype) + " " + (c.coll->hasOp ? opName(c.op) : "-") +
         " count=" + std::to_string(c.count) + (c.inPlace ? " in-place" : " out-of-place") +
         " root=" + std::to_string(c.root);
}

namespace {

// What a case needs besides the algorithm: this rank's input, the sentinel-filled output and
// the expected output, as bytes of the dtype. Cases that differ only in the algorithm (and
// in-place) share them; buildCases puts those next to each other, so one cached entry makes
// the large counts cost a memcpy and a memcmp instead of a double-precision loop per element.
struct Prepared {
  std::string key;
  std::vector<std::byte> input, sentinel, expected;
  std::vector<double> expectedValues;  // for the element-wise check when bytes differ
  bool checked = true;                 // false: reduce on a non-root rank
};

Prepared& prepare(const Case& c, int rank, int n, size_t inElems, size_t outElems) {
  thread_local Prepared p;
  const tuttiRedOp_t op = c.coll->hasOp ? c.op : tuttiSum;
  std::string key = std::to_string(static_cast<int>(c.coll->coll)) + "/" + std::to_string(c.dtype) +
                    "/" + std::to_string(op) + "/" + std::to_string(c.count) + "/" +
                    std::to_string(c.root) + "/" + std::to_string(rank) + "/" + std::to_string(n);
  if (p.key == key) return p;
  p.key.clear();
  const size_t es = dtypeSize(c.dtype);
  p.input.assign(inElems * es, std::byte{0});
  for (size_t i = 0; i < inElems; ++i)
    store(p.input.data(), c.dtype, i, inputValue(op, c.dtype, rank, i));
  p.sentinel.assign(outElems * es, std::byte{0});
  for (size_t i = 0; i < outElems; ++i) store(p.sentinel.data(), c.dtype, i, 99);
  p.expectedValues.assign(outElems, 0.0);
  p.checked = true;
  auto& want = p.expectedValues;
  switch (c.coll->coll) {
    case C::kAllReduce:
      for (size_t i = 0; i < c.count; ++i) want[i] = reduceRef(op, c.dtype, n, i);
      break;
    case C::kReduce:
      p.checked = rank == c.root;
      if (p.checked)
        for (size_t i = 0; i < c.count; ++i) want[i] = reduceRef(op, c.dtype, n, i);
      break;
    case C::kBroadcast:
      for (size_t i = 0; i < c.count; ++i) want[i] = inputValue(op, c.dtype, c.root, i);
      break;
    case C::kAllGather:
      for (int src = 0; src < n; ++src)
        for (size_t i = 0; i < c.count; ++i)
          want[src * c.count + i] = inputValue(op, c.dtype, src, i);
      break;
    case C::kReduceScatter:
      for (size_t i = 0; i < c.count; ++i) want[i] = reduceRef(op, c.dtype, n, rank * c.count + i);
      break;
    case C::kAllToAll:
      for (int src = 0; src < n; ++src)
        for (size_t i = 0; i < c.count; ++i)
          want[src * c.count + i] = inputValue(op, c.dtype, src, rank * c.count + i);
      break;
  }
  p.expected.assign(outElems * es, std::byte{0});
  for (size_t i = 0; i < outElems; ++i) store(p.expected.data(), c.dtype, i, want[i]);
  p.key = std::move(key);
  return p;
}

// memcpy that accepts the null data() of empty vectors (count 0).
void copyBytes(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

}  // namespace

// Runs one case on this rank; returns "" or a description of the first wrong element.
std::string runCase(tuttiComm_t comm, const Case& c, int rank, int n) {
  size_t es = dtypeSize(c.dtype);
  size_t inElems = c.count, outElems = c.count;
  switch (c.coll->coll) {
    case C::kAllGather:
      outElems = c.count * n;
      break;
    case C::kReduceScatter:
      inElems = c.count * n;
      break;
    case C::kAllToAll:
      inElems = outElems = c.count * n;
      break;
    default:
      break;
  }
  const Prepared& prep = prepare(c, rank, n, inElems, outElems);
  // Reused across cases (no allocation, zeroing and first-touch faults per case): every byte
  // a case reads is written first (input, sentinel).
  thread_local std::vector<std::byte> inBuf, outBuf;
  inBuf.resize(std::max(inBuf.size(), std::max<size_t>(inElems, 1) * es + 64));
  outBuf.resize(std::max(outBuf.size(), std::max<size_t>(outElems, 1) * es + 64));
  void* in = inBuf.data();
  void* out = outBuf.data();
  // Sentinel in the output so untouched elements are caught.
  copyBytes(out, prep.sentinel.data(), prep.sentinel.size());
  tuttiRedOp_t op = c.coll->hasOp ? c.op : tuttiSum;
  if (c.inPlace) {
    switch (c.coll->coll) {
      case C::kAllGather:
        in = static_cast<std::byte*>(out) + rank * c.count * es;
        copyBytes(in, prep.input.data(), c.count * es);
        break;
      case C::kReduceScatter:
        copyBytes(in, prep.input.data(), inElems * es);
        out = static_cast<std::byte*>(in) + rank * c.count * es;
        break;
      default:
        copyBytes(out, prep.input.data(), inElems * es);
        in = out;
        break;
    }
  } else {
    copyBytes(in, prep.input.data(), inElems * es);
  }
  std::string algoSpec = std::string(c.coll->name) + ":" + c.algo;
  tuttiResult_t r =
      tuttiCommSetAlgorithm(comm, std::string(c.algo) == "auto" ? nullptr : algoSpec.c_str());
  if (r != tuttiSuccess)
    return std::string("call failed: tuttiCommSetAlgorithm: ") + tuttiGetLastError(comm);
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
  tuttiCommSetAlgorithm(comm, nullptr);
  if (r == tuttiInvalidArgument &&
      std::string(tuttiGetLastError(comm)).find("does not apply") != std::string::npos)
    return "";  // algorithm not applicable here (same decision on every rank)
  if (r != tuttiSuccess)
    return std::string("call failed: ") + tuttiGetErrorString(r) + ": " + tuttiGetLastError(comm);
  if (!prep.checked) return "";
  const size_t checkElems = c.coll->coll == C::kReduceScatter ? c.count : outElems;
  // Bitwise equal to the expected bytes: right. Otherwise compare values (tolerance for avg
  // on floats; -0 == +0) and name the first wrong element.
  if (checkElems == 0 || std::memcmp(out, prep.expected.data(), checkElems * es) == 0) return "";
  for (size_t i = 0; i < checkElems; ++i) {
    double got = load(out, c.dtype, i), want = prep.expectedValues[i];
    if (!close(got, want, c.dtype, op))
      return "element " + std::to_string(i) + ": got " + std::to_string(got) + ", want " +
             std::to_string(want);
  }
  return "";
}

std::vector<Case> buildCases(int n, bool full) {
  std::vector<Case> cases;
  const size_t big = (1u << 20) + 3;
  // TUTTI_TEST_ONLY_ALGO=direct restricts the matrix to one algorithm name (used to rerun
  // the direct algorithms with a tiny shared window, i.e. many chunks).
  const char* only = std::getenv("TUTTI_TEST_ONLY_ALGO");
  // The algorithm is the innermost loop: consecutive cases share input and expected output.
  for (const CollDesc& cd : colls()) {
    for (tuttiDataType_t t : kAllTypes) {
      for (tuttiRedOp_t op : kAllOps) {
        if (!cd.hasOp && op != tuttiSum) continue;
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, big}) {
          bool bigCase = count == big;
          if (bigCase) {
            // The slice: large counts for float32 sum and int32 max only.
            if (!full &&
                !((t == tuttiFloat32 && op == tuttiSum) || (t == tuttiInt32 && op == tuttiMax)))
              continue;
            if (cd.coll == C::kAllGather || cd.coll == C::kAllToAll ||
                cd.coll == C::kReduceScatter) {
              if (n > 4 && !full) continue;
            }
          }
          if (!full && count == 1023 && t != tuttiFloat32 && t != tuttiFloat16 && t != tuttiInt8)
            continue;
          std::vector<int> roots = {0};
          if ((cd.coll == C::kBroadcast || cd.coll == C::kReduce) && n > 1) roots.push_back(n - 1);
          for (int root : roots) {
            for (bool inPlace : {false, true}) {
              if (cd.coll == C::kAllToAll && inPlace) continue;
              for (const char* algo : cd.algos) {
                if (only && std::string(only) != algo) continue;
                cases.push_back({&cd, algo, t, op, count, inPlace, root});
              }
            }
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace tutti::test
