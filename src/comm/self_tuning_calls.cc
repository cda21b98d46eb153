// The Communicator's part in self-tuning (tuning/self_tuning.h, docs/tuning.md "Self-tuning"):
// agreeing on the host cache at init, calibrating the cost model at the first collective call
// of a host without a calibration, and concluding online refinement with the slowest rank's
// times. The decisions themselves are tuning's; this file runs the calls they need.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <sstream>

#include "comm/communicator.h"
#include "comm/membership.h"
#include "comm/planner.h"
#include "common/log.h"
#include "tuning/calibration.h"
#include "tuning/self_tuning.h"

namespace tutti {

namespace {
constexpr const char* kTuneKey = "tune";

bool cacheAgreed(const CommOptions& o, int nranks) {
  return o.selfTune && !o.tuningCacheDir.empty() && nranks > 1;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The median of v[at .. at + n).
double medianOf(const std::vector<double>& v, size_t at, size_t n) {
  std::vector<double> part(v.begin() + static_cast<long>(at),
                           v.begin() + static_cast<long>(at + n));
  std::sort(part.begin(), part.end());
  return part[part.size() / 2];
}
// Descriptors a rank may need with every peer connected: the constant part (store, standby,
// wake-ups; the store's host also holds a socket per rank) and about 4 per peer over shm (a
// doorbell pipe, the peer's doorbell, a pidfd) or tcp (sockets, epoll), with room to spare
// (docs/transports.md, "Descriptors").
long descriptorsForEveryPeer(int nranks) { return 32 + 6L * (nranks - 1); }

// The lowest descriptor limit of the communicator's ranks (-1: none is limited). Every rank
// computes it from the same records, so the decisions it bounds are the same everywhere.
long lowestDescriptorLimit(const Membership& m) {
  long lowest = -1;
  for (const RankPlace& p : m.places)
    if (p.fdLimit >= 0 && (lowest < 0 || p.fdLimit < lowest)) lowest = p.fdLimit;
  return lowest;
}
}  // namespace

void Communicator::publishTuningCache(const RankPlace& myPlace) {
  if (!cacheAgreed(options_, nranks_) || rank_ != 0) return;
  std::string text = tuning::TuningCache(options_.tuningCacheDir, hardwareIdentity(myPlace)).read();
  stores_.own()->setString(kTuneKey, "tune\n" + text);  // never empty
}

void Communicator::startSelfTuning(const RankPlace& myPlace, const Deadline& deadline) {
  if (!options_.selfTune || nranks_ < 2) return;
  std::string text;
  std::unique_ptr<tuning::TuningCache> writer;
  const bool cache = cacheAgreed(options_, nranks_);
  if (cache) {
    text = stores_.own()->getString(kTuneKey, deadline).substr(5);
    // The lowest rank of each host keeps what the communicator learns in its host's cache.
    const auto& hostOf = membership_->hostOf;
    if (std::find(hostOf.begin(), hostOf.end(), hostOf[rank_]) - hostOf.begin() == rank_)
      writer =
          std::make_unique<tuning::TuningCache>(options_.tuningCacheDir, hardwareIdentity(myPlace));
  }
  tuning::TuneSettings settings;
  settings.maxCandidates = static_cast<int>(options_.tuneCandidates);
  settings.exploreAfter = static_cast<int>(options_.tuneExploreAfter);
  settings.exploreShare = options_.tuneExploreShare;
  settings.confirmJobs = static_cast<int>(options_.tuneConfirmJobs);
  // Exploring tries algorithms the model did not choose, and each connects its own peers:
  // with too few descriptors for every peer, only the model's choices run (issue 68, E12).
  if (const long lowest = lowestDescriptorLimit(*membership_);
      lowest >= 0 && lowest < descriptorsForEveryPeer(nranks_)) {
    settings.maxCandidates = 1;
    TUTTI_INFO(kTuning, "self-tuning explores no other algorithm: a rank's descriptor limit ("
                            << lowest << ", RLIMIT_NOFILE) is below what connecting every peer "
                            << "may take at " << nranks_ << " ranks ("
                            << descriptorsForEveryPeer(nranks_) << "); raise ulimit -n");
  }
  const tuning::ModelSource source = options_.tuningFileSet ? tuning::ModelSource::kUser
                                     : planner_->usesTopologyModel()
                                         ? tuning::ModelSource::kTopology
                                         : tuning::ModelSource::kCache;
  planner_->setSelfTuning(
      std::make_unique<tuning::SelfTuning>(settings, text, source, std::move(writer), cache));
}

std::vector<double> Communicator::maxOverRanks(const std::vector<double>& mine) {
  const size_t n = mine.size();
  std::vector<double> all(n * static_cast<size_t>(nranks_));
  allGatherInCall(mine.data(), all.data(), n, tuttiFloat64);
  std::vector<double> out = mine;
  for (int r = 0; r < nranks_; ++r)
    for (size_t i = 0; i < n; ++i) out[i] = std::max(out[i], all[static_cast<size_t>(r) * n + i]);
  return out;
}

namespace {
// Timed calls of the 64 KiB and bandwidth points: the ring's and the window's, interleaved.
constexpr int kWindowReps = 5;
// Untimed rounds of the bandwidth point's calls first: at 4 ranks on 2 cores a job's first
// 1 MiB calls take up to 2.5x their later time for 3-5 calls (pages, caches, the ranks' placement
// on the cores).
constexpr int kBandwidthWarmup = 3;

// `warmup` untimed rounds of the calls (connections, pages, a program's state), then `reps`
// rounds of the calls in turn, each timed from its start to its end, back to back as in a loop (the
// throughput the perf tests and refinement measure); times[i] gets call i's. With several
// calls a slow stretch of the machine (with more ranks than cores, tens of milliseconds) falls
// on each alike and the ratios between their times hold, where blocks of one call after
// another's would each take a different stretch.
std::vector<std::vector<double>> timeInterleaved(const std::vector<std::function<void()>>& calls,
                                                 int reps, int warmup) {
  for (int w = 0; w < warmup; ++w)
    for (const auto& call : calls) call();
  std::vector<std::vector<double>> times(calls.size());
  for (int k = 0; k < reps; ++k)
    for (size_t i = 0; i < calls.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      calls[i]();
      times[i].push_back(secondsSince(t0));
    }
  return times;
}

// A call's float32 buffers (ones in, out, scratch), kept alive by the call that uses them.
struct CallBuffers {
  std::vector<float> in, out;
  std::vector<std::byte> tmp;
  CallBuffers(size_t count, size_t scratch) : in(count, 1.0f), out(count), tmp(scratch) {}
  std::array<std::byte*, 3> pointers() {
    return {reinterpret_cast<std::byte*>(in.data()), reinterpret_cast<std::byte*>(out.data()),
            tmp.data()};
  }
};
}  // namespace

std::function<void()> Communicator::ringAllReduceCall(size_t count, algo::CollArgs* args) {
  const algo::AlgorithmInfo& ring = *algo::find(algo::Coll::kAllReduce, "ring");
  *args = baseArgs(algo::Coll::kAllReduce, count, tuttiFloat32);
  args->op = tuttiSum;
  auto s = std::make_shared<exec::Schedule>(ring.build(*args));
  auto b = std::make_shared<CallBuffers>(count, s->scratchBytes);
  return [this, s, b] {
    auto buffers = b->pointers();
    execute(*s, buffers);
  };
}

std::function<void()> Communicator::windowAllReduceCall(size_t count, algo::CollArgs* args) {
  const algo::AlgorithmInfo* direct = algo::find(algo::Coll::kAllReduce, "direct");
  algo::CollArgs a = baseArgs(algo::Coll::kAllReduce, count, tuttiFloat32);
  a.op = tuttiSum;
  a.windowBytes = window_.chunkBytes();
  if (direct == nullptr || a.windowBytes == 0 || !direct->applicable(a)) return {};
  const Planner::Planned* p = &planner_->build(*direct, a);
  auto b = std::make_shared<CallBuffers>(count, p->schedule.scratchBytes);
  *args = std::move(a);
  return [this, p, b] {
    auto buffers = b->pointers();
    execute(p->schedule, p->peers, p->program.get(), buffers);
  };
}

// A ring all-reduce of float32 at three sizes (8 B, 64 KiB, 1 MiB or 4 MiB: latency to bandwidth)
// and the local reduction kernel, timed on every rank; the slowest rank's times fit the link the
// communicator's ring crosses (shm on one host, tcp across hosts), as tutti-tune does. On one
// host the shared window's direct all-reduce at 64 KiB and 1 MiB is timed too, interleaved with
// the ring's calls of the size: it prices reading another rank's window
// (CostModel::windowReadBetaSmall and windowReadBeta) against the ring's link, which the ring's
// fit says nothing about.
bool Communicator::measureAndFit(tuning::FitLink link, tuning::CostModel* m, std::string* summary) {
  // The bandwidth point: 1 MiB on shm; 4 MiB across hosts, where a shaper's or switch's burst
  // (tbf's 256 KiB here) would pass a 1 MiB call's messages faster than the link's rate.
  const bool shm = link == tuning::FitLink::kShm;
  const size_t counts[] = {2, tuning::kWindowReadSmallBytes / 4,
                           shm ? tuning::kWindowReadLargeBytes / 4 : size_t{1} << 20};
  const int reps[] = {7, kWindowReps, kWindowReps}, warmups[] = {1, 1, kBandwidthWarmup};
  std::vector<double> times, windowTimes;
  std::vector<algo::CollArgs> argsOf(3), windowArgs;
  std::vector<bool> windowLarge;  // per windowArgs: the bandwidth point's
  for (int i = 0; i < 3; ++i) {
    std::vector<std::function<void()>> calls = {ringAllReduceCall(counts[i], &argsOf[i])};
    algo::CollArgs a;
    if (shm && i > 0) calls.push_back(windowAllReduceCall(counts[i], &a));
    if (!calls.back()) calls.pop_back();
    const auto point = timeInterleaved(calls, reps[i], warmups[i]);
    times.insert(times.end(), point[0].begin(), point[0].end());
    if (calls.size() < 2) continue;
    windowTimes.insert(windowTimes.end(), point[1].begin(), point[1].end());
    windowArgs.push_back(std::move(a));
    windowLarge.push_back(i == 2);
  }
  times.push_back(tuning::measureGammaPerByte(size_t{4} << 20, 3));
  times.insert(times.end(), windowTimes.begin(), windowTimes.end());
  std::vector<double> agreed = maxOverRanks(times);
  std::vector<double> seconds;
  std::vector<tuning::PointFeatures> features;
  const int cores = shm ? static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))) : 0;
  const algo::AlgorithmInfo& ring = *algo::find(algo::Coll::kAllReduce, "ring");
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    seconds.push_back(medianOf(agreed, at, static_cast<size_t>(reps[i])));
    at += static_cast<size_t>(reps[i]);
    features.push_back(tuning::featuresOf(ring, argsOf[static_cast<size_t>(i)], link, cores));
  }
  const double gamma = agreed[at++];
  auto [alpha, beta] = tuning::fitAlphaBeta(seconds, features, gamma);
  const bool sane = alpha > 0 && alpha < 1e-2 && beta > 1e-12 && beta < 1e-7 && gamma > 1e-13;
  if (sane) {
    (shm ? m->intraHost : m->interHost) = {alpha, beta};
    m->gammaPerByte = gamma;
    if (shm) m->windowReadBeta = m->windowReadBetaSmall = -1;
    // The larger call first: the smaller one's price counts only beside it (windowReadPrice).
    for (size_t k = windowArgs.size(); k-- > 0;) {
      if (!windowLarge[k] && m->windowReadBeta <= 0) break;
      tuning::CostModel planned = *m;
      planned.coresPerHost = cores;  // as the planner prices a call (Planner::model)
      const double price =
          tuning::fitWindowReadBeta(*algo::find(algo::Coll::kAllReduce, "direct"), windowArgs[k],
                                    planned, medianOf(agreed, at + k * kWindowReps, kWindowReps));
      (windowLarge[k] ? m->windowReadBeta : m->windowReadBetaSmall) = price;
    }
  }
  std::ostringstream os;
  os << "alpha " << alpha * 1e6 << " us, " << 1e-9 / beta << " GB/s, gamma " << 1e-9 / gamma
     << " GB/s";
  if (sane && m->windowReadBeta > 0) os << ", window reads " << 1e-9 / m->windowReadBeta << " GB/s";
  if (sane && m->windowReadBetaSmall > 0)
    os << " (at 64 KiB: " << 1e-9 / m->windowReadBetaSmall << " GB/s)";
  *summary = os.str();
  return sane;
}

// Calibrates at the first collective call of a host without a calibration. A fit out of range
// (a burst of load on the machine: with more ranks than cores, 8 B calls that waited for a
// descheduled rank) is measured once more; when that fails too, the communicator keeps the
// model it had and the cache is left uncalibrated, so the next communicator tries again.
void Communicator::calibrate() {
  tuning::SelfTuning& st = *planner_->selfTuning();
  const tuning::FitLink link =
      membership_->multiHost() ? tuning::FitLink::kTcp : tuning::FitLink::kShm;
  if (!st.needsCalibration(link)) return;
  const auto start = std::chrono::steady_clock::now();
  // On a topology's model an insane fit keeps the topology's link (its NICs' speed).
  const algo::CollArgs any = baseArgs(algo::Coll::kAllReduce, 1, tuttiFloat32);
  const tuning::CostModel base =
      planner_->usesTopologyModel() ? planner_->model(any) : st.baseModel();
  tuning::CostModel m = base;
  std::string summary, first;
  bool sane = measureAndFit(link, &m, &summary);
  if (!sane) {
    first = summary;
    m = base;
    sane = measureAndFit(link, &m, &summary);  // every rank agrees: the same agreed times
  }
  st.calibrated(link, m, sane);
  planner_->forgetChoices();
  if (planner_->usesTopologyModel() && sane)
    TUTTI_INFO(kTuning, "the topology's model takes the calibrated network link");
  TUTTI_INFO(kTuning, "calibrated "
                          << (link == tuning::FitLink::kShm ? "shm" : "tcp") << " in "
                          << secondsSince(start) * 1e3 << " ms: " << summary
                          << (first.empty() ? "" : " (the first try, out of range: " + first + ")")
                          << (sane ? ""
                                   : " (out of range: kept the previous model, "
                                     "not cached)"));
}

void Communicator::refine(const tuning::TuneKey& key, int sample, double seconds) {
  tuning::SelfTuning& st = *planner_->selfTuning();
  tuning::OnlineTuner& tuner = st.tuner();
  tuner.record(key, sample, seconds);
  if (!tuner.readyToConclude(key)) return;
  std::vector<double> agreed = maxOverRanks(tuner.measured(key));
  std::string why = tuner.conclude(key, agreed);
  const std::string winner = tuner.winner(key);
  if (rank_ == 0)  // the same on every rank
    TUTTI_INFO(kTuning, (winner.empty() ? "exploring on: " : "learned ") << why);
  if (!winner.empty()) st.learned(key, winner, tuner.evidence(key));
}

}  // namespace tutti
