// Collective entry points: argument checks, then the communicator (or the open group).
#include "api_guard.h"
#include "comm_handle.h"
#include "common/dtype.h"

#include <cstring>
#include "group.h"

using tutti::api::guarded;
using tutti::api::ready;

namespace {

// Enum arguments come from C callers and may hold any int: read them as ints (loading an
// out-of-range value through the enum type is undefined in C++).
template <typename E>
int rawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}

void checkCommon(tuttiComm_t comm, const void* send, const void* recv, size_t sendElems,
                 size_t recvElems, const tuttiDataType_t& datatype) {
  int dtype = rawEnum(datatype);
  TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
  TUTTI_CHECK_ARG(tutti::dtypeValid(dtype), "invalid datatype ", dtype);
  TUTTI_CHECK_ARG(sendElems == 0 || send != nullptr, "sendbuff is NULL with a non-zero count");
  TUTTI_CHECK_ARG(recvElems == 0 || recv != nullptr, "recvbuff is NULL with a non-zero count");
  // Element counts large enough to overflow size_t in bytes are rejected.
  TUTTI_CHECK_ARG(sendElems <= SIZE_MAX / 16 && recvElems <= SIZE_MAX / 16, "count too large");
}

void checkOp(const tuttiRedOp_t& op) {
  TUTTI_CHECK_ARG(tutti::opValid(rawEnum(op)), "invalid reduction op ", rawEnum(op));
}

void checkRoot(tutti::Communicator& c, int root) {
  TUTTI_CHECK_ARG(root >= 0 && root < c.size(), "root ", root, " out of range [0, ", c.size(), ")");
}

// Runs now, or records the call when a group is open.
template <typename F>
tuttiResult_t issue(tuttiComm_t comm, const char* fn, F&& body) {
  if (tutti::api::groupDepth() > 0) {
    tutti::api::deferCollective(comm, std::forward<F>(body));
    return tuttiSuccess;
  }
  body();
  return tuttiSuccess;
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                                       tuttiStream_t stream) {
  return guarded(comm, "tuttiAllReduce", [&] {
    checkCommon(comm, sendbuff, recvbuff, count, count, datatype);
    checkOp(op);
    auto& c = ready(comm);
    return issue(comm, "tuttiAllReduce", [&c, sendbuff, recvbuff, count, datatype, op] {
      c.allReduce(sendbuff, recvbuff, count, datatype, op);
    });
  });
}

TUTTI_API tuttiResult_t tuttiBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                       tuttiStream_t stream) {
  return guarded(comm, "tuttiBroadcast", [&] {
    checkCommon(comm, nullptr, recvbuff, 0, count, datatype);
    auto& c = ready(comm);
    checkRoot(c, root);
    TUTTI_CHECK_ARG(c.rank() != root || count == 0 || sendbuff != nullptr,
                    "sendbuff is NULL on the root");
    return issue(comm, "tuttiBroadcast", [&c, sendbuff, recvbuff, count, datatype, root] {
      c.broadcast(sendbuff, recvbuff, count, datatype, root);
    });
  });
}

TUTTI_API tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    tuttiDataType_t datatype, tuttiRedOp_t op, int root,
                                    tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiReduce", [&] {
    checkCommon(comm, sendbuff, nullptr, count, 0, datatype);
    checkOp(op);
    auto& c = ready(comm);
    checkRoot(c, root);
    TUTTI_CHECK_ARG(c.rank() != root || count == 0 || recvbuff != nullptr,
                    "recvbuff is NULL on the root");
    return issue(comm, "tuttiReduce", [&c, sendbuff, recvbuff, count, datatype, op, root] {
      c.reduce(sendbuff, recvbuff, count, datatype, op, root);
    });
  });
}

TUTTI_API tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       tuttiDataType_t datatype, tuttiComm_t comm,
                                       tuttiStream_t stream) {
  return guarded(comm, "tuttiAllGather", [&] {
    checkCommon(comm, sendbuff, recvbuff, sendcount, sendcount, datatype);
    auto& c = ready(comm);
    return issue(comm, "tuttiAllGather", [&c, sendbuff, recvbuff, sendcount, datatype] {
      c.allGather(sendbuff, recvbuff, sendcount, datatype);
    });
  });
}

TUTTI_API tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           tuttiDataType_t datatype, tuttiRedOp_t op,
                                           tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiReduceScatter", [&] {
    checkCommon(comm, sendbuff, recvbuff, recvcount, recvcount, datatype);
    checkOp(op);
    auto& c = ready(comm);
    return issue(comm, "tuttiReduceScatter", [&c, sendbuff, recvbuff, recvcount, datatype, op] {
      c.reduceScatter(sendbuff, recvbuff, recvcount, datatype, op);
    });
  });
}

TUTTI_API tuttiResult_t tuttiAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                      tuttiDataType_t datatype, tuttiComm_t comm,
                                      tuttiStream_t stream) {
  return guarded(comm, "tuttiAllToAll", [&] {
    checkCommon(comm, sendbuff, recvbuff, count, count, datatype);
    auto& c = ready(comm);
    return issue(comm, "tuttiAllToAll", [&c, sendbuff, recvbuff, count, datatype] {
      c.allToAll(sendbuff, recvbuff, count, datatype);
    });
  });
}

TUTTI_API tuttiResult_t tuttiBarrier(tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiBarrier", [&] {
    auto& c = ready(comm);
    return issue(comm, "tuttiBarrier", [&c] { c.barrier(); });
  });
}

TUTTI_API const char* tuttiCommLastAlgorithm(tuttiComm_t comm) {
  if (comm == nullptr || comm->impl == nullptr) return "none";
  return comm->impl->lastAlgorithm().c_str();
}

TUTTI_API const char* tuttiCommTransports(tuttiComm_t comm) {
  if (comm == nullptr || comm->impl == nullptr) return "none";
  comm->transportsText = comm->impl->transportsInUse();
  return comm->transportsText.c_str();
}

}  // extern "C"
