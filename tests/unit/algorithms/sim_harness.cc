#include "sim_harness.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "common/dtype.h"
#include "common/error.h"

namespace tutti::algo::testing {
namespace {

bool isFloat(tuttiDataType_t t) { return dtypeIsFloat(t); }

// Input value of element idx on rank r, chosen so that sums and products stay exact and
// finite in every datatype for the rank counts tested (<= 16 ranks for data checks).
double inputValue(tuttiRedOp_t op, bool intType, int r, size_t idx) {
  size_t k = (static_cast<size_t>(r) * 7 + idx * 3 + idx / 5) % 9;
  if (op == tuttiProd) {
    switch ((r + idx) % 4) {
      case 0:
        return 2.0;
      case 2:
        return intType ? 1.0 : 0.5;
      default:
        return k % 2 ? -1.0 : 1.0;
    }
  }
  return static_cast<double>(k) - 4.0 + (op == tuttiSum ? 0.0 : 0.25 * (idx % 3));
}

void store(tuttiDataType_t t, std::byte* base, size_t i, double v) {
  switch (t) {
    case tuttiInt8: {
      int8_t x = static_cast<int8_t>(std::lround(std::floor(v)));
      std::memcpy(base + i, &x, 1);
      break;
    }
    case tuttiUint8: {
      uint8_t x = static_cast<uint8_t>(static_cast<int>(std::floor(v)));
      std::memcpy(base + i, &x, 1);
      break;
    }
    case tuttiInt32: {
      int32_t x = static_cast<int32_t>(std::floor(v));
      std::memcpy(base + 4 * i, &x, 4);
      break;
    }
    case tuttiUint32: {
      uint32_t x = static_cast<uint32_t>(static_cast<int64_t>(std::floor(v)));
      std::memcpy(base + 4 * i, &x, 4);
      break;
    }
    case tuttiInt64: {
      int64_t x = static_cast<int64_t>(std::floor(v));
      std::memcpy(base + 8 * i, &x, 8);
      break;
    }
    case tuttiUint64: {
      uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(std::floor(v)));
      std::memcpy(base + 8 * i, &x, 8);
      break;
    }
    case tuttiFloat16: {
      uint16_t x = floatToHalf(static_cast<float>(v));
      std::memcpy(base + 2 * i, &x, 2);
      break;
    }
    case tuttiBfloat16: {
      uint16_t x = floatToBf16(static_cast<float>(v));
      std::memcpy(base + 2 * i, &x, 2);
      break;
    }
    case tuttiFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(base + 4 * i, &x, 4);
      break;
    }
    case tuttiFloat64:
      std::memcpy(base + 8 * i, &v, 8);
      break;
    default:
      break;
  }
}

// Loads as double (floats) or as the integer value (exact in int64 for the sizes used).
double loadF(tuttiDataType_t t, const std::byte* base, size_t i) {
  switch (t) {
    case tuttiFloat16: {
      uint16_t x;
      std::memcpy(&x, base + 2 * i, 2);
      return halfToFloat(x);
    }
    case tuttiBfloat16: {
      uint16_t x;
      std::memcpy(&x, base + 2 * i, 2);
      return bf16ToFloat(x);
    }
    case tuttiFloat32: {
      float x;
      std::memcpy(&x, base + 4 * i, 4);
      return x;
    }
    case tuttiFloat64: {
      double x;
      std::memcpy(&x, base + 8 * i, 8);
      return x;
    }
    default:
      return 0;
  }
}
int64_t loadI(tuttiDataType_t t, const std::byte* base, size_t i) {
  switch (t) {
    case tuttiInt8: {
      int8_t x;
      std::memcpy(&x, base + i, 1);
      return x;
    }
    case tuttiUint8: {
      uint8_t x;
      std::memcpy(&x, base + i, 1);
      return x;
    }
    case tuttiInt32: {
      int32_t x;
      std::memcpy(&x, base + 4 * i, 4);
      return x;
    }
    case tuttiUint32: {
      uint32_t x;
      std::memcpy(&x, base + 4 * i, 4);
      return x;
    }
    case tuttiInt64: {
      int64_t x;
      std::memcpy(&x, base + 8 * i, 8);
      return x;
    }
    case tuttiUint64: {
      uint64_t x;
      std::memcpy(&x, base + 8 * i, 8);
      return static_cast<int64_t>(x);
    }
    default:
      return 0;
  }
}

struct Layout {
  size_t inElems, outElems;
  size_t inOffsetInOut = 0;  // in place: input = output + this (elements), or
  size_t outOffsetInIn = 0;  // output = input + this
  bool inputInsideOutput = false;
};

Layout layoutFor(Coll coll, size_t count, int n, int r) {
  switch (coll) {
    case Coll::kAllGather:
      return {count, n * count, r * count, 0, true};
    case Coll::kReduceScatter:
      return {n * count, count, 0, r * count, false};
    case Coll::kAllToAll:
      return {n * count, n * count, 0, 0, false};
    default:
      return {count, count, 0, 0, false};
  }
}

bool isReduction(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce;
}

}  // namespace

std::vector<int> evensThenOdds(int n) {
  std::vector<int> o;
  for (int r = 0; r < n; r += 2) o.push_back(r);
  for (int r = 1; r < n; r += 2) o.push_back(r);
  return o;
}

std::string describe(const Case& c) {
  std::ostringstream os;
  os << collName(c.algo->coll) << ":" << c.algo->name << " n=" << c.n << " count=" << c.count
     << " dtype=" << dtypeName(c.dtype) << " op=" << opName(c.op)
     << (c.inPlace ? " in-place" : " out-of-place") << (c.deterministic ? " det" : "")
     << " root=" << c.root;
  if (!c.ringOrder.empty()) os << " ringOrder=custom";
  if (!c.hostOf.empty()) {
    os << " hostOf=";
    for (int h : c.hostOf) os << h;
  }
  return os.str();
}

CollArgs argsFor(const Case& c, int rank) {
  CollArgs a;
  a.coll = c.algo->coll;
  a.count = c.count;
  a.dtype = c.dtype;
  a.op = c.op;
  a.root = c.root;
  a.rank = rank;
  a.nranks = c.n;
  a.deterministic = c.deterministic;
  a.ringOrder = c.ringOrder;
  a.hostOf = c.hostOf;
  a.windowBytes = c.windowBytes;
  return a;
}

Outcome run(const Case& c) {
  Outcome res;
  const Coll coll = c.algo->coll;
  const size_t es = dtypeSize(c.dtype);
  const int n = c.n;
  std::vector<exec::Schedule> scheds;
  try {
    for (int r = 0; r < n; ++r) scheds.push_back(c.algo->build(argsFor(c, r)));
  } catch (const Error& e) {
    res.error = describe(c) + ": build failed: " + e.what();
    return res;
  }
  // Memory: one block per rank holding both buffers (aliased when in place).
  std::vector<std::vector<std::byte>> mem(n);
  std::vector<exec::SimRankBuffers> bufs(n);
  std::vector<Layout> lay(n);
  const std::byte kGuard{0x5A};
  for (int r = 0; r < n; ++r) {
    lay[r] = layoutFor(coll, c.count, n, r);
    size_t inB = lay[r].inElems * es, outB = lay[r].outElems * es;
    if (!c.moveData) {
      bufs[r] = {nullptr, inB, nullptr, outB};
      continue;
    }
    if (c.inPlace) {
      mem[r].assign(std::max(inB, outB) + 1, kGuard);
      std::byte* base = mem[r].data();
      if (lay[r].inputInsideOutput)
        bufs[r] = {base + lay[r].inOffsetInOut * es, inB, base, outB};
      else
        bufs[r] = {base, inB, base + lay[r].outOffsetInIn * es, outB};
    } else {
      mem[r].assign(inB + outB + 1, kGuard);
      bufs[r] = {mem[r].data(), inB, mem[r].data() + inB, outB};
    }
    // Inputs (non-root broadcast ranks get data too: it must not be read).
    for (size_t i = 0; i < lay[r].inElems; ++i)
      store(c.dtype, bufs[r].input, i, inputValue(c.op, !isFloat(c.dtype), r, i));
  }
  std::vector<std::vector<std::byte>> inputsBefore(n);
  for (int r = 0; r < n && c.moveData; ++r)
    inputsBefore[r].assign(bufs[r].input, bufs[r].input + bufs[r].inputBytes);
  std::vector<std::vector<std::byte>> outputsBefore(n);
  for (int r = 0; r < n && c.moveData; ++r)
    outputsBefore[r].assign(bufs[r].output, bufs[r].output + bufs[r].outputBytes);

  exec::SimOptions opt;
  opt.moveData = c.moveData;
  opt.cost = c.cost;
  try {
    res.stats = exec::simulate(scheds, bufs, opt);
  } catch (const Error& e) {
    res.error = describe(c) + ": simulation failed: " + e.what();
    return res;
  }
  if (!c.moveData) return res;

  std::ostringstream err;
  int nerr = 0;
  auto bad = [&](int r, size_t i, const std::string& what) {
    if (nerr++ < 5) err << "\n  rank " << r << " elem " << i << ": " << what;
  };
  // Reference.
  for (int r = 0; r < n; ++r) {
    if (mem[r].back() != kGuard) bad(r, 0, "guard byte after the buffers was overwritten");
    if (!c.inPlace && bufs[r].inputBytes &&
        std::memcmp(inputsBefore[r].data(), bufs[r].input, bufs[r].inputBytes))
      bad(r, 0, "the input buffer was modified (out of place)");
    bool checkOut = !(coll == Coll::kReduce && r != c.root);
    if (!checkOut) {
      if (!c.inPlace && bufs[r].outputBytes &&
          std::memcmp(outputsBefore[r].data(), bufs[r].output, bufs[r].outputBytes))
        bad(r, 0, "a non-root output buffer of reduce was written");
      continue;
    }
    for (size_t i = 0; i < lay[r].outElems; ++i) {
      // Contributions: which (rank, input element) pairs make output element i.
      auto srcElem = [&](int j) -> std::pair<int, size_t> {
        switch (coll) {
          case Coll::kAllGather:
            return {static_cast<int>(i / c.count), i % c.count};
          case Coll::kReduceScatter:
            return {j, r * c.count + i};
          case Coll::kBroadcast:
            return {c.root, i};
          case Coll::kAllToAll:
            return {static_cast<int>(i / c.count), r * c.count + i % c.count};
          default:
            return {j, i};
        }
      };
      int nsrc = isReduction(coll) ? n : 1;
      if (isFloat(c.dtype)) {
        // Contribution as stored (rounded to the datatype).
        auto stored = [&](std::pair<int, size_t> s) {
          return loadF(c.dtype, inputsBefore[s.first].data(), s.second);
        };
        double ref = stored(srcElem(0)), mag = std::fabs(ref);
        for (int j = 1; j < nsrc; ++j) {
          double x = stored(srcElem(j));
          mag += std::fabs(x);
          switch (c.op) {
            case tuttiSum:
              ref += x;
              break;
            case tuttiProd:
              ref *= x;
              mag = std::fabs(ref);
              break;
            case tuttiMax:
              ref = std::max(ref, x);
              break;
            case tuttiMin:
              ref = std::min(ref, x);
              break;
            default:
              break;
          }
        }
        double tol = c.dtype == tuttiFloat64   ? 1e-12
                     : c.dtype == tuttiFloat32 ? 1e-6
                     : c.dtype == tuttiFloat16 ? 2e-3
                                               : 1.6e-2;
        double got = loadF(c.dtype, bufs[r].output, i);
        if (!(std::fabs(got - ref) <= tol * (mag + 1e-30) * nsrc))
          bad(r, i, "got " + std::to_string(got) + " expected " + std::to_string(ref));
      } else {
        auto stored = [&](std::pair<int, size_t> s) {
          return loadI(c.dtype, inputsBefore[s.first].data(), s.second);
        };
        int64_t ref = stored(srcElem(0));
        for (int j = 1; j < nsrc; ++j) {
          int64_t x = stored(srcElem(j));
          switch (c.op) {
            case tuttiSum:
              ref = static_cast<int64_t>(static_cast<uint64_t>(ref) + x);
              break;
            case tuttiProd:
              ref = static_cast<int64_t>(static_cast<uint64_t>(ref) * x);
              break;
            case tuttiMax:
              ref = std::max(ref, x);
              break;
            case tuttiMin:
              ref = std::min(ref, x);
              break;
            default:
              break;
          }
        }
        int64_t got = loadI(c.dtype, bufs[r].output, i);
        uint64_t mask = es >= 8 ? ~0ull : ((1ull << (8 * es)) - 1);
        if (((static_cast<uint64_t>(got) ^ static_cast<uint64_t>(ref)) & mask) != 0)
          bad(r, i, "got " + std::to_string(got) + " expected " + std::to_string(ref));
      }
    }
  }
  if (nerr) {
    res.error = describe(c) + ": " + std::to_string(nerr) + " wrong:" + err.str();
    return res;
  }
  res.outputs.resize(n);
  for (int r = 0; r < n; ++r)
    res.outputs[r].assign(bufs[r].output, bufs[r].output + bufs[r].outputBytes);
  return res;
}

}  // namespace tutti::algo::testing
