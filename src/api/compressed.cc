// tuttiAllReduceCompressed, tuttiCompressionStats, tuttiCompressionResetKey: the C API's checks
// and logging around the communicator's CompressedAllReduce (compress/compressed_allreduce.h).
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "api_guard.h"
#include "arg_checks.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "common/env.h"
#include "common/log.h"
#include "compress/compressed_allreduce.h"
#include "group.h"
#include "memory_space.h"
#include "ordered_call.h"

using tutti::api::guarded;
using tutti::api::ready;

namespace {

// The communicator's compressed all-reduce, made at its first use.
tutti::compress::CompressedAllReduce& compressedOf(tuttiComm_t comm) {
  auto& c = ready(comm);
  std::lock_guard lock(comm->errorMutex);
  if (!comm->compressed)
    comm->compressed = std::make_unique<tutti::compress::CompressedAllReduce>(
        c.rank(), c.size(), [&c](const void* send, void* recv, size_t count, tuttiDataType_t t) {
          c.allGather(send, recv, count, t);
        });
  return *comm->compressed;
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count,
                                                 tuttiDataType_t datatype, const char* compressor,
                                                 uint64_t key, int useErrorFeedback,
                                                 tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiAllReduceCompressed", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    tutti::api::checkDatatype(datatype);
    int dt = tutti::api::rawEnum(datatype);
    if (dt != tuttiFloat32 && dt != tuttiFloat16 && dt != tuttiBfloat16)
      tutti::fail(tuttiUnsupported, "datatype ", tutti::dtypeName(datatype),
                  " is not supported (float32, float16 and bfloat16 only)");
    TUTTI_CHECK_ARG(count == 0 || (sendbuff != nullptr && recvbuff != nullptr),
                    "sendbuff or recvbuff is NULL with a non-zero count");
    const size_t bytes = tutti::api::bufferBytes("count", count, datatype);
    // Host memory only: a device pointer (or any pointer the host cannot read) is refused
    // before anything moves, naming the buffer.
    if (tutti::api::buffersOnDevice("tuttiAllReduceCompressed", {sendbuff, bytes, recvbuff, bytes}))
      tutti::fail(tuttiInvalidArgument,
                  "device buffers are not supported (the compressed all-reduce runs on the host; "
                  "copy the tensor to host memory first)");
    if (tutti::api::groupDepth() > 0)
      tutti::fail(tuttiInvalidUsage,
                  "not allowed inside tuttiGroupStart/End (the compressed all-reduce runs alone)");
    ready(comm);
    const uint64_t opCount = comm->opCount++;
    tutti::api::PerfStats* perf = nullptr;
    if (tutti::log::enabledAny(tutti::log::Level::kInfo, tutti::api::kCollOrPerf)) [[unlikely]] {
      const std::string extra =
          std::string(" compressor ") + (compressor != nullptr ? compressor : "(TUTTI_COMPRESS)") +
          " key " + std::to_string(key) + (useErrorFeedback != 0 ? " errorFeedback" : "");
      tutti::api::CallInfo info;
      info.count = count;
      info.dtype = datatype;
      info.op = tuttiSum;
      info.extra = extra.c_str();
      perf = tutti::api::logCollective(comm, "tuttiAllReduceCompressed", info,
                                       {sendbuff, bytes, recvbuff, bytes}, stream, false, false,
                                       opCount);
    }
    std::string spec = compressor != nullptr ? compressor : "";
    if (spec.empty()) spec = tutti::env::getString("TUTTI_COMPRESS");
    if (spec.empty()) spec = "none";
    // Now, or on a host stream in the communicator's call order (ordered_call.h).
    tutti::api::runInOrder(
        comm, "tuttiAllReduceCompressed", tutti::api::hostStreamOf(stream),
        [=, spec = std::move(spec)] {
          const auto t0 = std::chrono::steady_clock::now();
          compressedOf(comm).run(sendbuff, recvbuff, count, datatype, spec, key,
                                 useErrorFeedback != 0);
          if (perf != nullptr)
            perf->add("AllReduceCompressed", count * tutti::dtypeSize(datatype),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                      true);
        });
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCompressionStats(tuttiComm_t comm, tuttiCompressionStats_t* stats) {
  return guarded(comm, "tuttiCompressionStats", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(stats != nullptr, "stats is NULL");
    tutti::api::BlockingTurn turn(comm);  // after the calls issued before on host streams
    *stats = compressedOf(comm).stats();
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCompressionResetKey(tuttiComm_t comm, uint64_t key) {
  return guarded(comm, "tuttiCompressionResetKey", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    tutti::api::BlockingTurn turn(comm);  // after the calls issued before on host streams
    compressedOf(comm).resetKey(key);
    return tuttiSuccess;
  });
}

}  // extern "C"
