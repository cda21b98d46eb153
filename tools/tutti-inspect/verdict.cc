// The job-wide verdict (verdict.h).
#include "verdict.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace tutti::inspect {

namespace {

using State = CommReport::State;

std::string secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

// "allreduce(count 8, float32, sum) #12" or "a point-to-point batch of 2 operation(s)".
std::string callName(const CommReport& c) {
  if (c.collective == 0) return c.call.empty() ? "no call" : c.call;
  return c.call + " #" + std::to_string(c.collective);
}

bool stalled(const CommReport& c) { return c.state == State::kRunning && c.seconds >= kStalledSec; }

}  // namespace

std::string rankList(const std::vector<int>& ranksIn) {
  std::vector<int> r = ranksIn;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string out = r.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (i > 0) out += ", ";
    out += std::to_string(r[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(r[j]);
    i = j + 1;
  }
  return out;
}

std::vector<RankView> viewsOf(const JobFile& job, const std::vector<RankAnswer>& answers) {
  std::vector<RankView> views;
  for (const RankAnswer& a : answers) {
    RankView v;
    v.rank = a.rank;
    v.gone = a.gone;
    if (!a.answered) {
      v.why = "does not answer: " + a.why;
    } else {
      for (const CommReport& c : a.report.comms)
        if (c.name == job.name && c.nranks == job.nranks && c.rank == a.rank) v.comm = &c;
      if (!v.comm) v.why = "answers, but the communicator is no longer in its process (destroyed)";
    }
    views.push_back(std::move(v));
  }
  return views;
}

std::string describeView(const RankView& v) {
  if (!v.comm) return v.why;
  const CommReport& c = *v.comm;
  const std::string algo = c.algorithm.empty() ? "" : " [" + c.algorithm + "]";
  switch (c.state) {
    case State::kNoCall:
      return "has made no call yet";
    case State::kRunning: {
      std::string s = "in " + callName(c) + algo;
      s += c.seconds >= 0 ? " for " + secs(c.seconds) : " (under a second)";
      if (c.waitPeer >= 0)
        s += ", waiting for rank " + std::to_string(c.waitPeer) + " for " + secs(c.waitSeconds) +
             (c.waitStep.empty() ? "" : " (" + c.waitStep + ")");
      return s;
    }
    case State::kDone:
      return "between calls" + (c.seconds >= 0 ? ", " + secs(c.seconds) : std::string()) +
             " after " + callName(c) + algo + " (done)";
    case State::kFailed:
      return "failed: " + (c.failure.empty() ? callName(c) : c.failure);
  }
  return "?";
}

Verdict judge(const std::vector<RankView>& views) {
  std::vector<int> silent, gone, failed, waiting, idle;
  uint64_t top = 0;
  for (const RankView& v : views) {
    if (!v.comm) {
      (v.gone ? gone : silent).push_back(v.rank);
      continue;
    }
    if (v.comm->state == State::kFailed) failed.push_back(v.rank);
    top = std::max(top, v.comm->collective);  // its running call's, else its last one's
  }
  std::vector<std::string> parts;
  if (!failed.empty()) {
    const RankView& first = views[static_cast<size_t>(failed.front())];
    parts.push_back(rankList(failed) + (failed.size() == 1 ? " has" : " have") + " failed (rank " +
                    std::to_string(first.rank) + ": " + first.comm->failure + ")");
  }
  // Who waits, in which call, for whom; who has not reached that call.
  std::vector<int> behind;
  std::set<int> waitedFor;
  std::map<std::string, std::vector<int>> byCall;
  for (const RankView& v : views) {
    if (!v.comm || v.comm->state == State::kFailed) continue;
    const CommReport& c = *v.comm;
    if (stalled(c)) {
      byCall[callName(c)].push_back(v.rank);
      if (c.waitPeer >= 0) waitedFor.insert(c.waitPeer);
    }
    if (c.collective < top && c.collective != 0) behind.push_back(v.rank);
  }
  // Named as waited for: the ranks the others wait for that do not wait themselves (a ring
  // waits along itself for the one that holds it up); all of them when each waits.
  std::set<int> holding;
  for (int r : waitedFor) {
    const bool waitsToo = std::any_of(byCall.begin(), byCall.end(), [&](const auto& entry) {
      return std::find(entry.second.begin(), entry.second.end(), r) != entry.second.end();
    });
    if (!waitsToo) holding.insert(r);
  }
  if (holding.empty()) holding = waitedFor;
  for (auto& [call, ranks] : byCall) {
    std::string s = rankList(ranks) + (ranks.size() == 1 ? " waits" : " wait") + " in " + call;
    if (!holding.empty()) s += " for " + rankList(std::vector<int>(holding.begin(), holding.end()));
    parts.push_back(s);
  }
  // In a job that makes progress ranks are a call apart all the time: behind only counts
  // when someone waits.
  if (byCall.empty()) behind.clear();
  for (int r : behind) {
    const RankView& v = views[static_cast<size_t>(r)];
    parts.push_back("rank " + std::to_string(r) + " is behind: " + describeView(v));
  }
  if (!gone.empty())
    parts.push_back(rankList(gone) + (gone.size() == 1 ? "'s process is" : "' processes are") +
                    " gone");
  for (int r : silent)
    parts.push_back("rank " + std::to_string(r) + " " + views[static_cast<size_t>(r)].why);
  Verdict verdict;
  if (parts.empty()) {
    verdict.healthy = true;
    verdict.text = "healthy: all " + std::to_string(views.size()) +
                   " ranks answered and none waits for a peer (call #" + std::to_string(top) +
                   " reached)";
    return verdict;
  }
  for (size_t i = 0; i < parts.size(); ++i) verdict.text += (i ? "; " : "") + parts[i];
  return verdict;
}

}  // namespace tutti::inspect
