// The V-collectives' entry points (tuttiAllGatherV, tuttiReduceScatterV, tuttiGatherV,
// tuttiScatterV, tuttiAllToAllV): argument checks, the extents their counts and displacements
// reach, then the communicator's builder-scheduled call (algorithms/uneven_linear.cc,
// reducescatterv.cc). The counts are copied: inside a group the call runs at tuttiGroupEnd.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "api_guard.h"
#include "arg_checks.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "issue.h"

using tutti::api::guarded;
using tutti::api::ready;

namespace {

using Counts = std::vector<size_t>;

void checkDtype(tuttiComm_t comm, const tuttiDataType_t& datatype) {
  TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
  tutti::api::checkDatatype(datatype);
}

void checkRoot(const tutti::Communicator& c, int root) { tutti::api::checkRank(c, root, "root"); }

// n counts and displacements (both non-NULL), copied; returns the extent they reach in elements
// (0 when every block is empty: the displacement of an empty block is not used). Each block
// must end within size_t in bytes and within the 256 TiB a buffer can hold.
size_t readBlocks(const char* countsName, const size_t* counts, const char* displsName,
                  const size_t* displs, int n, size_t es, Counts& c, Counts& d) {
  TUTTI_CHECK_ARG(counts != nullptr, countsName, " is NULL");
  TUTTI_CHECK_ARG(displs != nullptr, displsName, " is NULL");
  c.assign(counts, counts + n);
  d.assign(displs, displs + n);
  size_t extent = 0;
  const size_t maxElems = tutti::api::kMaxBufferBytes / es;
  for (int r = 0; r < n; ++r) {
    if (c[r] == 0) continue;
    TUTTI_CHECK_ARG(c[r] <= SIZE_MAX / es && d[r] <= SIZE_MAX / es - c[r], displsName, "[", r,
                    "] + ", countsName, "[", r, "] = ", d[r], " + ", c[r],
                    " elements overflows size_t in bytes");
    TUTTI_CHECK_ARG(d[r] + c[r] <= maxElems, displsName, "[", r, "] + ", countsName, "[", r,
                    "] = ", d[r], " + ", c[r], " elements of ", es,
                    " B is more than the 256 TiB a buffer can hold");
    extent = std::max(extent, d[r] + c[r]);
  }
  return extent;
}

// Blocks the call writes (receive blocks) must not overlap: two ranks' data for one element has
// no meaning (MPI: no location is written twice). Empty blocks take no room.
void checkDisjoint(const char* countsName, const char* displsName, const Counts& c,
                   const Counts& d) {
  std::vector<int> order;
  for (int r = 0; r < static_cast<int>(c.size()); ++r)
    if (c[r] > 0) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return d[a] < d[b]; });
  for (size_t k = 1; k < order.size(); ++k) {
    const int a = order[k - 1], b = order[k];
    TUTTI_CHECK_ARG(d[b] >= d[a] + c[a], "receive blocks overlap: ", displsName, "[", b,
                    "] = ", d[b], " lies inside block ", a, " (", displsName, "[", a, "] = ", d[a],
                    ", ", countsName, "[", a, "] = ", c[a], ")");
  }
}

// The COLL line of a -V call: its send and receive extents in elements.
tutti::api::CallInfo unevenInfo(size_t sendElems, size_t recvElems, tuttiDataType_t dtype,
                                tuttiRedOp_t op = tuttiNumOps, int root = -1) {
  tutti::api::CallInfo info;
  info.count = sendElems;
  info.recvCount = recvElems;
  info.dtype = dtype;
  info.op = op;
  info.root = root;
  info.uneven = true;
  return info;
}

// The send bytes the call may read, copied aside when they overlap the receive range in any
// way but the call's in-place layout (send == recv + inPlaceOffset bytes, or no such layout),
// so that arriving blocks never overwrite data still to be sent. Returns what to send from.
const void* sendSource(const void* send, size_t sendBytes, const void* recv, size_t recvBytes,
                       std::ptrdiff_t inPlaceOffset, bool hasInPlace,
                       std::vector<std::byte>& copy) {
  auto* s = static_cast<const std::byte*>(send);
  auto* r = static_cast<const std::byte*>(recv);
  const bool overlap = sendBytes > 0 && recvBytes > 0 && s < r + recvBytes && r < s + sendBytes;
  if (!overlap || (hasInPlace && s == r + inPlaceOffset)) return send;
  copy.assign(s, s + sendBytes);
  return copy.data();
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
    const int me = c.rank();
    const size_t es = tutti::dtypeSize(datatype);
    Counts counts, offsets;
    const size_t recvElems =
        readBlocks("recvcounts", recvcounts, "displs", displs, c.size(), es, counts, offsets);
    TUTTI_CHECK_ARG(counts[me] == sendcount, "recvcounts[", me, "] = ", counts[me],
                    " differs from this rank's sendcount ", sendcount);
    checkDisjoint("recvcounts", "displs", counts, offsets);
    TUTTI_CHECK_ARG(sendcount == 0 || sendbuff != nullptr, "sendbuff is NULL with sendcount ",
                    sendcount);
    TUTTI_CHECK_ARG(recvElems == 0 || recvbuff != nullptr,
                    "recvbuff is NULL with non-zero recvcounts");
    tutti::api::CallBuffers b{sendbuff, sendcount * es, recvbuff, recvElems * es};
    b.recvPartial = true;
    const std::ptrdiff_t inPlace = static_cast<std::ptrdiff_t>(offsets[me] * es);
    return tutti::api::issue(comm, "tuttiAllGatherV", unevenInfo(sendcount, recvElems, datatype), b,
                             stream,
                             [b, counts = std::move(counts), offsets = std::move(offsets), datatype,
                              inPlace](tutti::Communicator& c, const void* s, void* r) {
                               std::vector<std::byte> copy;
                               s = sendSource(s, b.sendBytes, r, b.recvBytes, inPlace, true, copy);
                               c.allGatherV(s, r, counts, offsets, datatype);
                             });
  });
}

TUTTI_API tuttiResult_t tuttiReduceScatterV(const void* sendbuff, void* recvbuff,
                                            const size_t* recvcounts, const size_t* displs,
                                            tuttiDataType_t datatype, tuttiRedOp_t op,
                                            tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiReduceScatterV", [&] {
    checkDtype(comm, datatype);
    tutti::api::checkOp(op, datatype);
    auto& c = ready(comm);
    const int me = c.rank();
    const size_t es = tutti::dtypeSize(datatype);
    Counts counts, offsets;
    const size_t sendElems =
        readBlocks("recvcounts", recvcounts, "displs", displs, c.size(), es, counts, offsets);
    const size_t mine = counts[me];
    TUTTI_CHECK_ARG(sendElems == 0 || sendbuff != nullptr,
                    "sendbuff is NULL with non-zero recvcounts");
    TUTTI_CHECK_ARG(mine == 0 || recvbuff != nullptr, "recvbuff is NULL with recvcounts[", me,
                    "] = ", mine);
    const tutti::api::CallBuffers b{sendbuff, sendElems * es, recvbuff, mine * es};
    // In place: recvbuff == sendbuff + displs[rank] elements.
    const std::ptrdiff_t inPlace = -static_cast<std::ptrdiff_t>(offsets[me] * es);
    return tutti::api::issue(comm, "tuttiReduceScatterV", unevenInfo(sendElems, mine, datatype, op),
                             b, stream,
                             [b, counts = std::move(counts), offsets = std::move(offsets), datatype,
                              op, inPlace](tutti::Communicator& c, const void* s, void* r) {
                               std::vector<std::byte> copy;
                               s = sendSource(s, b.sendBytes, r, b.recvBytes, inPlace, true, copy);
                               c.reduceScatterV(s, r, counts, offsets, datatype, op);
                             });
  });
}

TUTTI_API tuttiResult_t tuttiGatherV(const void* sendbuff, size_t sendcount, void* recvbuff,
                                     const size_t* recvcounts, const size_t* displs,
                                     tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                     tuttiStream_t stream) {
  return guarded(comm, "tuttiGatherV", [&] {
    checkDtype(comm, datatype);
    auto& c = ready(comm);
    checkRoot(c, root);
    const int me = c.rank();
    const bool isRoot = me == root;
    const size_t es = tutti::dtypeSize(datatype);
    Counts counts, offsets;
    size_t recvElems =
        readBlocks("recvcounts", recvcounts, "displs", displs, c.size(), es, counts, offsets);
    TUTTI_CHECK_ARG(counts[me] == sendcount, "recvcounts[", me, "] = ", counts[me],
                    " differs from this rank's sendcount ", sendcount);
    TUTTI_CHECK_ARG(sendcount == 0 || sendbuff != nullptr, "sendbuff is NULL with sendcount ",
                    sendcount);
    if (!isRoot) {  // ignored on non-roots
      recvbuff = nullptr;
      recvElems = 0;
    } else {
      checkDisjoint("recvcounts", "displs", counts, offsets);
    }
    TUTTI_CHECK_ARG(recvElems == 0 || recvbuff != nullptr,
                    "recvbuff is NULL on the root with non-zero recvcounts");
    tutti::api::CallBuffers b{sendbuff, sendcount * es, recvbuff, recvElems * es};
    b.recvPartial = true;
    const std::ptrdiff_t inPlace = static_cast<std::ptrdiff_t>(offsets[me] * es);
    return tutti::api::issue(comm, "tuttiGatherV",
                             unevenInfo(sendcount, recvElems, datatype, tuttiNumOps, root), b,
                             stream,
                             [b, counts = std::move(counts), offsets = std::move(offsets), datatype,
                              root, inPlace](tutti::Communicator& c, const void* s, void* r) {
                               std::vector<std::byte> copy;
                               s = sendSource(s, b.sendBytes, r, b.recvBytes, inPlace, true, copy);
                               c.gatherV(s, r, counts, offsets, datatype, root);
                             });
  });
}

TUTTI_API tuttiResult_t tuttiScatterV(const void* sendbuff, const size_t* sendcounts,
                                      const size_t* displs, void* recvbuff, size_t recvcount,
                                      tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                      tuttiStream_t stream) {
  return guarded(comm, "tuttiScatterV", [&] {
    checkDtype(comm, datatype);
    auto& c = ready(comm);
    checkRoot(c, root);
    const int me = c.rank();
    const bool isRoot = me == root;
    const size_t es = tutti::dtypeSize(datatype);
    Counts counts, offsets;
    size_t sendElems =
        readBlocks("sendcounts", sendcounts, "displs", displs, c.size(), es, counts, offsets);
    TUTTI_CHECK_ARG(counts[me] == recvcount, "sendcounts[", me, "] = ", counts[me],
                    " differs from this rank's recvcount ", recvcount);
    TUTTI_CHECK_ARG(recvcount == 0 || recvbuff != nullptr, "recvbuff is NULL with recvcount ",
                    recvcount);
    if (!isRoot) {  // ignored on non-roots
      sendbuff = nullptr;
      sendElems = 0;
    }
    TUTTI_CHECK_ARG(sendElems == 0 || sendbuff != nullptr,
                    "sendbuff is NULL on the root with non-zero sendcounts");
    const tutti::api::CallBuffers b{sendbuff, sendElems * es, recvbuff, recvcount * es};
    // In place on the root: recvbuff == sendbuff + displs[root] elements.
    const std::ptrdiff_t inPlace = -static_cast<std::ptrdiff_t>(offsets[me] * es);
    return tutti::api::issue(comm, "tuttiScatterV",
                             unevenInfo(sendElems, recvcount, datatype, tuttiNumOps, root), b,
                             stream,
                             [b, counts = std::move(counts), offsets = std::move(offsets), datatype,
                              root, inPlace](tutti::Communicator& c, const void* s, void* r) {
                               std::vector<std::byte> copy;
                               s = sendSource(s, b.sendBytes, r, b.recvBytes, inPlace, true, copy);
                               c.scatterV(s, r, counts, offsets, datatype, root);
                             });
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
    const int n = c.size(), me = c.rank();
    const size_t es = tutti::dtypeSize(datatype);
    Counts sc, sd, rc, rd;
    const size_t sendElems =
        readBlocks("sendcounts", sendcounts, "sdispls", sdispls, n, es, sc, sd);
    const size_t recvElems =
        readBlocks("recvcounts", recvcounts, "rdispls", rdispls, n, es, rc, rd);
    checkDisjoint("recvcounts", "rdispls", rc, rd);
    TUTTI_CHECK_ARG(sc[me] == rc[me], "sendcounts[", me, "] = ", sc[me],
                    " differs from recvcounts[", me, "] = ", rc[me],
                    " (this rank's block to itself)");
    TUTTI_CHECK_ARG(sendElems == 0 || sendbuff != nullptr,
                    "sendbuff is NULL with non-zero sendcounts");
    TUTTI_CHECK_ARG(recvElems == 0 || recvbuff != nullptr,
                    "recvbuff is NULL with non-zero recvcounts");
    tutti::api::CallBuffers b{sendbuff, sendElems * es, recvbuff, recvElems * es};
    b.recvPartial = true;
    return tutti::api::issue(
        comm, "tuttiAllToAllV", unevenInfo(sendElems, recvElems, datatype), b, stream,
        [b, sc = std::move(sc), sd = std::move(sd), rc = std::move(rc), rd = std::move(rd),
         datatype](tutti::Communicator& c, const void* s, void* r) {
          std::vector<std::byte> copy;  // any overlap (sendbuff == recvbuff, say): no in-place
          s = sendSource(s, b.sendBytes, r, b.recvBytes, 0, false, copy);
          c.allToAllV(s, sc, sd, r, rc, rd, datatype);
        });
  });
}

}  // extern "C"
