// All-to-all by pairwise exchange: local copy of the own block, then n-1 rounds where rank r
// sends block (r+s) % n to rank (r+s) % n and receives block (r-s) % n from rank (r-s) % n.
// Linear: the same n-1 sends and receives in one round (every peer at once, as NCCL's grouped
// send/recv), posted in the pairwise order. In place (a.inPlace: input == output, as MPI_IN_PLACE
// allows), a first round copies the blocks for the peers to scratch and the rounds send from there,
// so no block arriving over the buffer overwrites one still to be sent; the own block stays where
// it is.
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

namespace {
// oneRound: every exchange in one round (linear), else a round per step (pairwise).
Schedule allToAllExchanges(const CollArgs& a, const char* name, bool oneRound) {
  Schedule s = start(a, name);
  Ctx c(a);
  size_t cnt = a.count;
  int n = c.n;
  const bool staged = a.inPlace && n > 1;
  size_t first = 0;  // round of the first exchange
  if (staged) {
    needScratch(s, n * cnt * c.es);
    copy(at(s, 0), c.in(0, n * cnt), c.tmp(0, n * cnt));
    first = 1;
  } else if (!a.inPlace) {
    copy(at(s, 0), c.in(c.r * cnt, cnt), c.out(c.r * cnt, cnt));
  }
  for (int st = 1; st < n; ++st) {
    int to = (c.r + st) % n, from = (c.r - st + n) % n;
    Round& rd = at(s, oneRound ? first : first + st - 1);
    send(rd, to, staged ? c.tmp(to * cnt, cnt) : c.in(to * cnt, cnt));
    recv(rd, from, c.out(from * cnt, cnt));
  }
  trim(s);
  return s;
}
}  // namespace

Schedule allToAllPairwise(const CollArgs& a) { return allToAllExchanges(a, "pairwise", false); }

Schedule allToAllLinear(const CollArgs& a) { return allToAllExchanges(a, "linear", true); }

}  // namespace tutti::algo::detail
