#include "comm/failure_monitor.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "comm/call_tag.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti {
namespace {
std::string recordKey(int rank) { return "fail/" + std::to_string(rank); }
std::string describeShort(const CallTag& t) { return describeCallTag(t, false); }
}  // namespace

FailureMonitor::FailureMonitor(std::shared_ptr<bootstrap::Store> store, int rank, int nranks,
                               size_t traceCalls, std::string traceFile, std::string name)
    : store_(std::move(store)),
      rank_(rank),
      nranks_(nranks),
      traceFile_(std::move(traceFile)),
      name_(std::move(name)),
      abortFd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      trace_(traceCalls) {
  if (!abortFd_.valid()) throwSystemError("eventfd for communicator abort");
}

void FailureMonitor::revoke() {
  if (aborted_.exchange(true)) return;
  uint64_t one = 1;
  ssize_t rc = ::write(abortFd_.get(), &one, sizeof(one));
  (void)rc;
}

std::string FailureMonitor::failureText() const {
  std::lock_guard lock(mutex_);
  return text_;
}

void FailureMonitor::throwIfFailed() const {
  if (code_ != tuttiSuccess) {
    std::lock_guard lock(mutex_);
    fail(code_, "the communicator failed earlier: ", text_);
  }
  if (aborted_) fail(tuttiInvalidUsage, "communicator was aborted");
}

bool FailureMonitor::record(tuttiResult_t code, const std::string& text, int firstFailed) {
  {
    std::lock_guard lock(mutex_);
    if (code_ != tuttiSuccess) return false;
    text_ = text;
    code_ = code;
  }
  writeTraceFile(traceHeader() + " failed: " + text);
  try {
    store_->setString(recordKey(rank_), std::to_string(firstFailed) + "\n" + text);
  } catch (const std::exception& e) {
    TUTTI_INFO(kInit, "rank " << rank_ << ": could not record the failure: " << e.what());
  }
  return true;
}

std::optional<FailureMonitor::Record> FailureMonitor::recordOf(int r) {
  try {
    std::string key = recordKey(r);
    if (!store_->check({key})) return std::nullopt;
    std::string v = store_->getString(key, Deadline(1.0));
    size_t nl = v.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    return Record{r, std::stoi(v.substr(0, nl)), v.substr(nl + 1)};
  } catch (const std::exception&) {
    return std::nullopt;  // best effort: the store may be gone with the failed rank
  }
}

std::optional<FailureMonitor::Record> FailureMonitor::anyOtherRecord(int peer) {
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || r == peer) continue;
    if (auto rec = recordOf(r); rec && rec->first >= 0) return rec;
  }
  return std::nullopt;
}

std::string FailureMonitor::gatherCallStates(int* firstSilent, double waitSec) {
  std::vector<std::string> states(nranks_);
  states[rank_] = trace_.current(describeShort);
  try {
    store_->setString("state/" + std::to_string(rank_), states[rank_]);
    // The other stuck ranks time out about now too; a rank busy elsewhere never reports.
    double until = nowSeconds() + waitSec;
    std::vector<bool> have(nranks_, false);
    have[rank_] = true;
    int missing = nranks_ - 1;
    while (missing > 0 && nowSeconds() < until) {
      for (int r = 0; r < nranks_; ++r) {
        std::string key = "state/" + std::to_string(r);
        if (have[r] || !store_->check({key})) continue;
        states[r] = store_->getString(key, Deadline(1.0));
        have[r] = true;
        --missing;
      }
      if (missing > 0) ::usleep(20000);
    }
  } catch (const std::exception& e) {
    TUTTI_INFO(kInit, "rank " << rank_ << ": gathering the ranks' calls: " << e.what());
  }
  char waited[32];
  std::snprintf(waited, sizeof waited, "%g", waitSec);
  std::string out = "the ranks' calls at this timeout:";
  for (int r = nranks_ - 1; r >= 0; --r)
    if (states[r].empty()) *firstSilent = r;
  for (int r = 0; r < nranks_; ++r)
    out += " rank " + std::to_string(r) + ": " +
           (states[r].empty() ? "no report within " + std::string(waited) +
                                    " s (not in a call of this communicator, or unreachable)"
                              : states[r]) +
           (r + 1 < nranks_ ? ";" : "");
  return out;
}

std::string FailureMonitor::traceText() const { return trace_.text(describeShort); }

std::string FailureMonitor::dumpText() const {
  std::string text = traceText();
  const std::vector<std::string> latency = trace_.stats().lines();
  if (!latency.empty()) text += "calls by collective, size and algorithm:\n";
  for (const std::string& line : latency) text += "  " + line + "\n";
  return text;
}

std::string FailureMonitor::traceHeader() const {
  return "tutti flight recorder: communicator " + name_ + " rank " + std::to_string(rank_) + "/" +
         std::to_string(nranks_);
}

void FailureMonitor::dumpTrace(const std::string& cause) const {
  const std::string header =
      traceHeader() + " (pid " + std::to_string(::getpid()) + "), on " + cause + ":";
  if (writeTraceFile(header)) return;
  const std::string text = header + "\n" + dumpText();
  std::fwrite(text.data(), 1, text.size(), stderr);
}

bool FailureMonitor::writeTraceFile(const std::string& header) const {
  const std::string& path = traceFile_;
  if (path.empty()) return false;
  bool hasRank = false;
  std::string expanded;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size() && (path[i + 1] == 'r' || path[i + 1] == 'p')) {
      expanded += path[i + 1] == 'r' ? std::to_string(rank_) : std::to_string(::getpid());
      hasRank |= path[i + 1] == 'r';
      ++i;
    } else {
      expanded += path[i];
    }
  }
  if (!hasRank) expanded += "." + std::to_string(rank_);
  FILE* f = std::fopen(expanded.c_str(), "a");
  if (f == nullptr) {
    TUTTI_WARN(kInit, "TUTTI_TRACE_FILE=" << path << ": cannot open " << expanded << ": "
                                          << std::strerror(errno));
    return true;
  }
  std::string text = header + "\n" + dumpText();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return true;
}

}  // namespace tutti
