// OnlineTuner: the automatic choice refined by measurement. For each call shape seen often
// (collective, rank count, hosts, message-size bucket, shared window or not: a TuneKey) it
// tries the cost model's few best candidates over early calls and keeps the fastest. They run
// in passes, every other one in reverse order (A B C, then C B A, ...), each candidate a block
// of consecutive calls per pass whose first `warmup` calls are untimed: every timed call follows
// a call of its own candidate (a loop's steady state, not the switch from another), and a drift
// or a burst of load on the machine falls on more than one candidate. `reps` timed calls per
// candidate (more for small calls, TuneSettings), spread over two passes, or more where they
// would make a block of more than `blockReps` timed calls. The caller times the
// calls, agrees with the other ranks on the slowest rank's time of each candidate (the same
// numbers on every rank) and hands them to conclude(); from then on the key's winner is used,
// unless others came within TuneSettings::runoffWithin of the fastest (the fastest few whatever
// their times when the round was too short to trust: trustRoundSec): then those few run again,
// alone, in longer blocks and more passes, and that run-off's times decide. Winners learned earlier
// (a cache) are adopted without exploring; with confirmJobs above 1 (opt-in), a run-off's winner
// whose evidence (the run-offs of earlier jobs, TuneEvidence) is of one job, or close, or disputed
// is confirmed: one more run-off of the same finalists, and every job's evidence together decides
// (confirmJobs, confirmWithin). It holds no clocks and no communicator: every decision comes from
// the call sequence and the agreed times, so ranks that make the same calls decide alike.
// docs/tuning.md, "Online refinement".
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "interfaces/algorithm.h"
#include "tuning/tune_evidence.h"

namespace tutti::tuning {

struct TuneKey {
  algo::Coll coll{};
  int nranks = 0;
  int hosts = 0;
  int bucket = 0;  // floor(log2(bytes per rank)); 0 for 0 or 1 byte
  bool window = false;
  auto operator<=>(const TuneKey&) const = default;
  // "allreduce n4 h1 b20 w1" (the cache's choice lines).
  std::string text() const;
  // Parses text(); false when the words are not a key.
  static bool parse(const std::string& words, TuneKey* out);
};

// The key of a call: bytes is the per-rank message size the perf tests report.
TuneKey tuneKeyOf(algo::Coll coll, int nranks, int hosts, size_t bytes, bool window);

struct TuneSettings {
  // Calls of a key that use the model before exploring starts: more than a perf test makes
  // of a size with nccl-tests' defaults (5 + 20 out of place, 5 + 20 in place), so that such a
  // job never explores, whatever the share below.
  int exploreAfter = 64;
  // Exploring calls are at most this share of a key's calls: a block of one candidate's calls
  // starts only when the key's explored calls, the block's with them, stay within this share
  // of its calls so far; the calls between blocks run the model's choice (or the adopted
  // winner). A short job (a perf test's 20 calls a size) then explores nothing and runs at the
  // model's speed; a long one explores a bounded share of its calls and settles after about
  // (its explored calls) / exploreShare calls. 1 or more: every block at once (calls in a row).
  double exploreShare = 0.125;
  int maxCandidates = 8;          // the model's best that are tried (at most: every all-reduce
                                  // algorithm on one host)
  double withinFactor = 3;        // ... and only those predicted within this factor of the best
  int warmup = 1;                 // untimed calls per candidate and pass (schedule built, caches
                                  // warm, the switch from the previous candidate)
  int reps = 5;                   // timed calls per candidate (their mean counts), at least
  int maxReps = 15;               // ... and up to this many while they fit in the budget below
  double repBudgetSec = 2e-3;     // predicted time of all candidates' timed calls (small calls
                                  // are cheap to repeat and noisier: more of them)
  int blockReps = 8;              // timed calls per candidate and pass, at most: more make more
                                  // passes (a candidate's calls spread over the round)
  double keepModelMargin = 0.10;  // the model's choice stays unless beaten by more than this
  // ... and in a run-off (longer blocks, rounds summed: firmer times), by more than this. A
  // choice kept by a margin may be that much slower than the best for good, so it stays well
  // inside the 10% a user would call a miss.
  double runoffKeepModelMargin = 0.05;
  // A run-off when others come within runoffWithin of the fastest: the fastest few
  // (runoffFinalists at most) run again, alone, in longer blocks (closer to a loop's steady
  // state: a block's first calls, still out of step after the switch, and its last, overlapped
  // by the next candidate's start, weigh less), with runoffWarmup and runoffCooldown untimed
  // calls per block, and that decides. Timed calls per finalist: as many of
  // runoffMinReps..runoffMaxReps as fit in runoffBudgetSec at their measured times (0 max: no
  // run-off), in blocks of blockReps at most.
  double runoffWithin = 0.25;
  // A first round whose winner's timed calls (the fastest's, or the model's choice kept by the
  // margin) took less than this in all is too short to trust: its fastest few
  // (runoffFinalists) go to the run-off, however far behind it measured them, and the model's
  // choice among them (in place of the slowest of them; it did not overrule the model: a
  // 4-rank all-gather's round put `direct` fourth of four, 1.1-1.3x behind, where its loop is
  // 1.3x faster than the `bruck` the run-off then kept). With more ranks
  // than cores one rank's wait for a core (milliseconds) can hold up all of a short block's
  // calls and none of another's (a 4-rank reduce-scatter's 5 calls of `direct` at 6x its
  // loop's time), and a block's few calls after one untimed call can miss an algorithm's
  // steady state (a ring's pipeline), which the run-off's longer blocks reach.
  double trustRoundSec = 20e-3;
  int runoffFinalists = 3;
  int runoffMinReps = 4;
  int runoffMaxReps = 32;
  double runoffBudgetSec = 32e-3;
  int runoffWarmup = 2;
  int runoffCooldown = 1;
  // A run-off whose passes disagree (in one of them its winner was more than runoffPassesAgree
  // slower than another finalist) runs again, up to runoffRounds rounds in all; the sum of the
  // rounds' times decides. A slow stretch of the machine that fell on one finalist's block, not
  // enough to set its pass aside (candidateTime), must not decide alone.
  int runoffRounds = 3;
  double runoffPassesAgree = 0.05;
  // A run-off's verdict is evidence (TuneEvidence) kept with the winner; the next job that adopts
  // the winner runs the run-off of the same finalists again (after exploreAfter calls of the
  // adopted winner): when both jobs measured one finalist fastest, that one is kept; when they
  // disagree, the adopted winner stays and a third job runs it off again, as do later ones, up
  // to confirmJobs jobs of evidence, while the jobs disagree or the runner-up is within
  // confirmWithin; the lowest median ratio decides. 1: one job's verdict is final.
  int confirmJobs = 1;  // off by default: no gain shown (docs/tuning.md)
  double confirmWithin = 0.15;
};

// The passes `reps` timed calls per candidate take: two, or more where a block would have more
// than s.blockReps timed calls.
constexpr int passesFor(const TuneSettings& s, int reps) {
  const int block = std::max(1, s.blockReps);
  return std::max(2, (reps + block - 1) / block);
}

// The most calls of one key from its first to the one that settles its winner: exploreAfter on
// the model's choice, every candidate's blocks at the most timed calls, then every run-off round
// with the most finalists at theirs. A caller that must see every key settled (a test, a bench's
// sweep) makes at least this many calls of each.
constexpr int maxCallsToSettle(const TuneSettings& s) {
  const int reps = std::max(s.reps, s.maxReps);
  const int explore = s.maxCandidates * (passesFor(s, reps) * s.warmup + reps);
  const int runoffReps = std::max(s.runoffMinReps, s.runoffMaxReps);
  const int round =
      s.runoffMaxReps <= 0
          ? 0
          : s.runoffFinalists *
                (passesFor(s, runoffReps) * (s.runoffWarmup + s.runoffCooldown) + runoffReps);
  const int explored = explore + s.runoffRounds * round;
  if (s.exploreShare >= 1) return s.exploreAfter + explored;
  // Below a share of 1 the last block starts once the calls reach explored / share (a block
  // is at most a candidate's reps with its untimed calls), and ends that block later.
  const int block =
      std::max(reps + passesFor(s, reps) * s.warmup,
               runoffReps + passesFor(s, runoffReps) * (s.runoffWarmup + s.runoffCooldown));
  return s.exploreAfter + static_cast<int>(explored / s.exploreShare) + 1 + block;
}

struct TuneOption {
  std::string name;
  double predictedSec = 0;
};

class OnlineTuner {
 public:
  explicit OnlineTuner(TuneSettings settings);

  struct Pick {
    std::string algo;      // "" : use the model's choice (the caller's ranking)
    int sample = -1;       // >= 0: time this call and record() it under this index
    bool settled = false;  // the key's choice is final (the caller may cache it)
    // The key's next this many calls get this pick too, untimed (the calls before exploring
    // starts, or between its blocks): a caller may reuse it without asking, and report the
    // calls it made so with skip() before it next asks for the key.
    int sameNext = 0;
  };
  // The next call of `key`. ranked: the model's applicable candidates, cheapest first (called
  // only when the key starts exploring).
  template <typename Ranked>
  Pick next(const TuneKey& key, Ranked&& ranked) {
    State& s = states_[key];
    ++s.seen;
    if (s.phase == Phase::kCounting && s.counted + 1 > settings_.exploreAfter)
      start(key, s, ranked());
    return pickFor(s);
  }
  // `calls` calls of key made with a pick's sameNext, without asking (at most that many).
  void skip(const TuneKey& key, int calls);
  // This rank's time of the call picked with `sample`.
  void record(const TuneKey& key, int sample, double seconds);
  // True when key's exploration has all its samples: the caller agrees on measured(key) (the
  // maximum over ranks of each) and calls conclude().
  bool readyToConclude(const TuneKey& key) const;
  // This rank's time per candidate: the mean of its timed calls (-1: none was timed), what a
  // loop of them costs (a candidate with rare slow calls pays for them), leaving out a slowest
  // call that took more than twice the next slowest (one call the machine held up, with more
  // ranks than cores, must not decide) and counting none for more than 4x the median (a time
  // slice a rank was descheduled for is milliseconds, 100x a small call); a half of the passes
  // (the first pass, or the second, when there are two) whose calls have more than twice the
  // median of the other half's is left out (the machine, not the candidate, was slow then).
  // Agreed as the slowest rank's mean, as a perf test's loop reports it, rather than the slowest
  // rank of each call (which, with more ranks than cores, is nearly always a rank that was
  // descheduled). After the candidates' times come each one's first half's, then each one's
  // second half's (the mean of that half's calls, -1: none): 3 x candidates values.
  std::vector<double> measured(const TuneKey& key) const;
  // Chooses the winner from the agreed times per candidate, or starts a run-off of the fastest
  // when others are close to it, or another round of a run-off whose passes disagree (the key
  // explores on: readyToConclude() again at its end, and winner() stays "" until then); returns
  // a one-line explanation (candidates, their predicted and measured times, the winner or the
  // run-off). agreedSeconds: measured()'s layout, or the candidates' times alone (halves taken
  // to agree).
  std::string conclude(const TuneKey& key, const std::vector<double>& agreedSeconds);
  // A winner learned earlier: used from the key's first call, and for good unless `evidence`
  // (its run-offs' so far; null: none, the winner stands) asks for confirmation (above).
  void adopt(const TuneKey& key, const std::string& algo, const TuneEvidence* evidence = nullptr);
  // The key's evidence once it has a winner: its run-offs' of every job so far (null when the
  // winner came without a run-off).
  const TuneEvidence* evidence(const TuneKey& key) const;
  // The key's winner, "" while it has none.
  std::string winner(const TuneKey& key) const;
  // Every key that has a winner (learned here or adopted).
  std::map<TuneKey, std::string> winners() const;
  // Calls spent exploring so far (all keys).
  long exploredCalls() const { return explored_; }

 private:
  enum class Phase { kCounting, kExploring, kSettled };
  struct PlannedCall {
    int option = 0;   // the candidate it runs
    int sample = -1;  // where its time goes (-1: untimed)
    int block = 0;    // the first call of a block of this many calls of one candidate (else 0)
  };
  struct State {
    Phase phase = Phase::kCounting;
    int counted = 0;   // calls seen while counting
    int seen = 0;      // calls of the key (every phase)
    int position = 0;  // the next exploring call's index in `calls`
    int explored = 0;  // calls explored so far (every round)
    bool runoff = false;
    int runoffRound = 0;             // run-off rounds concluded
    std::vector<double> runoffSums;  // their agreed times per option, summed
    std::string modelChoice;         // the model's first candidate
    std::vector<TuneOption> options;
    int reps = 0;                    // timed calls per option (settings, scaled by the budget)
    std::vector<PlannedCall> calls;  // the exploration, call by call
    std::vector<double> samples;     // options x reps, -1 = not recorded
    std::string winner;              // while confirming: the adopted one
    bool confirming = false;         // an adopted winner's run-off runs again
    TuneEvidence evidence;           // no jobs: none (the winner came without a run-off)
  };
  // The passes' calls (see the class comment; `passes` of them, the timed calls shared out
  // evenly, the earlier passes taking one more); a block ends with `cooldown` untimed calls (the
  // run-off's: the next candidate's start falls on them, not on a timed call).
  static std::vector<PlannedCall> planCalls(int options, int reps, int passes, int warmup,
                                            int cooldown);
  // The calls after this one (the key's seen-th) before a block of `block` calls fits the share.
  int callsBeforeBlockFits(const State& s, int block) const;
  // The first of pass p's timed calls among a candidate's `reps` in `passes` (p == passes: reps).
  static int passStart(int reps, int passes, int p);
  void start(const TuneKey& key, State& s, const std::vector<TuneOption>& ranked);
  // The confirming key's run-off: the evidence's finalists that the model ranks for this call
  // (settled on the adopted winner when fewer than two are).
  void startConfirmation(State& s, const std::vector<TuneOption>& ranked);
  bool needsConfirmation(const TuneEvidence& e) const;
  // The concluded run-off's times (summed over its rounds) added to s's evidence; a confirming
  // key's winner becomes the evidence's best, unless two jobs disagree (then `adopted` stays
  // until a third decides). Returns how the evidence stands, for the log.
  std::string addRunoffEvidence(State& s, const std::string& adopted);
  // Index of the fastest measured option; the model's choice (0, while a candidate) when within
  // the margin of it (the run-off's, in a run-off).
  int fastest(const State& s, const std::vector<double>& measured) const;
  // The margin that keeps the model's choice in s's round (first round or run-off).
  double margin(const State& s) const;
  // The options a run-off compares (indices in the model's order): `best`, `keep` (an index, or
  // -1) and the fastest others within `within` of `best` (1 + within times its time; infinity:
  // any), runoffFinalists at most; empty when fewer than two.
  std::vector<int> finalists(const std::vector<double>& measured, int best, double within,
                             int keep) const;
  void startRunoff(State& s, const std::vector<int>& finalists, double secondsPerRound);
  // True when each half of the passes (times: measured()'s layout) has `best` within
  // runoffPassesAgree of its fastest option (within the margin, when `best` is the model's
  // choice).
  bool passesAgree(const State& s, const std::vector<double>& times, int best) const;
  Pick pickFor(State& s);

  TuneSettings settings_;
  std::map<TuneKey, State> states_;
  long explored_ = 0;
};

}  // namespace tutti::tuning
