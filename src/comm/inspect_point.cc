// A communicator's side of tutti-inspect (inspect_point.h).
#include "comm/inspect_point.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <utility>

#include "common/clock.h"
#include "common/cycle_clock.h"
#include "common/log.h"
#include "inspect/job_file.h"
#include "interfaces/window.h"

namespace tutti {

namespace {
constexpr size_t kRecentLines = 8;

}  // namespace

InspectPoint::InspectPoint(std::string name, int rank, int nranks, const FailureMonitor* monitor,
                           const std::string& bindHost)
    : name_(std::move(name)), rank_(rank), nranks_(nranks), monitor_(monitor) {
  registration_ = inspect::Responder::add(bindHost, [this] { return report(); });
}

InspectPoint::~InspectPoint() {
  if (!jobFile_.empty()) ::unlink(jobFile_.c_str());
}

void InspectPoint::stalledOn(int peer, const std::string& step) {
  {
    std::lock_guard<std::mutex> lock(stepMutex_);
    waitStep_ = step;
  }
  const uint64_t call = monitor_->trace().calls();
  if (waitCall_.load(std::memory_order_relaxed) != call) {
    // The wait began a stall report's interval before the first report.
    waitSince_.store(nowSeconds() - transport::WaitPolicy::kStallReportSec,
                     std::memory_order_relaxed);
    waitCall_.store(call, std::memory_order_release);
  }
  waitPeer_.store(peer, std::memory_order_relaxed);
}

void InspectPoint::writeJobFile(const std::string& dir,
                                std::span<const transport::PeerInfo> peers) {
  inspect::JobFile job;
  job.name = name_;
  job.nranks = static_cast<int>(peers.size());
  job.started = static_cast<long>(std::time(nullptr));
  for (const transport::PeerInfo& p : peers)
    job.ranks.push_back({p.rank, p.hostname, static_cast<long>(p.pid), p.inspect});
  try {
    jobFile_ = inspect::writeJobFile(inspect::jobDirectory(dir), job);
    TUTTI_INFO(kInit, "tutti-inspect: job file " << jobFile_);
  } catch (const Error& e) {
    TUTTI_WARN(kInit, "tutti-inspect: no job file (" << e.what() << ")");
  }
}

inspect::CommReport InspectPoint::report() const {
  using State = inspect::CommReport::State;
  inspect::CommReport r;
  r.name = name_;
  r.rank = rank_;
  r.nranks = nranks_;
  const CallTrace& trace = monitor_->trace();
  CallTrace::Record last;
  if (trace.latest(&last)) {
    const uint64_t now = CycleClock::coarseNanos();
    const uint64_t from = last.state == CallTrace::State::kRunning ? last.start : last.end;
    r.state = last.state == CallTrace::State::kRunning ? State::kRunning
              : last.state == CallTrace::State::kDone  ? State::kDone
                                                       : State::kFailed;
    r.record = last.number;
    r.collective = collectiveCallNumber(last.tag);
    r.call = describeCallTag(last.tag, false);
    r.algorithm = last.algorithm;
    // A call that was not timed has no start until it stalls, no end unless it failed.
    r.seconds = from == 0 ? -1.0 : now > from ? static_cast<double>(now - from) * 1e-9 : 0.0;
    if (r.state == State::kRunning && waitCall_.load(std::memory_order_acquire) == last.number) {
      r.waitPeer = waitPeer_.load(std::memory_order_relaxed);
      r.waitSeconds = std::max(0.0, nowSeconds() - waitSince_.load(std::memory_order_relaxed));
      std::lock_guard<std::mutex> lock(stepMutex_);
      r.waitStep = waitStep_;
    }
  }
  r.failure = monitor_->failureText();
  if (!r.failure.empty()) r.state = State::kFailed;
  const std::string text = monitor_->traceText();
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) r.recent.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (r.recent.size() > kRecentLines)
    r.recent.erase(r.recent.begin(), r.recent.end() - kRecentLines);
  r.latency = trace.stats().lines();
  return r;
}

}  // namespace tutti
