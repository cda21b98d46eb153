// All-gather: ring (n-1 steps), recursive doubling (power-of-two n, log2 n steps) and Bruck
// (any n, ceil(log2 n) steps). Each rank first copies its input into its output block (a
// no-op copy when in place, where input = output + rank * count).
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {
namespace {
Schedule gatherStart(const CollArgs& a, const char* name, const Ctx& c) {
  Schedule s = start(a, name);
  copy(at(s, 0), c.in(0, a.count), c.out(c.r * a.count, a.count));
  return s;
}
}  // namespace

Schedule allGatherRing(const CollArgs& a) {
  Ctx c(a);
  Schedule s = gatherStart(a, "ring", c);
  std::vector<int> ring = patterns::ringOrderOrIdentity(a.ringOrder, c.n);
  int pos = static_cast<int>(std::find(ring.begin(), ring.end(), c.r) - ring.begin());
  ringAllGather(s, 0, ring, pos, 0, [&](int k) { return c.out(ring[k] * a.count, a.count); });
  trim(s);
  return s;
}

Schedule allGatherRd(const CollArgs& a) {
  Ctx c(a);
  TUTTI_CHECK_ARG(patterns::isPow2(c.n), "allgather rd needs a power-of-two rank count, got ", c.n);
  Schedule s = gatherStart(a, "rd", c);
  size_t cnt = a.count;
  size_t t = 0;
  for (int d = 1; d < c.n; d *= 2, ++t) {
    int peer = c.r ^ d;
    int base = c.r & ~(d - 1);
    send(at(s, t), peer, c.out(base * cnt, d * cnt));
    recv(at(s, t), peer, c.out((base ^ d) * cnt, d * cnt));
  }
  trim(s);
  return s;
}

Schedule allGatherBruck(const CollArgs& a) {
  Ctx c(a);
  Schedule s = gatherStart(a, "bruck", c);
  size_t cnt = a.count;
  int n = c.n;
  // Cyclic block range [first, first+len) mod n as at most two contiguous output slices.
  auto cyclic = [&](int first, int len, auto&& emit) {
    first %= n;
    int head = std::min(len, n - first);
    emit(c.out(first * cnt, head * cnt));
    if (len > head) emit(c.out(0, (len - head) * cnt));
  };
  size_t t = 0;
  for (int dist = 1; dist < n; dist *= 2, ++t) {
    int len = std::min(dist, n - dist);
    int to = (c.r - dist + n) % n, from = (c.r + dist) % n;
    Round& rd = at(s, t);
    cyclic(c.r, len, [&](Slice x) { send(rd, to, x); });
    cyclic(c.r + dist, len, [&](Slice x) { recv(rd, from, x); });
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
