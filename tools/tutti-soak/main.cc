// tutti-soak: random verified collectives and point-to-point calls on forked ranks, for
// seconds or hours (docs/reliability.md). Every rank draws the same operation stream from
// --seed: random collectives of tutti.h (V variants, gather/scatter, in place and not),
// sends/receives, random sizes, datatypes, ops and roots, groups spanning several
// communicators (each rank records them in its own order), several communicators (splits)
// and optionally several threads with communicators of their own. Every result is checked
// against values computed here. --kill-after S kills one rank (chosen from the seed); the
// survivors must fail with an error naming it, and nobody may hang.
//
// Exit code 0: ops > 0, no wrong result, and either no error (no kill) or every survivor
// ended with errors naming the killed rank. 1 otherwise, 2 for bad usage.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ops.h"
#include "report.h"
#include "values.h"

namespace tutti::soak {
namespace {

struct Options {
  int ranks = 4;
  double seconds = 60;
  uint64_t seed = 0;
  bool seedGiven = false;
  std::string transport = "auto";  // auto, shm, tcp, mixed
  int threads = 1;
  size_t maxBytes = size_t{4} << 20;
  double killAfter = -1;
  double timeout = 30;
  int groupPercent = 20;
};

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: tutti-soak [--ranks N] [--seconds S] [--seed X] [--transport auto|shm|tcp|mixed]\n"
      "                  [--threads T] [--max-bytes B] [--kill-after S] [--timeout S]\n"
      "                  [--group-percent P]\n"
      "  --ranks N          forked ranks (default 4)\n"
      "  --seconds S        run time (default 60)\n"
      "  --seed X           the operation stream (default: from the clock; printed)\n"
      "  --transport T      auto (tutti's choice), shm, tcp, or mixed: two emulated hosts\n"
      "                     (TUTTI_HOSTID), shm inside each and tcp between them\n"
      "  --threads T        threads per rank, each with communicators of its own (default 1)\n"
      "  --max-bytes B      largest buffer of a call (default 4194304)\n"
      "  --kill-after S     SIGKILL one rank (chosen from the seed) after S seconds; the\n"
      "                     survivors must report an error naming it\n"
      "  --timeout S        TUTTI_TIMEOUT of the communicators (default 30)\n"
      "  --group-percent P  share of steps that are groups of 2-4 calls (default 20)\n");
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Worker {
  std::vector<Comm> comms;
  std::vector<int> victimRank;  // the killed rank's rank in each comm (kill runs)
  int thread = 0;
};

struct RankRun {
  const Options* opt;
  int rank;
  int victim;  // -1: no kill
  double start, end;
  RankReport* report;
  const std::atomic<int>* interrupted;  // the launcher got SIGINT/SIGTERM: end the run early
  std::atomic<bool> stop{false};        // a worker failed: the others stop too (no kill)
};

std::string lastError(tuttiComm_t comm) {
  const char* s = tuttiGetLastError(comm);
  return s != nullptr ? s : "";
}

bool namesRank(const std::string& text, int rank) {
  return text.find("(the first rank to fail: " + std::to_string(rank) + ")") != std::string::npos;
}

void noteError(RankRun& run, Worker& w, int commIndex, const std::string& text,
               const std::string& what) {
  run.report->errors++;
  std::string line = "rank " + std::to_string(run.rank) + " thread " + std::to_string(w.thread) +
                     ", " + what + ": " + text;
  run.report->note(run.report->firstError, sizeof(run.report->firstError), line);
  // commIndex -1: a group's failure, on any of the worker's communicators.
  bool named = false;
  for (size_t c = 0; c < w.comms.size(); ++c)
    if (commIndex < 0 || static_cast<int>(c) == commIndex)
      named = named || namesRank(text, w.victimRank[c]);
  if (run.victim >= 0 && named) run.report->errorsNamingVictim++;
}

void runWorker(RankRun& run, Worker& w) {
  const Options& opt = *run.opt;
  std::mt19937_64 shared(opt.seed * 1000003 + static_cast<uint64_t>(w.thread));
  std::mt19937_64 local(mix(opt.seed) ^ (static_cast<uint64_t>(run.rank) << 20) ^
                        static_cast<uint64_t>(w.thread));
  uint64_t call = 0;
  for (uint64_t step = 0;; ++step) {
    if (run.stop) return;
    if (run.victim == run.rank && w.thread == 0 && now() - run.start >= opt.killAfter)
      ::kill(::getpid(), SIGKILL);
    if (step % 16 == 0) {  // do all ranks agree to go on?
      int32_t late = now() >= run.end || run.interrupted->load() ? 1 : 0, anyLate = 0;
      tuttiResult_t r =
          tuttiAllReduce(&late, &anyLate, 1, tuttiInt32, tuttiMax, w.comms[0].handle, nullptr);
      if (r != tuttiSuccess) {
        noteError(run, w, 0, lastError(w.comms[0].handle), "the stop check on " + w.comms[0].name);
        return;
      }
      if (anyLate) return;
    }
    const bool group = static_cast<int>(shared() % 100) < opt.groupPercent;
    const int batch = group ? 2 + static_cast<int>(shared() % 3) : 1;
    std::vector<Op> ops;
    std::vector<bool> p2pUsed(w.comms.size(), false);
    for (int i = 0; i < batch; ++i) {
      ops.push_back(drawOp(shared, call++, w.comms, opt.maxBytes, true));
      // One send/receive pair per communicator and group (the rest stay collectives).
      Op& op = ops.back();
      if (op.kind == Kind::kSendRecv) {
        if (group && p2pUsed[op.comm]) op.kind = Kind::kBarrier;
        p2pUsed[op.comm] = true;
      }
    }
    // Issue order: in a group each rank interleaves the communicators in an order of its own,
    // keeping every communicator's calls in stream order.
    std::vector<size_t> order;
    if (batch == 1) {
      order = {0};
    } else {
      std::vector<std::vector<size_t>> perComm(w.comms.size());
      for (size_t i = 0; i < ops.size(); ++i) perComm[ops[i].comm].push_back(i);
      std::vector<size_t> next(w.comms.size(), 0);
      while (order.size() < ops.size()) {
        std::vector<size_t> open;
        for (size_t c = 0; c < perComm.size(); ++c)
          if (next[c] < perComm[c].size()) open.push_back(c);
        size_t c = open[local() % open.size()];
        order.push_back(perComm[c][next[c]++]);
      }
      run.report->groups++;
      tuttiGroupStart();
    }
    bool failed = false;
    for (size_t i : order) {
      tuttiResult_t r = issueOp(ops[i], w.comms);
      if (r != tuttiSuccess) {
        noteError(run, w, ops[i].comm, lastError(w.comms[ops[i].comm].handle),
                  ops[i].describe(w.comms));
        failed = true;
      }
    }
    if (batch > 1) {
      tuttiResult_t r = tuttiGroupEnd();
      if (r != tuttiSuccess && !failed) {
        std::string text = lastError(nullptr);
        const int which = -1;
        noteError(run, w, which, text, "a group of " + std::to_string(batch) + " calls");
        failed = true;
      }
    }
    if (failed) return;
    for (const Op& op : ops) {
      std::string wrong = verifyOp(op, w.comms);
      if (!wrong.empty()) {
        run.report->wrong++;
        run.report->note(
            run.report->firstWrong, sizeof(run.report->firstWrong),
            "rank " + std::to_string(run.rank) + ": " + op.describe(w.comms) + ": " + wrong);
      }
      run.report->ops++;
      run.report->bytes += outputBytes(op, w.comms);
      run.report->byKind[static_cast<int>(op.kind)]++;
    }
  }
}

Comm makeComm(tuttiComm_t handle, const std::string& name) {
  Comm c;
  c.handle = handle;
  c.name = name;
  tuttiCommUserRank(handle, &c.rank);
  tuttiCommCount(handle, &c.size);
  return c;
}

// One rank: init, splits, workers, teardown. Returns the process exit code.
int runRank(const Options& opt, const tuttiUniqueId& id, int rank, int victim, RankReport* report,
            const std::atomic<int>* interrupted, double start) {
  const int n = opt.ranks;
  if (opt.transport == "mixed")
    ::setenv("TUTTI_HOSTID", rank < (n + 1) / 2 ? "tutti-soak-host-a" : "tutti-soak-host-b", 1);
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(opt.timeout * 1000);
  if (opt.transport == "shm" || opt.transport == "tcp") config.transport = opt.transport.c_str();
  RankRun run{&opt, rank, victim, start, start + opt.seconds, report, interrupted};
  auto fatal = [&](const std::string& what, tuttiComm_t comm) {
    report->errors++;
    report->note(report->firstError, sizeof(report->firstError),
                 "rank " + std::to_string(rank) + ": " + what + ": " + lastError(comm));
    return 1;
  };
  tuttiComm_t world = nullptr;
  if (tuttiCommInitRankConfig(&world, n, id, rank, &config) != tuttiSuccess)
    return fatal("init", nullptr);
  // Splits, made in the same order on every rank. A kill run keeps to communicators holding
  // every rank: then every failure a survivor sees is the killed rank's.
  const bool kill = victim >= 0;
  std::vector<Worker> workers(opt.threads);
  std::vector<tuttiComm_t> all{world};
  auto split = [&](int color, int key, const std::string& name, Worker& w, int victimRank) {
    tuttiComm_t c = nullptr;
    if (tuttiCommSplit(world, color, key, &c, nullptr) != tuttiSuccess) return false;
    all.push_back(c);
    w.comms.push_back(makeComm(c, name));
    w.victimRank.push_back(victimRank);
    return true;
  };
  bool ok = true;
  workers[0].comms.push_back(makeComm(world, "world"));
  workers[0].victimRank.push_back(victim);
  ok = ok && split(0, -rank, "reversed", workers[0], n - 1 - victim);
  if (kill)
    ok = ok && split(0, rank, "copy", workers[0], victim);
  else
    ok = ok && split(rank % 2, rank, rank % 2 ? "odd ranks" : "even ranks", workers[0], -1);
  for (int t = 1; t < opt.threads && ok; ++t) {
    workers[t].thread = t;
    std::string name = "thread " + std::to_string(t);
    ok = split(0, rank, name, workers[t], victim);
    if (ok && !kill)
      ok = split(rank % 2, rank, name + (rank % 2 ? " odd" : " even"), workers[t], -1);
  }
  if (!ok) return fatal("split", world);
  std::vector<std::thread> threads;
  for (int t = 1; t < opt.threads; ++t)
    threads.emplace_back([&, t] {
      runWorker(run, workers[t]);
      if (!kill && report->errors > 0) run.stop = true;
    });
  runWorker(run, workers[0]);
  // Without a kill an error is a defect: abort everything so that the peers fail too
  // instead of waiting. With a kill every worker finds the dead rank on its own.
  if (!kill && report->errors > 0) {
    run.stop = true;
    for (tuttiComm_t c : all) tuttiCommAbort(c);
  }
  for (auto& t : threads) t.join();
  const bool failed = report->errors > 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (failed) tuttiCommAbort(*it);
    tuttiCommDestroy(*it);
  }
  report->finished = 1;
  return failed || report->wrong > 0 ? 1 : 0;
}

// The unique id is made in a helper process that serves the store until the run ends: the
// launcher stays single-threaded when it forks the ranks, and killing any rank (rank 0
// included) leaves the store up for the survivors' failure records.
bool makeId(tuttiUniqueId* out, pid_t* helper) {
  struct Shared {
    std::atomic<int> state;
    tuttiUniqueId id;
  };
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  auto* shared = new (mem) Shared{};
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    shared->state = tuttiGetUniqueId(&shared->id) == tuttiSuccess ? 1 : 2;
    for (;;) pause();
  }
  while (shared->state == 0) usleep(1000);
  *out = shared->id;
  *helper = pid;
  bool ok = shared->state == 1;
  munmap(mem, sizeof(Shared));
  return ok;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tutti-soak: %s needs a value\n", a.c_str());
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (a != "--ranks" && a != "--seconds" && a != "--seed" && a != "--transport" &&
        a != "--threads" && a != "--max-bytes" && a != "--kill-after" && a != "--timeout" &&
        a != "--group-percent") {
      std::fprintf(stderr, "tutti-soak: unknown option %s\n", a.c_str());
      return false;
    }
    if ((v = value()) == nullptr) return false;
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(v, &end);
    const bool number = end != v && *end == '\0' && errno == 0;
    if (a == "--transport") {
      o->transport = v;
      if (o->transport != "auto" && o->transport != "shm" && o->transport != "tcp" &&
          o->transport != "mixed") {
        std::fprintf(stderr, "tutti-soak: --transport %s: use auto, shm, tcp or mixed\n", v);
        return false;
      }
      continue;
    }
    if (!number || d < 0) {
      std::fprintf(stderr, "tutti-soak: %s %s: not a non-negative number\n", a.c_str(), v);
      return false;
    }
    if (a == "--ranks") o->ranks = static_cast<int>(d);
    if (a == "--seconds") o->seconds = d;
    if (a == "--seed") {
      o->seed = std::strtoull(v, nullptr, 10);
      o->seedGiven = true;
    }
    if (a == "--threads") o->threads = static_cast<int>(d);
    if (a == "--max-bytes") o->maxBytes = static_cast<size_t>(d);
    if (a == "--kill-after") o->killAfter = d;
    if (a == "--timeout") o->timeout = d;
    if (a == "--group-percent") o->groupPercent = static_cast<int>(d);
  }
  if (o->ranks < 1 || o->ranks > 64 || o->threads < 1 || o->threads > 16 || o->timeout < 1 ||
      o->groupPercent > 100 || o->maxBytes < 64) {
    std::fprintf(stderr,
                 "tutti-soak: out of range: --ranks 1..64, --threads 1..16, --timeout >= 1, "
                 "--group-percent 0..100, --max-bytes >= 64\n");
    return false;
  }
  if (o->killAfter >= 0 && o->ranks < 2) {
    std::fprintf(stderr, "tutti-soak: --kill-after needs at least 2 ranks\n");
    return false;
  }
  return true;
}

}  // namespace
}  // namespace tutti::soak

namespace {
std::atomic<int>* gInterrupted = nullptr;  // in shared memory, read by every rank
extern "C" void onInterrupt(int) { gInterrupted->store(1); }
}  // namespace

int main(int argc, char** argv) {
  using namespace tutti::soak;
  Options opt;
  if (!parse(argc, argv, &opt)) {
    usage(stderr);
    return 2;
  }
  if (!opt.seedGiven)
    opt.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  const int n = opt.ranks;
  const int victim = opt.killAfter >= 0 ? static_cast<int>(mix(opt.seed) % n) : -1;
  std::printf("tutti-soak: %d ranks, %d thread(s) each, transport %s, seed %llu, %.0f s", n,
              opt.threads, opt.transport.c_str(), static_cast<unsigned long long>(opt.seed),
              opt.seconds);
  if (victim >= 0) std::printf(", killing rank %d after %.1f s", victim, opt.killAfter);
  std::printf("\n");
  std::fflush(stdout);

  const size_t reportBytes = sizeof(RankReport) * n + sizeof(std::atomic<int>);
  void* mem = mmap(nullptr, reportBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  auto* reports = static_cast<RankReport*>(mem);
  for (int r = 0; r < n; ++r) new (&reports[r]) RankReport{};
  // Ctrl-C (or SIGTERM) ends a long run early with its summary: the ranks ignore it and stop
  // together at their next agreement.
  gInterrupted = new (&reports[n]) std::atomic<int>{0};

  tuttiUniqueId id;
  pid_t helper = -1;
  if (!makeId(&id, &helper)) {
    std::fprintf(stderr, "tutti-soak: tuttiGetUniqueId failed\n");
    return 1;
  }
  const double start = now();
  signal(SIGINT, onInterrupt);
  signal(SIGTERM, onInterrupt);
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      signal(SIGINT, SIG_IGN);
      signal(SIGTERM, SIG_IGN);
      std::fflush(stdout);
      _exit(runRank(opt, id, r, victim, &reports[r], gInterrupted, start));
    }
    pids[r] = pid;
  }
  // No hang: every rank must be done by the end of the run plus two timeouts.
  const double limit =
      (victim >= 0 ? std::min(opt.seconds, opt.killAfter) : opt.seconds) + 2 * opt.timeout + 30;
  std::vector<int> status(n, -1);
  std::vector<bool> hung(n, false);
  int left = n;
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    if (left > 0 && now() - start > limit) {
      for (int r = 0; r < n; ++r) {
        if (status[r] != -1) continue;
        hung[r] = true;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status[r], 0);
        --left;
      }
    }
    if (left > 0) usleep(20000);
  }
  kill(helper, SIGKILL);
  waitpid(helper, nullptr, 0);
  const double elapsed = now() - start;

  uint64_t ops = 0, bytes = 0, wrong = 0, errors = 0, groups = 0;
  uint64_t byKind[static_cast<int>(Kind::kCount)] = {};
  for (int r = 0; r < n; ++r) {
    ops += reports[r].ops;
    bytes += reports[r].bytes;
    wrong += reports[r].wrong;
    errors += reports[r].errors;
    groups += reports[r].groups;
    for (int k = 0; k < static_cast<int>(Kind::kCount); ++k) byKind[k] += reports[r].byKind[k];
  }
  std::printf(
      "tutti-soak: %.1f s: %llu operations verified (summed over ranks; %llu groups), %.3f GB "
      "received, %llu wrong results, %llu errors\n",
      elapsed, static_cast<unsigned long long>(ops), static_cast<unsigned long long>(groups),
      bytes / 1e9, static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(errors));
  std::printf("tutti-soak: by call:");
  for (int k = 0; k < static_cast<int>(Kind::kCount); ++k)
    std::printf(" %s %llu", kindText(static_cast<Kind>(k)),
                static_cast<unsigned long long>(byKind[k]));
  std::printf("\n");
  bool pass = ops > 0 && wrong == 0;
  for (int r = 0; r < n; ++r) {
    RankReport& rep = reports[r];
    if (rep.firstWrong[0]) std::printf("  wrong: %s\n", rep.firstWrong);
    if (hung[r]) {
      std::printf("  rank %d: HUNG (killed after %.0f s)\n", r, limit);
      pass = false;
      continue;
    }
    if (r == victim) {
      const bool killed = WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL;
      std::printf("  rank %d: killed as planned: %s\n", r, killed ? "yes" : "NO");
      pass = pass && killed;
      continue;
    }
    const int code = WIFEXITED(status[r]) ? WEXITSTATUS(status[r]) : -1;
    if (victim < 0) {
      if (code != 0 || rep.errors > 0) {
        std::printf("  rank %d: exit %d, %llu error(s): %s\n", r, code,
                    static_cast<unsigned long long>(rep.errors.load()), rep.firstError);
        pass = false;
      }
      continue;
    }
    const bool named =
        rep.errors > 0 && static_cast<uint64_t>(rep.errorsNamingVictim.load()) == rep.errors;
    std::printf("  rank %d: %llu error(s), %d naming rank %d: %s\n", r,
                static_cast<unsigned long long>(rep.errors.load()), rep.errorsNamingVictim.load(),
                victim, rep.firstError[0] ? rep.firstError : "(none)");
    pass = pass && named && rep.finished;
  }
  std::printf("tutti-soak: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
