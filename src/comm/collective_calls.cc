// The Communicator's collective entry points: each call's arguments as the CollArgs every
// schedule is built from (Communicator::collective plans and runs them). Average is a sum
// divided afterwards on the ranks that receive a reduced result.
#include "comm/communicator.h"

namespace tutti {

namespace {
tuttiRedOp_t baseOp(tuttiRedOp_t op) { return op == tuttiAvg ? tuttiSum : op; }
}  // namespace

void Communicator::allReduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                             tuttiRedOp_t op) {
  algo::CollArgs a = baseArgs(algo::Coll::kAllReduce, count, dtype);
  a.op = baseOp(op);
  collective(std::move(a), send, recv, count, 0, op == tuttiAvg);
}

void Communicator::broadcast(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                             int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kBroadcast, count, dtype);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::reduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                          tuttiRedOp_t op, int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kReduce, count, dtype);
  a.op = baseOp(op);
  a.root = root;
  collective(std::move(a), send, recv, rank_ == root ? count : 0, 0, op == tuttiAvg);
}

void Communicator::allGather(const void* send, void* recv, size_t sendcount,
                             tuttiDataType_t dtype) {
  collective(baseArgs(algo::Coll::kAllGather, sendcount, dtype), send, recv, 0, 0, false);
}

void Communicator::reduceScatter(const void* send, void* recv, size_t recvcount,
                                 tuttiDataType_t dtype, tuttiRedOp_t op) {
  algo::CollArgs a = baseArgs(algo::Coll::kReduceScatter, recvcount, dtype);
  a.op = baseOp(op);
  collective(std::move(a), send, recv, recvcount, 0, op == tuttiAvg);
}

void Communicator::allToAll(const void* send, void* recv, size_t count, tuttiDataType_t dtype) {
  algo::CollArgs args = baseArgs(algo::Coll::kAllToAll, count, dtype);
  args.inPlace = send == recv;
  collective(std::move(args), send, recv, 0, 0, false);
}

void Communicator::gather(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                          int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kGather, count, dtype);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::scatter(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                           int root) {
  algo::CollArgs a = baseArgs(algo::Coll::kScatter, count, dtype);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

namespace {
size_t total(std::span<const size_t> counts) {
  size_t sum = 0;
  for (size_t c : counts) sum += c;
  return sum;
}

// The V-collectives' per-rank counts and displacements (CollArgs::counts says which buffer).
algo::CollArgs withBlocks(algo::CollArgs a, std::span<const size_t> counts,
                          std::span<const size_t> displs) {
  a.counts.assign(counts.begin(), counts.end());
  a.displs.assign(displs.begin(), displs.end());
  return a;
}
}  // namespace

void Communicator::allGatherV(const void* send, void* recv, std::span<const size_t> counts,
                              std::span<const size_t> displs, tuttiDataType_t dtype) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kAllGatherV, total(counts), dtype), counts, displs);
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::reduceScatterV(const void* send, void* recv, std::span<const size_t> counts,
                                  std::span<const size_t> displs, tuttiDataType_t dtype,
                                  tuttiRedOp_t op) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kReduceScatterV, total(counts), dtype), counts, displs);
  a.op = baseOp(op);
  collective(std::move(a), send, recv, counts[rank_], 0, op == tuttiAvg);
}

void Communicator::gatherV(const void* send, void* recv, std::span<const size_t> counts,
                           std::span<const size_t> displs, tuttiDataType_t dtype, int root) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kGatherV, total(counts), dtype), counts, displs);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::scatterV(const void* send, void* recv, std::span<const size_t> counts,
                            std::span<const size_t> displs, tuttiDataType_t dtype, int root) {
  algo::CollArgs a =
      withBlocks(baseArgs(algo::Coll::kScatterV, total(counts), dtype), counts, displs);
  a.root = root;
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::allToAllV(const void* send, std::span<const size_t> sendCounts,
                             std::span<const size_t> sendDispls, void* recv,
                             std::span<const size_t> recvCounts, std::span<const size_t> recvDispls,
                             tuttiDataType_t dtype) {
  // count 0 in the call tag: the counts differ between ranks.
  algo::CollArgs a = withBlocks(baseArgs(algo::Coll::kAllToAllV, 0, dtype), recvCounts, recvDispls);
  a.sendCounts.assign(sendCounts.begin(), sendCounts.end());
  a.sendDispls.assign(sendDispls.begin(), sendDispls.end());
  collective(std::move(a), send, recv, 0, 0, false);
}

void Communicator::barrier() {
  // A one-byte all-reduce: every rank hears (indirectly) from every other.
  uint8_t in = 0, out = 0;
  algo::CollArgs a = baseArgs(algo::Coll::kAllReduce, 1, tuttiUint8);
  a.op = tuttiMax;
  calls_.asBarrier([&] { collective(std::move(a), &in, &out, 0, 0, false); });
}

}  // namespace tutti
