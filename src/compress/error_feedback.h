// Error feedback (EF): per key, a float32 residual e that carries what compression dropped
// into the next step. One call: p = g + e; payload = C(p); e = p - decode(C(p)).
// Over steps, sum(decoded payloads) + e = sum(g) up to float32 rounding, so nothing is lost.
//
// Keys (uint64 or string; a uint64 key never equals a string key) never share state. When a
// key's vector size changes, its residual is reset to zero (logged at WARN, counted in
// resets()); with EF off for a call, the payload is C(g) and the residual is left untouched.
// Not thread-safe: use one ErrorFeedback per thread / communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "compress/codec.h"
#include "tutti/tutti.h"

namespace tutti::compress {

using EfKey = std::variant<uint64_t, std::string>;

class ErrorFeedback {
 public:
  // Compresses g (+ the key's residual when useEf) into out (at least
  // codec.maxEncodedBytes(g.size()) bytes); returns the payload size.
  size_t encode(const EfKey& key, std::span<const float> g, const Codec& codec,
                std::span<std::byte> out, const StepInfo& step, bool useEf = true);

  // Same for float16 / bfloat16 / float32 input (count elements); the residual stays float32.
  size_t encode(const EfKey& key, const void* g, size_t count, tuttiDataType_t dtype,
                const Codec& codec, std::span<std::byte> out, const StepInfo& step,
                bool useEf = true);

  // The key's residual (empty if the key has none yet).
  std::span<const float> residual(const EfKey& key) const;

  void reset(const EfKey& key);  // forget one key's residual
  void clear();                  // forget every key
  size_t keys() const { return states_.size(); }
  uint64_t resets() const { return resets_; }  // size-change resets so far

 private:
  std::unordered_map<EfKey, std::vector<float>> states_;
  std::vector<float> input_;  // converted half/bf16 input
  uint64_t resets_ = 0;
};

}  // namespace tutti::compress
