#include "tuning/tune_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "common/error.h"

namespace tutti::tuning {

void TuneEvidence::addJob(const std::vector<std::pair<std::string, double>>& seconds) {
  TUTTI_ASSERT(seconds.size() >= 2);
  double fastest = std::numeric_limits<double>::infinity();
  for (const auto& [algo, sec] : seconds) {
    TUTTI_ASSERT(sec > 0);
    fastest = std::min(fastest, sec);
  }
  bool same = seconds.size() == entries_.size();
  for (const auto& [algo, sec] : seconds) same = same && has(algo);
  if (!same) {
    jobs_ = 0;
    entries_.clear();
    for (const auto& [algo, sec] : seconds) entries_.push_back({algo, 0, 0});
  }
  for (Entry& e : entries_)
    for (const auto& [algo, sec] : seconds)
      if (algo == e.algo) {
        e.ratioSum += sec / fastest;
        e.seconds = sec;
      }
  ++jobs_;
}

bool TuneEvidence::has(const std::string& algo) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.algo == algo; });
}

int TuneEvidence::best() const {
  int best = -1;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (best < 0 || entries_[i].ratioSum < entries_[static_cast<size_t>(best)].ratioSum)
      best = static_cast<int>(i);
  return best;
}

double TuneEvidence::gap() const {
  const int b = best();
  if (entries_.size() < 2) return std::numeric_limits<double>::infinity();
  double runnerUp = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < entries_.size(); ++i)
    if (static_cast<int>(i) != b) runnerUp = std::min(runnerUp, entries_[i].ratioSum);
  return runnerUp / entries_[static_cast<size_t>(b)].ratioSum - 1;
}

std::string TuneEvidence::text() const {
  std::string out = std::to_string(jobs_);
  for (const Entry& e : entries_) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ":%.4f:%.4g", e.ratioSum, e.seconds);
    out += " " + e.algo + buf;
  }
  return out;
}

bool TuneEvidence::parse(const std::string& words, TuneEvidence* out) {
  std::istringstream in(words);
  TuneEvidence ev;
  std::string jobs;
  if (!(in >> jobs)) return false;
  int used = 0;
  if (std::sscanf(jobs.c_str(), "%d%n", &ev.jobs_, &used) != 1 ||
      used != static_cast<int>(jobs.size()) || ev.jobs_ < 1)
    return false;
  std::set<std::string> seen;
  std::string word;
  while (in >> word) {
    const size_t a = word.find(':'), b = word.find(':', a == std::string::npos ? a : a + 1);
    if (a == 0 || a == std::string::npos || b == std::string::npos) return false;
    Entry e{word.substr(0, a), 0, 0};
    const std::string ratio = word.substr(a + 1, b - a - 1), sec = word.substr(b + 1);
    char* end = nullptr;
    e.ratioSum = std::strtod(ratio.c_str(), &end);
    if (ratio.empty() || *end != '\0') return false;
    e.seconds = std::strtod(sec.c_str(), &end);
    if (sec.empty() || *end != '\0') return false;
    // Every job's ratio is >= 1 (its fastest's is 1); 1e-3 for the text's rounding.
    if (!std::isfinite(e.ratioSum) || e.ratioSum < ev.jobs_ - 1e-3 || !std::isfinite(e.seconds) ||
        e.seconds <= 0 || !seen.insert(e.algo).second)
      return false;
    ev.entries_.push_back(std::move(e));
  }
  if (ev.entries_.size() < 2) return false;
  *out = std::move(ev);
  return true;
}

}  // namespace tutti::tuning
