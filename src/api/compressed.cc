// tuttiAllReduceCompressed: encode (with error feedback), all-gather the payloads, decode
// every rank's payload in rank order into a float32 accumulator (docs/compression.md).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "api_guard.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "common/env.h"
#include "compress/codec.h"
#include "compress/error_feedback.h"
#include "group.h"

using tutti::api::guarded;
using tutti::api::ready;

namespace {

// Per-communicator state, owned by tuttiComm::compressState.
struct CompressState {
  std::mutex mutex;  // calls on one comm are serialised
  tutti::compress::ErrorFeedback ef;
  std::unordered_map<uint64_t, uint64_t> steps;  // key -> calls so far (QSGD RNG step)
  std::string lastSpec;
  std::unique_ptr<tutti::compress::Codec> codec;  // parsed lastSpec
  std::vector<std::byte> mine, all;
  std::vector<float> acc;
  tuttiCompressionStats_t stats{};
};

CompressState& stateOf(tuttiComm_t comm) {
  std::lock_guard lock(comm->errorMutex);
  if (!comm->compressState) comm->compressState = std::make_shared<CompressState>();
  return *static_cast<CompressState*>(comm->compressState.get());
}

int rawDtype(const tuttiDataType_t& t) {
  int v;
  std::memcpy(&v, &t, sizeof(v));
  return v;
}

void writeResult(std::span<const float> acc, void* recv, tuttiDataType_t dtype) {
  if (dtype == tuttiFloat32) {
    std::memcpy(recv, acc.data(), acc.size_bytes());
    return;
  }
  auto* out = static_cast<uint16_t*>(recv);
  for (size_t i = 0; i < acc.size(); ++i)
    out[i] = dtype == tuttiFloat16 ? tutti::floatToHalf(acc[i]) : tutti::floatToBf16(acc[i]);
}

void run(tuttiComm_t comm, const void* send, void* recv, size_t count, tuttiDataType_t dtype,
         const char* compressor, uint64_t key, bool useEf) {
  auto& c = ready(comm);
  CompressState& st = stateOf(comm);
  std::lock_guard lock(st.mutex);
  std::string spec = compressor != nullptr ? compressor : "";
  if (spec.empty()) spec = tutti::env::getString("TUTTI_COMPRESS");
  if (spec.empty()) spec = "none";
  if (!st.codec || spec != st.lastSpec) {
    try {
      st.codec = tutti::compress::makeCodec(spec);
    } catch (const tutti::Error& e) {
      st.codec.reset();
      tutti::fail(tuttiInvalidArgument, "invalid compressor \"", spec,
                  "\" (expected none, topk:ratio=R, topk:k=K or qsgd:s=S[,b=B]): ", e.what());
    }
    st.lastSpec = spec;
  }
  const auto& codec = *st.codec;
  const size_t nranks = static_cast<size_t>(c.size());
  const size_t cap = codec.maxEncodedBytes(count);
  st.mine.assign(cap, std::byte{0});
  const tutti::compress::StepInfo step{0, static_cast<uint32_t>(c.rank()), st.steps[key], key};
  const size_t n = st.ef.encode(key, send, count, dtype, codec, st.mine, step, useEf);

  // Payload lengths: known in advance for fixed-size codecs, else all-gathered first.
  std::vector<uint64_t> lens(nranks, cap);
  size_t slot = cap;
  if (!codec.fixedSize()) {
    uint64_t my = n;
    c.allGather(&my, lens.data(), 1, tuttiUint64);
    slot = *std::max_element(lens.begin(), lens.end());
    for (size_t r = 0; r < nranks; ++r)
      TUTTI_CHECK_ARG(lens[r] <= cap, "rank ", r, " sent ", lens[r], " payload bytes, more than ",
                      cap, " (mismatched count or compressor?)");
  }
  st.all.resize(slot * nranks);
  c.allGather(st.mine.data(), st.all.data(), slot, tuttiUint8);

  st.acc.assign(count, 0.0f);
  for (size_t r = 0; r < nranks; ++r)
    codec.decodeAccumulate(std::span(st.all).subspan(r * slot, lens[r]), st.acc);
  writeResult(st.acc, recv, dtype);

  ++st.steps[key];
  st.stats.wireBytesLastCall = n;
  st.stats.denseBytesLastCall = 4 * count;
  st.stats.wireBytesTotal += n;
  st.stats.calls += 1;
  st.stats.errorFeedbackKeys = st.ef.keys();
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count,
                                                 tuttiDataType_t datatype, const char* compressor,
                                                 uint64_t key, int useErrorFeedback,
                                                 tuttiComm_t comm, tuttiStream_t stream) {
  return guarded(comm, "tuttiAllReduceCompressed", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    int dt = rawDtype(datatype);
    TUTTI_CHECK_ARG(tutti::dtypeValid(dt), "invalid datatype ", dt);
    if (dt != tuttiFloat32 && dt != tuttiFloat16 && dt != tuttiBfloat16)
      tutti::fail(tuttiUnsupported, "datatype ", tutti::dtypeName(datatype),
                  " is not supported (float32, float16 and bfloat16 only)");
    TUTTI_CHECK_ARG(count == 0 || (sendbuff != nullptr && recvbuff != nullptr),
                    "sendbuff or recvbuff is NULL with a non-zero count");
    TUTTI_CHECK_ARG(count <= SIZE_MAX / 16, "count too large");
    if (tutti::api::groupDepth() > 0)
      tutti::fail(tuttiInvalidUsage,
                  "tuttiAllReduceCompressed is not allowed inside tuttiGroupStart/End");
    run(comm, sendbuff, recvbuff, count, datatype, compressor, key, useErrorFeedback != 0);
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCompressionStats(tuttiComm_t comm, tuttiCompressionStats_t* stats) {
  return guarded(comm, "tuttiCompressionStats", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(stats != nullptr, "stats is NULL");
    CompressState& st = stateOf(comm);
    std::lock_guard lock(st.mutex);
    *stats = st.stats;
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCompressionResetKey(tuttiComm_t comm, uint64_t key) {
  return guarded(comm, "tuttiCompressionResetKey", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    CompressState& st = stateOf(comm);
    std::lock_guard lock(st.mutex);
    st.ef.reset(key);
    st.steps.erase(key);
    st.stats.errorFeedbackKeys = st.ef.keys();
    return tuttiSuccess;
  });
}

}  // extern "C"
