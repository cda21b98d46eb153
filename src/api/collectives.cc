// Collective entry points: argument checks, then the communicator (or the open group).
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "aliasing.h"
#include "api_guard.h"
#include "arg_checks.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "interfaces/algorithm.h"
#include "issue.h"
#include "ordered_call.h"

using tutti::api::guarded;
using tutti::api::issue;
using tutti::api::ready;

namespace {

void checkCommon(tuttiComm_t comm, const void* send, const void* recv, size_t sendElems,
                 size_t recvElems, const tuttiDataType_t& datatype) {
  TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
  tutti::api::checkDatatype(datatype);
  TUTTI_CHECK_ARG(sendElems == 0 || send != nullptr, "sendbuff is NULL with a non-zero count");
  TUTTI_CHECK_ARG(recvElems == 0 || recv != nullptr, "recvbuff is NULL with a non-zero count");
}

using tutti::api::checkOp;
void checkRoot(const tutti::Communicator& c, int root) { tutti::api::checkRank(c, root, "root"); }

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                                       tuttiStream_t stream) {
  return guarded(comm, "tuttiAllReduce", [&] {
    checkCommon(comm, sendbuff, recvbuff, count, count, datatype);
    checkOp(op, datatype);
    ready(comm);  // initialised, not failed
    const size_t bytes = tutti::api::bufferBytes("count", count, datatype);
    const tutti::api::CallBuffers bufs{sendbuff, bytes, recvbuff, bytes};
    tutti::api::checkAliasing(bufs, 0);
    return issue(
        comm, "tuttiAllReduce", {count, datatype, op}, bufs, stream,
        [count, datatype, op](tutti::Communicator& c, const void* send, void* recv) {
          c.allReduce(send, recv, count, datatype, op);
        },
        [count, datatype, op](tutti::Communicator& c, const void* send, void* recv, void* s) {
          return c.allReduceDevice(send, recv, count, datatype, op, s);
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
    const size_t bytes = tutti::api::bufferBytes("count", count, datatype);
    const tutti::api::CallBuffers bufs{sendbuff, c.rank() == root ? bytes : 0, recvbuff, bytes};
    tutti::api::checkAliasing(bufs, 0);
    return issue(comm, "tuttiBroadcast", {count, datatype, tuttiNumOps, root}, bufs, stream,
                 [count, datatype, root](tutti::Communicator& c, const void* send, void* recv) {
                   c.broadcast(send, recv, count, datatype, root);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    tuttiDataType_t datatype, tuttiRedOp_t op, int root,
                                    tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiReduce", [&] {
    checkCommon(comm, sendbuff, nullptr, count, 0, datatype);
    checkOp(op, datatype);
    auto& c = ready(comm);
    checkRoot(c, root);
    TUTTI_CHECK_ARG(c.rank() != root || count == 0 || recvbuff != nullptr,
                    "recvbuff is NULL on the root");
    const size_t bytes = tutti::api::bufferBytes("count", count, datatype);
    const tutti::api::CallBuffers bufs{sendbuff, bytes, recvbuff, c.rank() == root ? bytes : 0};
    tutti::api::checkAliasing(bufs, 0);
    return issue(comm, "tuttiReduce", {count, datatype, op, root}, bufs, stream,
                 [count, datatype, op, root](tutti::Communicator& c, const void* send, void* recv) {
                   c.reduce(send, recv, count, datatype, op, root);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       tuttiDataType_t datatype, tuttiComm_t comm,
                                       tuttiStream_t stream) {
  return guarded(comm, "tuttiAllGather", [&] {
    checkCommon(comm, sendbuff, recvbuff, sendcount, sendcount, datatype);
    auto& c = ready(comm);
    const size_t bytes = sendcount * tutti::dtypeSize(datatype);
    const size_t all = tutti::api::bufferBytes("sendcount", sendcount, datatype, c.size());
    const tutti::api::CallBuffers bufs{sendbuff, bytes, recvbuff, all};
    tutti::api::checkAliasing(bufs, static_cast<std::ptrdiff_t>(bytes) * c.rank());
    return issue(comm, "tuttiAllGather", {sendcount, datatype}, bufs, stream,
                 [sendcount, datatype](tutti::Communicator& c, const void* send, void* recv) {
                   c.allGather(send, recv, sendcount, datatype);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           tuttiDataType_t datatype, tuttiRedOp_t op,
                                           tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiReduceScatter", [&] {
    checkCommon(comm, sendbuff, recvbuff, recvcount, recvcount, datatype);
    checkOp(op, datatype);
    auto& c = ready(comm);
    const size_t bytes = recvcount * tutti::dtypeSize(datatype);
    const size_t all = tutti::api::bufferBytes("recvcount", recvcount, datatype, c.size());
    const tutti::api::CallBuffers bufs{sendbuff, all, recvbuff, bytes};
    tutti::api::checkAliasing(bufs, -static_cast<std::ptrdiff_t>(bytes) * c.rank());
    return issue(comm, "tuttiReduceScatter", {recvcount, datatype, op}, bufs, stream,
                 [recvcount, datatype, op](tutti::Communicator& c, const void* send, void* recv) {
                   c.reduceScatter(send, recv, recvcount, datatype, op);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                      tuttiDataType_t datatype, tuttiComm_t comm,
                                      tuttiStream_t stream) {
  return guarded(comm, "tuttiAllToAll", [&] {
    checkCommon(comm, sendbuff, recvbuff, count, count, datatype);
    auto& c = ready(comm);
    const size_t bytes = tutti::api::bufferBytes("count", count, datatype, c.size());
    const tutti::api::CallBuffers bufs{sendbuff, bytes, recvbuff, bytes};
    tutti::api::checkAliasing(bufs, 0);
    return issue(comm, "tuttiAllToAll", {count, datatype}, bufs, stream,
                 [count, datatype](tutti::Communicator& c, const void* send, void* recv) {
                   c.allToAll(send, recv, count, datatype);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiGather(const void* sendbuff, void* recvbuff, size_t count,
                                    tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                    tuttiStream_t stream) {
  return guarded(comm, "tuttiGather", [&] {
    checkCommon(comm, sendbuff, nullptr, count, 0, datatype);
    auto& c = ready(comm);
    checkRoot(c, root);
    const bool isRoot = c.rank() == root;
    TUTTI_CHECK_ARG(!isRoot || count == 0 || recvbuff != nullptr,
                    "recvbuff is NULL on the root with count ", count);
    const size_t all = tutti::api::bufferBytes("count", count, datatype, c.size());
    const size_t bytes = all / c.size();  // one rank's block
    if (count == 0) return tuttiSuccess;
    // Non-root ranks' recvbuff is ignored (it may be NULL or anything).
    if (!isRoot) recvbuff = nullptr;
    const tutti::api::CallBuffers bufs{sendbuff, bytes, recvbuff, isRoot ? all : 0};
    tutti::api::checkAliasing(bufs, static_cast<std::ptrdiff_t>(bytes) * root);
    return issue(comm, "tuttiGather", {count, datatype, tuttiNumOps, root}, bufs, stream,
                 [count, datatype, root](tutti::Communicator& c, const void* send, void* recv) {
                   c.gather(send, recv, count, datatype, root);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiScatter(const void* sendbuff, void* recvbuff, size_t count,
                                     tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                     tuttiStream_t stream) {
  return guarded(comm, "tuttiScatter", [&] {
    checkCommon(comm, nullptr, recvbuff, 0, count, datatype);
    auto& c = ready(comm);
    checkRoot(c, root);
    const bool isRoot = c.rank() == root;
    TUTTI_CHECK_ARG(!isRoot || count == 0 || sendbuff != nullptr,
                    "sendbuff is NULL on the root with count ", count);
    const size_t all = tutti::api::bufferBytes("count", count, datatype, c.size());
    const size_t bytes = all / c.size();  // one rank's block
    if (count == 0) return tuttiSuccess;
    if (!isRoot) sendbuff = nullptr;  // ignored on non-roots
    const tutti::api::CallBuffers bufs{sendbuff, isRoot ? all : 0, recvbuff, bytes};
    tutti::api::checkAliasing(bufs, -static_cast<std::ptrdiff_t>(bytes) * root);
    return issue(comm, "tuttiScatter", {count, datatype, tuttiNumOps, root}, bufs, stream,
                 [count, datatype, root](tutti::Communicator& c, const void* send, void* recv) {
                   c.scatter(send, recv, count, datatype, root);
                 });
  });
}

TUTTI_API tuttiResult_t tuttiBarrier(tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiBarrier", [&] {
    ready(comm);  // initialised, not failed
    tutti::api::CallInfo info;
    info.hasData = false;
    return issue(comm, "tuttiBarrier", info, {}, stream,
                 [](tutti::Communicator& c, const void*, void*) { c.barrier(); });
  });
}

TUTTI_API const char* tuttiCommLastAlgorithm(tuttiComm_t comm) {
  if (comm == nullptr || comm->impl == nullptr) return "none";
  return comm->lanes.at(*comm->impl, comm->lastLane.load(std::memory_order_relaxed))
      .lastAlgorithm();
}

TUTTI_API const char* tuttiAlgorithms(const char* collective) {
  if (collective == nullptr) return nullptr;
  // Built once: the registry is fixed at compile time.
  static const std::map<std::string, std::string> lists = [] {
    std::map<std::string, std::string> m;
    auto add = [&m](const tutti::algo::AlgorithmInfo& info) {
      std::string& list = m[tutti::algo::collName(info.coll)];
      list += (list.empty() ? "" : ",") + std::string(info.name);
    };
    for (const tutti::algo::AlgorithmInfo& info : tutti::algo::registry()) add(info);
    // The neighbour all-reduce's builders live outside registry() (they need a graph).
    for (const tutti::algo::AlgorithmInfo& info : tutti::algo::neighborAlgorithms()) add(info);
    return m;
  }();
  auto it = lists.find(collective);
  return it == lists.end() ? nullptr : it->second.c_str();
}

TUTTI_API tuttiResult_t tuttiCommSetAlgorithm(tuttiComm_t comm, const char* spec) {
  return guarded(comm, "tuttiCommSetAlgorithm", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    if (tutti::api::groupDepth() > 0)
      tutti::fail(tuttiInvalidUsage,
                  "not allowed inside tuttiGroupStart/End: the grouped calls run at "
                  "tuttiGroupEnd; set the algorithm before the group");
    auto& c = ready(comm);
    tutti::api::BlockingTurn turn(comm);  // the calls issued before keep their algorithms
    c.setAlgorithm(spec ? spec : "");
    comm->lanes.setAlgorithm(spec ? spec : "");
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommSetTimeout(tuttiComm_t comm, int timeoutMs) {
  return guarded(comm, "tuttiCommSetTimeout", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(timeoutMs > 0, "timeoutMs must be > 0 (got ", timeoutMs, ")");
    if (tutti::api::groupDepth() > 0)
      tutti::fail(tuttiInvalidUsage,
                  "not allowed inside tuttiGroupStart/End: set the timeout before the group");
    auto& c = ready(comm);
    tutti::api::BlockingTurn turn(comm);  // the calls issued before keep their timeout
    c.setTimeout(timeoutMs / 1000.0);
    comm->lanes.setTimeout(timeoutMs / 1000.0);
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommGetTimeout(tuttiComm_t comm, int* timeoutMs) {
  return guarded(comm, "tuttiCommGetTimeout", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(timeoutMs != nullptr, "timeoutMs is NULL");
    const double ms = ready(comm).timeoutSeconds() * 1000.0;
    *timeoutMs = ms >= 2147483647.0 ? 2147483647 : static_cast<int>(ms + 0.5);
    return tuttiSuccess;
  });
}

TUTTI_API const char* tuttiCommTransports(tuttiComm_t comm) {
  if (comm == nullptr || comm->impl == nullptr) return "none";
  comm->transportsText = comm->impl->transportsInUse();
  return comm->transportsText.c_str();
}

TUTTI_API tuttiResult_t tuttiCommDumpTrace(tuttiComm_t comm, const char* path) {
  return guarded(comm, "tuttiCommDumpTrace", [&] {
    std::string text = tutti::api::initialised(comm).traceText();
    FILE* f = path ? std::fopen(path, "a") : stderr;
    if (f == nullptr) tutti::throwSystemError(std::string("cannot open ") + path);
    size_t n = std::fwrite(text.data(), 1, text.size(), f);
    bool ok = n == text.size();
    if (path) ok = std::fclose(f) == 0 && ok;
    if (!ok) tutti::throwSystemError(std::string("cannot write ") + (path ? path : "stderr"));
    return tuttiSuccess;
  });
}

}  // extern "C"
