#include "driver/bench.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "driver/types.h"

namespace tutti_perf {

namespace {

char* bufferAt(char* base, size_t shift, const Bench& b, size_t elemBytes) {
  return base + shift + static_cast<size_t>(b.opt.unalign) * elemBytes;
}

struct Pointers {
  char* send;
  char* recv;
};

Pointers pointersFor(const Bench& b, const Layout& l, size_t ws, bool inPlace, size_t shift) {
  char* send = bufferAt(b.sendBase, shift, b, ws);
  char* recv = bufferAt(b.recvBase, shift, b, ws);
  if (inPlace) {
    send = recv + l.sendInplaceOffset * ws * b.rank;
    recv = recv + l.recvInplaceOffset * ws * b.rank;
  }
  return {send, recv};
}

tuttiResult_t startColl(Bench& b, const Layout& l, tuttiDataType_t type, tuttiRedOp_t op, int root,
                        bool inPlace, int iter) {
  const size_t ws = typeSize(type);
  // Move the buffers at each iteration (as nccl-tests) to avoid cache effects.
  const size_t total = std::max(l.sendCount, l.recvCount) * ws;
  const size_t steps = total ? std::max<size_t>(b.maxBytes / total, 1) : 1;
  const size_t shift = total * (static_cast<size_t>(iter) % steps);
  const Pointers p = pointersFor(b, l, ws, inPlace, shift);
  const tuttiResult_t r =
      b.coll->run(p.send, p.recv, l.paramCount, type, op, root, b.comm, b.mem->stream());
  if (r != tuttiSuccess) return r;
  if (b.opt.blocking) {
    b.mem->synchronize();
    return tuttiBarrier(b.comm, b.mem->stream());
  }
  if (b.opt.syncEach) b.mem->synchronize();
  return tuttiSuccess;
}

Pattern patternFor(const Bench& b, tuttiDataType_t type, tuttiRedOp_t op, uint64_t seed) {
  Pattern p;
  p.reduce = b.coll->hasOp;
  p.op = op;
  p.type = type;
  p.nranks = b.nranks;
  p.seed = seed;
  return p;
}

// Writes inputs (and zeroes outputs) for one call at shift 0; returns whether this rank has a
// result to check, with the expected values in b.expected.
bool initData(Bench& b, const Layout& l, tuttiDataType_t type, tuttiRedOp_t op, int root,
              bool inPlace, uint64_t seed) {
  const size_t ws = typeSize(type);
  const Pattern pat = patternFor(b, type, op, seed);
  const Pointers p = pointersFor(b, l, ws, false, 0);
  b.mem->zero(p.recv, l.recvCount * ws);
  std::memset(b.stage.data(), 0, l.sendCount * ws);
  b.coll->fillInput(pat, b.rank, root, l, b.stage.data());
  char* input = inPlace ? p.recv + l.sendInplaceOffset * ws * b.rank : p.send;
  b.mem->toDevice(input, b.stage.data(), l.sendCount * ws);
  return b.coll->fillExpected(pat, b.rank, root, l, b.expected.data());
}

}  // namespace

void forceAlgorithm(const Bench& b, const std::string& algo) {
  const std::string spec = algo.empty() ? "" : std::string(b.coll->algoKey) + ":" + algo;
  tuttiResult_t r = tuttiCommSetAlgorithm(b.comm, algo.empty() ? nullptr : spec.c_str());
  if (r != tuttiSuccess) failCall(&b, "tuttiCommSetAlgorithm", r, __FILE__, __LINE__);
}

[[noreturn]] void failCall(const Bench* b, const char* call, tuttiResult_t r, const char* file,
                           int line) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  const char* last = tuttiGetLastError(b ? b->comm : nullptr);
  fprintf(stderr, "%s: Test tutti failure %s:%d '%s' (%s) : %s\n", host, file, line,
          tuttiGetErrorString(r), call, last ? last : "");
  fflush(stdout);
  fflush(stderr);
  if (b && b->comm) tuttiCommAbort(b->comm);
  _exit(EXIT_FAILURE);
}

void barrier(Bench& b) { PERF_CHECK(&b, tuttiBarrier(b.comm, nullptr)); }

double allreduceTime(Bench& b, double v, int average) {
  double x = v;
  if (average == 0) x = b.rank == 0 ? v : 0.0;
  const tuttiRedOp_t op = average == 2 ? tuttiMin : average == 3 ? tuttiMax : tuttiSum;
  double out = 0;
  PERF_CHECK(&b, tuttiAllReduce(&x, &out, 1, tuttiFloat64, op, b.comm, nullptr));
  if (average == 1) out /= b.nranks;
  return out;
}

int64_t allreduceSum(Bench& b, int64_t v) {
  int64_t out = 0;
  PERF_CHECK(&b, tuttiAllReduce(&v, &out, 1, tuttiInt64, tuttiSum, b.comm, nullptr));
  return out;
}

Measurement benchTime(Bench& b, const Layout& l, tuttiDataType_t type, tuttiRedOp_t op, int root,
                      bool inPlace, const std::string& algo, bool mayFail) {
  Measurement m;
  const size_t ws = typeSize(type);
  if (b.opt.check) initData(b, l, type, op, root, inPlace, 99);

  // Synchronising call (its failure is the only one tolerated, and only when mayFail).
  forceAlgorithm(b, algo);
  tuttiResult_t r = startColl(b, l, type, op, root, inPlace, 0);
  b.mem->synchronize();
  forceAlgorithm(b, "");
  if (r != tuttiSuccess) {
    if (!mayFail) failCall(&b, b.coll->program, r, __FILE__, __LINE__);
    const char* last = tuttiGetLastError(b.comm);
    m.why = std::string(tuttiGetErrorString(r)) + (last && *last ? std::string(": ") + last : "");
    barrier(b);
    return m;
  }
  barrier(b);

  forceAlgorithm(b, algo);
  const auto t0 = std::chrono::steady_clock::now();
  for (int iter = 0; iter < b.opt.iters; ++iter) {
    if (b.opt.aggIters > 1) PERF_CHECK(&b, tuttiGroupStart());
    for (int a = 0; a < b.opt.aggIters; ++a) {
      r = startColl(b, l, type, op, root, inPlace, iter * b.opt.aggIters + a);
      if (r != tuttiSuccess) failCall(&b, b.coll->program, r, __FILE__, __LINE__);
    }
    if (b.opt.aggIters > 1) PERF_CHECK(&b, tuttiGroupEnd());
  }
  b.mem->synchronize();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const char* used = tuttiCommLastAlgorithm(b.comm);
  m.algoUsed = used ? used : "";
  forceAlgorithm(b, "");
  sec /= static_cast<double>(b.opt.iters) * b.opt.aggIters;
  sec = allreduceTime(b, sec, b.opt.average);

  const double bytes = static_cast<double>(l.paramCount) * ws * b.coll->algFactor(b.nranks);
  m.algBw = sec > 0 ? bytes / 1.0e9 / sec : 0;
  m.busBw = m.algBw * b.coll->busFactor(b.nranks);
  m.timeUs = sec * 1.0e6;
  m.ran = true;
  barrier(b);

  m.checked = b.opt.check > 0 && (!inPlace || b.coll->inPlaceChecked);
  if (!m.checked) return m;
  for (int c = 0; c < b.opt.check; ++c) {
    ++b.rep;
    const bool here = initData(b, l, type, op, root, inPlace, b.rep);
    forceAlgorithm(b, algo);
    r = startColl(b, l, type, op, root, inPlace, 0);
    b.mem->synchronize();
    forceAlgorithm(b, "");
    if (r != tuttiSuccess) failCall(&b, b.coll->program, r, __FILE__, __LINE__);
    int64_t wrong = 0;
    if (here && l.recvCount > 0) {
      const Pointers p = pointersFor(b, l, ws, inPlace, 0);
      b.mem->toHost(b.stage.data(), p.recv, l.recvCount * ws);
      const int corruptRank = (b.coll->hasOp && b.coll->hasRoot) ? root : 0;
      if (b.corrupt && b.rank == corruptRank) {
        storeDouble(type, b.stage.data(), 0, loadFloat(type, b.stage.data(), 0) + 3);
      }
      wrong = countWrong(patternFor(b, type, op, b.rep), b.stage.data(), b.expected.data(),
                         l.recvCount);
    }
    if (wrong) ++b.errors;
    m.wrong = allreduceSum(b, wrong);
    if (m.wrong) break;
  }
  return m;
}

}  // namespace tutti_perf
