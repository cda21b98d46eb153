// Elastic data-parallel training on the UCI digits (tests/data/digits.csv.gz): the ranks
// train softmax regression (the model of digits_training.cc) with their gradients
// all-reduced; one rank is killed at a given step, and the survivors go on: the all-reduce
// fails naming it, they agree on the failed ranks (tuttiCommAgreeFailedRanks), shrink the
// communicator without them (tuttiCommShrink with TUTTI_SHRINK_ABORT), split the training
// rows among themselves again and redo the step. The program starts its ranks itself (each a
// forked process; rank 0's process makes the unique id and so serves the store, which dies
// with it when rank 0 is the one killed):
//   digits_shrink [--ranks 4] [--steps 1500] [--kill-rank R] [--kill-step S] [--check PP]
//                 [--data FILE]
// --check PP: first trains the same steps without a kill, then with it, and exits non-zero
// unless the survivors' test accuracy is within PP percentage points of the run without.
// Model and data as digits_training.cc; batch 32 per rank, lr 0.5; rank r of n trains on the
// rows [r * 1440 / n, (r + 1) * 1440 / n) of the training set.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "digits_model.h"
#include "tutti/tutti.h"

namespace {

using namespace digits;

constexpr int kMaxRanks = 64;

// Shared between the forked ranks (mapped before the fork).
struct Shared {
  std::atomic<int> idState;  // 0 pending, 1 made, 2 failed
  tuttiUniqueId id;
  double loss, acc;  // written by rank 0 of the final communicator
  int finalRanks;
  int shrinks;
};

struct Options {
  int ranks = 4, steps = 1500, killRank = -1, killStep = 0;
  double checkPp = -1;
  std::string data = TUTTI_DIGITS_PATH;
};

[[noreturn]] void die(int rank, const char* what, tuttiResult_t r, tuttiComm_t comm) {
  std::fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, tuttiGetErrorString(r),
               tuttiGetLastError(comm));
  std::fflush(stderr);
  _exit(1);
}

// One rank's training; returns through _exit.
[[noreturn]] void trainRank(int rank, const Options& o, Shared* sh) {
  if (rank == 0) sh->idState.store(tuttiGetUniqueId(&sh->id) == tuttiSuccess ? 1 : 2);
  while (sh->idState.load() == 0) usleep(1000);
  if (sh->idState.load() != 1) _exit(1);
  tuttiComm_t comm = nullptr;
  if (tuttiResult_t r = tuttiCommInitRank(&comm, o.ranks, sh->id, rank); r != tuttiSuccess)
    die(rank, "tuttiCommInitRank", r, nullptr);
  Data d = load(o.data);
  splitRows(d, "interleaved", 0);
  std::vector<size_t> trainRows(kTrain);
  for (size_t r = 0; r < kTrain; ++r) trainRows[r] = r;
  int n = o.ranks, me = rank;  // this communicator's size and this rank's place in it
  std::vector<float> w(kParams, 0.0f), grad(kParams), sum(kParams);
  std::mt19937_64 rng(0x5eed + 104729 * rank);
  std::vector<size_t> batch(kBatch);
  int shrinks = 0;
  for (int step = 1; step <= o.steps; ++step) {
    if (rank == o.killRank && step == o.killStep) ::raise(SIGKILL);
    std::uniform_int_distribution<size_t> pick(kTrain * me / n, kTrain * (me + 1) / n - 1);
    for (auto& b : batch) b = pick(rng);
    std::fill(grad.begin(), grad.end(), 0.0f);
    lossGrad(d, w, batch, &grad);
    tuttiResult_t r =
        tuttiAllReduce(grad.data(), sum.data(), kParams, tuttiFloat32, tuttiSum, comm, nullptr);
    if (r != tuttiSuccess) {
      // A rank failed: agree on who, shrink without them, take a share of the rows, redo.
      std::printf("rank %d: step %d: %s\n", rank, step, tuttiGetLastError(comm));
      int failed[kMaxRanks], nfailed = 0;
      if (tuttiResult_t a = tuttiCommAgreeFailedRanks(comm, failed, &nfailed); a != tuttiSuccess)
        die(rank, "tuttiCommAgreeFailedRanks", a, comm);
      tuttiComm_t smaller = nullptr;
      if (tuttiResult_t s =
              tuttiCommShrink(comm, failed, nfailed, &smaller, nullptr, TUTTI_SHRINK_ABORT);
          s != tuttiSuccess)
        die(rank, "tuttiCommShrink", s, comm);
      tuttiCommDestroy(comm);
      comm = smaller;
      tuttiCommCount(comm, &n);
      tuttiCommUserRank(comm, &me);
      ++shrinks;
      std::printf("rank %d: %d rank(s) failed (first: rank %d); going on as rank %d of %d\n", rank,
                  nfailed, nfailed > 0 ? failed[0] : -1, me, n);
      --step;
      continue;
    }
    for (int i = 0; i < kParams; ++i)
      w[i] -= static_cast<float>(kLr * (sum[i] / n + kLambda * w[i]));
  }
  if (me == 0) {
    sh->loss = regularisedLoss(d, w, trainRows);
    sh->acc = accuracy(d, w, kTrain, d.rows());
    sh->finalRanks = n;
    sh->shrinks = shrinks;
  }
  if (tuttiResult_t r = tuttiCommDestroy(comm); r != tuttiSuccess)
    die(rank, "tuttiCommDestroy", r, nullptr);
  std::fflush(stdout);
  _exit(0);
}

// Runs the ranks; returns whether every rank ended as expected (the killed one by SIGKILL).
bool runJob(const Options& o, Shared* sh) {
  std::memset(static_cast<void*>(sh), 0, sizeof(Shared));
  std::fflush(stdout);
  std::vector<pid_t> pids(o.ranks);
  pid_t parent = getpid();
  for (int r = 0; r < o.ranks; ++r) {
    pids[r] = fork();
    if (pids[r] < 0) throw std::runtime_error("fork failed");
    if (pids[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      trainRank(r, o, sh);
    }
  }
  bool ok = true;
  for (int r = 0; r < o.ranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    bool expected = r == o.killRank ? killed : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!expected) {
      std::printf("rank %d ended unexpectedly (status 0x%x)\n", r, status);
      ok = false;
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "missing value after %s\n", a.c_str());
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--ranks") {
      o.ranks = std::stoi(v);
    } else if (a == "--steps") {
      o.steps = std::stoi(v);
    } else if (a == "--kill-rank") {
      o.killRank = std::stoi(v);
    } else if (a == "--kill-step") {
      o.killStep = std::stoi(v);
    } else if (a == "--check") {
      o.checkPp = std::stod(v);
    } else if (a == "--data") {
      o.data = v;
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.ranks < 2 || o.ranks > kMaxRanks || o.killRank >= o.ranks || o.steps < 1 ||
      (o.killRank >= 0 && (o.killStep < 1 || o.killStep > o.steps))) {
    std::fprintf(stderr,
                 "bad options: --ranks 2..%d, --kill-rank below --ranks, --kill-step in "
                 "[1, --steps]\n",
                 kMaxRanks);
    return 2;
  }
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  auto* sh = static_cast<Shared*>(mem);
  double baseline = -1;
  if (o.checkPp >= 0) {
    Options normal = o;
    normal.killRank = -1;
    if (!runJob(normal, sh)) return 1;
    baseline = sh->acc;
    std::printf("without a failure: %d ranks, %d steps: loss %.4f, test accuracy %.4f\n",
                sh->finalRanks, o.steps, sh->loss, sh->acc);
  }
  if (!runJob(o, sh)) return 1;
  std::printf(
      "with rank %d killed at step %d: finished on %d ranks after %d shrink(s): loss "
      "%.4f, test accuracy %.4f\n",
      o.killRank, o.killStep, sh->finalRanks, sh->shrinks, sh->loss, sh->acc);
  if (baseline < 0) return 0;
  const double diffPp = 100.0 * (sh->acc - baseline);
  const bool pass =
      sh->finalRanks == o.ranks - (o.killRank >= 0 ? 1 : 0) && std::abs(diffPp) <= o.checkPp;
  std::printf(
      "%s: test accuracy %+.2f percentage points against the run without a failure "
      "(allowed: %.1f)\n",
      pass ? "CHECK PASSED" : "CHECK FAILED", diffPp, o.checkPp);
  return pass ? 0 : 1;
}
