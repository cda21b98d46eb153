// Point-to-point batches (p2p_batch.h).
#include "comm/p2p_batch.h"

#include <cstring>

#include "common/copy_bytes.h"
#include "common/error.h"

namespace tutti {

P2pBatch makeP2pBatch(std::span<const P2pOp> ops, int rank) {
  TUTTI_CHECK_ARG(ops.size() + exec::kFirstUserBuf <= 65535, "a group holds at most ",
                  65535 - exec::kFirstUserBuf, " send/recv calls (got ", ops.size(), ")");
  P2pBatch batch;
  exec::Schedule& s = batch.schedule;
  s.algorithm = "p2p";
  s.dtype = tuttiUint8;
  exec::Round& r = s.newRound();
  batch.buffers.assign(exec::kFirstUserBuf + ops.size(), nullptr);
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2pOp& op = ops[i];
    batch.buffers[exec::kFirstUserBuf + i] = op.buffer;
    exec::Slice slice{static_cast<exec::Buf>(exec::kFirstUserBuf + i), 0, op.bytes};
    if (op.peer == rank) continue;  // self: copySelfSends
    r.ops.push_back(op.isSend ? exec::Schedule::send(op.peer, slice)
                              : exec::Schedule::recv(op.peer, slice));
  }
  // Sends to self are matched in order with receives from self.
  std::vector<const P2pOp*> sends, recvs;
  for (const P2pOp& op : ops)
    if (op.peer == rank) (op.isSend ? sends : recvs).push_back(&op);
  if (sends.size() != recvs.size())
    fail(tuttiInvalidUsage, "rank ", rank, ": ", sends.size(), " send(s) to self but ",
         recvs.size(), " receive(s) from self in the group");
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes)
      fail(tuttiInvalidUsage, "rank ", rank, ": send to self of ", sends[i]->bytes,
           " B does not match the receive from self of ", recvs[i]->bytes, " B");
    batch.selfPairs.emplace_back(sends[i], recvs[i]);
  }
  return batch;
}

void copySelfSends(const P2pBatch& batch) {
  for (auto [send, recv] : batch.selfPairs)
    if (send->bytes > 0 && recv->buffer != send->buffer)
      copyBytes(recv->buffer, send->buffer, send->bytes);
}

}  // namespace tutti
