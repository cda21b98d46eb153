// tutti-inspect on real jobs (issue 71): four forked ranks making all-reduces over shm or tcp,
// this process as the operator running the real tutti-inspect binary against the job file
// rank 0 wrote. A stopped rank (SIGSTOP) is named with the call numbers within 2 s in every
// trial; a rank that skipped a call is named as behind; a killed rank is named as gone; a
// healthy job answers within a second and runs on unharmed (every result checked).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "harness/scoped_env.h"
#include "harness/temp_dir.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 4;
constexpr size_t kCount = 1000;

// Rank r's input of call k, element i: distinct per rank, call and element, exact in float.
float input(int r, int k, size_t i) { return static_cast<float>((r + 1) * 1000 + k * 7 + i % 89); }
float expected(int k, size_t i) {
  float sum = 0;
  for (int r = 0; r < kRanks; ++r) sum += input(r, k, i);
  return sum;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

struct Inspection {
  int status = -1;  // tutti-inspect's exit status
  std::string out;
  double seconds = 0;
};

Inspection runInspect(const std::string& jobFile) {
  Inspection r;
  const std::string cmd = std::string(TUTTI_INSPECT_BIN) + " " + jobFile + " --timeout 1 2>&1";
  const auto start = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = p ? ::pclose(p) : -1;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

class InspectJob : public ::testing::TestWithParam<const char*> {
 protected:
  // Forks the ranks; `body(rank, comm)` runs after init; each rank then destroys its
  // communicator (a failed one too) and exits.
  void start(const std::function<void(int, tuttiComm_t)>& body) {
    id_ = makeId();
    for (int r = 0; r < kRanks; ++r)
      pids_.push_back(forkChild(
          [&, r] {
            tuttiComm_t comm = initComm(kRanks, id_, r, GetParam());
            ASSERT_NE(comm, nullptr);
            body(r, comm);
            tuttiCommDestroy(comm);
          },
          120));
  }
  // The job file rank 0 wrote (waits up to 30 s for it).
  std::string jobFile() {
    for (int i = 0; i < 3000; ++i) {
      for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
        if (e.path().extension() == ".job") return e.path();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no job file in " << dir_.path();
    return "";
  }
  void stopJob() {
    if (std::FILE* f = std::fopen(stopFile().c_str(), "w")) std::fclose(f);
  }
  std::string stopFile() const { return dir_.file("stop"); }
  // Whether the stop file exists, agreed by all ranks (an all-reduce of what each sees).
  bool stopAgreed(tuttiComm_t comm) {
    int32_t seen = exists(stopFile()) ? 1 : 0, any = 0;
    EXPECT_EQ(tuttiAllReduce(&seen, &any, 1, tuttiInt32, tuttiMax, comm, nullptr), tuttiSuccess)
        << tuttiGetLastError(comm);
    return any != 0;
  }
  // Loops all-reduces (checking every result) until the ranks agree to stop.
  void loop(int rank, tuttiComm_t comm) {
    std::vector<float> in(kCount), out(kCount);
    for (int k = 0; k % 16 != 0 || !stopAgreed(comm); ++k) {
      for (size_t i = 0; i < kCount; ++i) in[i] = input(rank, k % 50, i);
      TUTTI_ASSERT_OK(
          tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr),
          comm);
      for (size_t i = 0; i < kCount; i += 37) ASSERT_EQ(out[i], expected(k % 50, i)) << k;
      if (k % 64 == 0) usleep(1000);  // leaves the operator's process some core
    }
  }
  int waitAll() {
    int bad = 0;
    for (pid_t p : pids_) bad += waitChild(p) != 0;
    return bad;
  }

  TempDir dir_{"tutti-inspect-test"};
  ScopedEnv env_{{"TUTTI_INSPECT_DIR", dir_.path().c_str()}, {"TUTTI_TUNE", "0"}};
  tuttiUniqueId id_{};
  std::vector<pid_t> pids_;
};

// A healthy job answers within a second; a stopped rank is named, with the call numbers of
// the others, within 2 s, in 10 of 10 trials (the stopped rank rotates).
TEST_P(InspectJob, NamesAStoppedRankInEveryTrial) {
  start([&](int rank, tuttiComm_t comm) { loop(rank, comm); });
  const std::string job = jobFile();
  ASSERT_FALSE(job.empty());
  // Rank 0 writes the job file during init: the trials start once every rank makes calls.
  Inspection healthy;
  for (int tries = 0; tries < 100; ++tries) {
    healthy = runInspect(job);
    if (healthy.out.find("has made no call yet") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(healthy.out.find("has made no call yet"), std::string::npos) << healthy.out;
  EXPECT_EQ(healthy.status, 0) << healthy.out;
  EXPECT_NE(healthy.out.find("verdict: healthy"), std::string::npos) << healthy.out;
  EXPECT_LT(healthy.seconds, 1.0) << healthy.out;
  for (int trial = 0; trial < kRanks; ++trial) {  // each rank stopped once
    const int victim = trial;
    ASSERT_EQ(::kill(pids_[victim], SIGSTOP), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const Inspection r = runInspect(job);
    ::kill(pids_[victim], SIGCONT);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_LT(r.seconds, 2.0) << r.out;
    const std::string named = "rank " + std::to_string(victim) + " does not answer";
    EXPECT_NE(r.out.find(named), std::string::npos) << "trial " << trial << ":\n" << r.out;
    EXPECT_NE(r.out.find("is stopped"), std::string::npos) << r.out;
    // Every other rank reports its call with its collective number.
    for (int other = 0; other < kRanks; ++other)
      if (other != victim) {
        const std::string line = "rank " + std::to_string(other) + " (host";
        const size_t at = r.out.find(line);
        ASSERT_NE(at, std::string::npos) << r.out;
        EXPECT_NE(r.out.substr(at, r.out.find('\n', at) - at).find(" #"), std::string::npos)
            << r.out;
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stopJob();
  EXPECT_EQ(waitAll(), 0) << "a rank failed after the inspections";
  EXPECT_FALSE(exists(job)) << "rank 0 left its job file behind";
}

// Rank 2 makes one call fewer and then waits: the others wait in the last call for it, and
// the verdict names rank 2 as behind, after its last call.
TEST_P(InspectJob, NamesARankThatSkippedACall) {
  constexpr int kCalls = 20;
  start([&](int rank, tuttiComm_t comm) {
    std::vector<float> in(kCount), out(kCount);
    for (int k = 0; k < kCalls; ++k) {
      if (rank == 2 && k == kCalls - 1)
        while (!exists(stopFile())) usleep(5000);  // the skipped call, made late
      for (size_t i = 0; i < kCount; ++i) in[i] = input(rank, k, i);
      TUTTI_ASSERT_OK(
          tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr),
          comm);
      for (size_t i = 0; i < kCount; i += 37) ASSERT_EQ(out[i], expected(k, i)) << k;
    }
  });
  const std::string job = jobFile();
  ASSERT_FALSE(job.empty());
  Inspection r;
  for (int tries = 0; tries < 50; ++tries) {  // until the others have waited a second
    r = runInspect(job);
    if (r.out.find("is behind") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("ranks 0, 1, 3 wait in allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#" + std::to_string(kCalls) + " for rank 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 2 is behind: between calls"), std::string::npos) << r.out;
  // A waiting rank says what it waits for: a transfer's bytes or a window phase.
  const size_t waiting = r.out.find("waiting for rank 2 for ");
  ASSERT_NE(waiting, std::string::npos) << r.out;
  const std::string line = r.out.substr(waiting, r.out.find('\n', waiting) - waiting);
  EXPECT_TRUE(line.find("(receive ") != std::string::npos ||
              line.find("(send ") != std::string::npos ||
              line.find("(window ") != std::string::npos)
      << line;
  EXPECT_NE(r.out.find("#" + std::to_string(kCalls - 1) + " ["), std::string::npos) << r.out;
  stopJob();
  EXPECT_EQ(waitAll(), 0);
}

// A killed rank: named as gone; the others report their failure.
TEST_P(InspectJob, NamesAKilledRankAsGone) {
  start([&](int rank, tuttiComm_t comm) {
    std::vector<float> in(kCount, 1.0f), out(kCount);
    for (int k = 0; !exists(stopFile()); ++k)
      if (tuttiAllReduce(in.data(), out.data(), kCount, tuttiFloat32, tuttiSum, comm, nullptr) !=
          tuttiSuccess) {
        while (!exists(stopFile())) usleep(5000);  // failed: keep the communicator for a look
        break;
      }
    (void)rank;
  });
  const std::string job = jobFile();
  ASSERT_FALSE(job.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(pids_[3], SIGKILL), 0);
  EXPECT_EQ(waitChild(pids_[3]), 128 + SIGKILL);
  Inspection r;
  for (int tries = 0; tries < 50; ++tries) {  // until every survivor has noticed
    r = runInspect(job);
    if (r.out.find("ranks 0-2 have failed") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("rank 3's process is gone"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks 0-2 have failed"), std::string::npos) << r.out;
  stopJob();
  pids_.pop_back();
  EXPECT_EQ(waitAll(), 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, InspectJob, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tutti::test
