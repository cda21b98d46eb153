// Error feedback residual store.
#include "compress/error_feedback.h"

#include <algorithm>

#include "common/dtype.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::compress {
namespace {

std::string keyName(const EfKey& key) {
  if (const auto* u = std::get_if<uint64_t>(&key)) return "#" + std::to_string(*u);
  return "'" + std::get<std::string>(key) + "'";
}

}  // namespace

size_t ErrorFeedback::encode(const EfKey& key, std::span<const float> g, const Codec& codec,
                             std::span<std::byte> out, const StepInfo& step, bool useEf) {
  const size_t d = g.size();
  TUTTI_CHECK_ARG(out.size() >= codec.maxEncodedBytes(d), "error feedback ", keyName(key),
                  ": output of ", out.size(), " bytes, need ", codec.maxEncodedBytes(d));
  if (!useEf) return codec.encode(g, out, step);

  std::vector<float>& e = states_[key];
  if (e.size() != d) {
    if (!e.empty()) {
      ++resets_;
      TUTTI_WARN(kCompress, "error feedback key " << keyName(key) << ": size changed from "
                                                  << e.size() << " to " << d
                                                  << " elements; residual reset to zero");
    }
    e.assign(d, 0.0f);
  }
  // In place: e <- p = g + e, send C(p), e <- p - D(C(p)).
  for (size_t i = 0; i < d; ++i) e[i] = g[i] + e[i];
  const size_t bytes = codec.encode(e, out, step);
  codec.decodeSubtract(out.first(bytes), e);
  return bytes;
}

size_t ErrorFeedback::encode(const EfKey& key, const void* g, size_t count, tuttiDataType_t dtype,
                             const Codec& codec, std::span<std::byte> out, const StepInfo& step,
                             bool useEf) {
  TUTTI_CHECK_ARG(count == 0 || g != nullptr, "error feedback: null input with count ", count);
  switch (dtype) {
    case tuttiFloat32:
      return encode(key, std::span<const float>(static_cast<const float*>(g), count), codec, out,
                    step, useEf);
    case tuttiFloat16:
    case tuttiBfloat16: {
      const uint16_t* h = static_cast<const uint16_t*>(g);
      input_.resize(count);
      if (dtype == tuttiFloat16) {
        for (size_t i = 0; i < count; ++i) input_[i] = halfToFloat(h[i]);
      } else {
        for (size_t i = 0; i < count; ++i) input_[i] = bf16ToFloat(h[i]);
      }
      // input_ may be reused by a nested call only through this path: copy the span first.
      std::vector<float> in;
      in.swap(input_);
      const size_t bytes = encode(key, std::span<const float>(in), codec, out, step, useEf);
      input_.swap(in);
      return bytes;
    }
    default:
      fail(tuttiInvalidArgument, "error feedback: datatype ", dtypeName(dtype),
           " not supported (float32, float16, bfloat16)");
  }
}

std::span<const float> ErrorFeedback::residual(const EfKey& key) const {
  auto it = states_.find(key);
  if (it == states_.end()) return {};
  return it->second;
}

void ErrorFeedback::reset(const EfKey& key) { states_.erase(key); }

void ErrorFeedback::clear() { states_.clear(); }

}  // namespace tutti::compress
