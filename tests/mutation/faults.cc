#include "faults.h"

#include <algorithm>
#include <map>

#include "common/dtype.h"

namespace tutti::mutation {
namespace {

using algo::Coll;
using exec::Buf;
using exec::Op;
using exec::OpType;
using exec::Schedule;
using exec::Slice;

bool same(const Slice& a, const Slice& b) {
  return a.buf == b.buf && a.offset == b.offset && a.bytes == b.bytes && a.rank == b.rank;
}

bool isTransfer(OpType t) {
  return t == OpType::kSend || t == OpType::kRecv || t == OpType::kRecvReduce;
}

// Scratch bytes added at the end of the schedule's scratch.
Slice moreScratch(Schedule& s, size_t bytes) {
  Slice t{Buf::kScratch, s.scratchBytes, bytes};
  s.scratchBytes += bytes;
  return t;
}

// A last round of local ops (the schedule's final window post is then no longer its last op).
exec::Round& lastRound(Schedule& s) {
  s.finalPostOnlyForNextCall = false;
  return s.newRound();
}

void swapAllGatherBlocks(Schedule& s, const algo::CollArgs& a) {
  const size_t block = a.count * dtypeSize(a.dtype);
  if (a.nranks < 2 || block == 0) return;
  const size_t i = 0, j = static_cast<size_t>(std::min(3, a.nranks - 1));
  Slice bi{Buf::kOutput, i * block, block}, bj{Buf::kOutput, j * block, block};
  Slice t = moreScratch(s, block);
  exec::Round& rd = lastRound(s);
  rd.ops.push_back(Schedule::copy(bi, t));
  rd.ops.push_back(Schedule::copy(bj, bi));
  rd.ops.push_back(Schedule::copy(t, bj));
}

void swapRootedBlocks(Schedule& s, const algo::CollArgs& a) {
  if (a.rank != a.root) return;
  if (a.coll == Coll::kGather) return swapAllGatherBlocks(s, a);
  Op* first = nullptr;
  for (exec::Round& rd : s.rounds)
    for (Op& op : rd.ops) {
      if (op.type != OpType::kSend) continue;
      if (first == nullptr) {
        first = &op;
      } else if (op.src.bytes == first->src.bytes && op.peer != first->peer) {
        std::swap(first->src, op.src);
        return;
      }
    }
}

void shiftReduceScatterBlock(Schedule& s, const algo::CollArgs& a) {
  const size_t es = dtypeSize(a.dtype), block = a.count * es;
  if (a.count < 2) return;
  Slice t = moreScratch(s, block - es);
  exec::Round& rd = lastRound(s);
  rd.ops.push_back(Schedule::copy(Slice{Buf::kOutput, 0, block - es}, t));
  rd.ops.push_back(Schedule::copy(t, Slice{Buf::kOutput, es, block - es}));
}

void wrongRoot(Schedule& s, const algo::CollArgs& a) {
  if (a.nranks < 2) return;
  algo::CollArgs b = a;
  b.root = (a.root + 1) % a.nranks;
  const algo::AlgorithmInfo* info = algo::find(a.coll, s.algorithm);
  if (info != nullptr) s = info->build(b);
}

// Splits op (a transfer of >= 2 elements) around the element at its middle chunk boundary.
void splitAround(exec::Round& rd, size_t k, size_t es) {
  Op op = rd.ops[k];
  const Slice& whole = op.type == OpType::kSend ? op.src : op.dst;
  const size_t cut = whole.bytes / es / 2 * es, rest = whole.bytes - cut - es;
  auto part = [&](size_t off, size_t bytes) {
    Op p = op;
    if (op.type == OpType::kSend || op.type == OpType::kRecvReduce) {
      p.src.offset += off;
      p.src.bytes = bytes;
    }
    if (op.type != OpType::kSend) {
      p.dst.offset += off;
      p.dst.bytes = bytes;
    }
    return p;
  };
  rd.ops[k] = part(0, cut);
  if (rest > 0) rd.ops.insert(rd.ops.begin() + static_cast<long>(k) + 1, part(cut + es, rest));
}

// Sends and receives between a pair are matched in order and have equal sizes, so "the first
// send to p of at least two elements" and "the first receive from this rank of at least two
// elements" on p are the same message: both sides split it the same way.
void skipChunkBoundaryElement(Schedule& s, const algo::CollArgs& a) {
  const size_t es = dtypeSize(a.dtype);
  std::map<int, bool> sendDone, recvDone;
  for (exec::Round& rd : s.rounds)
    for (size_t k = 0; k < rd.ops.size(); ++k) {
      const Op& op = rd.ops[k];
      if (!isTransfer(op.type)) continue;
      const bool send = op.type == OpType::kSend;
      const size_t bytes = send ? op.src.bytes : op.dst.bytes;
      auto& done = send ? sendDone[op.peer] : recvDone[op.peer];
      if (done || bytes < 2 * es) continue;
      done = true;
      splitAround(rd, k, es);
      ++k;  // skip the second part
    }
}

void inPlaceOffsetOffByOne(Schedule& s, const algo::CollArgs& a) {
  const size_t block = a.count * dtypeSize(a.dtype);
  const size_t wrong = static_cast<size_t>((a.rank + 1) % a.nranks) * block;
  for (exec::Round& rd : s.rounds)
    for (Op& op : rd.ops)
      for (Slice* sl : {&op.src, &op.src2})
        if (sl->buf == Buf::kInput && sl->bytes > 0)
          *sl = Slice{Buf::kOutput, wrong + sl->offset, sl->bytes};
}

// In the first accumulation of each round (reduce(x, y, d); reduce(d, z, d)) the second
// operands are exchanged: (x + z) + y.
void wrongReductionOrder(Schedule& s, const algo::CollArgs& a) {
  if (!a.deterministic) return;
  for (exec::Round& rd : s.rounds)
    for (size_t k = 0; k + 1 < rd.ops.size(); ++k) {
      Op& first = rd.ops[k];
      Op& second = rd.ops[k + 1];
      if (first.type == OpType::kReduce && second.type == OpType::kReduce &&
          same(second.src, first.dst) && same(second.dst, first.dst) &&
          !same(first.src2, first.dst) && !same(second.src2, first.dst)) {
        std::swap(first.src2, second.src2);
        break;
      }
    }
}

void staleBuffer(Schedule& s, const algo::CollArgs&) {
  for (exec::Round& rd : s.rounds)
    for (Op& op : rd.ops)
      if (op.type == OpType::kRecv && op.dst.buf == Buf::kScratch && op.dst.bytes > 0) {
        op.dst = moreScratch(s, op.dst.bytes);
        return;
      }
}

void dropPeer(Schedule& s, const algo::CollArgs& a) {
  for (exec::Round& rd : s.rounds)
    for (size_t k = 0; k < rd.ops.size(); ++k) {
      Op& op = rd.ops[k];
      if (op.type == OpType::kRecvReduce && op.dst.bytes > 0) {
        // Received into spare scratch, never reduced; dst keeps src alone.
        const Slice src = op.src, dst = op.dst;
        op = Schedule::recv(op.peer, moreScratch(s, dst.bytes));
        if (!same(src, dst)) rd.ops.push_back(Schedule::copy(src, dst));
        return;
      }
      if (op.type == OpType::kReduce && op.src2.buf == Buf::kWindow && op.src2.rank != a.rank &&
          op.dst.bytes > 0) {
        // A peer's window read but not reduced.
        if (same(op.src, op.dst))
          rd.ops.erase(rd.ops.begin() + static_cast<long>(k));
        else
          op = Schedule::copy(op.src, op.dst);
        return;
      }
    }
  // Else the first reduction of a contribution received into scratch (reduce-scatter-v's rank
  // order reduction): the contribution is left out.
  for (exec::Round& rd : s.rounds)
    for (Op& op : rd.ops)
      if (op.type == OpType::kReduce && op.src2.buf == Buf::kScratch && op.dst.bytes > 0) {
        op = Schedule::copy(op.src, op.dst);
        return;
      }
}

}  // namespace

const std::vector<FaultInfo>& faults() {
  static const std::vector<FaultInfo> v = {
      {Fault::kNone,
       "none",
       "no fault (the control: every case must pass)",
       {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce,
        Coll::kAllToAll, Coll::kGather, Coll::kScatter, Coll::kAllGatherV, Coll::kReduceScatterV,
        Coll::kGatherV, Coll::kScatterV, Coll::kAllToAllV}},
      {Fault::kNone,
       "none (deterministic)",
       "no fault, deterministic mode, rank-order data",
       {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce, Coll::kReduceScatterV},
       true},
      {Fault::kSwapAllGatherBlocks,
       "swap all-gather blocks",
       "all-gather output blocks 0 and min(3, n-1) exchanged",
       {Coll::kAllGather, Coll::kAllGatherV}},
      {Fault::kShiftReduceScatterBlock,
       "shift reduce-scatter block",
       "reduce-scatter result moved up by one element",
       {Coll::kReduceScatter, Coll::kReduceScatterV}},
      {Fault::kWrongRoot,
       "wrong root",
       "broadcast and reduce built for root + 1",
       {Coll::kBroadcast, Coll::kReduce}},
      {Fault::kSkipChunkBoundaryElement,
       "element skipped at a chunk boundary",
       "the first transfer between each pair split in two chunks, the element between them "
       "never sent",
       {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce,
        Coll::kAllToAll, Coll::kGather, Coll::kScatter, Coll::kAllGatherV, Coll::kReduceScatterV,
        Coll::kGatherV, Coll::kScatterV, Coll::kAllToAllV}},
      {Fault::kInPlaceOffsetOffByOne,
       "in-place offset off by one rank",
       "all-gather input read at output + (rank + 1) blocks",
       {Coll::kAllGather}},
      {Fault::kWrongReductionOrder,
       "reduction order (deterministic mode)",
       "the first accumulation of each round takes x0 + x2 + x1",
       {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce, Coll::kReduceScatterV},
       true},
      {Fault::kStaleBuffer,
       "stale buffer across calls",
       "the first receive into scratch lands in spare scratch: the readers see the last call's "
       "data",
       {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce, Coll::kReduceScatterV,
        Coll::kAllToAll, Coll::kAllToAllV}},
      {Fault::kDropPeer,
       "peer contribution dropped",
       "the first received (or window) contribution is not reduced",
       {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce, Coll::kReduceScatterV}},
      {Fault::kSwapRootedBlocks,
       "swap gather / scatter blocks",
       "gather: the root's output blocks 0 and min(3, n-1) exchanged; scatter: the root's first "
       "two sends of one size exchange their blocks",
       {Coll::kGather, Coll::kScatter, Coll::kGatherV, Coll::kScatterV}},
  };
  return v;
}

// A V-collective of the matrix (uniform blocks: every count the same) as the plain collective
// whose layout it has, so the plain faults find its blocks.
algo::CollArgs plainArgs(const algo::CollArgs& a) {
  algo::CollArgs p = a;
  p.coll = algo::plainOf(a.coll);
  p.count = a.counts[static_cast<size_t>(a.rank)];
  p.counts.clear();
  p.displs.clear();
  p.sendCounts.clear();
  p.sendDispls.clear();
  return p;
}

void apply(Fault f, Schedule& s, const algo::CollArgs& a) {
  if (algo::isUneven(a.coll) && !a.counts.empty()) return apply(f, s, plainArgs(a));
  switch (f) {
    case Fault::kNone:
      return;
    case Fault::kSwapAllGatherBlocks:
      if (a.coll == Coll::kAllGather) swapAllGatherBlocks(s, a);
      return;
    case Fault::kShiftReduceScatterBlock:
      if (a.coll == Coll::kReduceScatter) shiftReduceScatterBlock(s, a);
      return;
    case Fault::kWrongRoot:
      if (a.coll == Coll::kBroadcast || a.coll == Coll::kReduce) wrongRoot(s, a);
      return;
    case Fault::kSkipChunkBoundaryElement:
      skipChunkBoundaryElement(s, a);
      return;
    case Fault::kInPlaceOffsetOffByOne:
      if (a.coll == Coll::kAllGather) inPlaceOffsetOffByOne(s, a);
      return;
    case Fault::kWrongReductionOrder:
      wrongReductionOrder(s, a);
      return;
    case Fault::kStaleBuffer:
      staleBuffer(s, a);
      return;
    case Fault::kDropPeer:
      dropPeer(s, a);
      return;
    case Fault::kSwapRootedBlocks:
      if (a.coll == Coll::kGather || a.coll == Coll::kScatter) swapRootedBlocks(s, a);
      return;
  }
}

}  // namespace tutti::mutation
