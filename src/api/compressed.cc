// tuttiAllReduceCompressed: encode (with error feedback), all-gather the payloads, decode
// every rank's payload in rank order into a float32 accumulator (docs/compression.md).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api_guard.h"
#include "comm_handle.h"
#include "common/dtype.h"
#include "common/env.h"
#include "common/log.h"
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
  std::vector<float> acc, conv;
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

void finishCall(CompressState& st, uint64_t key, size_t wireBytes, size_t count) {
  ++st.steps[key];
  st.stats.wireBytesLastCall = wireBytes;
  st.stats.denseBytesLastCall = 4 * count;
  st.stats.wireBytesTotal += wireBytes;
  st.stats.calls += 1;
  st.stats.errorFeedbackKeys = st.ef.keys();
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

// Large payloads of a chunkable codec (QSGD, none) without error feedback: encode, all-gather
// and decode chunk by chunk, the all-gathers on a helper thread, so that they overlap the
// encoding of later chunks and the decoding of earlier ones. The chunks' payloads are the
// whole payload's bytes (regrouped per chunk) and the result is the same, bit for bit.
constexpr size_t kPipelineMinBytes = size_t{4} << 20;  // 4d at least this: pipelined
constexpr size_t kChunkBytes = size_t{1} << 20, kMaxChunks = 16;

template <typename Comm>
size_t runPipelined(Comm& c, CompressState& st, const tutti::compress::Codec& codec,
                    std::span<const float> in, std::span<float> out,
                    tutti::compress::StepInfo step) {
  const size_t nranks = static_cast<size_t>(c.size()), d = in.size(), align = codec.chunkAlign();
  const size_t chunks = std::clamp<size_t>(4 * d / kChunkBytes, 1, kMaxChunks);
  const size_t per = ((d + chunks - 1) / chunks + align - 1) / align * align;
  struct Chunk {
    size_t begin, n, cap, off;
  };
  std::vector<Chunk> plan;
  size_t total = 0;
  for (size_t b = 0; b < d; b += per) {
    const size_t n = std::min(per, d - b), cap = codec.maxEncodedBytes(n);
    plan.push_back({b, n, cap, total});
    total += cap;
  }
  st.mine.resize(total);
  st.all.resize(total * nranks);
  std::mutex m;
  std::condition_variable cv;
  size_t encoded = 0, gathered = 0;
  bool cancel = false;
  std::exception_ptr commError;
  std::thread comm([&] {
    try {
      for (size_t j = 0; j < plan.size(); ++j) {
        {
          std::unique_lock lock(m);
          cv.wait(lock, [&] { return encoded > j || cancel; });
          if (cancel) return;
        }
        c.allGather(st.mine.data() + plan[j].off, st.all.data() + nranks * plan[j].off, plan[j].cap,
                    tuttiUint8);
        std::lock_guard lock(m);
        gathered = j + 1;
        cv.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(m);
      commError = std::current_exception();
      cv.notify_all();
    }
  });
  try {
    for (size_t j = 0; j < plan.size(); ++j) {
      step.offset = plan[j].begin;
      codec.encode(in.subspan(plan[j].begin, plan[j].n),
                   std::span(st.mine).subspan(plan[j].off, plan[j].cap), step);
      std::lock_guard lock(m);
      encoded = j + 1;
      cv.notify_all();
    }
    std::vector<std::span<const std::byte>> wires(nranks);
    for (size_t j = 0; j < plan.size(); ++j) {
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return gathered > j || commError; });
        if (commError) break;
      }
      for (size_t r = 0; r < nranks; ++r)
        wires[r] = std::span(st.all).subspan(nranks * plan[j].off + r * plan[j].cap, plan[j].cap);
      codec.decodeSum(wires, out.subspan(plan[j].begin, plan[j].n));
    }
  } catch (...) {
    {
      std::lock_guard lock(m);
      cancel = true;
      cv.notify_all();
    }
    comm.join();
    throw;
  }
  comm.join();
  if (commError) std::rethrow_exception(commError);
  return total;
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
  const tutti::compress::StepInfo step{0, static_cast<uint32_t>(c.rank()), st.steps[key], key};
  if (!useEf && codec.fixedSize() && codec.chunkAlign() > 0 && 4 * count >= kPipelineMinBytes &&
      nranks > 1) {
    std::span<const float> in(static_cast<const float*>(send), count);
    if (dtype != tuttiFloat32) {  // widen once; the result goes through st.acc
      st.conv.resize(count);
      const auto* h = static_cast<const uint16_t*>(send);
      for (size_t i = 0; i < count; ++i)
        st.conv[i] = dtype == tuttiFloat16 ? tutti::halfToFloat(h[i]) : tutti::bf16ToFloat(h[i]);
      in = st.conv;
      st.acc.resize(count);
    }
    std::span<float> out =
        dtype == tuttiFloat32 ? std::span(static_cast<float*>(recv), count) : std::span(st.acc);
    const auto t0 = std::chrono::steady_clock::now();
    const size_t n = runPipelined(c, st, codec, in, out, step);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    TUTTI_INFO(kCompress, "tuttiAllReduceCompressed " << codec.describe() << " d=" << count
                                                      << ": pipelined " << ms << " ms, " << n
                                                      << " B");
    if (dtype != tuttiFloat32) writeResult(st.acc, recv, dtype);
    finishCall(st, key, n, count);
    return;
  }
  const size_t cap = codec.maxEncodedBytes(count);
  st.mine.resize(cap);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const size_t n = st.ef.encode(key, send, count, dtype, codec, st.mine, step, useEf);
  const auto t1 = Clock::now();

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
  std::fill(st.mine.begin() + static_cast<std::ptrdiff_t>(n),
            st.mine.begin() + static_cast<std::ptrdiff_t>(slot), std::byte{0});  // padding
  st.all.resize(slot * nranks);
  c.allGather(st.mine.data(), st.all.data(), slot, tuttiUint8);

  const auto t2 = Clock::now();
  // Sum in rank order (decodeSum: bitwise the zero-fill + decodeAccumulate loop); float32
  // results go straight into recv (send is no longer read: in place is fine).
  std::vector<std::span<const std::byte>> wires(nranks);
  for (size_t r = 0; r < nranks; ++r) wires[r] = std::span(st.all).subspan(r * slot, lens[r]);
  if (dtype == tuttiFloat32) {
    codec.decodeSum(wires, std::span(static_cast<float*>(recv), count));
  } else {
    st.acc.resize(count);
    codec.decodeSum(wires, st.acc);
    writeResult(st.acc, recv, dtype);
  }

  const auto t3 = Clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  TUTTI_INFO(kCompress, "tuttiAllReduceCompressed "
                            << codec.describe() << " d=" << count << (useEf ? " ef" : "")
                            << ": encode " << ms(t0, t1) << " ms, all-gather " << ms(t1, t2)
                            << " ms, decode " << ms(t2, t3) << " ms, " << n << " B");
  finishCall(st, key, n, count);
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
    tutti::api::bufferBytes("count", count, datatype);
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
      const size_t bytes = count * tutti::dtypeSize(datatype);
      perf = tutti::api::logCollective(comm, "tuttiAllReduceCompressed", info,
                                       {sendbuff, bytes, recvbuff, bytes}, stream, false, false,
                                       opCount);
    }
    const auto t0 = std::chrono::steady_clock::now();
    run(comm, sendbuff, recvbuff, count, datatype, compressor, key, useErrorFeedback != 0);
    if (perf != nullptr)
      perf->add("AllReduceCompressed", count * tutti::dtypeSize(datatype),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), true);
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
