// Uneven collectives (tuttiAllGatherV, tuttiAllToAllV) on the point-to-point path: each call is
// one batch of sends and receives to every peer it exchanges with, issued together
// (Communicator::runP2p, so they cannot deadlock), plus a local copy of the rank's own block.
// Inside a group the whole call is recorded like a collective and runs at tuttiGroupEnd in call
// order with the group's other collectives.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "api_guard.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "issue.h"

using tutti::api::guarded;
using tutti::api::ready;

namespace {

// One call, planned in element offsets: what goes to and comes from which peer, and the local
// block. Offsets of zero-length blocks are never used.
struct Block {
  size_t offset = 0;  // elements from the start of the buffer
  size_t count = 0;   // elements
};

struct Transfer {
  int peer;
  Block block;
};

struct Plan {
  std::vector<Transfer> sends, recvs;  // to / from other ranks, zero-length ones included
  // The rank's own block: copied from send + selfSrc to recv + selfDst.
  bool selfCopy = false;
  Block selfSrc, selfDst;
  tutti::RootedCall what;  // its call tag (a peer making another call is caught)
};

int rawDtype(const tuttiDataType_t& datatype) {
  int v;
  std::memcpy(&v, &datatype, sizeof(v));  // C callers may pass any int
  return v;
}

void checkDtype(tuttiComm_t comm, const tuttiDataType_t& datatype) {
  TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
  TUTTI_CHECK_ARG(tutti::dtypeValid(rawDtype(datatype)), "invalid datatype ", rawDtype(datatype));
}

// Checks that [displ, displ + count) elements of `es` bytes end within size_t in bytes; returns
// the end in elements (0 for an empty block, whose displacement is not used).
size_t blockEnd(const char* countsName, const char* displsName, int index, size_t count,
                size_t displ, size_t es) {
  if (count == 0) return 0;
  TUTTI_CHECK_ARG(count <= SIZE_MAX / es && displ <= SIZE_MAX / es - count, displsName, "[", index,
                  "] + ", countsName, "[", index, "] = ", displ, " + ", count,
                  " elements overflows size_t in bytes");
  const size_t maxElems = tutti::api::kMaxBufferBytes / es;
  TUTTI_CHECK_ARG(displ + count <= maxElems, displsName, "[", index, "] + ", countsName, "[", index,
                  "] = ", displ, " + ", count, " elements of ", es,
                  " B is more than the 256 TiB a buffer can hold");
  return displ + count;
}

// The COLL line of a -V call: its send and receive extents in elements.
tutti::api::CallInfo unevenInfo(size_t sendElems, size_t recvElems, tuttiDataType_t dtype) {
  tutti::api::CallInfo info;
  info.count = sendElems;
  info.recvCount = recvElems;
  info.dtype = dtype;
  info.uneven = true;
  return info;
}

bool overlap(const std::byte* a, size_t an, const std::byte* b, size_t bn) {
  return an > 0 && bn > 0 && a < b + bn && b < a + an;
}

// Runs one planned call on host buffers: send/recv hold sendElems/recvElems elements (the
// extents the plan reaches). In place: the send region is exactly the self block of the
// receive region (all-gather-v) or the receive region exactly the self block of the send
// region. A send region overlapping the receive region in any other
// way (e.g. an all-to-all-v with sendbuff == recvbuff) is copied first, so receives cannot
// overwrite data still to be sent.
void runPlan(tutti::Communicator& c, const Plan& plan, const void* send, size_t sendElems,
             void* recv, size_t recvElems, size_t es) {
  auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<std::byte*>(recv);
  const bool selfAliased = plan.selfCopy && plan.selfSrc.count > 0 &&
                           s + plan.selfSrc.offset * es == r + plan.selfDst.offset * es;
  const bool inPlace =
      selfAliased && ((plan.selfSrc.offset == 0 && plan.selfSrc.count == sendElems) ||
                      (plan.selfDst.offset == 0 && plan.selfDst.count == recvElems));
  std::vector<std::byte> sendCopy;
  if (!inPlace && overlap(s, sendElems * es, r, recvElems * es)) {
    sendCopy.assign(s, s + sendElems * es);
    s = sendCopy.data();
  }
  std::vector<tutti::P2pOp> ops;
  ops.reserve(plan.sends.size() + plan.recvs.size());
  for (const Transfer& t : plan.sends) {
    const Block& b = t.block;
    ops.push_back({true, t.peer, b.count ? const_cast<std::byte*>(s) + b.offset * es : nullptr,
                   b.count * es});
  }
  for (const Transfer& t : plan.recvs) {
    const Block& b = t.block;
    ops.push_back({false, t.peer, b.count ? r + b.offset * es : nullptr, b.count * es});
  }
  if (!ops.empty()) c.runP2p(ops, &plan.what);
  // The rank's own block, after the transfers (nothing still to be sent is overwritten).
  if (plan.selfCopy && plan.selfSrc.count > 0) {
    const std::byte* from = s + plan.selfSrc.offset * es;
    std::byte* to = r + plan.selfDst.offset * es;
    if (from != to) std::memmove(to, from, plan.selfSrc.count * es);
  }
}

// Runs the plan now, or records it when a group is open (issue.h). recvPartial: the call leaves
// bytes of the receive extent unwritten (gaps between displacements), which staging of device
// buffers must then preserve.
// info: the call's arguments as its COLL line shows them (call_log.h).
tuttiResult_t issuePlan(tuttiComm_t comm, const char* fn, const tutti::api::CallInfo& info,
                        tutti::Communicator& c, Plan plan, const void* send, size_t sendElems,
                        void* recv, size_t recvElems, size_t es, bool recvPartial,
                        tuttiStream_t stream) {
  tutti::api::CallBuffers b{send, sendElems * es, recv, recvElems * es};
  b.recvPartial = recvPartial;
  return tutti::api::issue(
      comm, fn, info, b, stream,
      [&c, plan = std::move(plan), sendElems, recvElems, es](const void* s, void* r) {
        runPlan(c, plan, s, sendElems, r, recvElems, es);
      });
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff,
                                        const size_t* recvcounts, const size_t* displs,
                                        tuttiDataType_t datatype, tuttiComm_t comm,
                                        tuttiStream_t stream) {
  return guarded(comm, "tuttiAllGatherV", [&] {
    checkDtype(comm, datatype);
    auto& c = ready(comm);
    TUTTI_CHECK_ARG(recvcounts != nullptr, "recvcounts is NULL");
    TUTTI_CHECK_ARG(displs != nullptr, "displs is NULL");
    const int n = c.size(), me = c.rank();
    const size_t es = tutti::dtypeSize(datatype);
    TUTTI_CHECK_ARG(recvcounts[me] == sendcount, "recvcounts[", me, "] = ", recvcounts[me],
                    " differs from this rank's sendcount ", sendcount);
    TUTTI_CHECK_ARG(sendcount == 0 || sendbuff != nullptr, "sendbuff is NULL with sendcount ",
                    sendcount);
    Plan plan;
    size_t recvElems = 0;
    for (int r = 0; r < n; ++r) {
      recvElems =
          std::max(recvElems, blockEnd("recvcounts", "displs", r, recvcounts[r], displs[r], es));
      const Block in{recvcounts[r] ? displs[r] : 0, recvcounts[r]};
      if (r == me) {
        plan.selfDst = in;
        continue;
      }
      plan.sends.push_back({r, Block{0, sendcount}});
      plan.recvs.push_back({r, in});
    }
    TUTTI_CHECK_ARG(recvElems == 0 || recvbuff != nullptr,
                    "recvbuff is NULL with non-zero recvcounts");
    plan.selfCopy = true;
    plan.selfSrc = {0, sendcount};
    size_t total = 0;
    for (int r = 0; r < n; ++r) total += recvcounts[r];
    plan.what = {tutti::RootedColl::kAllGatherV, total, datatype};
    return issuePlan(comm, "tuttiAllGatherV", unevenInfo(sendcount, recvElems, datatype), c,
                     std::move(plan), sendbuff, sendcount, recvbuff, recvElems, es, true, stream);
  });
}

TUTTI_API tuttiResult_t tuttiAllToAllV(const void* sendbuff, const size_t* sendcounts,
                                       const size_t* sdispls, void* recvbuff,
                                       const size_t* recvcounts, const size_t* rdispls,
                                       tuttiDataType_t datatype, tuttiComm_t comm,
                                       tuttiStream_t stream) {
  return guarded(comm, "tuttiAllToAllV", [&] {
    checkDtype(comm, datatype);
    auto& c = ready(comm);
    TUTTI_CHECK_ARG(sendcounts != nullptr, "sendcounts is NULL");
    TUTTI_CHECK_ARG(sdispls != nullptr, "sdispls is NULL");
    TUTTI_CHECK_ARG(recvcounts != nullptr, "recvcounts is NULL");
    TUTTI_CHECK_ARG(rdispls != nullptr, "rdispls is NULL");
    const int n = c.size(), me = c.rank();
    const size_t es = tutti::dtypeSize(datatype);
    TUTTI_CHECK_ARG(sendcounts[me] == recvcounts[me], "sendcounts[", me, "] = ", sendcounts[me],
                    " differs from recvcounts[", me, "] = ", recvcounts[me],
                    " (this rank's block to itself)");
    Plan plan;
    size_t sendElems = 0, recvElems = 0;
    for (int p = 0; p < n; ++p) {
      sendElems =
          std::max(sendElems, blockEnd("sendcounts", "sdispls", p, sendcounts[p], sdispls[p], es));
      recvElems =
          std::max(recvElems, blockEnd("recvcounts", "rdispls", p, recvcounts[p], rdispls[p], es));
      const Block out{sendcounts[p] ? sdispls[p] : 0, sendcounts[p]};
      const Block in{recvcounts[p] ? rdispls[p] : 0, recvcounts[p]};
      if (p == me) {
        plan.selfSrc = out;
        plan.selfDst = in;
        continue;
      }
      plan.sends.push_back({p, out});
      plan.recvs.push_back({p, in});
    }
    TUTTI_CHECK_ARG(sendElems == 0 || sendbuff != nullptr,
                    "sendbuff is NULL with non-zero sendcounts");
    TUTTI_CHECK_ARG(recvElems == 0 || recvbuff != nullptr,
                    "recvbuff is NULL with non-zero recvcounts");
    plan.selfCopy = true;
    plan.what = {tutti::RootedColl::kAllToAllV, 0, datatype};
    return issuePlan(comm, "tuttiAllToAllV", unevenInfo(sendElems, recvElems, datatype), c,
                     std::move(plan), sendbuff, sendElems, recvbuff, recvElems, es, true, stream);
  });
}

}  // extern "C"
