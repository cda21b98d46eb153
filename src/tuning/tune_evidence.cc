#include "tuning/tune_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "common/error.h"

namespace tutti::tuning {

double TuneEvidence::Entry::median() const {
  if (ratios.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> v = ratios;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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
    for (const auto& [algo, sec] : seconds) entries_.push_back({algo, {}, 0});
  }
  for (Entry& e : entries_)
    for (const auto& [algo, sec] : seconds)
      if (algo == e.algo) {
        e.ratios.push_back(sec / fastest);
        e.seconds = sec;
      }
  ++jobs_;
}

bool TuneEvidence::has(const std::string& algo) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.algo == algo; });
}

int TuneEvidence::best() const {
  auto rank = [](const Entry& e) {
    return std::pair(e.median(), std::accumulate(e.ratios.begin(), e.ratios.end(), 0.0));
  };
  const auto it =
      std::min_element(entries_.begin(), entries_.end(),
                       [&](const Entry& x, const Entry& y) { return rank(x) < rank(y); });
  return it == entries_.end() ? -1 : static_cast<int>(it - entries_.begin());
}

bool TuneEvidence::unanimous() const {
  // A job's fastest has the ratio 1 (exactly: its time over itself; 1.0000 in the text).
  return std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) {
    return std::all_of(e.ratios.begin(), e.ratios.end(), [](double r) { return r <= 1 + 1e-9; });
  });
}

double TuneEvidence::gap() const {
  const int b = best();
  if (entries_.size() < 2) return std::numeric_limits<double>::infinity();
  double runnerUp = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < entries_.size(); ++i)
    if (static_cast<int>(i) != b) runnerUp = std::min(runnerUp, entries_[i].median());
  return runnerUp / entries_[static_cast<size_t>(b)].median() - 1;
}

std::string TuneEvidence::text() const {
  std::string out = std::to_string(jobs_);
  for (const Entry& e : entries_) {
    out += " " + e.algo;
    char buf[32];
    for (size_t j = 0; j < e.ratios.size(); ++j) {
      std::snprintf(buf, sizeof buf, "%s%.4f", j == 0 ? ":" : ",", e.ratios[j]);
      out += buf;
    }
    std::snprintf(buf, sizeof buf, ":%.4g", e.seconds);
    out += buf;
  }
  return out;
}

namespace {
// A finite number filling `word` (strtod's whole match), else NaN.
double numberOf(const std::string& word) {
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  return word.empty() || *end != '\0' || !std::isfinite(v) ? std::nan("") : v;
}
}  // namespace

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
    Entry e{word.substr(0, a), {}, numberOf(word.substr(b + 1))};
    std::istringstream ratios(word.substr(a + 1, b - a - 1));
    std::string ratio;
    while (std::getline(ratios, ratio, ',')) {
      const double r = numberOf(ratio);
      if (!(r >= 1 - 1e-3)) return false;  // a job's fastest is 1; 1e-3 for the rounding
      e.ratios.push_back(r);
    }
    if (static_cast<int>(e.ratios.size()) != ev.jobs_ || !(e.seconds > 0) ||
        !seen.insert(e.algo).second)
      return false;
    ev.entries_.push_back(std::move(e));
  }
  if (ev.entries_.size() < 2) return false;
  *out = std::move(ev);
  return true;
}

}  // namespace tutti::tuning
