// Exact (nth_element on magnitude keys) and sampled-threshold top-k selection.
#include "compress/topk_select.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "compress/rng.h"
#include "compress/topk_kernels.h"

namespace tutti::compress {
namespace {

// Collects, in index order, every element with key > t plus the first `ties` with key == t.
void collect(std::span<const float> x, uint32_t t, size_t ties, std::vector<uint32_t>& out) {
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = magnitudeKey(x[i]);
    if (key > t) {
      out.push_back(static_cast<uint32_t>(i));
    } else if (key == t && ties > 0) {
      out.push_back(static_cast<uint32_t>(i));
      --ties;
    }
  }
}

// k-th largest key (1-based k) of keys (reordered in place).
uint32_t kthLargest(std::vector<uint32_t>& keys, size_t k) {
  auto nth = keys.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(keys.begin(), nth, keys.end(), std::greater<uint32_t>());
  return *nth;
}

// The k largest (ties: smaller index) among candidates given in index order; k <= size.
void topKOfCandidates(const std::vector<uint32_t>& idx, const std::vector<uint32_t>& keys, size_t k,
                      std::vector<uint32_t>& out) {
  thread_local std::vector<uint32_t> tmp;
  tmp.assign(keys.begin(), keys.end());
  const uint32_t t = kthLargest(tmp, k);
  size_t above = 0;
  for (size_t i = 0; i < k; ++i) above += tmp[i] > t;  // nth_element: tmp[0..k) >= t
  size_t ties = k - above;
  out.clear();
  out.reserve(k);
  for (size_t j = 0; j < idx.size(); ++j) {
    if (keys[j] > t) {
      out.push_back(idx[j]);
    } else if (keys[j] == t && ties > 0) {
      out.push_back(idx[j]);
      --ties;
    }
  }
}

// Large inputs: a sampled threshold t below the k-th largest key (w.h.p.), one scan for the
// candidates >= t, then the exact top k among them. Returns false (nothing decided) when the
// sample's threshold was not low enough; the caller then uses the histogram path.
bool sampledExact(std::span<const float> x, size_t k, std::vector<uint32_t>& out) {
  const size_t n = x.size(), m = 65536;
  thread_local std::vector<uint32_t> sample, cidx, ckeys;
  sample.resize(m);
  const uint64_t base = mix64(0x6a09e667f3bcc908ull);  // any sample gives the exact result
  for (size_t j = 0; j < m; ++j)
    sample[j] = magnitudeKey(x[((draw(base, j) >> 32) * static_cast<uint64_t>(n)) >> 32]);
  const double mean = static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(n);
  const size_t r = static_cast<size_t>(std::ceil(mean + 4 * std::sqrt(mean) + 16));
  if (r >= m) return false;
  const uint32_t t = kthLargest(sample, r);
  if (t == 0) return false;
  collectAtLeast(x.data(), n, t, cidx, ckeys);
  if (cidx.size() < k) return false;
  topKOfCandidates(cidx, ckeys, k, out);
  return true;
}

}  // namespace

void selectTopKExact(std::span<const float> x, size_t k, std::vector<uint32_t>& out) {
  out.clear();
  const size_t n = x.size();
  TUTTI_CHECK_ARG(n <= 0xffffffffull, "top-k: ", n, " elements exceed the 32-bit index space");
  k = std::min(k, n);
  if (k == 0) return;
  out.reserve(k);
  if (k == n) {
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint32_t>(i));
    return;
  }
  if (n >= (size_t{1} << 18) && k <= n / 16 && sampledExact(x, k, out)) return;
  // Radix select: a histogram of the top 16 key bits finds the bin holding the k-th largest
  // key; an nth_element among that bin's keys finds the key itself.
  thread_local std::vector<uint32_t> hist;
  hist.assign(1u << 16, 0);
  for (size_t i = 0; i < n; ++i) ++hist[magnitudeKey(x[i]) >> 16];
  size_t above = 0;  // elements in bins above `bin`
  uint32_t bin = 0xffff;
  for (;; --bin) {
    if (above + hist[bin] >= k) break;
    above += hist[bin];
  }
  thread_local std::vector<uint32_t> cand;
  cand.clear();
  cand.reserve(hist[bin]);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = magnitudeKey(x[i]);
    if ((key >> 16) == bin) cand.push_back(key);
  }
  const size_t r = k - above;  // rank of the threshold inside the bin
  const uint32_t t = kthLargest(cand, r);
  for (size_t i = 0; i < r; ++i) above += cand[i] > t;  // nth_element: cand[0..r) >= t
  collect(x, t, k - above, out);
}

void selectTopKApprox(std::span<const float> x, size_t k, uint64_t seed,
                      std::vector<uint32_t>& out) {
  const size_t n = x.size();
  k = std::min(k, n);
  // Sample so that the threshold sits at rank >= 512 of the sample.
  const double want = std::max(65536.0, std::ceil(512.0 * static_cast<double>(n) /
                                                  static_cast<double>(std::max<size_t>(k, 1))));
  if (k == 0 || want * 2 > static_cast<double>(n)) return selectTopKExact(x, k, out);
  const size_t m = static_cast<size_t>(want);
  const size_t lo = (8 * k + 9) / 10;  // ceil(0.8k)
  const size_t hi = (13 * k) / 10;     // floor(1.3k)

  thread_local std::vector<uint32_t> sample;
  sample.resize(m);
  const uint64_t base = mix64(seed ^ 0x7a3c5e1f00d5eedull);
  for (size_t j = 0; j < m; ++j) {
    const uint64_t pos = ((draw(base, j) >> 32) * static_cast<uint64_t>(n)) >> 32;
    sample[j] = magnitudeKey(x[pos]);
  }
  // Expected count at sample rank r is about r * n / m.
  size_t r = std::max<size_t>(
      1, static_cast<size_t>(std::llround(static_cast<double>(k) * static_cast<double>(m) /
                                          static_cast<double>(n))));
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint32_t t = kthLargest(sample, std::min(r, m));
    if (t == 0) break;  // at least half the sample is zero: exact path
    thread_local std::vector<uint32_t> cidx, ckeys;
    collectAtLeast(x.data(), n, t, cidx, ckeys);  // every key >= t, index order
    const size_t c = cidx.size();
    if (c >= lo && c <= hi) {
      out.assign(cidx.begin(), cidx.end());
      return;
    }
    if (c > hi) {  // too many: exact top-k among the candidates, still in index order
      topKOfCandidates(cidx, ckeys, k, out);
      return;
    }
    // Too few: move the sample rank up in proportion and retry once.
    r = std::min(m, r * k / std::max<size_t>(c, 1) + 1);
  }
  selectTopKExact(x, k, out);
}

}  // namespace tutti::compress
