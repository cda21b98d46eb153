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
  if (first.kind == topo::DevKind::kCpu && t.numaNodes.size() > 1) {
    // CPU ranks: a pair on one NUMA node costs the fitted shm link; across NUMA nodes the
    // copies also cross the inter-socket link (SYS), which may be the slower of the two.
    auto topology = std::make_shared<const topo::Topology>(t);
    const LinkCost shm = m.intraHost;
    m.intraPair = [topology, devOf, shm](int a, int b) {
      topo::DeviceRef da = devOf(a), db = devOf(b);
      if (da.index == db.index || da.index < 0 || db.index < 0) return shm;
      da.host = db.host = 0;
      topo::Path p = topo::pathBetween(*topology, da, db);
      return LinkCost{shm.alpha + p.latencyUs * 1e-6,
                      std::max(shm.beta, 1.0 / (std::max(p.bandwidthGBps, 1e-3) * 1e9))};
    };
    topo::DeviceRef a{0, topo::DevKind::kCpu, 0}, b{0, topo::DevKind::kCpu, 1};
    topo::Path p = topo::pathBetween(t, a, b);
    desc = "CPU ranks: NUMA0-NUMA1 " + p.label() + " " +
           std::to_string(p.bandwidthGBps).substr(0, 5) + " GB/s over shm";
  }
  // Network: the NET path between the first rank's device on two hosts. GPU ranks use it as
  // it is (the NIC, RDMA); CPU ranks' tcp is at most the NIC's speed and at most what the
  // fitted (or tutti-tune measured) tcp link does.
  if (!t.gpus.empty() || !t.nics.empty()) {
    topo::DeviceRef a = first, b = first;
    a.host = 0;
    b.host = 1;
    topo::Path net = topo::pathBetween(t, a, b);
    LinkCost nic{net.latencyUs * 1e-6, 1.0 / (std::max(net.bandwidthGBps, 1e-3) * 1e9)};
    if (first.kind == topo::DevKind::kCpu) {
      nic = {std::max(nic.alpha, m.interHost.alpha), std::max(nic.beta, m.interHost.beta)};
    }
    m.interHost = nic;
    int nics = 0;
    for (const auto& nic : t.nics) nics += (nic.rdma || t.nics.size() == 1) ? 1 : 0;
    m.nicsPerHost = std::max(1, nics);
  }
  return desc;
}

}  // namespace tutti::tuning
