// tutti-sim: predicts the time and busbw of every algorithm of a collective with the tuner's
// cost model (src/tuning/cost_model.h) on the schedules the library would build, for a
// topology file or a synthetic cluster of K hosts joined by a network. docs/tuning.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/neighbor_graph.h"
#include "common/dtype.h"
#include "common/env.h"
#include "common/error.h"
#include "interfaces/algorithm.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "topology/rings.h"
#include "tuning/cost_model.h"
#include "tuning/timed_sim.h"
#include "tuning/topology_model.h"
#include "tuning/tuner.h"

namespace algo = tutti::algo;
namespace topo = tutti::topo;
namespace tuning = tutti::tuning;

namespace {

void usage(std::ostream& os) {
  os << "usage: tutti-sim [options]\n"
        "  --topo FILE          topology of one host (hwloc XML v1/v2 or NCCL XML); ranks use\n"
        "                       its GPUs (or its NUMA nodes when it has none); intra-host\n"
        "                       links from the topology's link classes (docs/topology.md)\n"
        "  --devices cpu|gpu    cpu: ranks on --topo's NUMA nodes (round robin) even when it\n"
        "                       has GPUs, as host-memory ranks with TUTTI_TOPO_DEVICE=numa:N\n"
        "                       (pairs across NUMA nodes cost the inter-socket link)\n"
        "  --hosts K            hosts in the job (default: as many as the ranks need)\n"
        "  -n, --ranks N        ranks (default: hosts x ranks per host)\n"
        "  --ranks-per-host L   default: GPUs of --topo, else 1\n"
        "  --interleave         rank r on host r % hosts (tuttirun --hosts h0:1,h1:1,...),\n"
        "                       else ranks 0..L-1 on the first host and so on\n"
        "  --net-gbps X         network bandwidth per NIC in Gbit/s (default: the NIC speed of\n"
        "                       --topo, else the tuning file's tcp bandwidth); without --topo\n"
        "                       the slower of X and the tcp bandwidth counts\n"
        "  --net-latency-us Y   network latency per message (with --topo: replaces the NIC's;\n"
        "                       without: added to the tuning file's tcp alpha)\n"
        "  --nics K             NICs per host shared by its ranks (default: --topo's, else 1)\n"
        "  --cores C            cores per host for shm copies (default: tuning file's)\n"
        "  --gamma-gbps X       local reduction GB/s (default: tuning file's; GPUs 1000)\n"
        "  --window-bytes B     shared-window bytes for the direct algorithms when every\n"
        "                       rank is on one host without GPUs (default: as the library:\n"
        "                       256 KiB chunks with a core per rank, 4 MiB oversubscribed;\n"
        "                       0: leave direct out)\n"
        "  --tuning FILE        cost model file (default: TUTTI_TUNING_FILE, else built-in)\n"
        "  --coll C             allreduce (default) allgather reducescatter broadcast reduce\n"
        "                       alltoall gather scatter (root 0); allgatherv reducescatterv\n"
        "                       gatherv scatterv alltoallv (even split)\n"
        "  -b, -e, -f           min size, max size, factor (nccl-tests sizes; default 1M 1G 4)\n"
        "  -d, --dtype T        float (default) double half bfloat16 int32 int16 int8 ...\n"
        "  --algos a,b          only these algorithms (default: every applicable one)\n"
        "  --neighbor G         (allreduce) add the neighbour all-reduce over graph G: ring,\n"
        "                       torus, grid, hypercube, exponential, one_peer_exponential\n"
        "                       (time per call, the mean over the graph's steps) and the ratio\n"
        "                       of the best all-reduce to it (docs/decentralized.md)\n"
        "  --exact              build every rank's schedule even for large jobs\n"
        "  --csv                CSV (one row per size and algorithm) instead of the table\n";
}

size_t parseSize(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string suf = end ? end : "";
  double mult = 1;
  if (suf == "K" || suf == "k")
    mult = 1024.0;
  else if (suf == "M" || suf == "m")
    mult = 1024.0 * 1024;
  else if (suf == "G" || suf == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (!suf.empty())
    tutti::fail(tuttiInvalidArgument, "bad size '", s, "'");
  if (!(v > 0)) tutti::fail(tuttiInvalidArgument, "bad size '", s, "'");
  return static_cast<size_t>(v * mult);
}

bool parseColl(const std::string& s, algo::Coll* c) {
  for (int i = 0; i < algo::kNumColls; ++i)
    if (s == algo::collName(static_cast<algo::Coll>(i))) {
      *c = static_cast<algo::Coll>(i);
      return true;
    }
  return false;
}

// The names of datatype.hpp's dataTypeName: int8 uint8 int16 uint16 int32 uint32 int64 uint64
// half float double bfloat16.
bool parseDtype(const std::string& s, tuttiDataType_t* t) {
  for (int i = 0; i < tuttiNumTypes; ++i) {
    const auto d = static_cast<tuttiDataType_t>(i);
    if (s == tutti::dtypeName(d)) {
      *t = d;
      return true;
    }
  }
  return false;
}

// nccl-tests conventions: the count argument for a size column S, and the busbw factor.
size_t countFor(algo::Coll c, size_t bytes, size_t es, int n) {
  return std::max<size_t>(1, algo::blockPerRank(c) ? bytes / es / n : bytes / es);
}
size_t sizeFor(algo::Coll c, size_t count, size_t es, int n) {
  return algo::blockPerRank(c) ? count * es * n : count * es;
}
double busFactor(algo::Coll c, int n) {
  if (c == algo::Coll::kAllReduce) return 2.0 * (n - 1) / n;
  return algo::blockPerRank(c) ? static_cast<double>(n - 1) / n : 1.0;
}

struct Options {
  std::string topoFile, tuningFile, algos, neighbor;
  int hosts = 0, ranks = 0, perHost = 0, nics = 0, cores = -1;
  long long windowBytes = -1;
  double netGbps = 0, netLatencyUs = -1, gammaGbps = 0;
  algo::Coll coll = algo::Coll::kAllReduce;
  tuttiDataType_t dtype = tuttiFloat32;
  size_t minBytes = 1 << 20, maxBytes = size_t{1} << 30;
  double factor = 4;
  bool exact = false, csv = false;
  bool cpuRanks = false;    // --devices cpu: ranks on the file's NUMA nodes, even with GPUs
  bool interleave = false;  // rank r on host r % hosts (else r / ranks-per-host)
};

// The simulated job: its model, topology (if any) and the ranks' places.
struct Job {
  tuning::CostModel m;
  std::string intraDesc;
  topo::Topology t;
  bool haveTopo = false;
  int n = 0, hosts = 0, perHost = 0;
  bool interleave = false, cpuRanks = false;

  // Rank r's host and device (a GPU of the topology, else a NUMA node).
  topo::DeviceRef devOf(int r) const {
    topo::DeviceRef d;
    d.host = interleave ? r % hosts : r / perHost;
    int local = interleave ? r / hosts : r % perHost;
    if (!t.gpus.empty() && !cpuRanks) {
      d.kind = topo::DevKind::kGpu;
      d.index = local % static_cast<int>(t.gpus.size());
    } else {
      d.kind = topo::DevKind::kCpu;
      const int numa = std::max<int>(1, t.numaNodes.size());
      d.index = t.numaNodes.empty() ? -1 : local % numa;
    }
    return d;
  }
};

// The ranks, hosts and ranks per host from the options and the topology.
Job placeJob(const Options& o) {
  Job job;
  job.m = o.tuningFile.empty() ? tuning::CostModel() : tuning::loadTuningFile(o.tuningFile);
  job.intraDesc = "shm " + std::to_string(1e-9 / job.m.intraHost.beta).substr(0, 5) + " GB/s";
  job.haveTopo = !o.topoFile.empty();
  job.interleave = o.interleave;
  job.cpuRanks = o.cpuRanks;
  int perHost = o.perHost;
  if (job.haveTopo) {
    job.t = topo::loadTopologyFile(o.topoFile);
    int g = o.cpuRanks ? 0 : static_cast<int>(job.t.gpus.size());
    if (perHost <= 0) perHost = g > 0 ? g : std::max<int>(1, job.t.numaNodes.size());
  }
  int n = o.ranks, hosts = o.hosts;
  if (perHost <= 0) {  // no topology: the ranks spread evenly over the hosts
    perHost = n > 0 ? (n + std::max(hosts, 1) - 1) / std::max(hosts, 1) : 1;
  }
  if (n <= 0) n = (hosts > 0 ? hosts : 1) * perHost;
  if (hosts <= 0) hosts = (n + perHost - 1) / perHost;
  if (static_cast<long>(hosts) * perHost < n)
    tutti::fail(tuttiInvalidArgument, n, " ranks do not fit on ", hosts, " hosts x ", perHost);
  job.n = n;
  job.hosts = hosts;
  job.perHost = std::min(perHost, n);
  return job;
}

// The model as the communicator would have it on the topology, then the options' overrides.
void adjustModel(Job& job, const Options& o) {
  tuning::CostModel& m = job.m;
  if (job.haveTopo) {
    // The communicator's model on a topology (tuning/topology_model.h).
    std::string d = tuning::applyTopology(
        m, job.t, [&job](int r) { return job.devOf(r); }, job.n);
    if (!d.empty()) job.intraDesc = d;
  }
  if (o.netGbps > 0) {
    double beta = 8.0 / (o.netGbps * 1e9);
    m.interHost.beta = job.haveTopo ? beta : std::max(beta, m.interHost.beta);
  }
  if (o.netLatencyUs >= 0)
    m.interHost.alpha = (job.haveTopo ? 0.0 : m.interHost.alpha) + o.netLatencyUs * 1e-6;
  if (o.nics > 0) m.nicsPerHost = o.nics;
  if (o.cores >= 0) m.coresPerHost = o.cores;
  if (o.gammaGbps > 0) m.gammaPerByte = 1.0 / (o.gammaGbps * 1e9);
}

// One host: the communicator's shm window (communicator.cc: chunks of TUTTI_CHUNK_BYTES with a
// core per rank, the whole TUTTI_SHM_WINDOW_BYTES when oversubscribed). GPU ranks have it too:
// device buffers are staged through host memory.
size_t windowBytesOf(const Job& job, const Options& o) {
  bool over = job.m.coresPerHost > 0 && job.n > job.m.coresPerHost;
  auto window = static_cast<size_t>(tutti::env::getInt("TUTTI_SHM_WINDOW_BYTES"));
  auto chunk =
      static_cast<size_t>(std::max<int64_t>(4096, tutti::env::getInt("TUTTI_CHUNK_BYTES")));
  return o.windowBytes >= 0 ? static_cast<size_t>(o.windowBytes)
                            : (over ? window : std::min(window, chunk));
}

// The communicator's order on one host (comm/ring_order.h): ranks by their device's position
// in the best ring over all the host's devices (GPUs, else NUMA nodes). Empty: rank order.
std::vector<int> hostRingOrder(const Job& job) {
  const topo::Topology& t = job.t;
  std::vector<int> pos =
      topo::devicePositions(t, t.gpus.empty() ? topo::DevKind::kCpu : topo::DevKind::kGpu);
  std::vector<int> order(job.n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    int dx = job.devOf(x).index, dy = job.devOf(y).index;
    return (dx < 0 ? 1 << 30 : pos[dx]) < (dy < 0 ? 1 << 30 : pos[dy]);
  });
  bool identity = true;
  for (int r = 0; r < job.n; ++r) identity = identity && order[r] == r;
  return identity ? std::vector<int>{} : order;
}

// The arguments every size shares: the window on one host, the ring order.
algo::CollArgs baseArgs(const Job& job, const Options& o) {
  algo::CollArgs base;
  base.coll = o.coll;
  base.dtype = o.dtype;
  base.nranks = job.n;
  if (job.hosts == 1) base.windowBytes = windowBytesOf(job, o);
  if (job.hosts == 1 && job.haveTopo) base.ringOrder = hostRingOrder(job);
  if (job.hosts > 1) {
    // The communicator's order across hosts (comm/ring_order.h): hosts in the order of their
    // first rank, each host's ranks in rank order.
    base.hostOf.resize(job.n);
    for (int r = 0; r < job.n; ++r) base.hostOf[r] = job.devOf(r).host;
    base.ringOrder.resize(job.n);
    std::iota(base.ringOrder.begin(), base.ringOrder.end(), 0);
    std::stable_sort(base.ringOrder.begin(), base.ringOrder.end(),
                     [&](int x, int y) { return base.hostOf[x] < base.hostOf[y]; });
  }
  return base;
}

// The registry's algorithms of the collective that --algos names (all without it) and that
// apply to the job.
std::vector<const algo::AlgorithmInfo*> algorithmsFor(const algo::CollArgs& base,
                                                      const Options& o) {
  std::vector<const algo::AlgorithmInfo*> algos;
  for (const algo::AlgorithmInfo& info : algo::registry()) {
    if (info.coll != o.coll) continue;
    if (!o.algos.empty() &&
        ("," + o.algos + ",").find("," + std::string(info.name) + ",") == std::string::npos)
      continue;
    if (!info.applicable(base)) continue;
    algos.push_back(&info);
  }
  if (algos.empty())
    tutti::fail(tuttiInvalidArgument, "no ", algo::collName(o.coll),
                " algorithm applies (or matches --algos '", o.algos, "')");
  return algos;
}

// --neighbor: the graph over the ranks (null without it).
std::unique_ptr<algo::NeighborGraph> neighborGraph(const Options& o, int n) {
  if (o.neighbor.empty()) return nullptr;
  static const std::map<std::string, algo::GraphKind> kKinds = {
      {"ring", algo::GraphKind::kRing},
      {"torus", algo::GraphKind::kTorus2D},
      {"grid", algo::GraphKind::kGrid2D},
      {"hypercube", algo::GraphKind::kHypercube},
      {"exponential", algo::GraphKind::kExponential},
      {"one_peer_exponential", algo::GraphKind::kOnePeerExponential}};
  auto it = kKinds.find(o.neighbor);
  if (it == kKinds.end())
    tutti::fail(tuttiInvalidArgument, "--neighbor ", o.neighbor,
                ": use ring, torus, grid, hypercube, exponential or one_peer_exponential");
  if (o.coll != algo::Coll::kAllReduce)
    tutti::fail(tuttiInvalidArgument, "--neighbor compares with allreduce (--coll allreduce)");
  return std::make_unique<algo::NeighborGraph>(algo::NeighborGraph::builtin(it->second, n));
}

// The neighbour all-reduce's time per call over graph g (the mean over its steps).
double neighborTime(const algo::CollArgs& a, const algo::NeighborGraph& g,
                    const tuning::CostModel& m, const tuning::TimedOptions& topt) {
  algo::CollArgs na = a;
  na.coll = algo::Coll::kNeighborAllReduce;
  na.graph = &g;
  na.windowBytes = 0;
  double sum = 0;
  for (int step = 0; step < g.period(); ++step) {
    na.graphStep = static_cast<uint64_t>(step);
    sum += tuning::timeCollective(algo::neighborAlgorithms()[0], na, m, topt).seconds;
  }
  return sum / g.period();
}

void printHeader(const Job& job, const Options& o,
                 const std::vector<const algo::AlgorithmInfo*>& algos, bool neighbor,
                 const tuning::TimedOptions& topt) {
  const tuning::CostModel& m = job.m;
  if (o.csv) {
    std::printf("collective,nranks,hosts,size,algo,time_us,algbw_GBps,busbw_GBps,exact\n");
    return;
  }
  std::printf("# tutti-sim: %s, %d ranks on %d host(s) x %d, %s\n", algo::collName(o.coll), job.n,
              job.hosts, job.perHost,
              job.haveTopo ? ("topology " + o.topoFile).c_str() : "no topology");
  std::printf(
      "# intra-host: %s%s; network: %.1f Gbit/s x %d NIC(s)/host, "
      "alpha %.1f us; gamma %.0f GB/s; model from %s\n",
      (m.intraPair ? job.intraDesc
                   : job.intraDesc + ", alpha " +
                         std::to_string(m.intraHost.alpha * 1e6).substr(0, 5) + " us")
          .c_str(),
      m.coresPerHost > 0 ? (", " + std::to_string(m.coresPerHost) + " cores").c_str() : "",
      8e-9 / m.interHost.beta, m.nicsPerHost, m.interHost.alpha * 1e6, 1e-9 / m.gammaPerByte,
      m.origin.c_str());
  std::printf(
      "# time in us, busbw in GB/s; %s\n#%11s",
      job.n <= topt.exactUpTo ? "every rank simulated" : "symmetric mode (representative hosts)",
      "size(B)");
  for (auto* a : algos) std::printf(" %12s %7s", a->name, "busbw");
  if (neighbor) std::printf(" %12s %7s", "neighbor", "best/nb");
  std::printf("  %s\n", "best");
}

// One size: every algorithm's time (a row, or CSV lines), the best, and the neighbour
// all-reduce's when asked for.
void printSize(const Job& job, const Options& o, const algo::CollArgs& a, size_t bytes,
               const std::vector<const algo::AlgorithmInfo*>& algos,
               const algo::NeighborGraph* graph, const tuning::TimedOptions& topt) {
  const double bf = busFactor(o.coll, job.n);
  if (!o.csv) std::printf("%12zu", bytes);
  const algo::AlgorithmInfo* best = nullptr;
  double bestT = 0;
  for (auto* info : algos) {
    if (!info->applicable(a)) {  // a size limit (line): its columns stay empty
      if (!o.csv) std::printf(" %12s %7s", "-", "-");
      continue;
    }
    tuning::TimedResult r = tuning::timeCollective(*info, a, job.m, topt);
    double algbw = r.seconds > 0 ? bytes / r.seconds / 1e9 : 0;
    if (o.csv) {
      std::printf("%s,%d,%d,%zu,%s,%.3f,%.6f,%.6f,%d\n", algo::collName(o.coll), job.n, job.hosts,
                  bytes, info->name, r.seconds * 1e6, algbw, algbw * bf, r.exact ? 1 : 0);
    } else {
      std::printf(" %12.1f %7.2f", r.seconds * 1e6, algbw * bf);
    }
    if (!best || r.seconds < bestT) best = info, bestT = r.seconds;
  }
  // The automatic choice whatever the model says (the line all-reduce), when listed.
  if (const algo::AlgorithmInfo* rule = tuning::ruleChoice(a);
      rule != nullptr && std::find(algos.begin(), algos.end(), rule) != algos.end())
    best = rule;
  if (graph) {
    double nt = neighborTime(a, *graph, job.m, topt);
    if (o.csv) {
      std::printf("%s,%d,%d,%zu,neighbor:%s,%.3f,%.6f,%.6f,%d\n", algo::collName(o.coll), job.n,
                  job.hosts, bytes, o.neighbor.c_str(), nt * 1e6, nt > 0 ? bytes / nt / 1e9 : 0.0,
                  0.0, job.n <= topt.exactUpTo ? 1 : 0);
    } else {
      std::printf(" %12.1f %7.2f", nt * 1e6, nt > 0 ? bestT / nt : 0.0);
    }
  }
  if (!o.csv) std::printf("  %s\n", best->name);
  std::fflush(stdout);
}

int run(const Options& o) {
  Job job = placeJob(o);
  adjustModel(job, o);
  const algo::CollArgs base = baseArgs(job, o);
  const std::vector<const algo::AlgorithmInfo*> algos = algorithmsFor(base, o);
  tuning::TimedOptions topt;
  topt.exactUpTo = o.exact ? (1 << 30) : 256;
  const std::unique_ptr<algo::NeighborGraph> graph = neighborGraph(o, job.n);
  printHeader(job, o, algos, graph != nullptr, topt);
  const size_t es = tutti::dtypeSize(o.dtype);
  for (double s = static_cast<double>(o.minBytes); s <= static_cast<double>(o.maxBytes) * 1.0001;
       s = o.factor > 1 ? s * o.factor : s + static_cast<double>(o.maxBytes)) {
    algo::CollArgs a = base;
    a.count = countFor(o.coll, static_cast<size_t>(s), es, job.n);
    printSize(job, o, a, sizeFor(o.coll, a.count, es, job.n), algos, graph.get(), topt);
    if (o.factor <= 1) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      std::cerr << "tutti-sim: " << argv[i] << " needs a value\n";
      std::exit(2);
    }
    return argv[++i];
  };
  try {
    for (int i = 1; i < argc; ++i) {
      std::string f = argv[i];
      if (f == "-h" || f == "--help") {
        usage(std::cout);
        return 0;
      } else if (f == "--topo") {
        o.topoFile = need(i);
      } else if (f == "--devices") {
        std::string v = need(i);
        if (v != "cpu" && v != "gpu")
          tutti::fail(tuttiInvalidArgument, "--devices ", v, ": use cpu or gpu");
        o.cpuRanks = v == "cpu";
      } else if (f == "--tuning") {
        o.tuningFile = need(i);
      } else if (f == "--hosts") {
        o.hosts = std::stoi(need(i));
      } else if (f == "-n" || f == "--ranks") {
        o.ranks = std::stoi(need(i));
      } else if (f == "--interleave") {
        o.interleave = true;
      } else if (f == "--ranks-per-host") {
        o.perHost = std::stoi(need(i));
      } else if (f == "--net-gbps") {
        o.netGbps = std::stod(need(i));
      } else if (f == "--net-latency-us") {
        o.netLatencyUs = std::stod(need(i));
      } else if (f == "--nics") {
        o.nics = std::stoi(need(i));
      } else if (f == "--cores") {
        o.cores = std::stoi(need(i));
      } else if (f == "--window-bytes") {
        o.windowBytes = std::stoll(need(i));
      } else if (f == "--gamma-gbps") {
        o.gammaGbps = std::stod(need(i));
      } else if (f == "--coll") {
        if (!parseColl(need(i), &o.coll)) {
          std::cerr << "tutti-sim: unknown collective '" << argv[i] << "'\n";
          return 2;
        }
      } else if (f == "-d" || f == "--dtype") {
        if (!parseDtype(need(i), &o.dtype)) {
          std::cerr << "tutti-sim: unknown dtype '" << argv[i] << "'\n";
          return 2;
        }
      } else if (f == "-b" || f == "--minbytes") {
        o.minBytes = parseSize(need(i));
      } else if (f == "-e" || f == "--maxbytes") {
        o.maxBytes = parseSize(need(i));
      } else if (f == "-f" || f == "--stepfactor") {
        o.factor = std::stod(need(i));
      } else if (f == "--algos") {
        o.algos = need(i);
      } else if (f == "--neighbor") {
        o.neighbor = need(i);
      } else if (f == "--exact") {
        o.exact = true;
      } else if (f == "--csv") {
        o.csv = true;
      } else {
        std::cerr << "tutti-sim: unknown option '" << f << "'\n";
        usage(std::cerr);
        return 2;
      }
    }
    if (o.ranks < 0 || o.hosts < 0 || o.perHost < 0 || o.minBytes > o.maxBytes) {
      std::cerr << "tutti-sim: bad ranks/hosts/sizes\n";
      return 2;
    }
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "tutti-sim: " << e.what() << "\n";
    return 1;
  }
}
