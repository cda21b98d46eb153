// Codec helpers and the codec factory (parses a textual spec).
#include "compress/codec.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"

namespace tutti::compress {

void Codec::decode(std::span<const std::byte> wire, std::span<float> out) const {
  std::fill(out.begin(), out.end(), 0.0f);
  decodeAccumulate(wire, out);
}

void Codec::decodeSubtract(std::span<const std::byte> wire, std::span<float> x) const {
  thread_local std::vector<float> q;
  q.resize(x.size());
  decode(wire, q);
  for (size_t i = 0; i < x.size(); ++i) x[i] -= q[i];
}

void Codec::decodeSum(std::span<const std::span<const std::byte>> wires,
                      std::span<float> out) const {
  std::fill(out.begin(), out.end(), 0.0f);
  for (const auto& w : wires) decodeAccumulate(w, out);
}

namespace {

[[noreturn]] void badSpec(std::string_view spec, std::string_view why) {
  fail(tuttiInvalidArgument, "compression spec '", std::string(spec), "': ", std::string(why),
       " (expected none, topk:k=N | topk:ratio=R[,approx], qsgd:s=S[,b=B][,norm=l2|max][,gamma])");
}

template <typename T>
T parseNumber(std::string_view spec, std::string_view text) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) {
    badSpec(spec, "'" + std::string(text) + "' is not a number");
  }
  return v;
}

double parseDouble(std::string_view spec, std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) badSpec(spec, "'" + s + "' is not a number");
  return v;
}

}  // namespace

std::unique_ptr<Codec> makeCodec(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  std::string_view rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  TopKOptions topk;
  QsgdOptions qsgd;
  bool first = true;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string_view k = item.substr(0, eq);
    const std::string_view v = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (name == "topk") {
      if (k == "k") {
        topk.k = parseNumber<size_t>(spec, v);
      } else if (k == "ratio") {
        topk.ratio = parseDouble(spec, v);
      } else if (k == "approx" && eq == std::string_view::npos) {
        topk.approximate = true;
      } else if (first && eq == std::string_view::npos) {
        topk.ratio = parseDouble(spec, k);
      } else {
        badSpec(spec, "unknown topk parameter '" + std::string(item) + "'");
      }
    } else if (name == "qsgd") {
      if (k == "s") {
        qsgd.s = parseNumber<uint32_t>(spec, v);
      } else if (k == "b") {
        qsgd.bucket = parseNumber<size_t>(spec, v);
      } else if (k == "norm" && (v == "l2" || v == "max")) {
        qsgd.norm = v == "l2" ? Norm::kL2 : Norm::kMax;
      } else if (k == "gamma" && eq == std::string_view::npos) {
        qsgd.eliasGamma = true;
      } else if (first && eq == std::string_view::npos) {
        qsgd.s = parseNumber<uint32_t>(spec, k);
      } else {
        badSpec(spec, "unknown qsgd parameter '" + std::string(item) + "'");
      }
    } else {
      break;
    }
    first = false;
  }
  if (name == "none") {
    if (colon != std::string_view::npos) badSpec(spec, "none takes no parameters");
    return makeNone();
  }
  // The codecs' own range checks (ratio in (0, 1], s in 1..32767, ...) name the spec too.
  auto named = [&](auto make) -> std::unique_ptr<Codec> {
    try {
      return make();
    } catch (const Error& e) {
      if (e.code() != tuttiInvalidArgument) throw;
      badSpec(spec, e.what());
    }
  };
  if (name == "topk") {
    if (topk.k == 0 && topk.ratio == 0) badSpec(spec, "topk needs k=N or ratio=R");
    return named([&] { return makeTopK(topk); });
  }
  if (name == "qsgd") return named([&] { return makeQsgd(qsgd); });
  badSpec(spec, "unknown codec '" + std::string(name) + "'");
}

}  // namespace tutti::compress
