// Self-tuning across real processes (docs/tuning.md, "Self-tuning"): the calls online
// refinement explores return verified results (distinct data per rank, element and call,
// guard bytes) while it tries several algorithms; every rank runs the same algorithm at every
// call; the host's first communicator calibrates (not with a user's model) and the winners
// land in the cache; a later job with that cache uses them from the first call without
// exploring (with TUTTI_TUNE_CONFIRM_JOBS=3, a run-off's choice is run off again by the next job,
// which adds its evidence); ranks that read different caches still choose alike (the job uses rank
// 0's); across hosts on a topology's model the network is calibrated; forced algorithms and
// deterministic mode switch refinement off.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"
#include "tutti/tutti.h"
#include "verifiable.h"

namespace tutti::test {
namespace {

namespace v = tutti::verifiable;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The cache file in dir ("" when none).
std::string cacheFileIn(const std::string& dir) {
  std::string found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("host-", 0) == 0 && name.size() > 7 &&
          name.compare(name.size() - 7, 7, ".tuning") == 0)
        found = dir + "/" + name;
    }
    closedir(d);
  }
  return found;
}

enum class Op { kAllReduce, kAllGather, kReduceScatter };

// One verified call: per-rank count elements (all-gather / reduce-scatter: per block).
void verifiedCall(tuttiComm_t comm, int n, int rank, Op op, size_t count, uint64_t seed) {
  v::Spec s;
  s.nranks = n;
  s.seed = seed;
  s.dtype = op == Op::kAllGather ? tuttiInt32 : tuttiFloat32;
  s.kind = op == Op::kAllGather ? v::Kind::kCopy : v::Kind::kSum;
  const size_t es = v::elementSize(s.dtype);
  const size_t inCount = op == Op::kReduceScatter ? count * n : count;
  const size_t outCount = op == Op::kAllReduce ? count : op == Op::kAllGather ? count * n : count;
  v::GuardedBuffer in(inCount * es), out(outCount * es);
  v::fill(s, rank, in.data(), inCount);
  std::vector<std::byte> want(outCount * es);
  tuttiResult_t r = tuttiSuccess;
  switch (op) {
    case Op::kAllReduce:
      v::fillReduced(s, want.data(), count);
      r = tuttiAllReduce(in.data(), out.data(), count, s.dtype, tuttiSum, comm, nullptr);
      break;
    case Op::kAllGather:
      for (int p = 0; p < n; ++p) v::fill(s, p, want.data() + p * count * es, count);
      r = tuttiAllGather(in.data(), out.data(), count, s.dtype, comm, nullptr);
      break;
    case Op::kReduceScatter:
      v::fillReduced(s, want.data(), count, rank * count);
      r = tuttiReduceScatter(in.data(), out.data(), count, s.dtype, tuttiSum, comm, nullptr);
      break;
  }
  ASSERT_EQ(r, tuttiSuccess) << tuttiGetLastError(comm);
  ASSERT_EQ(v::firstMismatch(s, out.data(), want.data(), outCount), "")
      << "op " << static_cast<int>(op) << " count " << count << " call " << seed << " ("
      << tuttiCommLastAlgorithm(comm) << ")";
  ASSERT_EQ(out.checkGuards(), "");
}

// Runs `calls` calls of each (op, count) in turn (the shapes interleaved, as a training step
// interleaves its buckets); writes the algorithm of every call, in order, to seqFile.
void callStream(int n, int rank, const tuttiUniqueId& id, int calls, const std::string& seqFile) {
  tuttiComm_t comm = nullptr;
  TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
  // 100 elements: above the line all-reduce's 200 bytes, which is not tuned.
  const std::pair<Op, size_t> shapes[] = {{Op::kAllReduce, 100},
                                          {Op::kAllReduce, 20000},
                                          {Op::kAllGather, 700},
                                          {Op::kReduceScatter, 9000}};
  std::ofstream seq(seqFile);
  for (int c = 0; c < calls; ++c)
    for (size_t k = 0; k < std::size(shapes); ++k) {
      verifiedCall(comm, n, rank, shapes[k].first, shapes[k].second,
                   v::seedOf({7, k, uint64_t(c)}));
      if (testing::Test::HasFatalFailure()) return;
      seq << k << " " << tuttiCommLastAlgorithm(comm) << "\n";
    }
  TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
}

// Calls per shape after which every shape has settled on its winner: a shape's exploration
// takes up to 1 + 8 x (2 + 15) calls, then up to three run-off rounds of three finalists, each
// 3 x (4 x 3 + 32) calls (533 in all: tuning::maxCallsToSettle, which tuning_online_test
// checks against this number).
constexpr int kCallsToSettle = 540;

// Every rank's sequence file; the test fails unless all are equal. Returns rank 0's.
std::string sameOnEveryRank(const TempDir& dir, int n) {
  std::string first = slurp(dir.file("seq.0"));
  for (int r = 1; r < n; ++r)
    EXPECT_EQ(slurp(dir.file("seq." + std::to_string(r))), first) << "rank " << r;
  return first;
}

// shape -> the distinct algorithms it ran.
std::map<int, std::set<std::string>> algorithmsPerShape(const std::string& seq) {
  std::map<int, std::set<std::string>> out;
  std::istringstream in(seq);
  int k;
  std::string algo;
  while (in >> k >> algo) out[k].insert(algo);
  return out;
}

TEST(SelfTuning, ExploredCallsAreCorrectEveryRankRunsTheSameAlgorithmAndTheCacheKeepsTheWinners) {
  const int n = 3;
  TempDir dir("tutti-selftune");
  const std::string cache = dir.file("cache");
  // The built-in model from a tuning file: the candidates each shape explores do not depend on
  // a calibration made under this run's load (a user's model is not calibrated; the next test
  // calibrates).
  { std::ofstream(dir.file("model.tuning")) << "shm.alpha_us 3\nshm.gbps 8\ngamma.gbps 10\n"; }
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_TUNING_FILE", dir.file("model.tuning").c_str(), 1);
        setenv("TUTTI_TUNING_CACHE", cache.c_str(), 1);
        setenv("TUTTI_TUNE_EXPLORE_AFTER", "1", 1);
        setenv("TUTTI_TUNE_EXPLORE_SHARE", "1", 1);  // settle within the calls below
        unsetenv("TUTTI_ALGO");
        callStream(n, rank, id, kCallsToSettle, dir.file("seq." + std::to_string(rank)));
      },
      240);
  ASSERT_TRUE(result.allOk()) << result.describe();
  auto perShape = algorithmsPerShape(sameOnEveryRank(dir, n));
  ASSERT_EQ(perShape.size(), 4u);
  std::string file = cacheFileIn(cache);
  ASSERT_NE(file, "") << "no cache file under " << cache;
  std::string text = slurp(file);
  EXPECT_EQ(text.find("calibrated"), std::string::npos) << "the user's model calibrated\n" << text;
  // A shape whose model puts a single candidate within 3x of the best keeps the model's choice
  // without exploring (and without a cache line); under this model three of the four have
  // several close candidates.
  const char* keys[] = {"choice allreduce n3 h1 b8 w1 ", "choice allreduce n3 h1 b16 w1 ",
                        "choice allgather n3 h1 b11 w1 ", "choice reducescatter n3 h1 b15 w1 "};
  int explored = 0;
  for (const auto& [k, algos] : perShape) {
    if (algos.size() < 2) continue;
    ++explored;
    EXPECT_NE(text.find(keys[k]), std::string::npos) << keys[k] << " missing from\n" << text;
  }
  EXPECT_GE(explored, 3) << text;
}

// The cache text with a choice for `key` (a later line wins over an earlier one).
std::string withChoice(const std::string& text, const std::string& key, const std::string& algo) {
  return text + "choice " + key + " " + algo + "\n";
}

TEST(SelfTuning, AWarmCacheIsUsedFromTheFirstCallAndRanksAgreeOnRankZerosCache) {
  const int n = 2;
  TempDir dir("tutti-selftune");
  const std::string cacheA = dir.file("a"), cacheB = dir.file("b");
  {  // A first job fills cache A.
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          setenv("TUTTI_TUNING_CACHE", cacheA.c_str(), 1);
          setenv("TUTTI_TUNE_EXPLORE_AFTER", "0", 1);
          setenv("TUTTI_TUNE_EXPLORE_SHARE", "1", 1);  // settle within the calls below
          callStream(n, rank, id, kCallsToSettle, dir.file("seq." + std::to_string(rank)));
        },
        240);
    ASSERT_TRUE(result.allOk()) << result.describe();
  }
  const std::string fileA = cacheFileIn(cacheA);
  ASSERT_NE(fileA, "");
  EXPECT_NE(slurp(fileA).find("calibrated shm"), std::string::npos) << slurp(fileA);
  // On one host the calibration also prices reads of the shared window (its direct calls, on
  // 1 MiB and on 64 KiB).
  EXPECT_NE(slurp(fileA).find("window.read_gbps "), std::string::npos) << slurp(fileA);
  EXPECT_NE(slurp(fileA).find("window.read_small_gbps "), std::string::npos) << slurp(fileA);
  // Cache A learns naive for the 100-element all-reduce, cache B (another calibration, other
  // choices) ring; rank 0 reads A, rank 1 reads B.
  std::string textA = withChoice(slurp(fileA), "allreduce n2 h1 b8 w1", "naive");
  { std::ofstream(fileA) << textA; }
  std::string textB = textA;
  size_t alpha = textB.find("shm.alpha_us ");
  textB.replace(alpha, textB.find('\n', alpha) - alpha, "shm.alpha_us 400");
  textB = withChoice(textB, "allreduce n2 h1 b8 w1", "ring");
  ASSERT_EQ(system(("mkdir -p " + cacheB).c_str()), 0);
  const std::string fileB = cacheB + fileA.substr(fileA.rfind('/'));
  { std::ofstream(fileB) << textB; }
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_TUNING_CACHE", (rank == 0 ? cacheA : cacheB).c_str(), 1);
        setenv("TUTTI_TUNE_EXPLORE_AFTER", "0", 1);
        setenv("TUTTI_TUNE_EXPLORE_SHARE", "1", 1);  // settle within the calls below
        // The default, set against a caller's environment: job A's run-offs stay final
        // (confirmation: the next test).
        setenv("TUTTI_TUNE_CONFIRM_JOBS", "1", 1);
        callStream(n, rank, id, 6, dir.file("seq." + std::to_string(rank)));
      },
      240);
  ASSERT_TRUE(result.allOk()) << result.describe();
  auto perShape = algorithmsPerShape(sameOnEveryRank(dir, n));
  // Every shape is in the cache: one algorithm each from the first call, rank 0's choice.
  for (const auto& [k, algos] : perShape) EXPECT_EQ(algos.size(), 1u) << "shape " << k;
  EXPECT_EQ(*perShape[0].begin(), "naive");
  EXPECT_EQ(slurp(fileB), textB) << "rank 1 is not its host's lowest rank: it writes nothing";
}

// With TUTTI_TUNE_CONFIRM_JOBS=3, a cached choice whose evidence is of one job: the next job runs
// the run-off of its finalists again (every explored call verified, every rank alike) and the
// cache's evidence then holds both jobs.
TEST(SelfTuning, ACloseCachedChoiceIsRunOffAgainByTheNextJobAndItsEvidenceGrows) {
  const int n = 2;
  TempDir dir("tutti-selftune");
  const std::string cache = dir.file("cache");
  auto job = [&](int calls) {
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          setenv("TUTTI_TUNING_CACHE", cache.c_str(), 1);
          setenv("TUTTI_TUNE_EXPLORE_AFTER", "1", 1);
          setenv("TUTTI_TUNE_EXPLORE_SHARE", "1", 1);  // settle within the calls below
          setenv("TUTTI_TUNE_CONFIRM_JOBS", "3", 1);   // opt-in
          unsetenv("TUTTI_ALGO");
          callStream(n, rank, id, calls, dir.file("seq." + std::to_string(rank)));
        },
        240);
    ASSERT_TRUE(result.allOk()) << result.describe();
  };
  job(1);  // calibrates: the host's cache file
  ASSERT_NO_FATAL_FAILURE();
  const std::string file = cacheFileIn(cache);
  ASSERT_NE(file, "");
  // The 20000-element all-reduce (80000 bytes: bucket 16): ring, by a run-off that had
  // rabenseifner 4% behind.
  {
    std::ofstream(file, std::ios::app)
        << "choice allreduce n2 h1 b16 w1 ring\n"
        << "evidence allreduce n2 h1 b16 w1 1 ring:1.0000:0.0001 rabenseifner:1.0400:0.000104\n";
  }
  // One run-off round of the two: (4 passes x 3 untimed + 32 timed) calls each; up to three.
  job(1 + 3 * 2 * 44);
  ASSERT_NO_FATAL_FAILURE();
  std::istringstream seq(sameOnEveryRank(dir, n));
  std::vector<std::string> shape1;
  int k;
  std::string algo;
  while (seq >> k >> algo)
    if (k == 1) shape1.push_back(algo);
  ASSERT_FALSE(shape1.empty());
  EXPECT_EQ(shape1.front(), "ring") << "the cached choice runs until confirming starts";
  EXPECT_EQ(std::set<std::string>(shape1.begin(), shape1.end()),
            (std::set<std::string>{"ring", "rabenseifner"}));
  const std::string text = slurp(file);
  EXPECT_NE(text.find("evidence allreduce n2 h1 b16 w1 2 "), std::string::npos) << text;
  EXPECT_NE(text.find("choice allreduce n2 h1 b16 w1 "), std::string::npos) << text;
}

// Ranks on two hosts (TUTTI_HOSTID) that plan on a topology's model (a file with NICs, ranks
// on its NUMA node 0): the topology knows the network only by its NICs' speed, so the first
// call calibrates tcp (and nothing else) and the model takes the calibrated link in place of
// the NIC's; the cache keeps it for the next job.
TEST(SelfTuning, AcrossHostsTheTopologysModelTakesTheCalibratedNetwork) {
  const int n = 2;
  TempDir dir("tutti-selftune");
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_HOSTID", ("selftune-net-host-" + std::to_string(rank)).c_str(), 1);
        setenv("TUTTI_TOPO_FILE", TUTTI_TOPO_DATA_DIR "/hwloc2_pascal_2xP100-pcie_cx5.xml", 1);
        setenv("TUTTI_TOPO_DEVICE", "numa:0", 1);
        setenv("TUTTI_TUNING_CACHE", dir.file("cache").c_str(), 1);
        setenv("TUTTI_DEBUG", "INFO", 1);
        setenv("TUTTI_DEBUG_SUBSYS", "TUNE", 1);
        setenv("TUTTI_DEBUG_FILE", dir.file("log." + std::to_string(rank)).c_str(), 1);
        callStream(n, rank, id, 3, dir.file("seq." + std::to_string(rank)));
      },
      240);
  ASSERT_TRUE(result.allOk()) << result.describe();
  sameOnEveryRank(dir, n);
  const std::string log = slurp(dir.file("log.0"));
  EXPECT_NE(log.find("cost model from the topology"), std::string::npos) << log;
  EXPECT_NE(log.find("calibrated tcp in"), std::string::npos) << log;
  EXPECT_NE(log.find("the topology's model takes the calibrated network link"), std::string::npos)
      << log;
  const std::string text = slurp(cacheFileIn(dir.file("cache")));
  EXPECT_NE(text.find("calibrated tcp"), std::string::npos) << text;
  EXPECT_EQ(text.find("calibrated shm"), std::string::npos) << text;
  EXPECT_EQ(text.find("window.read"), std::string::npos) << text;  // measured with shm only
}

TEST(SelfTuning, ForcedAlgorithmsAndDeterministicModeDoNotExplore) {
  const int n = 2;
  for (const char* setting :
       {"TUTTI_ALGO=allreduce:ring;allgather:ring;reducescatter:ring", "TUTTI_DETERMINISTIC=1"}) {
    TempDir dir("tutti-selftune");
    tuttiUniqueId id = makeId();
    std::string name(setting, std::string(setting).find('=')),
        value(std::string(setting).substr(name.size() + 1));
    auto result = runRanks(
        n,
        [&](int rank) {
          setenv("TUTTI_TUNING_CACHE", dir.file("cache").c_str(), 1);
          setenv("TUTTI_TUNE_EXPLORE_AFTER", "0", 1);
          setenv("TUTTI_TUNE_EXPLORE_SHARE", "1", 1);  // settle within the calls below
          setenv(name.c_str(), value.c_str(), 1);
          callStream(n, rank, id, 12, dir.file("seq." + std::to_string(rank)));
        },
        240);
    ASSERT_TRUE(result.allOk()) << setting << ": " << result.describe();
    for (const auto& [k, algos] : algorithmsPerShape(sameOnEveryRank(dir, n)))
      EXPECT_EQ(algos.size(), 1u) << setting << ", shape " << k;
    std::string text = slurp(cacheFileIn(dir.file("cache")));
    EXPECT_EQ(text.find("choice "), std::string::npos) << setting << "\n" << text;
  }
}

}  // namespace
}  // namespace tutti::test
