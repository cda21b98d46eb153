// The V-collectives that only move data, each as one round of direct transfers (a block of its
// own size per rank: CollArgs::counts / displs, builder.h unevenBlocks). An empty block is no
// message: a zero-length receive completes without waiting for its message, which could then
// reach a peer that has closed the connection, and over tcp the reset that follows drops data
// the sender has not read yet. Ranks that disagree about a non-empty block's size fail with
// the transport's size mismatch. The rank's own block is a local copy after the transfers
// (none in place), so a call that fails there leaves it unwritten.
// allgatherv linear: every rank sends its block to every other; blocks land at displs[r].
// alltoallv linear: block sendDispls[p] goes to rank p, the block from p lands at displs[p].
// gatherv linear: every rank sends its block to the root (displs[r] in the root's output).
// scatterv linear: the root sends block r (displs[r] of its input) to rank r.
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule allGatherVLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const std::vector<Range> b = unevenBlocks(a);
  const size_t mine = b[c.r].count;
  Round& rd = at(s, 0);
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) send(rd, p, c.in(0, mine));
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) recv(rd, p, c.out(b[p]));
  copy(at(s, 1), c.in(0, mine), c.out(b[c.r]));
  trim(s);
  return s;
}

Schedule allToAllVLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const std::vector<Range> out = unevenBlocks(a), in = unevenSendBlocks(a);
  TUTTI_CHECK_ARG(in[c.r].count == out[c.r].count, "alltoallv: the block to itself (",
                  in[c.r].count, " elements) differs from the block from itself (", out[c.r].count,
                  ")");
  Round& rd = at(s, 0);
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) send(rd, p, c.in(in[p]));
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) recv(rd, p, c.out(out[p]));
  copy(at(s, 1), c.in(in[c.r]), c.out(out[c.r]));
  trim(s);
  return s;
}

Schedule gatherVLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const std::vector<Range> b = unevenBlocks(a);
  Round& rd = at(s, 0);
  if (c.r != a.root) {
    send(rd, a.root, c.in(0, b[c.r].count));
  } else {
    for (int p = 0; p < c.n; ++p)
      if (p != c.r) recv(rd, p, c.out(b[p]));
    copy(at(s, 1), c.in(0, b[c.r].count), c.out(b[c.r]));
  }
  trim(s);
  return s;
}

Schedule scatterVLinear(const CollArgs& a) {
  Schedule s = start(a, "linear");
  Ctx c(a);
  const std::vector<Range> b = unevenBlocks(a);
  Round& rd = at(s, 0);
  if (c.r != a.root) {
    recv(rd, a.root, c.out(0, b[c.r].count));
  } else {
    for (int p = 0; p < c.n; ++p)
      if (p != c.r) send(rd, p, c.in(b[p]));
    copy(at(s, 1), c.in(b[c.r]), c.out(0, b[c.r].count));
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
