#include "tuning/topology_model.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace tutti::tuning {

std::string applyTopology(CostModel& m, const topo::Topology& t,
                          const std::function<topo::DeviceRef(int)>& devOf, int nranks) {
  std::string desc;
  if (nranks < 1) return desc;
  topo::DeviceRef first = devOf(0);
  if (!t.gpus.empty() && first.kind == topo::DevKind::kGpu) {
    // Pair costs by device pair, computed once (the model is copied per choice: share it).
    struct Cache {
      std::mutex mutex;
      std::map<std::pair<int, int>, LinkCost> costs;
    };
    auto cache = std::make_shared<Cache>();
    auto topology = std::make_shared<const topo::Topology>(t);
    m.intraPair = [topology, devOf, cache](int a, int b) {
      topo::DeviceRef da = devOf(a), db = devOf(b);
      da.host = db.host = 0;
      auto key = std::make_pair(da.index, db.index);
      std::lock_guard<std::mutex> lock(cache->mutex);
      if (auto it = cache->costs.find(key); it != cache->costs.end()) return it->second;
      topo::Path p = topo::pathBetween(*topology, da, db);
      LinkCost lc{p.latencyUs * 1e-6, 1.0 / (std::max(p.bandwidthGBps, 1e-3) * 1e9)};
      cache->costs[key] = lc;
      return lc;
    };
    m.coresPerHost = 0;
    m.gammaPerByte = 1.0 / 1000e9;
    topo::DeviceRef second = devOf(std::min(1, nranks - 1));
    second.host = first.host;
    topo::Path p = topo::pathBetween(t, first, second);
    desc = "GPU" + std::to_string(first.index) + "-GPU" + std::to_string(second.index) + " " +
           p.label() + " " + std::to_string(p.bandwidthGBps).substr(0, 5) + " GB/s, alpha " +
           std::to_string(p.latencyUs).substr(0, 4) + " us";
  }
  // Network: the NET path between the first rank's device on two hosts.
  if (!t.gpus.empty() || !t.nics.empty()) {
    topo::DeviceRef a = first, b = first;
    a.host = 0;
    b.host = 1;
    topo::Path net = topo::pathBetween(t, a, b);
    m.interHost = {net.latencyUs * 1e-6, 1.0 / (std::max(net.bandwidthGBps, 1e-3) * 1e9)};
    int nics = 0;
    for (const auto& nic : t.nics) nics += (nic.rdma || t.nics.size() == 1) ? 1 : 0;
    m.nicsPerHost = std::max(1, nics);
  }
  return desc;
}

}  // namespace tutti::tuning
