// OnlineTuner's decisions fed with synthetic timings: when exploring starts, which candidates
// it tries and in what order (two passes, the second reversed), which calls it times, which winner
// it keeps (the fastest by the mean of its calls, one held-up call left out, the model's own within
// the margin, a pass the machine slowed left out), the run-off of close finalists (again while
// its passes disagree), adopted winners, and the keys' text form.
#include "tuning/online_tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tutti::tuning {
namespace {

TuneKey key(int bucket = 20) {
  return tuneKeyOf(algo::Coll::kAllReduce, 4, 1, size_t{1} << bucket, true);
}

std::vector<TuneOption> ranked() {
  return {{"rabenseifner", 1.0e-3}, {"ring", 1.1e-3}, {"tree", 2.5e-3}, {"naive", 9e-3}};
}

// Explores in consecutive calls (exploreShare 1): the tests of a round's calls and decisions;
// the share's own tests set it.
TuneSettings consecutive() {
  TuneSettings s;
  s.exploreShare = 1;
  return s;
}

// Explores from a key's first call, two candidates, `reps` timed calls each.
TuneSettings twoCandidates(int reps) {
  TuneSettings s = consecutive();
  s.exploreAfter = 0;
  s.maxCandidates = 2;
  s.reps = reps;
  s.trustRoundSec = 0;  // every first round long enough to trust (its own test below)
  return s;
}

// Explores from a key's first call, three candidates, 2 timed calls each; a run-off times
// `runoffReps` calls per finalist.
TuneSettings threeCandidates(int runoffReps) {
  TuneSettings s = consecutive();
  s.exploreAfter = 0;
  s.maxCandidates = 3;
  s.reps = 2;
  s.runoffMinReps = s.runoffMaxReps = runoffReps;
  s.trustRoundSec = 0;
  return s;
}

// Runs key's calls until the tuner is ready to conclude: returns the algorithms of each call
// and the samples they were timed under (-1: untimed); `seconds` gives each timed call's time.
struct Exploration {
  std::vector<std::string> algos;
  std::vector<int> samples;
};
Exploration explore(OnlineTuner& t, const TuneKey& k,
                    const std::map<std::string, std::vector<double>>& seconds, int limit = 100) {
  Exploration run;
  std::map<std::string, size_t> used;
  for (int call = 0; call < limit && !t.readyToConclude(k); ++call) {
    OnlineTuner::Pick p = t.next(k, ranked);
    run.algos.push_back(p.algo);
    run.samples.push_back(p.sample);
    if (p.sample >= 0)
      t.record(k, p.sample, seconds.at(p.algo)[used[p.algo]++ % seconds.at(p.algo).size()]);
  }
  return run;
}

// The next call of key() on a tuner that adopted `algo` for it for good: that algorithm, settled,
// without ranking candidates or exploring.
void expectUsedFromTheFirstCall(OnlineTuner& t, const std::string& algo) {
  OnlineTuner::Pick p = t.next(key(), [] {
    ADD_FAILURE() << "an adopted key must not rank candidates";
    return ranked();
  });
  EXPECT_EQ(p.algo, algo);
  EXPECT_TRUE(p.settled);
  EXPECT_EQ(t.exploredCalls(), 0);
}

TEST(OnlineTuner, UsesTheModelUntilAKeyIsSeenOftenThenTriesItsBestWithinTheFactor) {
  TuneSettings s = consecutive();
  s.exploreAfter = 2;
  s.maxCandidates = 6;
  s.withinFactor = 3;
  s.warmup = 1;
  s.reps = 2;
  s.trustRoundSec = 0;
  OnlineTuner t(s);
  int rankedCalls = 0;
  auto counting = [&] {
    ++rankedCalls;
    return ranked();
  };
  for (int i = 0; i < 2; ++i) {
    OnlineTuner::Pick p = t.next(key(), counting);
    EXPECT_EQ(p.algo, "");  // the model's choice
    EXPECT_EQ(p.sample, -1);
    EXPECT_FALSE(p.settled);
  }
  EXPECT_EQ(rankedCalls, 0);
  Exploration run =
      explore(t, key(), {{"rabenseifner", {3e-3}}, {"ring", {1e-3}}, {"tree", {2e-3}}});
  // naive is predicted 9x the best: not tried. Two passes, the second in reverse order; each
  // candidate's block in a pass is an untimed call, then one of its two timed calls.
  EXPECT_EQ(run.algos, (std::vector<std::string>{"rabenseifner", "rabenseifner", "ring", "ring",
                                                 "tree", "tree", "tree", "tree", "ring", "ring",
                                                 "rabenseifner", "rabenseifner"}));
  EXPECT_EQ(run.samples, (std::vector<int>{-1, 0, -1, 2, -1, 4, -1, 5, -1, 3, -1, 1}));
  EXPECT_EQ(t.exploredCalls(), 12);
  std::string why = t.conclude(key(), t.measured(key()));
  EXPECT_EQ(t.winner(key()), "ring") << why;
  EXPECT_NE(why.find("model chose rabenseifner"), std::string::npos) << why;
  EXPECT_NE(why.find("ring predicted 1100 us, measured 1000 us"), std::string::npos) << why;
  OnlineTuner::Pick after = t.next(key(), counting);
  EXPECT_EQ(after.algo, "ring");
  EXPECT_TRUE(after.settled);
  EXPECT_EQ(after.sample, -1);
  EXPECT_EQ(t.exploredCalls(), 12);
  // Another key is independent.
  EXPECT_EQ(t.next(key(21), counting).algo, "");
}

TEST(OnlineTuner, TheMeanDecidesAndTheModelsChoiceStaysWithinTheMargin) {
  TuneSettings s = twoCandidates(6);
  s.keepModelMargin = 0.05;
  s.runoffMaxReps = 0;  // the first round decides
  {
    OnlineTuner t(s);
    // ring's typical call (0.6-0.7 ms) beats rabenseifner's 1.0 ms, but one slow call in three
    // makes a loop of ring calls cost 1.1 ms each: rabenseifner wins.
    explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {0.6e-3, 0.7e-3, 2.0e-3}}});
    EXPECT_NEAR(t.measured(key())[1], 1.1e-3, 1e-12);
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "rabenseifner");
  }
  {
    OnlineTuner t(s);
    // ring 3% faster: within the 5% margin, the model's choice stays.
    explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {0.97e-3}}});
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "rabenseifner");
  }
  {
    OnlineTuner t(s);
    explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {0.90e-3}}});
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "ring");
  }
}

// Two finalists within runoffWithin of each other (ring measured 5% faster than the model's
// rabenseifner: within the 10% margin) run again, alone, in longer blocks: two untimed calls, the
// timed ones, one untimed call closing the block; the run-off's times decide.
TEST(OnlineTuner, CloseFinalistsRunOffInLongerBlocksAndTheRunOffDecides) {
  TuneSettings s = threeCandidates(4);
  s.runoffWithin = 0.25;
  s.runoffWarmup = 2;
  s.runoffCooldown = 1;
  for (bool ringWins : {true, false}) {
    OnlineTuner t(s);
    explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {0.95e-3}}, {"tree", {2e-3}}});
    EXPECT_EQ(t.exploredCalls(), 12);
    std::string why = t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "") << why;
    EXPECT_NE(why.find("run-off of rabenseifner and ring"), std::string::npos) << why;
    EXPECT_FALSE(t.readyToConclude(key()));
    EXPECT_FALSE(t.next(key(), ranked).settled);  // the run-off's first call
    const double fast = 0.7e-3, slow = 1.0e-3;
    Exploration run = explore(t, key(),
                              {{"rabenseifner", {ringWins ? slow : fast}},
                               {"ring", {ringWins ? fast : slow}},
                               {"tree", {1e-6}}});
    run.algos.insert(run.algos.begin(), "rabenseifner");
    run.samples.insert(run.samples.begin(), -1);
    const std::vector<std::string> rab(5, "rabenseifner"), ring(5, "ring");
    std::vector<std::string> order;
    for (const auto* block : {&rab, &ring, &ring, &rab})
      order.insert(order.end(), block->begin(), block->end());
    EXPECT_EQ(run.algos, order);
    // rabenseifner's samples 0-3, ring's 4-7, half of each in a pass.
    EXPECT_EQ(run.samples, (std::vector<int>{-1, -1, 0, 1, -1, -1, -1, 4, 5, -1,
                                             -1, -1, 6, 7, -1, -1, -1, 2, 3, -1}));
    EXPECT_EQ(t.measured(key()).size(), 3 * 2u);  // times, then first and second passes
    why = t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), ringWins ? "ring" : "rabenseifner") << why;
    EXPECT_NE(why.find("after 32 explored calls (run-off;"), std::string::npos) << why;
    EXPECT_EQ(t.exploredCalls(), 32);
    EXPECT_TRUE(t.next(key(), ranked).settled);
  }
}

// The margin keeps the model's choice only: in a run-off without it, the faster finalist wins.
TEST(OnlineTuner, ARunOffWithoutTheModelsChoiceGoesToTheFaster) {
  OnlineTuner t(threeCandidates(4));
  explore(t, key(), {{"rabenseifner", {2e-3}}, {"ring", {1.0e-3}}, {"tree", {1.05e-3}}});
  std::string why = t.conclude(key(), t.measured(key()));
  EXPECT_NE(why.find("run-off of ring and tree"), std::string::npos) << why;
  explore(t, key(), {{"ring", {1.0e-3}}, {"tree", {0.97e-3}}});
  t.conclude(key(), t.measured(key()));
  EXPECT_EQ(t.winner(key()), "tree");
}

// A tuner whose first round (three candidates, 2 timed calls each, at these times) ended in a
// run-off of 4 timed calls per finalist.
OnlineTuner inRunoff(const std::map<std::string, std::vector<double>>& firstRound) {
  OnlineTuner t(threeCandidates(4));
  explore(t, key(), firstRound);
  t.conclude(key(), t.measured(key()));
  return t;
}

// One run-off round at these times per algorithm (in order of use: 2 timed calls in each pass);
// the explanation of its conclusion.
std::string runoffRound(OnlineTuner& t, const std::map<std::string, std::vector<double>>& times) {
  explore(t, key(), times);
  return t.conclude(key(), t.measured(key()));
}

// A run-off whose passes disagree on its winner runs again (up to runoffRounds rounds), and the
// rounds' summed times decide; passes within the margin of the model's choice agree with it.
TEST(OnlineTuner, ARunOffWhosePassesDisagreeRunsAgainAndTheRoundsSummedDecide) {
  const double ms = 1e-3;
  const std::map<std::string, std::vector<double>> ringClose = {
      {"rabenseifner", {1.0 * ms}}, {"ring", {0.95 * ms}}, {"tree", {2 * ms}}};
  {  // Round 1: rabenseifner slower than ring in the first pass, faster in the second (0.8 ms
     // each overall); round 2 agrees; summed, rabenseifner 1.5 ms against ring's 1.6.
    OnlineTuner t = inRunoff(ringClose);
    std::string why = runoffRound(
        t, {{"rabenseifner", {1.0 * ms, 1.0 * ms, 0.6 * ms, 0.6 * ms}}, {"ring", {0.8 * ms}}});
    EXPECT_EQ(t.winner(key()), "") << why;
    EXPECT_NE(why.find("run-off round 2 of rabenseifner and ring (the passes of round 1 "
                       "disagreed on rabenseifner)"),
              std::string::npos)
        << why;
    why = runoffRound(t, {{"rabenseifner", {0.7 * ms}}, {"ring", {0.8 * ms}}});
    EXPECT_EQ(t.winner(key()), "rabenseifner") << why;
    EXPECT_NE(why.find("(run-off, 2 rounds summed;"), std::string::npos) << why;
    EXPECT_EQ(t.exploredCalls(), 12 + 2 * 20);
  }
  {  // Passes that always disagree: three rounds, then the sums (a tie: the model's order).
    OnlineTuner t =
        inRunoff({{"rabenseifner", {2 * ms}}, {"ring", {1.0 * ms}}, {"tree", {1.05 * ms}}});
    std::string why;
    for (int round = 1; round <= 3; ++round) {
      EXPECT_EQ(t.winner(key()), "") << why;
      why = runoffRound(t,
                        {{"ring", {0.9 * ms, 0.9 * ms, 1.1 * ms, 1.1 * ms}}, {"tree", {1.0 * ms}}});
    }
    EXPECT_EQ(t.winner(key()), "ring") << why;
    EXPECT_NE(why.find("(run-off, 3 rounds summed;"), std::string::npos) << why;
    EXPECT_EQ(t.exploredCalls(), 12 + 3 * 20);
  }
  {  // The model's choice 4% slower in one pass, faster in the other: within the run-off's
     // margin (5%), agreed.
    OnlineTuner t = inRunoff(ringClose);
    const std::string why = runoffRound(
        t, {{"rabenseifner", {1.04 * ms, 1.04 * ms, 0.95 * ms, 0.95 * ms}}, {"ring", {1.0 * ms}}});
    EXPECT_EQ(t.winner(key()), "rabenseifner") << why;
    EXPECT_NE(why.find("(run-off;"), std::string::npos) << why;
  }
  {  // 8% slower in one pass: past the run-off's margin, so another round (the first round's 10%
     // would have agreed).
    OnlineTuner t = inRunoff(ringClose);
    const std::string why = runoffRound(
        t, {{"rabenseifner", {1.08 * ms, 1.08 * ms, 0.95 * ms, 0.95 * ms}}, {"ring", {1.0 * ms}}});
    EXPECT_EQ(t.winner(key()), "") << why;
    EXPECT_NE(why.find("run-off round 2 of rabenseifner and ring"), std::string::npos) << why;
  }
}

// A run-off keeps the model's choice within its own margin (5%), tighter than the first round's
// (10%): a choice kept by the margin is used for good, and its longer blocks time it more firmly.
TEST(OnlineTuner, ARunOffKeepsTheModelsChoiceOnlyWithinItsTighterMargin) {
  const double ms = 1e-3;
  const std::map<std::string, std::vector<double>> ringClose = {
      {"rabenseifner", {1.0 * ms}}, {"ring", {0.93 * ms}}, {"tree", {2 * ms}}};
  {  // 7% slower in the run-off, both passes alike: ring, where the first round's margin kept
     // rabenseifner (it started the run-off only because ring came within 25%).
    OnlineTuner t = inRunoff(ringClose);
    const std::string why = runoffRound(t, {{"rabenseifner", {1.07 * ms}}, {"ring", {1.0 * ms}}});
    EXPECT_EQ(t.winner(key()), "ring") << why;
  }
  {  // 4% slower: the model's choice stays.
    OnlineTuner t = inRunoff(ringClose);
    const std::string why = runoffRound(t, {{"rabenseifner", {1.04 * ms}}, {"ring", {1.0 * ms}}});
    EXPECT_EQ(t.winner(key()), "rabenseifner") << why;
  }
}

// The worst case of one key, every count at its most: eight candidates within the factor, 15
// timed calls each, then three finalists, 32 timed calls each per round in four passes, whose
// halves disagree in every round (all three). It settles at exactly maxCallsToSettle calls.
TEST(OnlineTuner, AKeyWhoseEveryCountIsAtItsMostSettlesAtMaxCallsToSettle) {
  TuneSettings s = consecutive();
  s.exploreAfter = 1;
  // self_tuning_test makes this many calls of each shape (with TUTTI_TUNE_EXPLORE_AFTER 0 or
  // 1) and expects every shape settled.
  const int selfTuningTestCalls = 540;
  EXPECT_LE(maxCallsToSettle(s), selfTuningTestCalls);
  OnlineTuner t(s);
  auto eight = [] {
    std::vector<TuneOption> o;
    for (const char* name : {"a", "b", "c", "d", "e", "f", "g", "h"}) o.push_back({name, 1e-6});
    return o;
  };
  const double us = 1e-6;
  const std::map<std::string, double> firstRound = {
      {"a", 1.0 * us}, {"b", 1.02 * us}, {"c", 1.04 * us}};
  std::map<std::string, int> timedInRound;
  int calls = 0, conclusions = 0;
  std::string why;
  while (t.winner(key()).empty() && calls < 1000) {
    OnlineTuner::Pick p = t.next(key(), eight);
    ++calls;
    if (p.sample >= 0) {
      const int i = timedInRound[p.algo]++;
      double sec = 2 * us;  // d to h in the first round
      if (conclusions == 0 && firstRound.count(p.algo))
        sec = firstRound.at(p.algo);
      else if (conclusions > 0)  // a: 20% slower than b in the first half, 30% faster after
        sec = p.algo == "a" ? (i < 16 ? 1.2 * us : 0.7 * us) : firstRound.at(p.algo);
      t.record(key(), p.sample, sec);
    }
    if (!t.readyToConclude(key())) continue;
    why = t.conclude(key(), t.measured(key()));
    ++conclusions;
    timedInRound.clear();
  }
  EXPECT_EQ(conclusions, 4) << why;
  EXPECT_EQ(t.winner(key()), "a") << why;
  EXPECT_NE(why.find("(run-off, 3 rounds summed;"), std::string::npos) << why;
  EXPECT_EQ(calls, maxCallsToSettle(s)) << why;
  EXPECT_EQ(calls, 1 + 8 * (2 + 15) + 3 * 3 * (4 * (2 + 1) + 32));
}

// A first round whose fastest candidate's timed calls took less than trustRoundSec (20 ms) in
// all (5 calls of 50 us: one time slice of a descheduled rank can hold up a whole block) is not
// trusted: its fastest few (runoffFinalists) run off however far behind it measured them (tree
// at 6x, all its calls held up), where a longer round (5 calls of 5 ms) decides alone unless
// others came within 25%.
TEST(OnlineTuner, AFirstRoundTooShortToTrustSendsItsFastestFewToARunOffHoweverFarBehind) {
  TuneSettings s = consecutive();
  s.exploreAfter = 0;
  s.maxCandidates = 3;
  s.reps = s.maxReps = 5;
  s.runoffWithin = 0.25;
  EXPECT_EQ(s.trustRoundSec, 20e-3);
  for (int finalists : {3, 2}) {
    s.runoffFinalists = finalists;
    for (double scale : {0.05, 5.0}) {  // 50 us and 5 ms calls of the fastest
      OnlineTuner t(s);
      const double ms = 1e-3 * scale;
      explore(t, key(), {{"rabenseifner", {1.0 * ms}}, {"ring", {2.4 * ms}}, {"tree", {6.0 * ms}}});
      const std::string why = t.conclude(key(), t.measured(key()));
      if (scale > 1) {
        EXPECT_EQ(t.winner(key()), "rabenseifner") << why;
        EXPECT_EQ(why.find("run-off"), std::string::npos) << why;
        continue;
      }
      EXPECT_EQ(t.winner(key()), "") << why;
      const std::string names = finalists == 3 ? "rabenseifner, ring and tree (the fastest 3"
                                               : "rabenseifner and ring (the fastest 2";
      EXPECT_NE(why.find("run-off of " + names +
                         ": the first round's 5 calls of rabenseifner took 0.25 ms, too short to "
                         "trust)"),
                std::string::npos)
          << why;
    }
  }
}

// An untrusted first round does not overrule the model alone: the model's choice (rabenseifner,
// first in the model's order) measured fourth of four, 1.3x behind, is a finalist in place of the
// slowest of the fastest three; a round long enough to trust leaves it out, as any candidate
// beyond 25%.
TEST(OnlineTuner, AFirstRoundTooShortToTrustKeepsTheModelsChoiceAFinalist) {
  TuneSettings s = consecutive();
  s.exploreAfter = 0;
  s.maxCandidates = 4;
  s.withinFactor = 10;  // naive (predicted 9x) is a candidate too
  s.reps = s.maxReps = 5;
  for (double scale : {0.05, 5.0}) {  // 50 us and 5 ms calls
    OnlineTuner t(s);
    const double ms = 1e-3 * scale;
    explore(t, key(),
            {{"rabenseifner", {1.3 * ms}},
             {"ring", {1.0 * ms}},
             {"tree", {1.02 * ms}},
             {"naive", {1.05 * ms}}});
    const std::string why = t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "") << why;
    if (scale < 1)
      EXPECT_NE(why.find("run-off of rabenseifner, ring and tree (the fastest 2 and the model's "
                         "choice: the first round's 5 calls of ring took 0.25 ms, too short to "
                         "trust)"),
                std::string::npos)
          << why;
    else
      EXPECT_NE(why.find("run-off of ring, tree and naive (within 25%)"), std::string::npos) << why;
  }
}

// A run-off of many timed calls spreads them over more passes (blocks of blockReps at most),
// every other one reversed; its halves (measured()'s second and third parts) are the first and
// the last two passes.
TEST(OnlineTuner, ARunOffOfManyTimedCallsSpreadsThemOverMorePasses) {
  TuneSettings s = threeCandidates(16);
  s.blockReps = 4;
  s.runoffWarmup = 1;
  s.runoffCooldown = 0;
  OnlineTuner t(s);
  explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {0.95e-3}}, {"tree", {2e-3}}});
  t.conclude(key(), t.measured(key()));
  // ring: 0.8 ms in the first two passes, 1.2 ms in the last two (its calls in order of use).
  std::vector<double> ring(8, 0.8e-3);
  ring.resize(16, 1.2e-3);
  Exploration run = explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", ring}});
  std::vector<std::string> order;
  for (const char* block : {"rabenseifner", "ring", "ring", "rabenseifner", "rabenseifner", "ring",
                            "ring", "rabenseifner"})
    order.insert(order.end(), 5, block);  // one untimed call, then 4 timed
  EXPECT_EQ(run.algos, order);
  const std::vector<double> m = t.measured(key());
  ASSERT_EQ(m.size(), 6u);
  EXPECT_NEAR(m[1], 1.0e-3, 1e-12);  // ring over all its calls
  EXPECT_NEAR(m[3], 0.8e-3, 1e-12);  // its first half
  EXPECT_NEAR(m[5], 1.2e-3, 1e-12);  // its second half
  // The halves disagree: rabenseifner, tied with ring overall (the model's choice stays), was 25%
  // slower in the first half. Another round.
  const std::string why = t.conclude(key(), m);
  EXPECT_NE(why.find("run-off round 2 of rabenseifner and ring (the passes of round 1 disagreed "
                     "on rabenseifner)"),
            std::string::npos)
      << why;
}

TEST(OnlineTuner, ARunOffTakesTheFastestFewWithinTheFactor) {
  TuneSettings s = threeCandidates(2);
  s.runoffWarmup = s.runoffCooldown = 0;
  for (int most : {3, 2}) {
    s.runoffFinalists = most;
    OnlineTuner t(s);
    explore(t, key(), {{"rabenseifner", {1.2e-3}}, {"ring", {1.0e-3}}, {"tree", {1.1e-3}}});
    std::string why = t.conclude(key(), t.measured(key()));
    EXPECT_NE(why.find(most == 3 ? "run-off of rabenseifner, ring and tree (within 25%)"
                                 : "run-off of ring and tree (within 25%)"),
              std::string::npos)
        << why;
    Exploration run =
        explore(t, key(), {{"rabenseifner", {1e-3}}, {"ring", {1e-3}}, {"tree", {1e-3}}});
    EXPECT_EQ(run.algos.size(), static_cast<size_t>(2 * most));
    EXPECT_EQ(t.measured(key()).size(), static_cast<size_t>(3 * most));
  }
}

TEST(OnlineTuner, FinalistsFarApartNeedNoRunOffAndARunOffFitsItsBudget) {
  TuneSettings s = twoCandidates(2);
  s.runoffWithin = 0.25;
  {
    OnlineTuner t(s);
    explore(t, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {0.7e-3}}});  // 30% apart
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "ring");
  }
  s.runoffMinReps = 4;
  s.runoffMaxReps = 16;
  s.runoffBudgetSec = 8e-3;
  s.runoffWarmup = 0;
  s.runoffCooldown = 0;
  auto runoffCalls = [&](double seconds) {
    OnlineTuner t(s);
    explore(t, key(), {{"rabenseifner", {seconds}}, {"ring", {seconds}}});
    const long first = t.exploredCalls();
    t.conclude(key(), t.measured(key()));
    explore(t, key(), {{"rabenseifner", {seconds}}, {"ring", {seconds}}});
    return t.exploredCalls() - first;
  };
  EXPECT_EQ(runoffCalls(1e-5), 2 * 16);  // capped
  EXPECT_EQ(runoffCalls(5e-4), 2 * 8);   // 8 ms / (2 x 0.5 ms)
  EXPECT_EQ(runoffCalls(1e-2), 2 * 4);   // at least the minimum
}

// The default budget (32 ms of timed calls a round) gives finalists of 0.25 ms calls (a 4-rank
// all-gather at 1 MiB) the most timed calls, 32 each in four passes; of 1 ms calls, 10 in two.
TEST(OnlineTuner, TheDefaultRunOffGivesQuarterMillisecondCallsItsMostTimedCalls) {
  TuneSettings s = consecutive();
  s.exploreAfter = 0;
  s.maxCandidates = 3;
  s.trustRoundSec = 0;  // within 25%: all three run off
  auto runoffCalls = [&](double seconds) {
    OnlineTuner t(s);
    const std::map<std::string, std::vector<double>> times = {
        {"rabenseifner", {seconds}}, {"ring", {seconds}}, {"tree", {seconds}}};
    explore(t, key(), times);
    const long first = t.exploredCalls();
    t.conclude(key(), t.measured(key()));
    Exploration run = explore(t, key(), times, 1000);
    EXPECT_EQ(t.measured(key()).size(), 9u);  // three finalists
    const long timed = std::count_if(run.samples.begin(), run.samples.end(),
                                     [](int sample) { return sample >= 0; });
    return std::pair(t.exploredCalls() - first, timed);
  };
  // 32 timed calls, 4 passes x (2 untimed + 1 cooldown) each, three finalists.
  EXPECT_EQ(runoffCalls(0.25e-3), std::pair(3L * (32 + 4 * 3), 3L * 32));
  EXPECT_EQ(runoffCalls(1e-3), std::pair(3L * (10 + 2 * 3), 3L * 10));  // 32 ms / 3 ms
}

TEST(OnlineTuner, OneHeldUpCallDoesNotDecideAndNoCallCountsForMoreThanFourMedians) {
  TuneSettings s = twoCandidates(6);
  s.runoffMaxReps = 0;  // the first round decides
  {
    OnlineTuner t(s);
    // One of ring's calls waited 5 ms for a descheduled rank (more than twice its next slowest):
    // left out, ring's mean is 0.6 ms and it wins. Counted, it would be 1.33 ms.
    explore(
        t, key(),
        {{"rabenseifner", {1.0e-3}}, {"ring", {0.6e-3, 0.6e-3, 5.0e-3, 0.6e-3, 0.6e-3, 0.6e-3}}});
    EXPECT_NEAR(t.measured(key())[1], 0.6e-3, 1e-12);
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "ring");
  }
  {
    OnlineTuner t(s);
    // Two such calls are the algorithm's: they count, each as 4x the median (mean 1.2 ms).
    explore(
        t, key(),
        {{"rabenseifner", {1.0e-3}}, {"ring", {0.6e-3, 5.0e-3, 0.6e-3, 0.6e-3, 5.0e-3, 0.6e-3}}});
    EXPECT_NEAR(t.measured(key())[1], 1.2e-3, 1e-12);
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "rabenseifner");
  }
  {
    OnlineTuner t(s);
    // 16 B calls of 14 us; two waited 4 ms for a rank's time slice. Counted in full they would
    // make rabenseifner's mean 1.34 ms and hand the key to ring (30 us); clipped, it is 28 us.
    explore(t, key(),
            {{"rabenseifner", {14e-6, 14e-6, 4e-3, 14e-6, 14e-6, 4e-3}}, {"ring", {30e-6}}});
    EXPECT_NEAR(t.measured(key())[0], (4 * 14e-6 + 2 * 56e-6) / 6, 1e-12);
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "rabenseifner");
  }
}

TEST(OnlineTuner, APassTheMachineSlowedThroughoutDoesNotDecide) {
  TuneSettings s = twoCandidates(6);
  s.runoffMaxReps = 0;  // the first round decides
  {
    OnlineTuner t(s);
    // rabenseifner's whole first block ran while the machine was 80x slower (its median 8 ms
    // against 0.1 ms in the other pass): that block is left out and rabenseifner wins.
    explore(t, key(), {{"rabenseifner", {8e-3, 8e-3, 8e-3, 1e-4, 1e-4, 1e-4}}, {"ring", {2e-4}}});
    EXPECT_NEAR(t.measured(key())[0], 1e-4, 1e-12);
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "rabenseifner");
  }
  {
    OnlineTuner t(s);
    // The same slow calls, one in each block: the candidate's own, they count (each as 4x the
    // median: mean 0.2 ms) and ring's 0.15 ms wins.
    explore(t, key(), {{"rabenseifner", {8e-3, 1e-4, 1e-4, 8e-3, 1e-4, 1e-4}}, {"ring", {1.5e-4}}});
    EXPECT_NEAR(t.measured(key())[0], 2e-4, 1e-12);
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "ring");
  }
}

TEST(OnlineTuner, ConcludesOnTheAgreedTimesNotItsOwn) {
  TuneSettings s = twoCandidates(1);
  OnlineTuner t(s);
  // This rank saw ring faster; the slowest rank's times (agreed) say rabenseifner.
  explore(t, key(), {{"rabenseifner", {2e-3}}, {"ring", {1e-3}}});
  // The times, then each pass's (one timed call each: none in the second pass).
  EXPECT_EQ(t.measured(key()), (std::vector<double>{2e-3, 1e-3, 2e-3, 1e-3, -1, -1}));
  t.conclude(key(), {2.5e-3, 4e-3});
  EXPECT_EQ(t.winner(key()), "rabenseifner");
}

TEST(OnlineTuner, CandidatesWithoutTimesAreSkippedAndOneCandidateSettlesAtOnce) {
  TuneSettings s = twoCandidates(2);
  OnlineTuner t(s);
  // The caller could not run rabenseifner (not applicable to that count) and ran the model's
  // choice untimed instead: no samples for it.
  for (int i = 0; i < 100 && !t.readyToConclude(key()); ++i) {
    OnlineTuner::Pick p = t.next(key(), ranked);
    if (p.algo == "ring") t.record(key(), p.sample, 1e-3);
  }
  ASSERT_TRUE(t.readyToConclude(key()));
  std::vector<double> agreed = t.measured(key());
  EXPECT_EQ(agreed[0], -1);
  t.conclude(key(), agreed);
  EXPECT_EQ(t.winner(key()), "ring");

  s.maxCandidates = 1;
  OnlineTuner one(s);
  OnlineTuner::Pick p = one.next(key(), ranked);
  EXPECT_EQ(p.algo, "rabenseifner");
  EXPECT_TRUE(p.settled);
  EXPECT_EQ(one.exploredCalls(), 0);
}

TEST(OnlineTuner, SmallCallsAreTimedMoreOftenWithinTheBudget) {
  TuneSettings s = twoCandidates(3);
  s.maxReps = 15;
  s.repBudgetSec = 2e-3;
  auto timedCalls = [&](double predicted) {
    OnlineTuner t(s);
    int timed = 0;
    for (int i = 0; i < 100 && !t.readyToConclude(key()); ++i) {
      OnlineTuner::Pick p = t.next(key(), [&] {
        return std::vector<TuneOption>{{"ring", predicted}, {"tree", predicted}};
      });
      if (p.sample >= 0) ++timed;
    }
    return timed;
  };
  EXPECT_EQ(timedCalls(1e-6), 2 * 15);  // capped
  EXPECT_EQ(timedCalls(1e-4), 2 * 10);  // 2 ms / 0.2 ms of calls
  EXPECT_EQ(timedCalls(1e-2), 2 * 3);   // at least reps
}

TEST(OnlineTuner, AdoptedWinnersAreUsedFromTheFirstCall) {
  OnlineTuner t(TuneSettings{});
  t.adopt(key(), "tree");
  expectUsedFromTheFirstCall(t, "tree");
  EXPECT_EQ(t.winners().size(), 1u);
}

// A job's run-off leaves evidence of 1 job; a later job that adopts the winner with that
// evidence runs the same finalists' run-off again (after exploreAfter calls of the adopted
// winner, untimed) and decides by both jobs' ratios; after confirmJobs jobs, or where the
// runner-up was far behind, the winner is used from the first call.
TEST(OnlineTuner, ACloseRunOffIsConfirmedByLaterJobsAndTheirEvidenceTogetherDecides) {
  TuneSettings s = threeCandidates(4);
  s.confirmJobs = 3;
  s.confirmWithin = 0.15;
  // Job 1: ring 10% ahead of rabenseifner in the run-off (the model's choice, beyond its 5%).
  OnlineTuner first = inRunoff({{"rabenseifner", {1.0e-3}}, {"ring", {0.95e-3}}, {"tree", {2e-3}}});
  std::string why = runoffRound(first, {{"rabenseifner", {1.1e-3}}, {"ring", {1.0e-3}}});
  ASSERT_EQ(first.winner(key()), "ring") << why;
  const TuneEvidence* ev = first.evidence(key());
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->jobs(), 1);
  EXPECT_NEAR(ev->gap(), 0.10, 1e-9);
  // (job 1's settings are the default, TUTTI_TUNE_CONFIRM_JOBS=1: final for itself; the evidence
  // is kept all the same)
  EXPECT_NE(why.find("evidence of 1 job, time over the fastest: rabenseifner 1.1 ring 1"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("to be confirmed"), std::string::npos) << why;

  // Job 2 (confirmJobs 3) adopts ring with that evidence: two calls of ring (untimed), then the
  // run-off of rabenseifner and ring (the model's order), where rabenseifner is 1.5x ahead.
  TuneSettings later = s;
  later.exploreAfter = 2;
  OnlineTuner second(later);
  second.adopt(key(), "ring", ev);
  for (int i = 0; i < 2; ++i) {
    OnlineTuner::Pick p = second.next(key(), ranked);
    EXPECT_EQ(p.algo, "ring");
    EXPECT_EQ(p.sample, -1);
    EXPECT_FALSE(p.settled);
  }
  EXPECT_EQ(second.winner(key()), "");
  Exploration run = explore(second, key(), {{"rabenseifner", {1.0e-3}}, {"ring", {1.5e-3}}});
  EXPECT_EQ(run.algos.front(), "rabenseifner");
  EXPECT_EQ(std::set<std::string>(run.algos.begin(), run.algos.end()),
            (std::set<std::string>{"rabenseifner", "ring"}));
  why = second.conclude(key(), second.measured(key()));
  // Median ratios (of two jobs, the mean): rabenseifner 1.05, ring 1.25; but the two jobs
  // disagree, and either may have run in a slow state: ring stays until a third job.
  EXPECT_EQ(second.winner(key()), "ring") << why;
  EXPECT_NE(why.find("confirming the cache's ring"), std::string::npos) << why;
  ev = second.evidence(key());
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->jobs(), 2);
  EXPECT_NEAR(ev->gap(), 1.25 / 1.05 - 1, 1e-9);
  EXPECT_FALSE(ev->unanimous());
  EXPECT_NE(why.find("to be confirmed by the next job"), std::string::npos) << why;
  for (const TuneEvidence::Entry& e : ev->entries())  // this job's time per call
    EXPECT_NEAR(e.seconds, e.algo == "ring" ? 1.5e-3 : 1.0e-3, 1e-12) << e.algo;

  // Job 3 runs it off again: ring ahead by 1% makes it the fastest in two jobs of three, and
  // the median ratios follow (ring 1.0, rabenseifner 1.01), where job 2's 1.5x would make
  // rabenseifner the choice by the mean (3.11 against 3.5).
  OnlineTuner third(s);
  third.adopt(key(), "ring", ev);
  EXPECT_FALSE(third.next(key(), ranked).settled);
  explore(third, key(), {{"rabenseifner", {1.01e-3}}, {"ring", {1.0e-3}}});
  why = third.conclude(key(), third.measured(key()));
  EXPECT_EQ(third.winner(key()), "ring") << why;
  EXPECT_EQ(third.evidence(key())->jobs(), 3);
  EXPECT_NE(why.find("confirming the cache's ring"), std::string::npos) << why;
  EXPECT_NE(why.find("evidence of 3 jobs, time over the fastest (median): rabenseifner 1.01 "
                     "ring 1"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("to be confirmed"), std::string::npos) << why;

  // Job 4: three jobs' evidence is final, close or not.
  OnlineTuner fourth(s);
  fourth.adopt(key(), "ring", third.evidence(key()));
  expectUsedFromTheFirstCall(fourth, "ring");
}

// One job's verdict is confirmed however clear; two jobs' is final when they agree and the
// runner-up is more than confirmWithin behind, not when they measured different fastest ones.
TEST(OnlineTuner, OneJobsVerdictIsConfirmedTwoThatAgreeFarApartAreFinal) {
  TuneSettings s = threeCandidates(4);
  s.confirmJobs = 3;
  auto confirms = [&](const TuneEvidence& e, const std::string& winner) {
    OnlineTuner t(s);
    t.adopt(key(), winner, &e);
    return !t.next(key(), ranked).settled;
  };
  TuneEvidence far;
  far.addJob({{"ring", 1.0e-3}, {"tree", 1.5e-3}});  // 50% apart
  EXPECT_TRUE(confirms(far, "ring"));
  TuneEvidence agreed = far;
  agreed.addJob({{"ring", 2.0e-3}, {"tree", 2.6e-3}});  // ring again, 30% ahead: 1 vs 1.4
  EXPECT_FALSE(confirms(agreed, "ring"));
  {
    OnlineTuner t(s);
    t.adopt(key(), "ring", &agreed);
    EXPECT_TRUE(t.next(key(), ranked).settled);
    EXPECT_EQ(t.evidence(key())->jobs(), 2);  // kept as it was: the next write keeps it
  }
  TuneEvidence disputed = far;  // a slow state of job 1: tree 1.25x ahead in job 2
  disputed.addJob({{"ring", 2.5e-3}, {"tree", 2.0e-3}});  // ring 1.125, tree 1.25: 11% apart
  EXPECT_TRUE(confirms(disputed, "ring"));
  TuneEvidence outvoted = far;  // ring by far in job 1, tree by a little in job 2
  outvoted.addJob({{"ring", 1.1e-3}, {"tree", 1.0e-3}});  // ring 1.05, tree 1.25: 19% apart
  EXPECT_EQ(outvoted.entries()[static_cast<size_t>(outvoted.best())].algo, "ring");
  EXPECT_FALSE(outvoted.unanimous());
  EXPECT_TRUE(agreed.unanimous());
  EXPECT_TRUE(confirms(outvoted, "ring"));
}

TEST(OnlineTuner, EvidenceWithoutTheWinnerOrNotRankedIsNotConfirmed) {
  TuneSettings s = threeCandidates(4);
  s.confirmJobs = 3;
  TuneEvidence close;
  close.addJob({{"ring", 1.0e-3}, {"tree", 1.05e-3}});
  {
    OnlineTuner t(s);
    t.adopt(key(), "rabenseifner", &close);  // a winner its evidence does not hold
    EXPECT_TRUE(t.next(key(), ranked).settled);
  }
  {
    s.confirmJobs = 1;  // TUTTI_TUNE_CONFIRM_JOBS=1 (the default): one job decides
    OnlineTuner t(s);
    t.adopt(key(), "ring", &close);
    EXPECT_TRUE(t.next(key(), ranked).settled);
    s.confirmJobs = 3;
  }
  {
    // The model ranks only ring for this call (tree does not apply): nothing to run off.
    OnlineTuner t(s);
    t.adopt(key(), "ring", &close);
    OnlineTuner::Pick p = t.next(key(), [] { return std::vector<TuneOption>{{"ring", 1e-3}}; });
    EXPECT_EQ(p.algo, "ring");
    EXPECT_TRUE(p.settled);
    EXPECT_EQ(t.exploredCalls(), 0);
  }
  {
    // A winner chosen by a first round alone (no run-off) has no evidence.
    OnlineTuner t(threeCandidates(4));
    explore(t, key(), {{"rabenseifner", {3e-3}}, {"ring", {1.0e-3}}, {"tree", {2e-3}}});
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "ring");
    EXPECT_EQ(t.evidence(key()), nullptr);
  }
}

TEST(TuneEvidence, EachJobsRatiosCountByTheirMedianAndTheTextRoundTrips) {
  TuneEvidence e;
  e.addJob({{"direct", 2.0e-3}, {"ring", 1.0e-3}});
  e.addJob({{"ring", 3.0e-3}, {"direct", 2.0e-3}});  // a slower job: only the ratios carry over
  EXPECT_EQ(e.jobs(), 2);
  ASSERT_EQ(e.entries().size(), 2u);
  EXPECT_EQ(e.entries()[0].algo, "direct");
  EXPECT_EQ(e.entries()[0].ratios, (std::vector<double>{2.0, 1.0}));
  EXPECT_EQ(e.entries()[1].ratios, (std::vector<double>{1.0, 1.5}));
  EXPECT_NEAR(e.entries()[1].seconds, 3.0e-3, 1e-15);  // the last job's
  EXPECT_EQ(e.best(), 1);                              // medians 1.5 and 1.25
  EXPECT_NEAR(e.gap(), 1.5 / 1.25 - 1, 1e-12);
  EXPECT_FALSE(e.unanimous());
  EXPECT_EQ(e.text(), "2 direct:2.0000,1.0000:0.002 ring:1.0000,1.5000:0.003");
  TuneEvidence back;
  ASSERT_TRUE(TuneEvidence::parse(e.text(), &back));
  EXPECT_EQ(back.text(), e.text());
  // A third job: the far-off first job is outvoted by two (direct 1.0 against ring 1.5 by the
  // medians; the mean would keep ring, 1.6 against 1.67).
  TuneEvidence third = e;
  third.addJob({{"direct", 1.0e-3}, {"ring", 2.3e-3}});
  EXPECT_EQ(third.best(), 0);
  // An even count of jobs: the median is the middle two's mean.
  TuneEvidence even;
  even.addJob({{"ring", 1.0e-3}, {"tree", 1.2e-3}});
  even.addJob({{"ring", 1.2e-3}, {"tree", 1.0e-3}});
  even.addJob({{"ring", 1.0e-3}, {"tree", 1.0e-3}});
  even.addJob({{"ring", 1.6e-3}, {"tree", 1.0e-3}});  // medians 1.1 and 1.0
  EXPECT_NEAR(even.entries()[0].median(), 1.1, 1e-12);
  EXPECT_EQ(even.entries()[static_cast<size_t>(even.best())].algo, "tree");
  // Another set of finalists starts over.
  e.addJob({{"ring", 1.0e-3}, {"tree", 1.1e-3}, {"direct", 1.2e-3}});
  EXPECT_EQ(e.jobs(), 1);
  EXPECT_EQ(e.entries().size(), 3u);
  for (const char* bad :
       {"", "1", "1 ring:1:0.001", "0 ring:1:0.001 tree:1:0.001", "1 ring:1:0.001 ring:1:0.001",
        "2 ring:1:0.001 tree:1.5:0.001", "2 ring:1,1:0.001 tree:1.5:0.001",
        "1 ring:0.5:0.001 tree:1:0.001", "2 ring:1,:0.001 tree:1,1:0.001",
        "1 ring:1,1:0.001 tree:1:0.001", "1 ring:1:0 tree:1:0.001", "1 ring:1 tree:1:0.001",
        "1 :1:0.001 tree:1:0.001", "1 ring:x:0.001 tree:1:0.001", "x ring:1:0.001 tree:1:0.001",
        "1 ring:1:0.001 tree:nan:0.001"}) {
    TuneEvidence ignored;
    EXPECT_FALSE(TuneEvidence::parse(bad, &ignored)) << bad;
  }
}

TEST(TuneKey, TextRoundTripsAndBadWordsAreRefused) {
  TuneKey k = tuneKeyOf(algo::Coll::kReduceScatter, 8, 2, 3000, false);
  EXPECT_EQ(k.bucket, 11);  // 2048 <= 3000 < 4096
  EXPECT_EQ(k.text(), "reducescatter n8 h2 b11 w0");
  TuneKey back;
  ASSERT_TRUE(TuneKey::parse(k.text(), &back));
  EXPECT_EQ(back, k);
  EXPECT_EQ(tuneKeyOf(algo::Coll::kAllReduce, 2, 1, 0, true).bucket, 0);
  EXPECT_EQ(tuneKeyOf(algo::Coll::kAllReduce, 2, 1, 1, true).bucket, 0);
  EXPECT_EQ(tuneKeyOf(algo::Coll::kAllReduce, 2, 1, 2, true).bucket, 1);
  for (const char* bad : {"", "allreduce n4 h1 b3", "nosuch n4 h1 b3 w1", "allreduce n0 h1 b3 w1",
                          "allreduce n4 h1 b3 w2", "allreduce n4x h1 b3 w1",
                          "allreduce n4 h1 b3 w1 extra", "allreduce 4 h1 b3 w1"}) {
    TuneKey ignored;
    EXPECT_FALSE(TuneKey::parse(bad, &ignored)) << bad;
  }
}

}  // namespace
}  // namespace tutti::tuning

namespace tutti::tuning {
namespace {

// The default share (TuneSettings::exploreShare, 1/8): a short job's calls (a perf test's 5 + 20
// a size) all run the model's choice, untimed; a long one explores at most that share of its
// calls at every call, the rest running the model's choice, and settles on the fastest by
// maxCallsToSettle.
TEST(OnlineTuner, ExploringTakesABoundedShareOfAKeysCalls) {
  TuneSettings s;
  s.trustRoundSec = 0;  // no run-off: ring is clearly fastest
  ASSERT_LT(s.exploreShare, 1);
  OnlineTuner t(s);
  const std::map<std::string, double> seconds = {
      {"rabenseifner", 1e-3}, {"ring", 0.5e-3}, {"tree", 2e-3}, {"naive", 9e-3}};
  int calls = 0;
  while (t.winner(key()).empty() && calls < 100000) {
    OnlineTuner::Pick p = t.next(key(), ranked);
    ++calls;
    if (calls <= 25) {
      EXPECT_EQ(p.sample, -1) << "call " << calls << " of a short job was explored";
      EXPECT_TRUE(p.algo.empty() || p.algo == "rabenseifner") << p.algo;
    }
    ASSERT_LE(static_cast<double>(t.exploredCalls()), s.exploreShare * calls) << "call " << calls;
    if (p.sample >= 0) t.record(key(), p.sample, seconds.at(p.algo));
    if (t.readyToConclude(key())) t.conclude(key(), t.measured(key()));
  }
  EXPECT_EQ(t.winner(key()), "ring");
  EXPECT_LE(calls, maxCallsToSettle(s));
  EXPECT_GT(t.exploredCalls(), 0);
  EXPECT_GE(calls, t.exploredCalls() / s.exploreShare) << "settled too soon for the share";
}

// The same calls with the share at 1: exploring starts after exploreAfter calls and runs in
// consecutive calls (the behaviour the other tests check).
TEST(OnlineTuner, AShareOfOneExploresInConsecutiveCalls) {
  TuneSettings s;
  s.exploreShare = 1;
  s.exploreAfter = 2;
  OnlineTuner t(s);
  for (int call = 1; call <= 12; ++call) {
    OnlineTuner::Pick p = t.next(key(), ranked);
    if (call <= 2) {
      EXPECT_TRUE(p.algo.empty());
    } else {
      EXPECT_FALSE(p.algo.empty());
    }
    if (call == 4) {
      EXPECT_GE(p.sample, 0) << "the block's second call is timed";
    }
  }
  EXPECT_EQ(t.exploredCalls(), 10);
}

// A caller that reuses a pick for its sameNext calls and reports them with skip() (the
// planner's cache) sees the same calls as one that asks every time: the same algorithm and
// sample at every call, the same explored calls and winner.
TEST(OnlineTuner, ReusingAPickForItsSameNextCallsChangesNothing) {
  TuneSettings s;
  s.trustRoundSec = 0;
  OnlineTuner asking(s), reusing(s);
  const std::map<std::string, double> seconds = {
      {"rabenseifner", 1e-3}, {"ring", 0.5e-3}, {"tree", 2e-3}, {"naive", 9e-3}};
  OnlineTuner::Pick reused;
  int left = 0, skipped = 0, asked = 0;
  for (int call = 1; call <= 1500; ++call) {
    const OnlineTuner::Pick a = asking.next(key(), ranked);
    OnlineTuner::Pick b;
    if (left > 0) {
      --left;
      ++skipped;
      b = reused;
    } else {
      if (skipped > 0) reusing.skip(key(), skipped);
      skipped = 0;
      b = reused = reusing.next(key(), ranked);
      left = b.sameNext;
      if (!b.settled) ++asked;  // a settled pick is final: a caller caches it for good
    }
    ASSERT_EQ(a.algo, b.algo) << "call " << call;
    ASSERT_EQ(a.sample, b.sample) << "call " << call;
    if (a.sample >= 0) {
      asking.record(key(), a.sample, seconds.at(a.algo));
      reusing.record(key(), b.sample, seconds.at(b.algo));
    }
    if (asking.readyToConclude(key())) asking.conclude(key(), asking.measured(key()));
    if (reusing.readyToConclude(key())) reusing.conclude(key(), reusing.measured(key()));
  }
  EXPECT_EQ(asking.exploredCalls(), reusing.exploredCalls());
  EXPECT_EQ(asking.winner(key()), "ring");
  EXPECT_EQ(reusing.winner(key()), "ring");
  // Before settling: the exploring calls, one ask per stretch between blocks.
  EXPECT_LT(asked, asking.exploredCalls() + 20) << "the picks were hardly reused";
}

}  // namespace
}  // namespace tutti::tuning
