// The compressed all-reduce of one communicator (tuttiAllReduceCompressed,
// docs/compression.md): encode (with error feedback), all-gather the payloads, decode every
// rank's payload in rank order into a float32 accumulator. One object per communicator keeps
// what lives across calls: the error-feedback residuals and QSGD steps per key, the parsed
// codec, the buffers, the statistics, and a helper thread -- started by the first pipelined
// call, joined at destruction -- that runs the all-gathers of large payloads while the
// calling thread encodes and decodes. The all-gather itself is the caller's (the
// communicator's), so this layer knows no transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compress/codec.h"
#include "compress/error_feedback.h"
#include "tutti/tutti.h"

namespace tutti::compress {

class HelperThread;

class CompressedAllReduce {
 public:
  // The communicator's all-gather of `count` elements per rank; called from the caller's
  // thread or the helper thread, never both at once.
  using AllGather =
      std::function<void(const void* send, void* recv, size_t count, tuttiDataType_t dtype)>;

  CompressedAllReduce(int rank, int nranks, AllGather allGather);
  ~CompressedAllReduce();  // joins the helper thread
  CompressedAllReduce(const CompressedAllReduce&) = delete;
  CompressedAllReduce& operator=(const CompressedAllReduce&) = delete;

  // One call: dtype float32, float16 or bfloat16; spec a compressor ("none", "topk:...",
  // "qsgd:..."; tuttiInvalidArgument when malformed); key the error-feedback and QSGD-step
  // key. Calls are serialised.
  void run(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
           const std::string& spec, uint64_t key, bool errorFeedback);
  tuttiCompressionStats_t stats();
  void resetKey(uint64_t key);

 private:
  const Codec& codecFor(const std::string& spec);
  // Large payloads of a chunkable codec without error feedback: chunk by chunk, the
  // all-gathers on the helper thread. Returns the payload bytes.
  size_t runPipelined(const Codec& codec, std::span<const float> in, std::span<float> out,
                      StepInfo step);
  void finishCall(uint64_t key, size_t wireBytes, size_t count);

  const int rank_;
  const int nranks_;
  const AllGather allGather_;
  std::mutex mutex_;  // calls are serialised
  ErrorFeedback ef_;
  std::unordered_map<uint64_t, uint64_t> steps_;  // key -> calls so far (QSGD RNG step)
  std::string lastSpec_;
  std::unique_ptr<Codec> codec_;  // parsed lastSpec_
  std::vector<std::byte> mine_, all_;
  std::vector<float> acc_, conv_;
  tuttiCompressionStats_t stats_{};
  std::unique_ptr<HelperThread> helper_;  // made by the first pipelined call
};

}  // namespace tutti::compress
