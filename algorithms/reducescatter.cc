// Reduce-scatter: ring (n-1 steps, partial sums in two alternating scratch slots) and
// recursive halving (log2 p steps; non-power-of-two n folds extra rank p+i into rank i).
// In place, output = input + rank * count; the own input block is read only by the last
// reduction, which writes the output.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule reduceScatterRing(const CollArgs& a) {
  if (a.deterministic) return detReduceScatter(a, "ring");
  Schedule s = start(a, "ring");
  Ctx c(a);
  size_t cnt = a.count;
  int n = c.n;
  if (singleRankCopy(s, c, cnt)) return s;
  std::vector<int> ring = patterns::ringOrderOrIdentity(a.ringOrder, n);
  int pos = static_cast<int>(std::find(ring.begin(), ring.end(), c.r) - ring.begin());
  int next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  auto blockOfPos = [&](int q) { return ring[((q % n) + n) % n] * cnt; };
  auto slot = [&](int st) { return c.tmp((st % 2) * cnt, cnt); };
  for (int st = 0; st < n - 1; ++st) {
    Round& rd = at(s, st);
    send(rd, next, st == 0 ? c.in(blockOfPos(pos - st - 1), cnt) : slot(st - 1));
    Slice dst = st == n - 2 ? c.out(0, cnt) : slot(st);
    recvReduce(rd, prev, c.in(blockOfPos(pos - st - 2), cnt), dst);
  }
  if (n > 2) needScratch(s, 2 * cnt * c.es);
  trim(s);
  return s;
}

Schedule reduceScatterRhalving(const CollArgs& a) {
  if (a.deterministic) return detReduceScatter(a, "rhalving");
  Schedule s = start(a, "rhalving");
  Ctx c(a);
  size_t cnt = a.count;
  int n = c.n;
  if (singleRankCopy(s, c, cnt)) return s;
  patterns::Fold f = patterns::foldPow2(n, c.r);
  int p = f.pof2;
  size_t total = n * cnt;
  size_t tStart = f.rem > 0 ? 1 : 0;
  size_t t = tStart + patterns::log2Floor(p);
  if (f.extra) {
    send(at(s, 0), f.partner, c.in(0, total));
    recv(at(s, t), f.partner, c.out(0, cnt));
    trim(s);
    return s;
  }
  needScratch(s, total * c.es);
  Buf cur = Buf::kInput;
  if (f.partner >= 0) {
    recv(at(s, 0), f.partner, c.tmp(0, total));
    reduce(at(s, 1), c.in(0, total), c.tmp(0, total), c.tmp(0, total));
    cur = Buf::kScratch;
  }
  // Group g (one per active rank) = block g, plus block p+g when g < rem.
  auto forGroups = [&](int lo, int hi, auto&& fn) {
    for (int g = lo; g < hi; ++g) {
      fn(g * cnt);
      if (g < f.rem) fn((p + g) * cnt);
    }
  };
  int v = c.r, lo = 0;
  t = tStart;
  for (int d = p / 2; d >= 1; d /= 2, ++t) {
    int peer = v ^ d;
    bool upper = (v & d) != 0;
    int keepLo = upper ? lo + d : lo, giveLo = upper ? lo : lo + d;
    Round& rd = at(s, t);
    forGroups(giveLo, giveLo + d, [&](size_t off) { send(rd, peer, c.sl(cur, off, cnt)); });
    forGroups(keepLo, keepLo + d,
              [&](size_t off) { recvReduce(rd, peer, c.sl(cur, off, cnt), c.tmp(off, cnt)); });
    lo = keepLo;
    cur = Buf::kScratch;
  }
  copy(at(s, t), c.tmp(v * cnt, cnt), c.out(0, cnt));
  if (f.partner >= 0) send(at(s, t), f.partner, c.tmp((p + v) * cnt, cnt));
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
