// Counts and latency histograms of a communicator's calls (call_stats.h).
#include "comm/call_stats.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "common/cycle_clock.h"

namespace tutti {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;

// "512 B" / "4 KiB" / "2 MiB" for a power of two.
std::string bytesText(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return std::to_string(b) + " " + units[u];
}

// "850 ns" / "12.5 us" / "3.2 ms" / "1.5 s".
std::string timeText(double ns) {
  char out[32];
  if (ns < 1e3)
    std::snprintf(out, sizeof out, "%.0f ns", ns);
  else if (ns < 1e6)
    std::snprintf(out, sizeof out, "%.3g us", ns / 1e3);
  else if (ns < 1e9)
    std::snprintf(out, sizeof out, "%.3g ms", ns / 1e6);
  else
    std::snprintf(out, sizeof out, "%.3g s", ns / 1e9);
  return out;
}
}  // namespace

CallStats::Entry* CallStats::find(uint64_t key, const char* algorithm) {
  size_t i = (key * 0x9e3779b97f4a7c15ull + reinterpret_cast<uintptr_t>(algorithm)) % kEntries;
  for (size_t probes = 0; probes < kEntries; ++probes, i = (i + 1) % kEntries) {
    Entry& e = entries_[i];
    const uint64_t k = e.key.load(kRelaxed);
    if (k == key && e.algorithm.load(kRelaxed) == algorithm) return &e;
    if (k == 0) {
      e.algorithm.store(algorithm, kRelaxed);
      e.key.store(key, std::memory_order_release);  // readers see the algorithm with the key
      return &e;
    }
  }
  return nullptr;
}

void CallStats::addSlow(const CallTag& tag, const char* algorithm, uint64_t ticks) {
  Entry* e = lastEntry_;
  if (tag[1] != lastTag1_ || callCount(tag) != lastCount_ || algorithm != lastAlgorithm_ ||
      e == nullptr) {
    const uint64_t bytes = callBytes(tag);
    const uint64_t sizeBucket = bytes == 0 ? 0 : std::bit_width(bytes);  // [2^(b-1), 2^b)
    const uint64_t key = (tag[1] & 0xff) | sizeBucket << 8 | uint64_t{1} << 16;
    e = find(key, algorithm);
    if (e == nullptr) {
      dropped_.store(dropped_.load(kRelaxed) + 1, kRelaxed);
      lastEntry_ = nullptr;
      return;
    }
    lastTag1_ = tag[1];
    lastCount_ = callCount(tag);
    lastAlgorithm_ = algorithm;
    lastEntry_ = e;
  }
  e->calls.store(e->calls.load(kRelaxed) + 1, kRelaxed);  // one writer: no read-modify-write
  if (ticks == 0) return;
  const int b = std::min<int>(kLatencyBuckets - 1, std::max<int>(0, std::bit_width(ticks) - 1));
  e->tag1.store(tag[1], kRelaxed);
  e->totalTicks.store(e->totalTicks.load(kRelaxed) + ticks, kRelaxed);
  e->buckets[b].store(e->buckets[b].load(kRelaxed) + 1, kRelaxed);
}

std::vector<std::string> CallStats::lines() const {
  const double nsPerTick = CycleClock::secondsPerTick() * 1e9;
  struct Row {
    uint64_t calls;
    std::string text;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < kEntries; ++i) {
    const Entry& e = entries_[i];
    const uint64_t key = e.key.load(std::memory_order_acquire);
    const uint64_t calls = e.calls.load(kRelaxed);
    if (key == 0 || calls == 0) continue;
    uint32_t counts[kLatencyBuckets];
    uint64_t seen = 0;
    for (int b = 0; b < kLatencyBuckets; ++b) seen += counts[b] = e.buckets[b].load(kRelaxed);
    // The bound below which a share of the calls fell: the top of its bucket.
    auto below = [&](double share) {
      uint64_t sum = 0;
      for (int b = 0; b < kLatencyBuckets; ++b)
        if ((sum += counts[b]) >= share * static_cast<double>(seen) && counts[b] != 0)
          return timeText(static_cast<double>(uint64_t{1} << (b + 1)) * nsPerTick);
      return std::string("?");
    };
    const uint64_t sizeBucket = (key >> 8) & 0xff;
    const CallTag tag{0, e.tag1.load(kRelaxed)};
    std::string text = callKind(tag);
    if (sizeBucket != 0)
      text += " " + bytesText(uint64_t{1} << (sizeBucket - 1)) + "-" +
              bytesText(uint64_t{1} << sizeBucket);
    const char* algo = e.algorithm.load(kRelaxed);
    if (algo && *algo) text += std::string(" [") + algo + "]";
    text += ": " + std::to_string(calls) + " calls";
    if (seen > 0) {
      if (seen != calls) text += ", " + std::to_string(seen) + " timed";
      text += ": mean " +
              timeText(static_cast<double>(e.totalTicks.load(kRelaxed)) * nsPerTick /
                       static_cast<double>(seen)) +
              ", p50 < " + below(0.5) + ", p99 < " + below(0.99) + ", max < " + below(1.0);
    }
    rows.push_back({calls, text});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.calls > b.calls; });
  std::vector<std::string> out;
  for (Row& r : rows) out.push_back(std::move(r.text));
  if (dropped() > 0) out.push_back(std::to_string(dropped()) + " calls of further kinds not kept");
  return out;
}

}  // namespace tutti
