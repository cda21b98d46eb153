// Recursive-doubling ("butterfly") and Rabenseifner all-reduce. Non-power-of-two n: with
// p = 2^floor(log2 n) and rem = n - p, extra rank p+i first sends its input to rank i, which
// reduces it (round 0, local op in round 1); the power-of-two phase runs on ranks 0..p-1; at
// the end rank i sends the result back to p+i.
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {

struct FoldPlan {
  patterns::Fold f;
  size_t tStart = 0;  // first round of the power-of-two phase
  Buf cur = Buf::kInput;
};

// Emits the fold-in (round 0 / round 1 local op). Returns the plan.
FoldPlan foldIn(Schedule& s, const Ctx& c, size_t m) {
  FoldPlan p;
  p.f = patterns::foldPow2(c.n, c.r);
  p.tStart = p.f.rem > 0 ? 1 : 0;
  if (p.f.extra) {
    send(at(s, 0), p.f.partner, c.in(0, m));
  } else if (p.f.partner >= 0) {
    recv(at(s, 0), p.f.partner, c.tmp(0, m));
    reduce(at(s, 1), c.in(0, m), c.tmp(0, m), c.out(0, m));
    needScratch(s, m * c.es);
    p.cur = Buf::kOutput;
  }
  return p;
}

void foldOut(Schedule& s, const Ctx& c, const FoldPlan& p, size_t t, size_t m) {
  if (p.f.extra)
    recv(at(s, t), p.f.partner, c.out(0, m));
  else if (p.f.partner >= 0)
    send(at(s, t), p.f.partner, c.out(0, m));
}

}  // namespace

Schedule allReduceButterfly(const CollArgs& a) {
  if (a.deterministic) return detAllReduce(a, "butterfly");
  Schedule s = start(a, "butterfly");
  Ctx c(a);
  size_t m = a.count;
  if (singleRankCopy(s, c, m)) return s;
  FoldPlan p = foldIn(s, c, m);
  int steps = patterns::log2Floor(p.f.pof2);
  size_t t = p.tStart;
  if (!p.f.extra) {
    needScratch(s, m * c.es);
    Buf cur = p.cur;
    for (int k = 0; k < steps; ++k, ++t) {
      int peer = patterns::rdPartner(c.r, k);
      send(at(s, t), peer, c.sl(cur, 0, m));
      recv(at(s, t), peer, c.tmp(0, m));
      reduce(at(s, t + 1), c.sl(cur, 0, m), c.tmp(0, m), c.out(0, m));
      cur = Buf::kOutput;
    }
  } else {
    t += steps;
  }
  foldOut(s, c, p, t, m);
  trim(s);
  return s;
}

Schedule allReduceRabenseifner(const CollArgs& a) {
  if (a.deterministic) return detAllReduce(a, "rabenseifner");
  Schedule s = start(a, "rabenseifner");
  Ctx c(a);
  size_t m = a.count;
  if (singleRankCopy(s, c, m)) return s;
  FoldPlan p = foldIn(s, c, m);
  int pof2 = p.f.pof2;
  int steps = patterns::log2Floor(pof2);
  size_t t = p.tStart;
  // Element range of blocks [lo, hi).
  auto blocks = [&](int lo, int hi) {
    Range a0 = c.block(m, pof2, lo), a1 = c.block(m, pof2, hi - 1);
    return Range{a0.offset, a1.offset + a1.count - a0.offset};
  };
  if (!p.f.extra) {
    int v = c.r, lo = 0;
    Buf cur = p.cur;
    // Recursive halving reduce-scatter: afterwards rank v holds block v reduced.
    for (int d = pof2 / 2; d >= 1; d /= 2, ++t) {
      int peer = v ^ d;
      bool upper = (v & d) != 0;
      Range keep = upper ? blocks(lo + d, lo + 2 * d) : blocks(lo, lo + d);
      Range give = upper ? blocks(lo, lo + d) : blocks(lo + d, lo + 2 * d);
      send(at(s, t), peer, c.sl(cur, give.offset, give.count));
      recvReduce(at(s, t), peer, c.sl(cur, keep.offset, keep.count), c.out(keep));
      if (upper) lo += d;
      cur = Buf::kOutput;
    }
    // Recursive doubling all-gather.
    for (int d = 1; d < pof2; d *= 2, ++t) {
      int peer = v ^ d;
      int base = v & ~(d - 1);
      send(at(s, t), peer, c.out(blocks(base, base + d)));
      int pb = base ^ d;
      recv(at(s, t), peer, c.out(blocks(pb, pb + d)));
    }
  } else {
    t += 2 * steps;
  }
  foldOut(s, c, p, t, m);
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
