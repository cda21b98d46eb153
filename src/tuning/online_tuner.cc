#include "tuning/online_tuner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
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
  if (s.confirming) return startConfirmation(s, ranked);
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
  s.modelChoice = s.options[0].name;
  double all = 0;
  for (const TuneOption& o : s.options) all += std::max(o.predictedSec, 1e-9);
  s.reps = std::clamp(static_cast<int>(settings_.repBudgetSec / all), settings_.reps,
                      std::max(settings_.reps, settings_.maxReps));
  s.samples.assign(s.options.size() * static_cast<size_t>(s.reps), -1.0);
  s.calls = planCalls(static_cast<int>(s.options.size()), s.reps, passesFor(settings_, s.reps),
                      settings_.warmup, 0);
}

bool OnlineTuner::needsConfirmation(const TuneEvidence& e) const {
  // One job's verdict, however clear, may come from a slow state of the machine that fell on
  // one finalist more than another: a second job measures again. Later jobs while the evidence
  // is close or the jobs disagree.
  return e.jobs() < settings_.confirmJobs && e.entries().size() >= 2 &&
         (e.jobs() == 1 || !e.unanimous() || e.gap() <= settings_.confirmWithin);
}

void OnlineTuner::startConfirmation(State& s, const std::vector<TuneOption>& ranked) {
  s.options.clear();
  double round = 0;
  for (const TuneOption& o : ranked)
    if (s.evidence.has(o.name)) s.options.push_back(o);
  for (const TuneEvidence::Entry& e : s.evidence.entries()) round += e.seconds;
  // This call's count leaves too few of them, or only one may run: the winner stands.
  if (s.options.size() < 2 || settings_.maxCandidates < 2) {
    s.phase = Phase::kSettled;
    s.confirming = false;
    return;
  }
  s.phase = Phase::kExploring;
  s.modelChoice.clear();  // no margin: the evidence of every job decides
  std::vector<int> all(s.options.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  startRunoff(s, all, round);
}

int OnlineTuner::passStart(int reps, int passes, int p) {
  return p * (reps / passes) + std::min(p, reps % passes);
}

std::vector<OnlineTuner::PlannedCall> OnlineTuner::planCalls(int options, int reps, int passes,
                                                             int warmup, int cooldown) {
  std::vector<PlannedCall> calls;
  for (int pass = 0; pass < passes; ++pass) {
    const int first = passStart(reps, passes, pass),
              timed = passStart(reps, passes, pass + 1) - first;
    if (timed == 0) continue;
    for (int i = 0; i < options; ++i) {
      const int option = pass % 2 == 0 ? i : options - 1 - i;
      const size_t start = calls.size();
      for (int w = 0; w < warmup; ++w) calls.push_back({option, -1});
      for (int t = 0; t < timed; ++t) calls.push_back({option, option * reps + first + t});
      for (int c = 0; c < cooldown; ++c) calls.push_back({option, -1});
      calls[start].block = warmup + timed + cooldown;
    }
  }
  return calls;
}

OnlineTuner::Pick OnlineTuner::pickFor(State& s) {
  switch (s.phase) {
    case Phase::kCounting:
      ++s.counted;
      return {s.confirming ? s.winner : std::string(), -1, false,
              std::max(0, settings_.exploreAfter - s.counted)};
    case Phase::kSettled:
      return {s.winner, -1, true};
    case Phase::kExploring:
      break;
  }
  if (s.position >= static_cast<int>(s.calls.size()))
    return {s.options[0].name, -1, false};  // awaiting conclude()
  const PlannedCall& next = s.calls[static_cast<size_t>(s.position)];
  if (next.block > 0 && settings_.exploreShare < 1 &&
      static_cast<double>(s.explored + next.block) >
          settings_.exploreShare * static_cast<double>(s.seen))  // between blocks
    return {s.confirming ? s.winner : s.options[0].name, -1, false,
            callsBeforeBlockFits(s, next.block)};
  const PlannedCall& c = s.calls[static_cast<size_t>(s.position++)];
  ++explored_;
  ++s.explored;
  return {s.options[static_cast<size_t>(c.option)].name, c.sample, false};
}

int OnlineTuner::callsBeforeBlockFits(const State& s, int block) const {
  // The first call count m with explored + block <= share * m.
  const double need = static_cast<double>(s.explored + block);
  auto m = static_cast<long>(std::ceil(need / settings_.exploreShare));
  while (m > 0 && settings_.exploreShare * static_cast<double>(m - 1) >= need) --m;
  while (settings_.exploreShare * static_cast<double>(m) < need) ++m;
  return static_cast<int>(std::clamp<long>(m - 1 - s.seen, 0, std::numeric_limits<int>::max()));
}

void OnlineTuner::skip(const TuneKey& key, int calls) {
  State& s = states_[key];
  s.seen += calls;
  if (s.phase == Phase::kCounting) s.counted += calls;
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
// calls that come with an algorithm come more than once, and stay; but each counts at most
// kClipOverMedian x the median: a rank descheduled for a time slice (milliseconds, against
// microseconds for a small call) must not outweigh all other calls, and two of them in 15 calls
// are not the algorithm's rate of them.
constexpr double kClipOverMedian = 4;

double meanOfTimes(std::vector<double> v) {
  std::erase_if(v, [](double x) { return x < 0; });
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  if (v.size() >= 3 && v.back() > 2 * v[v.size() - 2]) v.pop_back();
  const double clip = kClipOverMedian * v[v.size() / 2];
  double sum = 0;
  for (double x : v) sum += std::min(x, clip);
  return sum / static_cast<double>(v.size());
}

// The median of the recorded (>= 0) values; -1 when none.
double medianOfTimes(std::vector<double> v) {
  std::erase_if(v, [](double x) { return x < 0; });
  if (v.empty()) return -1;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// One candidate's time from the samples of its two halves of the passes: the mean of all
// (meanOfTimes), or of one half alone when the other's median is more than twice its own. Then
// the machine was slower for all of that half's blocks (a burst of load, a descheduled rank's
// time slice spanning them), not the candidate: slow calls that come with it come in both
// halves, and the median of a half hardly moves for one of them.
double candidateTime(const std::vector<double>& first, const std::vector<double>& second) {
  const double a = medianOfTimes(first), b = medianOfTimes(second);
  if (a >= 0 && b >= 0 && a > 2 * b) return meanOfTimes(second);
  if (a >= 0 && b >= 0 && b > 2 * a) return meanOfTimes(first);
  std::vector<double> all = first;
  all.insert(all.end(), second.begin(), second.end());
  return meanOfTimes(all);
}
}  // namespace

std::vector<double> OnlineTuner::measured(const TuneKey& key) const {
  auto it = states_.find(key);
  TUTTI_ASSERT(it != states_.end());
  const State& s = it->second;
  // As planCalls lays the samples out: the first half of the passes, then the second.
  const int passes = passesFor(settings_, s.reps);
  const long reps = s.reps, firstPass = passStart(s.reps, passes, (passes + 1) / 2);
  const size_t n = s.options.size();
  std::vector<double> out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const auto begin = s.samples.begin() + static_cast<long>(i) * reps;
    const std::vector<double> first(begin, begin + firstPass),
        second(begin + firstPass, begin + reps);
    out[i] = candidateTime(first, second);
    out[n + i] = meanOfTimes(first);
    out[2 * n + i] = meanOfTimes(second);
  }
  return out;
}

double OnlineTuner::margin(const State& s) const {
  return s.runoff ? settings_.runoffKeepModelMargin : settings_.keepModelMargin;
}

int OnlineTuner::fastest(const State& s, const std::vector<double>& measured) const {
  int best = -1;
  for (size_t i = 0; i < s.options.size(); ++i)
    if (measured[i] >= 0 && (best < 0 || measured[i] < measured[static_cast<size_t>(best)]))
      best = static_cast<int>(i);
  // The model's choice stays unless another is faster by more than the margin (noise).
  if (best > 0 && measured[0] >= 0 && s.options[0].name == s.modelChoice &&
      measured[0] <= measured[static_cast<size_t>(best)] * (1 + margin(s)))
    best = 0;
  return best < 0 ? 0 : best;
}

std::vector<int> OnlineTuner::finalists(const std::vector<double>& measured, int best,
                                        double within, int keep) const {
  const double b = measured[static_cast<size_t>(best)];
  std::vector<int> close;
  for (size_t i = 0; i < measured.size(); ++i)
    if (b >= 0 && measured[i] >= 0 && (std::isinf(within) || measured[i] <= b * (1 + within)))
      close.push_back(static_cast<int>(i));
  // The fastest few, `best` (which the margin may have kept over a faster one) and `keep` first.
  std::sort(close.begin(), close.end(), [&](int x, int y) {
    return std::pair(x != best && x != keep, measured[static_cast<size_t>(x)]) <
           std::pair(y != best && y != keep, measured[static_cast<size_t>(y)]);
  });
  if (static_cast<int>(close.size()) > settings_.runoffFinalists)
    close.resize(static_cast<size_t>(std::max(1, settings_.runoffFinalists)));
  std::sort(close.begin(), close.end());  // the model's order
  return close.size() >= 2 ? close : std::vector<int>{};
}

void OnlineTuner::startRunoff(State& s, const std::vector<int>& finalists, double secondsPerRound) {
  // The model's order is kept: its choice, if a finalist, stays first (the margin keeps it).
  std::vector<TuneOption> options;
  for (int i : finalists) options.push_back(s.options[static_cast<size_t>(i)]);
  s.options = std::move(options);
  if (!s.runoff) {
    s.runoffRound = 0;
    s.runoffSums.assign(s.options.size(), 0.0);
  }
  s.runoff = true;
  s.position = 0;
  s.reps = std::clamp(static_cast<int>(settings_.runoffBudgetSec / std::max(secondsPerRound, 1e-9)),
                      settings_.runoffMinReps,
                      std::max(settings_.runoffMinReps, settings_.runoffMaxReps));
  s.samples.assign(s.options.size() * static_cast<size_t>(s.reps), -1.0);
  s.calls = planCalls(static_cast<int>(s.options.size()), s.reps, passesFor(settings_, s.reps),
                      settings_.runoffWarmup, settings_.runoffCooldown);
}

bool OnlineTuner::passesAgree(const State& s, const std::vector<double>& times, int best) const {
  const size_t n = times.size() / 3;
  const size_t b = static_cast<size_t>(best);
  const bool modelsChoice = best == 0 && s.options[0].name == s.modelChoice;  // as fastest()
  for (size_t half = 1; half <= 2; ++half) {
    const double* t = times.data() + half * n;
    double fastest = -1;
    for (size_t i = 0; i < n; ++i)
      if (t[i] >= 0 && (fastest < 0 || t[i] < fastest)) fastest = t[i];
    // The margin keeps the model's choice against one that much faster: no round changes that.
    const double allowed = modelsChoice ? std::max(settings_.runoffPassesAgree, margin(s))
                                        : settings_.runoffPassesAgree;
    if (t[b] >= 0 && t[b] > fastest * (1 + allowed)) return false;
  }
  return true;
}

namespace {
// How many candidates measured faster than candidate i (those without times not counted).
size_t fasterThan(const std::vector<double>& measured, int i) {
  const double t = measured[static_cast<size_t>(i)];
  return static_cast<size_t>(
      std::count_if(measured.begin(), measured.end(), [&](double m) { return m >= 0 && m < t; }));
}

// "a, b and c" of the options' names at `indices`.
std::string namesOf(const std::vector<TuneOption>& options, const std::vector<int>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size(); ++i)
    out += std::string(i == 0                   ? ""
                       : i + 1 < indices.size() ? ", "
                                                : " and ") +
           options[static_cast<size_t>(indices[i])].name;
  return out;
}
}  // namespace

std::string OnlineTuner::conclude(const TuneKey& key, const std::vector<double>& agreed) {
  State& s = states_.at(key);
  const size_t n = s.options.size();
  TUTTI_ASSERT(agreed.size() == n || agreed.size() == 3 * n);
  const std::vector<double> measured(agreed.begin(), agreed.begin() + static_cast<long>(n));
  if (s.runoff) {  // the rounds' times summed (a finalist without times in one: none)
    ++s.runoffRound;
    for (size_t i = 0; i < n; ++i)
      s.runoffSums[i] = measured[i] < 0 || s.runoffSums[i] < 0 ? -1 : s.runoffSums[i] + measured[i];
  }
  const int best = fastest(s, s.runoff ? s.runoffSums : measured);
  std::ostringstream os;
  os.precision(4);
  os << key.text() << ": ";
  std::ostringstream times;
  times.precision(4);
  for (size_t i = 0; i < n; ++i) {
    times << " " << s.options[i].name << " predicted " << s.options[i].predictedSec * 1e6
          << " us, measured ";
    if (measured[i] < 0)
      times << "none";
    else
      times << measured[i] * 1e6 << " us";
    times << (i + 1 < n ? "," : ")");
  }
  std::vector<int> close;
  if (!s.runoff && settings_.runoffMaxReps > 0) {
    // The round winner's timed calls: a round of them shorter than trustRoundSec is not trusted.
    const double roundSec = std::max(measured[static_cast<size_t>(best)], 0.0) * s.reps;
    const bool trusted = roundSec >= settings_.trustRoundSec;
    // An untrusted round ranks the candidates but excludes none by how far behind it measured
    // them (a slow stretch of the machine can hold up all of one candidate's few calls), and
    // it does not overrule the model alone: the model's choice is a finalist.
    const int model = !trusted && s.options[0].name == s.modelChoice ? 0 : -1;
    close = finalists(measured, best,
                      trusted ? settings_.runoffWithin : std::numeric_limits<double>::infinity(),
                      model);
    if (!close.empty()) {
      os << "run-off of " << namesOf(s.options, close);
      if (trusted) {
        os << " (within " << settings_.runoffWithin * 100 << "%)";
      } else {
        const bool modelAdded = model >= 0 && fasterThan(measured, model) >= close.size();
        os << " (the fastest " << close.size() - (modelAdded ? 1 : 0)
           << (modelAdded ? " and the model's choice" : "") << ": the first round's " << s.reps
           << " calls of " << s.options[static_cast<size_t>(best)].name << " took "
           << roundSec * 1e3 << " ms, too short to trust)";
      }
    }
  } else if (s.runoff && s.runoffRound < settings_.runoffRounds && agreed.size() == 3 * n &&
             !passesAgree(s, agreed, best)) {
    for (size_t i = 0; i < n; ++i) close.push_back(static_cast<int>(i));
    os << "run-off round " << s.runoffRound + 1 << " of " << namesOf(s.options, close)
       << " (the passes of round " << s.runoffRound << " disagreed on "
       << s.options[static_cast<size_t>(best)].name << ")";
  }
  if (!close.empty()) {
    double round = 0;
    for (int i : close) round += std::max(measured[static_cast<size_t>(i)], 0.0);
    os << " after " << s.explored << " calls ("
       << (s.confirming ? "confirming the cache's " + s.winner : "model chose " + s.modelChoice)
       << ";" << times.str();
    startRunoff(s, close, round);
    return os.str();
  }
  const std::string adopted = s.confirming ? s.winner : std::string();
  s.winner = s.options[static_cast<size_t>(best)].name;
  s.phase = Phase::kSettled;
  const std::string evidence = s.runoff ? addRunoffEvidence(s, adopted) : std::string();
  os << s.winner << " after " << s.explored << " explored calls (";
  if (!adopted.empty()) os << "confirming the cache's " << adopted << ": ";
  if (!s.runoff)
    os << "model chose " << s.modelChoice << ";";
  else if (s.runoffRound == 1)
    os << "run-off;";
  else
    os << "run-off, " << s.runoffRound << " rounds summed;";
  os << times.str() << evidence;
  s.confirming = false;
  return os.str();
}

std::string OnlineTuner::addRunoffEvidence(State& s, const std::string& adopted) {
  std::vector<std::pair<std::string, double>> job;
  for (size_t i = 0; i < s.options.size(); ++i)
    if (s.runoffSums[i] > 0)  // per call: the rounds' mean
      job.emplace_back(s.options[i].name, s.runoffSums[i] / std::max(1, s.runoffRound));
  if (job.size() < 2) return "";
  s.evidence.addJob(job);
  // Two jobs that disagree cannot tell which of them ran in a slow state: the adopted choice
  // stays until a third job's makes a median.
  if (s.confirming)
    s.winner = s.evidence.jobs() >= 3 || s.evidence.unanimous()
                   ? s.evidence.entries()[static_cast<size_t>(s.evidence.best())].algo
                   : adopted;
  std::ostringstream os;
  os.precision(4);
  os << "; evidence of " << s.evidence.jobs() << (s.evidence.jobs() == 1 ? " job" : " jobs")
     << ", time over the fastest" << (s.evidence.jobs() == 1 ? ":" : " (median):");
  for (const TuneEvidence::Entry& e : s.evidence.entries())
    os << " " << e.algo << " " << e.median();
  if (needsConfirmation(s.evidence)) os << ", to be confirmed by the next job";
  return os.str();
}

void OnlineTuner::adopt(const TuneKey& key, const std::string& algo, const TuneEvidence* evidence) {
  State& s = states_[key];
  s = State{};
  s.winner = algo;
  if (evidence != nullptr) s.evidence = *evidence;
  s.confirming = evidence != nullptr && evidence->has(algo) && needsConfirmation(*evidence);
  s.phase = s.confirming ? Phase::kCounting : Phase::kSettled;
}

const TuneEvidence* OnlineTuner::evidence(const TuneKey& key) const {
  auto it = states_.find(key);
  return it == states_.end() || it->second.phase != Phase::kSettled ||
                 it->second.evidence.jobs() == 0
             ? nullptr
             : &it->second.evidence;
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
