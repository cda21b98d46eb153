#include "collective_cases.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/verifiable.h"
#include "tutti/datatype.hpp"

namespace tutti::test {

const std::vector<CollDesc>& colls() {
  static const std::vector<CollDesc> v = [] {
    struct Meta {
      C coll;
      algo::Coll algoColl;
      bool hasOp;
    };
    const Meta metas[] = {{C::kAllReduce, algo::Coll::kAllReduce, true},
                          {C::kBroadcast, algo::Coll::kBroadcast, false},
                          {C::kReduce, algo::Coll::kReduce, true},
                          {C::kAllGather, algo::Coll::kAllGather, false},
                          {C::kReduceScatter, algo::Coll::kReduceScatter, true},
                          {C::kAllToAll, algo::Coll::kAllToAll, false},
                          {C::kGather, algo::Coll::kGather, false},
                          {C::kScatter, algo::Coll::kScatter, false},
                          {C::kAllGatherV, algo::Coll::kAllGatherV, false},
                          {C::kReduceScatterV, algo::Coll::kReduceScatterV, true},
                          {C::kGatherV, algo::Coll::kGatherV, false},
                          {C::kScatterV, algo::Coll::kScatterV, false},
                          {C::kAllToAllV, algo::Coll::kAllToAllV, false}};
    std::vector<CollDesc> all;
    for (const Meta& m : metas) {
      CollDesc d{m.coll, algo::collName(m.algoColl), {}, m.hasOp, m.algoColl};
      for (const algo::AlgorithmInfo& info : algo::registry())
        if (info.coll == m.algoColl) d.algos.push_back(info.name);
      d.algos.push_back("auto");
      all.push_back(std::move(d));
    }
    return all;
  }();
  return v;
}

// The core matrix's product (the full matrix adds kSixteenBitTypes and kBitwiseOps to it; the
// core matrix runs those in rotation: addRotatedCases).
static const tuttiDataType_t kAllTypes[] = {tuttiInt8,    tuttiUint8,  tuttiInt32,   tuttiUint32,
                                            tuttiInt64,   tuttiUint64, tuttiFloat16, tuttiBfloat16,
                                            tuttiFloat32, tuttiFloat64};
static const tuttiRedOp_t kAllOps[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax, tuttiAvg};
static const tuttiDataType_t kSixteenBitTypes[] = {tuttiInt16, tuttiUint16};
static const tuttiRedOp_t kBitwiseOps[] = {tuttiBand, tuttiBor, tuttiBxor};
// The integer types the bitwise ops rotate through.
static const tuttiDataType_t kIntTypes[] = {tuttiUint16, tuttiInt32,  tuttiInt16, tuttiInt64,
                                            tuttiUint8,  tuttiUint32, tuttiInt8,  tuttiUint64};

std::string describe(const Case& c, int n) {
  return std::string(c.coll->name) + ":" + c.algo + " n=" + std::to_string(n) + " " +
         dataTypeName(c.dtype) + " " +
         (c.coll->hasOp ? verifiable::kindName(verifiable::kindOf(true, c.op)) : "-") +
         " count=" + std::to_string(c.count) + (c.inPlace ? " in-place" : " out-of-place") +
         " root=" + std::to_string(c.root) + (c.inOrder ? " rank-order data" : "");
}

namespace {

using verifiable::GuardedBuffer;
using verifiable::Spec;

// The plain collective a uniform V-collective case computes.
C plainOf(C c) {
  switch (c) {
    case C::kAllGatherV:
      return C::kAllGather;
    case C::kReduceScatterV:
      return C::kReduceScatter;
    case C::kGatherV:
      return C::kGather;
    case C::kScatterV:
      return C::kScatter;
    case C::kAllToAllV:
      return C::kAllToAll;
    default:
      return c;
  }
}

bool reduces(C c) {
  c = plainOf(c);
  return c == C::kAllReduce || c == C::kReduce || c == C::kReduceScatter;
}

// Counts at or above this share their data between two alternating call seeds (the reference
// loop over every rank's values of a million elements costs more than the call itself); smaller
// ones get data of their own on every call.
constexpr size_t kSharedSeedCount = 1 << 16;

// What a call needs besides the algorithm: this rank's input and the expected output, as bytes
// of the dtype, for one call seed. The large counts keep the last two (their two seeds
// alternate, and consecutive cases differ only in the algorithm or in-place).
struct Prepared {
  std::string key;
  Spec spec;
  std::vector<std::byte> input, expected;
  bool checked = true;  // false: reduce / gather on a non-root rank (output stays untouched)
};

// The expected output of this rank, by a plain loop over the ranks' values.
void expectedOutput(const Case& c, const Spec& s, int rank, int n, std::byte* out) {
  const size_t es = verifiable::elementSize(c.dtype);
  switch (plainOf(c.coll->coll)) {
    case C::kAllReduce:
    case C::kReduce:
      verifiable::fillReduced(s, out, c.count, 0);
      break;
    case C::kReduceScatter:
      verifiable::fillReduced(s, out, c.count, rank * c.count);
      break;
    case C::kBroadcast:
      verifiable::fill(s, c.root, out, c.count, 0);
      break;
    case C::kAllGather:
    case C::kGather:
      for (int src = 0; src < n; ++src)
        verifiable::fill(s, src, out + src * c.count * es, c.count, 0);
      break;
    case C::kScatter:
      verifiable::fill(s, c.root, out, c.count, rank * c.count);
      break;
    case C::kAllToAll:
      for (int src = 0; src < n; ++src)
        verifiable::fill(s, src, out + src * c.count * es, c.count, rank * c.count);
      break;
    default:  // plainOf maps every V-collective to its plain one
      std::fprintf(stderr, "no expected output for %s\n", c.coll->name);
      std::abort();
  }
}

const Prepared& prepare(const Case& c, uint64_t seed, int rank, int n, size_t inElems,
                        size_t outElems) {
  thread_local Prepared slots[2];
  thread_local int next = 0;
  // Not the algorithm or in-place: the cases that differ only there share data.
  const std::string key = std::string(c.coll->name) + "/" + std::to_string(c.dtype) + "/" +
                          std::to_string(c.op) + "/" + std::to_string(c.count) + "/" +
                          std::to_string(c.root) + "/" + std::to_string(c.inOrder) + "/" +
                          std::to_string(seed);
  for (Prepared& p : slots)
    if (p.key == key) return p;
  Prepared& p = slots[next];
  next ^= 1;
  p.key.clear();
  const size_t es = verifiable::elementSize(c.dtype);
  p.spec = {
      c.dtype,
      c.inOrder ? verifiable::Kind::kSumInOrder : verifiable::kindOf(reduces(c.coll->coll), c.op),
      n, seed};
  p.input.resize(inElems * es);
  verifiable::fill(p.spec, rank, p.input.data(), inElems, 0);
  const C plain = plainOf(c.coll->coll);
  p.checked = !((plain == C::kReduce || plain == C::kGather) && rank != c.root);
  p.expected.resize(outElems * es);
  if (p.checked) expectedOutput(c, p.spec, rank, n, p.expected.data());
  p.key = key;
  return p;
}

// memcpy that accepts the null data() of empty vectors (count 0).
void copyBytes(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

// The byte that fills an output before the call: elements the call should write but does not
// are caught (as floats it is a tiny non-integer, never an expected value).
constexpr std::byte kUnwritten{0xA5};

// Calls made by this process's runCase: the call seed, the same on every rank (every rank
// runs the same cases in the same order).
thread_local uint64_t callNumber = 0;

}  // namespace

// Runs one case on this rank; returns "" or a description of the first wrong element.
std::string runCase(tuttiComm_t comm, const Case& c, int rank, int n, bool* notApplicable,
                    tuttiStream_t stream) {
  if (notApplicable) *notApplicable = false;
  const size_t es = verifiable::elementSize(c.dtype);
  size_t inElems = c.count, outElems = c.count;
  const C plain = plainOf(c.coll->coll);
  switch (plain) {
    case C::kAllGather:
      outElems = c.count * n;
      break;
    case C::kGather:  // non-roots: an output that must stay untouched
      outElems = rank == c.root ? c.count * n : c.count;
      break;
    case C::kReduceScatter:
      inElems = c.count * n;
      break;
    case C::kScatter:  // non-roots: an input that is never read
      inElems = rank == c.root ? c.count * n : c.count;
      break;
    case C::kAllToAll:
      inElems = outElems = c.count * n;
      break;
    default:
      break;
  }
  const uint64_t call = callNumber++;
  const uint64_t seed = c.count >= kSharedSeedCount ? verifiable::seedOf({call & 1, c.count})
                                                    : verifiable::seedOf({call});
  const Prepared& prep = prepare(c, seed, rank, n, inElems, outElems);
  // Reused across cases (no allocation, zeroing and first-touch faults per case), guard bytes
  // right before and after the bytes this case uses. In place, one buffer holds both.
  thread_local GuardedBuffer inBuf, outBuf;
  const size_t outBytes = (c.inPlace ? std::max(inElems, outElems) : outElems) * es;
  outBuf.resize(outBytes);
  inBuf.resize(c.inPlace ? 0 : inElems * es);
  std::byte* in = inBuf.data();
  std::byte* out = outBuf.data();
  if (outBytes > 0) std::memset(out, static_cast<int>(kUnwritten), outBytes);
  std::byte* resultAt = out;  // where this rank's result is (in-place reduce-scatter: inside)
  if (c.inPlace) {
    switch (plain) {
      case C::kAllGather:
        in = out + rank * c.count * es;
        break;
      case C::kReduceScatter:
        in = out;
        resultAt = out = in + rank * c.count * es;
        break;
      case C::kGather:  // on the root, sendbuff = recvbuff + root blocks
        in = out + (rank == c.root ? rank * c.count * es : 0);
        break;
      case C::kScatter:  // on the root, recvbuff = sendbuff + root blocks
        in = out;
        if (rank == c.root) resultAt = out = in + rank * c.count * es;
        break;
      default:
        in = out;
        break;
    }
  }
  copyBytes(in, prep.input.data(), inElems * es);
  std::string algoSpec = std::string(c.coll->name) + ":" + c.algo;
  tuttiResult_t r =
      tuttiCommSetAlgorithm(comm, std::string(c.algo) == "auto" ? nullptr : algoSpec.c_str());
  if (r != tuttiSuccess)
    return std::string("call failed: tuttiCommSetAlgorithm: ") + tuttiGetLastError(comm);
  const tuttiRedOp_t op = c.coll->hasOp ? c.op : tuttiSum;
  struct {
    std::vector<size_t> counts, displs;
  } uniform;  // the V-collectives' arrays: c.count each, at r * count
  for (int k = 0; k < n; ++k) {
    uniform.counts.push_back(c.count);
    uniform.displs.push_back(k * c.count);
  }
  switch (c.coll->coll) {
    case C::kAllReduce:
      r = tuttiAllReduce(in, out, c.count, c.dtype, op, comm, stream);
      break;
    case C::kBroadcast:
      r = tuttiBroadcast(in, out, c.count, c.dtype, c.root, comm, stream);
      break;
    case C::kReduce:
      r = tuttiReduce(in, out, c.count, c.dtype, op, c.root, comm, stream);
      break;
    case C::kAllGather:
      r = tuttiAllGather(in, out, c.count, c.dtype, comm, stream);
      break;
    case C::kReduceScatter:
      r = tuttiReduceScatter(in, out, c.count, c.dtype, op, comm, stream);
      break;
    case C::kAllToAll:
      r = tuttiAllToAll(in, out, c.count, c.dtype, comm, stream);
      break;
    case C::kGather:
      r = tuttiGather(in, out, c.count, c.dtype, c.root, comm, stream);
      break;
    case C::kScatter:
      r = tuttiScatter(in, out, c.count, c.dtype, c.root, comm, stream);
      break;
    case C::kAllGatherV:
      r = tuttiAllGatherV(in, c.count, out, uniform.counts.data(), uniform.displs.data(), c.dtype,
                          comm, stream);
      break;
    case C::kReduceScatterV:
      r = tuttiReduceScatterV(in, out, uniform.counts.data(), uniform.displs.data(), c.dtype, op,
                              comm, stream);
      break;
    case C::kGatherV:
      r = tuttiGatherV(in, c.count, out, uniform.counts.data(), uniform.displs.data(), c.dtype,
                       c.root, comm, stream);
      break;
    case C::kScatterV:
      r = tuttiScatterV(in, uniform.counts.data(), uniform.displs.data(), out, c.count, c.dtype,
                        c.root, comm, stream);
      break;
    case C::kAllToAllV:
      r = tuttiAllToAllV(in, uniform.counts.data(), uniform.displs.data(), out,
                         uniform.counts.data(), uniform.displs.data(), c.dtype, comm, stream);
      break;
  }
  if (r == tuttiSuccess && stream != nullptr) {
    // Enqueued: the buffers hold the result once the stream says the call completed.
    r = tuttiStreamSynchronize(stream);
  }
  tuttiCommSetAlgorithm(comm, nullptr);
  if (r == tuttiInvalidArgument &&
      std::string(tuttiGetLastError(comm)).find("does not apply") != std::string::npos) {
    if (notApplicable) *notApplicable = true;
    return "";  // algorithm not applicable here (same decision on every rank)
  }
  if (r != tuttiSuccess)
    return std::string("call failed: ") + tuttiGetErrorString(r) + ": " + tuttiGetLastError(comm);
  if (std::string g = outBuf.checkGuards(); !g.empty()) return "output buffer: " + g;
  if (std::string g = inBuf.checkGuards(); !g.empty()) return "input buffer: " + g;
  if (!c.inPlace && inElems > 0 && std::memcmp(in, prep.input.data(), inElems * es) != 0)
    return "the input buffer was modified (out of place)";
  if (!prep.checked) {
    // A non-root rank of reduce or gather: out of place, its output must stay untouched.
    for (size_t k = 0; !c.inPlace && k < outBytes; ++k)
      if (out[k] != kUnwritten)
        return std::string(c.coll->name) + " wrote the output of non-root rank " +
               std::to_string(rank) + " (byte " + std::to_string(k) + ")";
    return "";
  }
  const size_t checkElems = plain == C::kReduceScatter ? c.count : outElems;
  return verifiable::firstMismatch(prep.spec, resultAt, prep.expected.data(), checkElems);
}

namespace {

// The element types of each width, and the one of them the core matrix runs at the large count
// at n ranks: rotated with n, so that the rank counts together cover every type.
tuttiDataType_t rotatedType(size_t width, int n) {
  static const std::vector<tuttiDataType_t> byWidth[] = {{tuttiInt8, tuttiUint8},
                                                         {tuttiFloat16, tuttiBfloat16},
                                                         {tuttiFloat32, tuttiInt32, tuttiUint32},
                                                         {tuttiFloat64, tuttiInt64, tuttiUint64}};
  const size_t w = width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3;
  const auto& types = byWidth[w];
  return types[static_cast<size_t>(n + static_cast<int>(w)) % types.size()];
}

// Whether the core matrix runs (dtype, op, in-place) at the large count at n ranks: float32 sum
// in and out of place always (what users run most); else per element width the rotated type
// with the op rotated the same way, in place or not by the rank count's parity.
bool coreLargeCase(const CollDesc& cd, tuttiDataType_t t, tuttiRedOp_t op, bool inPlace, int n) {
  if (t == tuttiFloat32 && op == tuttiSum) return true;
  const size_t width = verifiable::elementSize(t);
  if (t != rotatedType(width, n)) return false;
  if (cd.hasOp && op != kAllOps[static_cast<size_t>(n) % std::size(kAllOps)]) return false;
  return inPlace == ((n + static_cast<int>(width)) % 2 == 1);
}

// The large count: 1 Mi + 3 elements. In the core matrix the collectives whose buffers hold n
// counts (all-gather, reduce-scatter, all-to-all, gather, scatter) divide it so that the n
// blocks stay about 2 Mi elements (8 MiB of float32: past the 4 MiB shared window, many 256 KiB
// pipeline chunks): at 8 ranks each rank otherwise generated and checked 8 Mi expected values
// per case, most of the 8-rank core matrix's time.
size_t largeCount(const CollDesc& cd, int n, Matrix matrix) {
  constexpr size_t kLarge = size_t{1} << 20;
  const C plain = plainOf(cd.coll);
  const bool nBlocks = plain == C::kAllGather || plain == C::kReduceScatter ||
                       plain == C::kAllToAll || plain == C::kGather || plain == C::kScatter;
  if (matrix == Matrix::kFull || !nBlocks || n <= 2) return kLarge + 3;
  return 2 * kLarge / static_cast<size_t>(n) + 3;
}

bool rootedColl(const CollDesc& cd) {
  const C plain = plainOf(cd.coll);
  return plain == C::kBroadcast || plain == C::kReduce || plain == C::kGather ||
         plain == C::kScatter;
}

// The full matrix's types and ops: the core product's plus the 16-bit types and bitwise ops.
std::vector<tuttiDataType_t> matrixTypes(Matrix matrix) {
  std::vector<tuttiDataType_t> v(std::begin(kAllTypes), std::end(kAllTypes));
  if (matrix == Matrix::kFull)
    v.insert(v.end(), std::begin(kSixteenBitTypes), std::end(kSixteenBitTypes));
  return v;
}
std::vector<tuttiRedOp_t> matrixOps(Matrix matrix) {
  std::vector<tuttiRedOp_t> v(std::begin(kAllOps), std::end(kAllOps));
  if (matrix == Matrix::kFull) v.insert(v.end(), std::begin(kBitwiseOps), std::end(kBitwiseOps));
  return v;
}

// The core matrix's share of the 16-bit types and the bitwise ops, rotated rather than a
// product: for each collective with an op and each of its algorithms, every bitwise op on an
// integer type rotated with the algorithm, the op and the rank count, and one arithmetic op
// (sum, prod, min, max, avg, rotated) on int16 or uint16; for each collective without an op,
// int16 or uint16 with every algorithm. Counts rotate through 1, 7, 1023 and 65539 (vector
// bodies and tails, several pipeline chunks), in place or not and the root likewise.
void addRotatedCases(const CollDesc& cd, int n, const char* only, std::vector<Case>& cases) {
  constexpr size_t kCounts[] = {7, 1023, 1, 65539};
  const int root = n - 1;
  for (size_t a = 0; a < cd.algos.size(); ++a) {
    const char* algo = cd.algos[a];
    if (only && std::string(only) != algo) continue;
    auto add = [&](tuttiDataType_t t, tuttiRedOp_t op, size_t k) {
      const size_t r = a + k + static_cast<size_t>(n);
      const bool inPlace = (r / std::size(kCounts)) % 2 == 1;  // both, for each count
      cases.push_back({&cd, algo, t, op, kCounts[r % std::size(kCounts)], inPlace,
                       rootedColl(cd) && (a + k) % 2 == 1 ? root : 0});
    };
    const tuttiDataType_t sixteen = kSixteenBitTypes[(a + static_cast<size_t>(n)) % 2];
    if (!cd.hasOp) {
      add(sixteen, tuttiSum, 0);
      continue;
    }
    for (size_t k = 0; k < std::size(kBitwiseOps); ++k)
      add(kIntTypes[(a + 3 * k + static_cast<size_t>(n)) % std::size(kIntTypes)], kBitwiseOps[k],
          k);
    add(sixteen, kAllOps[(a + static_cast<size_t>(n)) % std::size(kAllOps)], 3);
  }
}

}  // namespace

std::vector<Case> buildCases(int n, Matrix matrix) {
  std::vector<Case> cases;
  // TUTTI_TEST_ONLY_ALGO=direct restricts the matrix to one algorithm name (used to rerun
  // the direct algorithms with a tiny shared window, i.e. many chunks).
  const char* only = std::getenv("TUTTI_TEST_ONLY_ALGO");
  const std::vector<tuttiDataType_t> types = matrixTypes(matrix);
  const std::vector<tuttiRedOp_t> ops = matrixOps(matrix);
  // The algorithm is the innermost loop: consecutive cases share input and expected output.
  for (const CollDesc& cd : colls()) {
    const size_t big = largeCount(cd, n, matrix);
    if (matrix == Matrix::kCore) addRotatedCases(cd, n, only, cases);
    for (tuttiDataType_t t : types) {
      for (tuttiRedOp_t op : ops) {
        if (!cd.hasOp && op != tuttiSum) continue;
        if (cd.hasOp && !redOpAppliesTo(t, op)) continue;
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, big}) {
          std::vector<int> roots = {0};
          if (rootedColl(cd) && n > 1) roots.push_back(n - 1);
          for (int root : roots) {
            for (bool inPlace : {false, true}) {
              if (count == big && matrix == Matrix::kCore &&
                  (!coreLargeCase(cd, t, op, inPlace, n) || plainOf(cd.coll) != cd.coll))
                continue;
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
