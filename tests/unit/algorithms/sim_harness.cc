#include "sim_harness.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "common/dtype.h"
#include "common/error.h"
#include "support/verifiable.h"

namespace tutti::algo::testing {
namespace {

struct Layout {
  size_t inElems, outElems;
  size_t inOffsetInOut = 0;  // in place: input = output + this (elements), or
  size_t outOffsetInIn = 0;  // output = input + this
  bool inputInsideOutput = false;
};

Layout layoutFor(Coll coll, size_t count, int n, int r, int root) {
  const bool isRoot = r == root;
  switch (coll) {
    case Coll::kGather:  // non-roots: an output of one block that must stay untouched
      return {count, isRoot ? n * count : count, isRoot ? r * count : 0, 0, true};
    case Coll::kScatter:  // non-roots: an input of one block that is never read
      return {isRoot ? n * count : count, count, 0, isRoot ? r * count : 0, false};
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
  // A V-collective without counts runs the uniform layout of its plain counterpart.
  const Coll coll = plainOf(c.algo->coll);
  const size_t es = dtypeSize(c.dtype);
  const int n = c.n;
  std::vector<exec::Schedule> scheds;
  try {
    for (int r = 0; r < n; ++r) scheds.push_back(c.algo->build(argsFor(c, r)));
  } catch (const Error& e) {
    res.error = describe(c) + ": build failed: " + e.what();
    return res;
  }
  // Memory: one block per rank holding both buffers (aliased when in place), with guard bytes
  // before and after.
  thread_local uint64_t calls = 0;
  const verifiable::Spec spec{c.dtype, verifiable::kindOf(isReduction(coll), c.op), n,
                              verifiable::seedOf({c.seed, calls++})};
  std::vector<verifiable::GuardedBuffer> mem(n);
  std::vector<exec::SimRankBuffers> bufs(n);
  std::vector<Layout> lay(n);
  for (int r = 0; r < n; ++r) {
    lay[r] = layoutFor(coll, c.count, n, r, c.root);
    size_t inB = lay[r].inElems * es, outB = lay[r].outElems * es;
    if (!c.moveData) {
      bufs[r] = {nullptr, inB, nullptr, outB};
      continue;
    }
    if (c.inPlace) {
      mem[r].resize(std::max(inB, outB));
      std::byte* base = mem[r].data();
      if (lay[r].inputInsideOutput)
        bufs[r] = {base + lay[r].inOffsetInOut * es, inB, base, outB};
      else
        bufs[r] = {base, inB, base + lay[r].outOffsetInIn * es, outB};
    } else {
      mem[r].resize(inB + outB);
      bufs[r] = {mem[r].data(), inB, mem[r].data() + inB, outB};
    }
    if (mem[r].size() > 0) std::memset(mem[r].data(), 0xA5, mem[r].size());
    // Inputs (non-root broadcast ranks get data too: it must not be read).
    verifiable::fill(spec, r, bufs[r].input, lay[r].inElems);
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
  // Reference: a plain loop over the ranks' values (tests/support/verifiable.h).
  std::vector<std::byte> want;
  for (int r = 0; r < n; ++r) {
    if (std::string g = mem[r].checkGuards(); !g.empty()) bad(r, 0, g);
    if (!c.inPlace && bufs[r].inputBytes &&
        std::memcmp(inputsBefore[r].data(), bufs[r].input, bufs[r].inputBytes))
      bad(r, 0, "the input buffer was modified (out of place)");
    bool checkOut = !((coll == Coll::kReduce || coll == Coll::kGather) && r != c.root);
    if (!checkOut) {
      if (!c.inPlace && bufs[r].outputBytes &&
          std::memcmp(outputsBefore[r].data(), bufs[r].output, bufs[r].outputBytes))
        bad(r, 0, std::string("a non-root output buffer of ") + collName(coll) + " was written");
      continue;
    }
    const size_t outElems = lay[r].outElems;
    want.resize(outElems * es);
    switch (coll) {
      case Coll::kAllGather:
      case Coll::kGather:
        for (int src = 0; src < n; ++src)
          verifiable::fill(spec, src, want.data() + src * c.count * es, c.count);
        break;
      case Coll::kAllToAll:
        for (int src = 0; src < n; ++src)
          verifiable::fill(spec, src, want.data() + src * c.count * es, c.count, r * c.count);
        break;
      case Coll::kBroadcast:
        verifiable::fill(spec, c.root, want.data(), outElems);
        break;
      case Coll::kScatter:
        verifiable::fill(spec, c.root, want.data(), outElems, r * c.count);
        break;
      case Coll::kReduceScatter:
        verifiable::fillReduced(spec, want.data(), outElems, r * c.count);
        break;
      default:
        verifiable::fillReduced(spec, want.data(), outElems);
        break;
    }
    size_t first = 0;
    size_t wrong = verifiable::countWrong(spec, bufs[r].output, want.data(), outElems, &first);
    if (wrong > 0)
      bad(r, first,
          std::to_string(wrong) + " wrong, first: got " +
              std::to_string(verifiable::load(c.dtype, bufs[r].output, first)) + " expected " +
              std::to_string(verifiable::load(c.dtype, want.data(), first)));
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
