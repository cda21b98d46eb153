#include "comm/membership_report.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "algorithms/patterns/patterns.h"
#include "comm/place_topology.h"
#include "common/log.h"
#include "interfaces/algorithm.h"
#include "topology/load.h"
#include "tuning/topology_model.h"

namespace tutti {

algo::CollArgs placedArgs(const Membership& m) {
  algo::CollArgs a;
  a.nranks = m.size();
  a.rank = m.rank;
  if (m.multiHost()) a.hostOf = m.hostOf;
  a.ringOrder = m.ringOrder;
  return a;
}

std::unique_ptr<tuning::CostModel> topologyCostModel(const Membership& m) {
  const int nranks_ = m.size(), rank_ = m.rank;
  const topo::Topology* t = localTopology();
  if (t == nullptr) return nullptr;
  std::vector<topo::DeviceRef> devs(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    auto d = deviceOfPlace(m.places[r], m.hostOf[r]);
    // Every rank decides alike: all places are GPUs, or all NUMA nodes, of one topology (the
    // same file or probe on every host).
    if (!d || m.places[r].origin != m.places[rank_].origin) return nullptr;
    if (d->kind != topo::DevKind::kGpu && d->kind != topo::DevKind::kCpu) return nullptr;
    if (r > 0 && d->kind != devs[0].kind) return nullptr;
    devs[r] = *d;
  }
  // CPU ranks on one NUMA node of a host without NICs: the fitted model is the whole story.
  if (devs[0].kind == topo::DevKind::kCpu && t->numaNodes.size() < 2 &&
      (t->nics.empty() || m.hosts < 2))
    return nullptr;
  if (devs[0].kind == topo::DevKind::kGpu && t->gpus.empty()) return nullptr;
  auto model = std::make_unique<tuning::CostModel>();
  std::string desc = tuning::applyTopology(
      *model, *t, [devs](int r) { return devs[r]; }, nranks_);
  TUTTI_INFO(kTuning, "cost model from the topology " << m.places[rank_].origin << ": " << desc);
  return model;
}

void logPlacement(const Membership& m, const std::string& prefix_) {
  const int nranks_ = m.size(), rank_ = m.rank;
  if (!log::enabled(log::Level::kInfo, log::Subsys::kTopo)) return;
  std::vector<int> order = m.ringOrder;
  if (order.empty())
    for (int r = 0; r < nranks_; ++r) order.push_back(r);
  auto hop = [&](int a, int b) -> std::string {
    if (m.hostOf[a] != m.hostOf[b]) return "NET";
    // Only this host's topology is known here: other hosts' hops are in their ranks' lines.
    if (m.hostOf[a] != m.hostOf[rank_]) return "?";
    return localHopClass(m.places[a].device, m.places[b].device);
  };
  if (rank_ == 0) {
    std::ostringstream os;
    for (int i = 0; i < nranks_; ++i) {
      int a = order[i], b = order[(i + 1) % nranks_];
      os << a << (m.places[a].device.empty() ? "" : "[" + m.places[a].device + "]");
      if (nranks_ > 1) os << " -" << hop(a, b) << "-> ";
    }
    if (nranks_ > 1) os << order[0];
    TUTTI_INFO(kTopo, "comm " << prefix_ << " nranks " << nranks_ << " ring: " << os.str());
    // The trees the tree algorithms build over that order (tutti-topo prints the same).
    for (const auto& tree : algo::patterns::treesForOrder(m.ringOrder, nranks_))
      TUTTI_INFO(kTopo, "comm " << prefix_ << " " << algo::patterns::treeLine(tree));
    if (m.multiHost()) {
      // hier's host groups, as it builds them: each host's members, its leader first.
      std::ostringstream groups;
      for (const auto& g : algo::hierHostGroups(placedArgs(m))) {
        groups << " [";
        for (size_t i = 0; i < g.size(); ++i) groups << (i ? " " : "") << g[i];
        groups << "]";
      }
      TUTTI_INFO(kTopo, "comm " << prefix_ << " hier hosts (leader first):" << groups.str());
    }
  }
  int pos = static_cast<int>(std::find(order.begin(), order.end(), rank_) - order.begin());
  int next = order[(pos + 1) % nranks_], prev = order[(pos + nranks_ - 1) % nranks_];
  const RankPlace& me = m.places[rank_];
  TUTTI_INFO(kTopo, "comm " << prefix_ << " rank " << rank_ << " host " << m.hostOf[rank_]
                            << " device " << (me.device.empty() ? "unknown" : me.device) << " CPUs "
                            << (me.cpus.empty() ? "?" : me.cpus) << " (topology "
                            << (me.origin.empty() ? "none" : me.origin) << ", host NIC "
                            << (me.nic.empty() ? "none" : me.nic) << ", nearest NIC "
                            << (me.nearNic.empty() ? "none" : me.nearNic) << "); ring position "
                            << pos << ", prev " << prev << " via " << hop(prev, rank_) << ", next "
                            << next << " via " << hop(rank_, next));
}

}  // namespace tutti
