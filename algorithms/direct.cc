// Direct algorithms over a shared window (shm, every rank on one host): each rank copies its
// input into its own window once, then reads the peers' windows directly -- no messages, no
// FIFO copies, one synchronisation per phase. docs/algorithms.md "direct".
//
// Phases of one chunk (relative to the chunk's first phase ph; the first wait also covers the
// previous chunk or call: nobody still reads this rank's window):
//   all-reduce one-shot:  wait(ph) copy-in post(ph+1) | wait(ph+1) out = x0 op .. op x_{n-1}
//                         post(ph+2)
//   all-reduce two-shot:  wait(ph) copy-in of the peers' blocks (not the own one) post(ph+1) |
//                         wait(ph+1) reduce the own block (own term from the input) into the
//                         own window's block, copy it to out, post(ph+2) | wait(ph+2) copy the
//                         others' reduced blocks, post(ph+3)
//   all-gather:           wait(ph) copy-in post(ph+1) | wait(ph+1) copy every block post(ph+2)
//   reduce-scatter:       wait(ph) copy-in (all n blocks) post(ph+1) | wait(ph+1) reduce own
//                         block from every window post(ph+2)
// Reductions run in rank order 0..n-1 for every element, so the results are the ones of
// deterministic mode.
#include <algorithm>

#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

namespace {

// All-reduce messages up to this size use one-shot (each rank reduces the whole buffer).
constexpr size_t kOneShotMaxBytes = 32u << 10;

void waitAll(Round& rd, const Ctx& c, uint32_t phase) {
  for (int p = 0; p < c.n; ++p)
    if (p != c.r) rd.ops.push_back(Schedule::wait(p, phase));
}

void post(Round& rd, uint32_t phase) { rd.ops.push_back(Schedule::post(phase)); }

// dst = src(0) op src(1) op ... op src(n-1), in rank order.
template <class SrcOf>
void chainReduce(Round& rd, const Ctx& c, SrcOf srcOf, Slice dst) {
  if (dst.bytes == 0) return;
  reduce(rd, srcOf(0), srcOf(1), dst);
  for (int p = 2; p < c.n; ++p) reduce(rd, dst, srcOf(p), dst);
}

// Round t: wait until nobody reads this rank's window any more (phase ph), copy this rank's
// contribution in (copyIn), post ph+1. Returns round t+1, which starts by waiting for everyone's
// ph+1: from there on every window holds its owner's contribution.
template <class CopyIn>
Round& publish(Schedule& s, size_t& t, const Ctx& c, uint32_t ph, CopyIn copyIn) {
  Round& first = at(s, t++);
  waitAll(first, c, ph);
  copyIn(first);
  post(first, ph + 1);
  Round& next = at(s, t++);  // may reallocate: `first` is not used after this
  waitAll(next, c, ph + 1);
  return next;
}

// Every direct schedule ends with post(phases) ("done reading the windows"), which only the
// next call's phase-0 waits look at.
void finish(Schedule& s, size_t windowBytes, uint32_t phases) {
  s.windowBytes = windowBytes;
  s.windowPhases = phases;
  trim(s);
  s.finalPostOnlyForNextCall = phases > 0;
}

size_t chunkElems(const CollArgs& a, size_t es, size_t perElementCopies) {
  size_t fit = a.windowBytes / (es * perElementCopies);
  TUTTI_CHECK_ARG(fit >= 1, "direct: the shared window (", a.windowBytes,
                  " bytes) cannot hold one chunk");
  return fit;
}

// Two-shot chunk [off, off+cnt): publish only the blocks the peers reduce (not this rank's own
// block: it is read from the input), reduce the own block into the own window's block (so the
// input stays intact in place), copy it out; then copy the peers' reduced blocks.
void twoShotChunk(Schedule& s, size_t& t, const Ctx& c, uint32_t ph, size_t off, size_t cnt) {
  const Range mine = c.block(cnt, c.n, c.r);
  const size_t after = mine.offset + mine.count;
  Round& rd = publish(s, t, c, ph, [&](Round& r) {
    if (mine.offset > 0) copy(r, c.in(off, mine.offset), c.win(c.r, 0, mine.offset));
    if (after < cnt) copy(r, c.in(off + after, cnt - after), c.win(c.r, after, cnt - after));
  });
  const Slice result = c.win(c.r, mine.offset, mine.count);
  chainReduce(
      rd, c,
      [&](int p) {
        return p == c.r ? c.in(off + mine.offset, mine.count) : c.win(p, mine.offset, mine.count);
      },
      result);
  copy(rd, result, c.out(off + mine.offset, mine.count));
  post(rd, ph + 2);
  Round& gather = at(s, t++);
  waitAll(gather, c, ph + 2);
  for (int p = 0; p < c.n; ++p) {
    if (p == c.r) continue;
    const Range b = c.block(cnt, c.n, p);
    copy(gather, c.win(p, b.offset, b.count), c.out(off + b.offset, b.count));
  }
  post(gather, ph + 3);
}

}  // namespace

Schedule allReduceDirect(const CollArgs& a) {
  checkArgs(a);
  Ctx c(a);
  Schedule s = start(a, "direct");
  if (singleRankCopy(s, c, a.count)) return s;
  const size_t chunk = std::min(a.count, chunkElems(a, c.es, 1));
  const bool oneShot = a.count * c.es <= kOneShotMaxBytes;
  size_t t = 0;
  uint32_t ph = 0;
  for (size_t off = 0; off < a.count; off += chunk) {
    const size_t cnt = std::min(chunk, a.count - off);
    if (oneShot) {
      Round& rd =
          publish(s, t, c, ph, [&](Round& r) { copy(r, c.in(off, cnt), c.win(c.r, 0, cnt)); });
      chainReduce(
          rd, c, [&](int p) { return c.win(p, 0, cnt); }, c.out(off, cnt));
      post(rd, ph + 2);
      ph += 2;
      continue;
    }
    twoShotChunk(s, t, c, ph, off, cnt);
    ph += 3;
  }
  finish(s, chunk * c.es, ph);
  return s;
}

Schedule allReduceLine(const CollArgs& a) {
  TUTTI_CHECK_ARG(a.count * dtypeSize(a.dtype) <= Schedule::kLineMaxBytes,
                  "line: an all-reduce of at most ", Schedule::kLineMaxBytes, " bytes (got ",
                  a.count * dtypeSize(a.dtype), ")");
  Schedule s = allReduceDirect(a);
  s.algorithm = "line";
  s.lineProtocol = true;
  return s;
}

Schedule allGatherDirect(const CollArgs& a) {
  checkArgs(a);
  Ctx c(a);
  Schedule s = start(a, "direct");
  const size_t m = a.count;
  if (singleRankCopy(s, c, m)) return s;
  const size_t chunk = std::max<size_t>(1, std::min(m, chunkElems(a, c.es, 1)));
  size_t t = 0;
  uint32_t ph = 0;
  for (size_t off = 0; off < m; off += chunk) {
    const size_t cnt = std::min(chunk, m - off);
    Round& rd =
        publish(s, t, c, ph, [&](Round& r) { copy(r, c.in(off, cnt), c.win(c.r, 0, cnt)); });
    for (int p = 0; p < c.n; ++p) {
      Slice src = p == c.r ? c.in(off, cnt) : c.win(p, 0, cnt);
      copy(rd, src, c.out(p * m + off, cnt));
    }
    post(rd, ph + 2);
    ph += 2;
  }
  finish(s, m ? chunk * c.es : 0, ph);
  return s;
}

Schedule reduceScatterDirect(const CollArgs& a) {
  checkArgs(a);
  Ctx c(a);
  Schedule s = start(a, "direct");
  const size_t m = a.count;
  if (singleRankCopy(s, c, m)) return s;
  const size_t chunk = std::max<size_t>(1, std::min(m, chunkElems(a, c.es, c.n)));
  size_t t = 0;
  uint32_t ph = 0;
  for (size_t off = 0; off < m; off += chunk) {
    const size_t cnt = std::min(chunk, m - off);
    Round& rd = publish(s, t, c, ph, [&](Round& r) {
      for (int q = 0; q < c.n; ++q) copy(r, c.in(q * m + off, cnt), c.win(c.r, q * cnt, cnt));
    });
    chainReduce(
        rd, c, [&](int p) { return c.win(p, c.r * cnt, cnt); }, c.out(off, cnt));
    post(rd, ph + 2);
    ph += 2;
  }
  finish(s, m ? chunk * c.n * c.es : 0, ph);
  return s;
}

}  // namespace tutti::algo::detail
