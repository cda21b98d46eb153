#include "comm/ring_order.h"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>

#include "common/error.h"

namespace tutti {
namespace {

// Where the ring enters and leaves a host: the rotation of the host's ranks whose two ends
// are nearest the NIC (the farther end first, then both), cutting between two devices rather
// than inside one (a cut inside a device makes the path cross between devices once more),
// then the rotation that keeps rank order.
size_t bestCut(const std::vector<int>& ranks, const std::vector<RankPlace>& places) {
  const size_t k = ranks.size();
  auto cls = [&](int r) { return places[r].nicClass < 0 ? 99 : places[r].nicClass; };
  size_t best = 0;
  std::tuple<int, int, int> bestKey{INT_MAX, INT_MAX, INT_MAX};
  for (size_t s = 0; s < k; ++s) {
    int first = ranks[s], last = ranks[(s + k - 1) % k];
    bool insideDevice =
        k > 1 && !places[first].device.empty() && places[first].device == places[last].device;
    auto key = std::make_tuple(std::max(cls(first), cls(last)), cls(first) + cls(last),
                               insideDevice ? 1 : 0);
    if (key < bestKey) {
      bestKey = key;
      best = s;
    }
  }
  return best;
}

}  // namespace

std::vector<int> ringOrderFromPlaces(const std::vector<int>& hostOf,
                                     const std::vector<RankPlace>& places) {
  const int n = static_cast<int>(hostOf.size());
  TUTTI_CHECK_ARG(places.size() == hostOf.size(), "ring order: ", places.size(), " places for ", n,
                  " ranks");
  std::vector<int> hostSeq;
  std::map<int, std::vector<int>> byHost;
  for (int r = 0; r < n; ++r) {
    auto& list = byHost[hostOf[r]];
    if (list.empty()) hostSeq.push_back(hostOf[r]);
    list.push_back(r);
  }
  std::vector<int> order;
  order.reserve(n);
  for (int h : hostSeq) {
    std::vector<int>& ranks = byHost[h];
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
      int pa = places[a].devicePos < 0 ? INT_MAX : places[a].devicePos;
      int pb = places[b].devicePos < 0 ? INT_MAX : places[b].devicePos;
      return pa < pb;
    });
    size_t cut = hostSeq.size() > 1 ? bestCut(ranks, places) : 0;
    std::rotate(ranks.begin(), ranks.begin() + static_cast<long>(cut), ranks.end());
    // The ring enters the host at its first rank, which the hierarchical algorithms make the
    // host's leader: walk the host the other way when only the last end is NIC-nearest (the
    // same links, reversed).
    auto cls = [&](int r) { return places[r].nicClass < 0 ? 99 : places[r].nicClass; };
    if (hostSeq.size() > 1 && cls(ranks.back()) < cls(ranks.front()))
      std::reverse(ranks.begin(), ranks.end());
    order.insert(order.end(), ranks.begin(), ranks.end());
  }
  return order;
}

}  // namespace tutti
