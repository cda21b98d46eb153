#include "tuning/online_tuner.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <sstream>

#include "common/error.h"

namespace tutti::tuning {

std::string TuneKey::text() const {
  std::ostringstream os;
  os << algo::collName(coll) << " n" << nranks << " h" << hosts << " b" << bucket << " w"
     << (window ? 1 : 0);
  return os.str();
}

bool TuneKey::parse(const std::string& words, TuneKey* out) {
  std::istringstream in(words);
  std::string coll, n, h, b, w, extra;
  if (!(in >> coll >> n >> h >> b >> w) || (in >> extra)) return false;
  TuneKey k;
  bool found = false;
  for (int c = 0; c <= static_cast<int>(algo::Coll::kAllToAllV); ++c)
    if (coll == algo::collName(static_cast<algo::Coll>(c))) {
      k.coll = static_cast<algo::Coll>(c);
      found = true;
    }
  auto number = [](const std::string& word, char prefix, int* value) {
    if (word.size() < 2 || word[0] != prefix) return false;
    int v = 0;
    int used = 0;
    if (std::sscanf(word.c_str() + 1, "%d%n", &v, &used) != 1 ||
        used != static_cast<int>(word.size()) - 1 || v < 0)
      return false;
    *value = v;
    return true;
  };
  int window = 0;
  if (!found || !number(n, 'n', &k.nranks) || !number(h, 'h', &k.hosts) ||
      !number(b, 'b', &k.bucket) || !number(w, 'w', &window) || window > 1 || k.nranks < 1 ||
      k.hosts < 1 || k.bucket > 63)
    return false;
  k.window = window == 1;
  *out = k;
  return true;
}

TuneKey tuneKeyOf(algo::Coll coll, int nranks, int hosts, size_t bytes, bool window) {
  TuneKey k;
  k.coll = coll;
  k.nranks = nranks;
  k.hosts = hosts;
  k.bucket = bytes <= 1 ? 0 : static_cast<int>(std::bit_width(bytes)) - 1;
  k.window = window;
  return k;
}

OnlineTuner::OnlineTuner(TuneSettings settings) : settings_(settings) {
  TUTTI_ASSERT(settings_.reps >= 1 && settings_.warmup >= 0 && settings_.maxCandidates >= 1);
}

void OnlineTuner::start(const TuneKey&, State& s, const std::vector<TuneOption>& ranked) {
  s.options.clear();
  for (const TuneOption& o : ranked) {
    if (static_cast<int>(s.options.size()) >= settings_.maxCandidates) break;
    if (!s.options.empty() && o.predictedSec > settings_.withinFactor * ranked[0].predictedSec)
      break;
    s.options.push_back(o);
  }
  if (s.options.size() <= 1) {  // nothing to compare: the model's choice is final
    s.phase = Phase::kSettled;
    s.winner = s.options.empty() ? std::string() : s.options[0].name;
    return;
  }
  s.phase = Phase::kExploring;
  s.position = 0;
  double all = 0;
  for (const TuneOption& o : s.options) all += std::max(o.predictedSec, 1e-9);
  s.reps = std::clamp(static_cast<int>(settings_.repBudgetSec / all), settings_.reps,
                      std::max(settings_.reps, settings_.maxReps));
  s.samples.assign(s.options.size() * static_cast<size_t>(s.reps), -1.0);
  s.calls = planCalls(static_cast<int>(s.options.size()), s.reps, settings_.warmup);
}

std::vector<OnlineTuner::PlannedCall> OnlineTuner::planCalls(int options, int reps, int warmup) {
  std::vector<PlannedCall> calls;
  const int firstPass = (reps + 1) / 2;
  for (int pass = 0; pass < 2; ++pass) {
    const int timed = pass == 0 ? firstPass : reps - firstPass;
    if (timed == 0) continue;
    for (int i = 0; i < options; ++i) {
      const int option = pass == 0 ? i : options - 1 - i;
      for (int w = 0; w < warmup; ++w) calls.push_back({option, -1});
      for (int t = 0; t < timed; ++t)
        calls.push_back({option, option * reps + (pass == 0 ? 0 : firstPass) + t});
    }
  }
  return calls;
}

OnlineTuner::Pick OnlineTuner::pickFor(State& s) {
  switch (s.phase) {
    case Phase::kCounting:
      ++s.counted;
      return {};
    case Phase::kSettled:
      return {s.winner, -1, true};
    case Phase::kExploring:
      break;
  }
  if (s.position >= static_cast<int>(s.calls.size()))
    return {s.options[0].name, -1, false};  // awaiting conclude()
  const PlannedCall& c = s.calls[static_cast<size_t>(s.position++)];
  ++explored_;
  return {s.options[static_cast<size_t>(c.option)].name, c.sample, false};
}

void OnlineTuner::record(const TuneKey& key, int sample, double seconds) {
  auto it = states_.find(key);
  if (it == states_.end() || it->second.phase != Phase::kExploring || sample < 0) return;
  TUTTI_ASSERT(static_cast<size_t>(sample) < it->second.samples.size());
  it->second.samples[static_cast<size_t>(sample)] = seconds;
}

bool OnlineTuner::readyToConclude(const TuneKey& key) const {
  auto it = states_.find(key);
  if (it == states_.end() || it->second.phase != Phase::kExploring) return false;
  return it->second.position >= static_cast<int>(it->second.calls.size());
}

namespace {
// The mean of the recorded (>= 0) values; -1 when none. The slowest is left out when it took
// more than twice the second slowest: one call the machine held up (a rank descheduled). Slow
// calls that come with an algorithm come more than once, and stay.
double meanOfTimes(const std::vector<double>& v) {
  double sum = 0, slowest = 0, second = 0;
  int n = 0;
  for (double x : v) {
    if (x < 0) continue;
    sum += x, ++n;
    if (x > slowest)
      second = slowest, slowest = x;
    else
      second = std::max(second, x);
  }
  if (n >= 3 && slowest > 2 * second) sum -= slowest, --n;
  return n == 0 ? -1 : sum / n;
}
}  // namespace

std::vector<double> OnlineTuner::measured(const TuneKey& key) const {
  auto it = states_.find(key);
  TUTTI_ASSERT(it != states_.end());
  const State& s = it->second;
  const size_t reps = static_cast<size_t>(s.reps);
  std::vector<double> out(s.options.size());
  for (size_t i = 0; i < s.options.size(); ++i)
    out[i] = meanOfTimes({s.samples.begin() + static_cast<long>(i * reps),
                          s.samples.begin() + static_cast<long>((i + 1) * reps)});
  return out;
}

std::string OnlineTuner::conclude(const TuneKey& key, const std::vector<double>& measured) {
  State& s = states_.at(key);
  TUTTI_ASSERT(measured.size() == s.options.size());
  int best = -1;
  for (size_t i = 0; i < s.options.size(); ++i)
    if (measured[i] >= 0 && (best < 0 || measured[i] < measured[static_cast<size_t>(best)]))
      best = static_cast<int>(i);
  // The model's choice stays unless another is faster by more than the margin (noise).
  if (best > 0 && measured[0] >= 0 &&
      measured[0] <= measured[static_cast<size_t>(best)] * (1 + settings_.keepModelMargin))
    best = 0;
  if (best < 0) best = 0;
  s.winner = s.options[static_cast<size_t>(best)].name;
  s.phase = Phase::kSettled;
  std::ostringstream os;
  os.precision(4);
  os << key.text() << ": " << s.winner << " after " << s.calls.size()
     << " explored calls (model chose " << s.options[0].name << ";";
  for (size_t i = 0; i < s.options.size(); ++i) {
    os << " " << s.options[i].name << " predicted " << s.options[i].predictedSec * 1e6
       << " us, measured ";
    if (measured[i] < 0)
      os << "none";
    else
      os << measured[i] * 1e6 << " us";
    os << (i + 1 < s.options.size() ? "," : ")");
  }
  return os.str();
}

void OnlineTuner::adopt(const TuneKey& key, const std::string& algo) {
  State& s = states_[key];
  s.phase = Phase::kSettled;
  s.winner = algo;
  s.options.clear();
  s.samples.clear();
}

std::string OnlineTuner::winner(const TuneKey& key) const {
  auto it = states_.find(key);
  return it == states_.end() || it->second.phase != Phase::kSettled ? std::string()
                                                                    : it->second.winner;
}

std::map<TuneKey, std::string> OnlineTuner::winners() const {
  std::map<TuneKey, std::string> out;
  for (const auto& [k, s] : states_)
    if (s.phase == Phase::kSettled && !s.winner.empty()) out[k] = s.winner;
  return out;
}

}  // namespace tutti::tuning
