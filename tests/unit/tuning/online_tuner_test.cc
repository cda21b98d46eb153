// OnlineTuner's decisions fed with synthetic timings: when exploring starts, which candidates
// it tries and in what order (two passes, the second reversed), which calls it times, which winner
// it keeps (the fastest by the mean of its calls, one held-up call left out, the model's own within
// the margin), adopted winners, and the keys' text form.
#include "tuning/online_tuner.h"

#include <gtest/gtest.h>

#include <map>
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

// Explores from a key's first call, two candidates, `reps` timed calls each.
TuneSettings twoCandidates(int reps) {
  TuneSettings s;
  s.exploreAfter = 0;
  s.maxCandidates = 2;
  s.reps = reps;
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

TEST(OnlineTuner, UsesTheModelUntilAKeyIsSeenOftenThenTriesItsBestWithinTheFactor) {
  TuneSettings s;
  s.exploreAfter = 2;
  s.maxCandidates = 6;
  s.withinFactor = 3;
  s.warmup = 1;
  s.reps = 2;
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

TEST(OnlineTuner, OneHeldUpCallDoesNotDecide) {
  TuneSettings s = twoCandidates(6);
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
    // Two such calls are the algorithm's: they count (mean 2.07 ms).
    explore(
        t, key(),
        {{"rabenseifner", {1.0e-3}}, {"ring", {0.6e-3, 5.0e-3, 0.6e-3, 0.6e-3, 5.0e-3, 0.6e-3}}});
    t.conclude(key(), t.measured(key()));
    EXPECT_EQ(t.winner(key()), "rabenseifner");
  }
}

TEST(OnlineTuner, ConcludesOnTheAgreedTimesNotItsOwn) {
  TuneSettings s = twoCandidates(1);
  OnlineTuner t(s);
  // This rank saw ring faster; the slowest rank's times (agreed) say rabenseifner.
  explore(t, key(), {{"rabenseifner", {2e-3}}, {"ring", {1e-3}}});
  EXPECT_EQ(t.measured(key()), (std::vector<double>{2e-3, 1e-3}));
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
  OnlineTuner::Pick p = t.next(key(), [] {
    ADD_FAILURE() << "an adopted key must not rank candidates";
    return ranked();
  });
  EXPECT_EQ(p.algo, "tree");
  EXPECT_TRUE(p.settled);
  EXPECT_EQ(t.winners().size(), 1u);
  EXPECT_EQ(t.exploredCalls(), 0);
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
