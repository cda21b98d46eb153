// Internal helpers shared by the schedule builders (not part of the registry API).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/patterns/patterns.h"
#include "common/dtype.h"
#include "common/error.h"
#include "exec/schedule.h"
#include "interfaces/algorithm.h"

namespace tutti::algo::detail {

using exec::Buf;
using exec::Op;
using exec::Round;
using exec::Schedule;
using exec::Slice;
using patterns::Range;

// Pipeline chunking of tree / chain builders.
constexpr size_t kChunkBytes = 512 * 1024;
constexpr size_t kMaxChunks = 64;

// Element-addressed slices of one rank's buffers.
struct Ctx {
  const CollArgs& a;
  int r;
  int n;
  size_t es;
  explicit Ctx(const CollArgs& args)
      : a(args), r(args.rank), n(args.nranks), es(dtypeSize(args.dtype)) {}
  Slice sl(Buf b, size_t off, size_t cnt) const { return Slice{b, off * es, cnt * es}; }
  Slice in(size_t off, size_t cnt) const { return sl(Buf::kInput, off, cnt); }
  Slice out(size_t off, size_t cnt) const { return sl(Buf::kOutput, off, cnt); }
  Slice tmp(size_t off, size_t cnt) const { return sl(Buf::kScratch, off, cnt); }
  Slice in(Range g) const { return in(g.offset, g.count); }
  Slice out(Range g) const { return out(g.offset, g.count); }
  Slice tmp(Range g) const { return tmp(g.offset, g.count); }
  // Elements [off, off+cnt) of rank `owner`'s shared window.
  Slice win(int owner, size_t off, size_t cnt) const {
    return Slice{Buf::kWindow, off * es, cnt * es, owner};
  }
  Range block(size_t total, size_t nblocks, size_t i) const {
    return patterns::blockRange(total, nblocks, i, es);
  }
};

// A schedule with the collective's name / dtype / op filled in.
Schedule start(const CollArgs& a, const char* name);
// Validates the common arguments (rank range, dtype, op, root, hostOf size).
void checkArgs(const CollArgs& a);
// Round t of s, growing s as needed (builders emit by global round index).
Round& at(Schedule& s, size_t t);
// Drops trailing empty rounds.
void trim(Schedule& s);
// Grows scratch to at least bytes.
void needScratch(Schedule& s, size_t bytes);
// With one rank the result is the input: emits the copy of `count` elements (a no-op when
// in place), finishes s and returns true; returns false otherwise.
bool singleRankCopy(Schedule& s, const Ctx& c, size_t count);
// A byte sub-range of a slice.
inline Slice sub(Slice s, size_t byteOff, size_t bytes) {
  return Slice{s.buf, s.offset + byteOff, bytes, s.rank};
}

// Emitters that skip empty slices (both sides of a transfer compute the same sizes, so the
// skipped transfers are skipped on both sides) and self-copies of the same bytes.
void send(Round& rd, int peer, Slice s);
void recv(Round& rd, int peer, Slice d);
void recvReduce(Round& rd, int peer, Slice src, Slice dst);
void copy(Round& rd, Slice src, Slice dst);
void reduce(Round& rd, Slice a, Slice b, Slice dst);

// Reduces contributions x[0..n-1] (x[self] may alias dst exactly; the others live in
// scratch and may be clobbered) into dst as ((x0 op x1) op x2) ... op x_{n-1}, with local
// ops appended to rd. Uses x[0] as accumulator when self != 0.
void rankOrderReduce(Round& rd, std::span<const Slice> x, int self, Slice dst);

// Ring all-gather over group (ranks in ring order; pos = this rank's position) of g blocks:
// blockSlice(k) is block k in the output; position p initially owns block (p + shift) % g.
// Emits g-1 steps starting at round t0; returns the next free round.
size_t ringAllGather(Schedule& s, size_t t0, std::span<const int> group, int pos, int shift,
                     const std::function<Slice(int)>& blockSlice);
// Ring reduce-scatter of elements [off, off+cnt) over group: blocks blockRange(cnt, g, k);
// contributions read from buffer src at the same offsets, partial sums accumulated in
// kOutput. Afterwards position p holds block (p + 1) % g fully reduced in kOutput.
size_t ringReduceScatter(Schedule& s, size_t t0, const Ctx& c, std::span<const int> group, int pos,
                         size_t off, size_t cnt, Buf src);

// Deterministic reduction (rank order) of blocks to owners: block j of count elements
// (blocks(j)) is reduced by rank j into dst (dstOf for this rank), contributions read from
// kInput. Uses rounds t0 (exchange) and t0+1 (local reduce). Returns t0 + 1: transfers may
// still be added to round t0 + 1 (they run after its local ops).
size_t detReduceToOwners(Schedule& s, size_t t0, const Ctx& c,
                         const std::function<Range(int)>& blocks, Slice dst, size_t scratchOffset);

// Deterministic builders used by every reduction algorithm when CollArgs::deterministic.
Schedule detAllReduce(const CollArgs& a, const char* name);
Schedule detReduceScatter(const CollArgs& a, const char* name);
Schedule detReduce(const CollArgs& a, const char* name);

// The V-collectives' blocks, one per rank: (displs[r], counts[r]) of a.counts / a.displs, or
// (r * count, count) when the call gives none. unevenSendBlocks: all-to-all-v's sendCounts /
// sendDispls the same way. Throws when a list does not have nranks entries.
std::vector<Range> unevenBlocks(const CollArgs& a);
std::vector<Range> unevenSendBlocks(const CollArgs& a);

// Group helpers.
std::vector<int> hostsOf(const CollArgs& a);  // hostOf or all zeros
int numHosts(const CollArgs& a);
// The ranks of each host, hosts and members in ring order: walking CollArgs::ringOrder from
// its first host boundary (the first position whose predecessor, cyclically, is on another
// host; position 0 when there is one host), each host's members in the order met, hosts in
// the order first met. Member 0 of a host is the first rank of its segment (the ring enters
// the host there: its NIC-nearest end). Empty ringOrder: hosts by increasing host index,
// members by increasing rank.
std::vector<std::vector<int>> hostGroups(const CollArgs& a);

// Ranks on more than one host, every host with the same number of ranks, as a grid: rank(g, p)
// is member p of host g in hostGroups order. A rail is the ranks with one member index, one per
// host: the hierarchical all-gather, reduce-scatter and all-to-all cross hosts only along rails.
struct HostGrid {
  std::vector<std::vector<int>> groups;
  int hosts = 0, perHost = 0;  // nh, L
  int host = 0, local = 0;     // this rank's host and member index
  int rank(int g, int p) const { return groups[g][p]; }
  std::vector<int> rail(int p) const;  // rank(g, p) for every host g
};
// Runs [first, last) of consecutive entries of `ranks` that are consecutive ranks: where a
// rail's blocks lie side by side in a buffer with a block per rank (ranks interleaved across
// hosts), the hierarchical builders move them as one slice.
std::vector<std::pair<int, int>> consecutiveRuns(std::span<const int> ranks);
// True when a.hostOf puts the ranks on more than one host with equally many ranks on each.
bool gridHosts(const CollArgs& a);
// The grid of a (throws unless gridHosts(a)), seen from rank a.rank.
HostGrid hostGrid(const CollArgs& a);

}  // namespace tutti::algo::detail
