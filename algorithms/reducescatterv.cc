// Reduce-scatter-v linear: rank r's result is block r (counts[r] elements at displs[r]) of the
// reduction of every rank's input, written at offset 0 of its output. Round 0: every rank sends
// block p of its input to rank p and receives its own block from every other rank into
// scratch (an empty block is no message, as in the other V-collectives); round 1 reduces the n
// contributions in rank order (((x0 op x1) op x2) ...: the same bits whatever the rank count
// split, so deterministic mode needs nothing else). In place: recvbuff = sendbuff + displs[r].
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule reduceScatterVLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const std::vector<Range> b = unevenBlocks(a);
  const size_t mine = b[c.r].count;
  std::vector<Slice> x(c.n);
  size_t slot = 0;
  for (int p = 0; p < c.n; ++p) x[p] = p == c.r ? c.in(b[p]) : c.tmp(mine * slot++, mine);
  needScratch(s, mine * slot * c.es);
  Round& rd = at(s, 0);
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) send(rd, p, c.in(b[p]));
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) recv(rd, p, x[p]);
  rankOrderReduce(at(s, 1), x, c.r, c.out(0, mine));
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
