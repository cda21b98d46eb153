// tutti-soak: random verified collectives and point-to-point calls on forked ranks, for
// seconds or hours (docs/reliability.md). Every rank draws the same operation stream from
// --seed: random collectives of tutti.h (every V variant, gather/scatter, in place and not),
// sends/receives, random sizes, datatypes, ops and roots, groups spanning several
// communicators (each rank records them in its own order), groups of small all-reduces (and an
// all-gather) that tutti fuses, steps on host streams (one per communicator, several steps
// sometimes enqueued before one synchronise), several communicators (splits) and optionally
// several threads with communicators of their own. Every result is checked against values
// computed here. --kill-after S kills one rank (chosen from the seed), at a step boundary or
// inside stream calls, a fused group or a V-collective (--kill-during); the survivors must fail
// with errors naming it (those of tuttiStreamSynchronize included), and nobody may hang.
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
  int streamPercent = 20;
  int fusePercent = 15;
  std::string killDuring = "seed";  // seed, boundary, stream, fused, v, any
};

// What a kill run's victim is inside when it dies (--kill-during).
enum class KillDuring { kBoundary, kStream, kFused, kV, kAny };
const char* killDuringText(KillDuring k) {
  static const char* names[] = {"at a step boundary", "inside stream calls", "inside a fused group",
                                "inside a V-collective", "at any moment"};
  return names[static_cast<int>(k)];
}
// Phase bits a worker publishes (its step's, and those of its stream steps not yet
// synchronised); kPhaseBoundary and kPhaseMissed only in RankReport::killPhase.
constexpr int kPhaseStream = 1, kPhaseFused = 2, kPhaseV = 4, kPhaseBoundary = 8, kPhaseMissed = 16;

std::string phaseText(int bits) {
  if (bits & kPhaseBoundary) return "at a step boundary";
  std::string s;
  auto add = [&](const char* what) { s += (s.empty() ? "" : ", ") + std::string(what); };
  if (bits & kPhaseStream) add("stream calls");
  if (bits & kPhaseFused) add("a fused group");
  if (bits & kPhaseV) add("a V-collective");
  if (s.empty()) s = "plain calls";
  s = "inside " + s;
  if (bits & kPhaseMissed) s += " (the phase aimed at did not come within 3 s)";
  return s;
}

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: tutti-soak [--ranks N] [--seconds S] [--seed X] [--transport auto|shm|tcp|mixed]\n"
      "                  [--threads T] [--max-bytes B] [--kill-after S] [--timeout S]\n"
      "                  [--group-percent P] [--stream-percent P] [--fuse-percent P]\n"
      "                  [--kill-during seed|boundary|stream|fused|v|any]\n"
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
      "  --group-percent P  share of steps that are groups of 2-4 calls (default 20)\n"
      "  --stream-percent P share of steps issued on host streams, one per communicator,\n"
      "                     sometimes several steps before one synchronise (default 20)\n"
      "  --fuse-percent P   share of steps that are groups of 2-6 small all-reduces (and\n"
      "                     sometimes an all-gather) on one communicator, which tutti fuses\n"
      "                     (default 15)\n"
      "  --kill-during W    kill runs: the victim dies at a step boundary, inside stream\n"
      "                     calls, a fused group or a V-collective (the first after\n"
      "                     --kill-after; at most 3 s later), or at any moment; seed: one of\n"
      "                     them chosen from the seed (default)\n");
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Worker {
  std::vector<Comm> comms;
  std::vector<int> victimRank;  // the killed rank's rank in each comm (kill runs)
  int thread = 0;
  // Stream steps enqueued and not yet synchronised: their buffers belong to tutti until then.
  std::vector<std::vector<Op>> pending;
  std::vector<bool> streamUsed;  // per comm: calls enqueued on its stream since its synchronise
  int pendingBits = 0;           // phase bits of the pending steps
};

struct RankRun {
  const Options* opt;
  int rank;
  int victim;  // -1: no kill
  KillDuring killDuring;
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
  if (run.victim >= 0 && !named)
    run.report->note(run.report->firstUnnamed, sizeof(run.report->firstUnnamed), line);
}

// A step's verified calls, counted by kind.
void account(RankRun& run, Worker& w, const std::vector<Op>& ops) {
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
    if (op.fusedMember < 0)
      run.report->byKind[static_cast<int>(op.kind)]++;
    else if (op.kind == Kind::kAllGather)
      run.report->fusedAllGather++;
    else
      run.report->fusedAllReduce++;
    if (op.onStream) run.report->streamOps++;
  }
}

// Synchronises every stream with calls enqueued since its last synchronise and, when all
// succeed, verifies the pending steps. False after an error: the pending steps stay in w
// (their buffers belong to tutti until the streams are destroyed). In a kill run every stream
// is synchronised even after a failure, and each failure counts as an error that must name
// the killed rank.
bool flush(RankRun& run, Worker& w) {
  bool ok = true;
  for (size_t c = 0; c < w.comms.size(); ++c) {
    if (!w.streamUsed[c]) continue;
    if (!ok && run.victim < 0) break;
    w.streamUsed[c] = false;
    const tuttiResult_t r = tuttiStreamSynchronize(w.comms[c].stream);
    if (r == tuttiSuccess) continue;
    std::string text = lastError(nullptr);
    if (text.empty()) text = lastError(w.comms[c].handle);
    run.report->syncErrors++;
    if (run.victim >= 0 && namesRank(text, w.victimRank[c])) run.report->syncErrorsNamingVictim++;
    noteError(run, w, static_cast<int>(c), text,
              std::string("tuttiStreamSynchronize (") + tuttiGetErrorString(r) + ") of " +
                  w.comms[c].name + "'s host stream, " + std::to_string(w.pending.size()) +
                  " step(s) pending from " + w.pending.front().front().describe(w.comms));
    ok = false;
  }
  if (!ok) return false;
  if (!w.pending.empty()) run.report->streamSyncs++;
  for (const std::vector<Op>& ops : w.pending) account(run, w, ops);
  w.pending.clear();
  w.pendingBits = 0;
  return true;
}

// After a failure in a kill run: the streams' pending calls fail too, and their errors must
// name the killed rank as well.
void drain(RankRun& run, Worker& w) {
  if (run.victim >= 0 && !w.pending.empty()) flush(run, w);
}

void runWorker(RankRun& run, Worker& w) {
  const Options& opt = *run.opt;
  std::mt19937_64 shared(opt.seed * 1000003 + static_cast<uint64_t>(w.thread));
  std::mt19937_64 local(mix(opt.seed) ^ (static_cast<uint64_t>(run.rank) << 20) ^
                        static_cast<uint64_t>(w.thread));
  w.streamUsed.assign(w.comms.size(), false);
  auto publish = [&](int bits) {
    if (w.thread == 0) run.report->phase = bits;
  };
  uint64_t call = 0;
  for (uint64_t step = 0;; ++step) {
    if (run.stop) return;
    if (run.victim == run.rank && w.thread == 0 && run.killDuring == KillDuring::kBoundary &&
        now() - run.start >= opt.killAfter) {
      run.report->killPhase = kPhaseBoundary;
      run.report->killMs = static_cast<int64_t>((now() - run.start) * 1000);
      ::kill(::getpid(), SIGKILL);
    }
    if (step % 16 == 0) {  // do all ranks agree to go on?
      // A sum of {late, 1}: the second must be the rank count, and "some rank is late" is
      // checked too: that rank read the (system-wide monotonic) clock at or after the end
      // before it contributed, so this rank's clock must have reached the end by the time
      // the result is back, unless the run was interrupted.
      const Comm& c0 = w.comms[0];
      int32_t in[2] = {now() >= run.end || run.interrupted->load() ? 1 : 0, 1}, out[2] = {-1, -1};
      tuttiResult_t r = tuttiAllReduce(in, out, 2, tuttiInt32, tuttiSum, c0.handle, nullptr);
      if (r != tuttiSuccess) {
        noteError(run, w, 0, lastError(c0.handle), "the stop check on " + c0.name);
        drain(run, w);
        return;
      }
      const double t = now();
      if (out[1] != c0.size || out[0] < 0 || out[0] > c0.size ||
          (out[0] > 0 && t < run.end && !run.interrupted->load())) {
        run.report->wrong++;
        run.report->note(run.report->firstWrong, sizeof(run.report->firstWrong),
                         "rank " + std::to_string(run.rank) + " thread " +
                             std::to_string(w.thread) + ": the stop check on " + c0.name +
                             " (an all-reduce of {late, 1}, int32 sum) returned success with {" +
                             std::to_string(out[0]) + ", " + std::to_string(out[1]) + "} at " +
                             std::to_string(t - run.start) + " s of " +
                             std::to_string(run.end - run.start) + " (expected {0.." +
                             std::to_string(c0.size) + ", " + std::to_string(c0.size) +
                             "}, and 0 late before the end)");
        drain(run, w);
        return;
      }
      if (out[0] > 0) {
        run.report->stopChecksEnded++;
        flush(run, w);
        return;
      }
    }
    // The step: one call, a group, or a fused group; blocking or on the host streams.
    const uint64_t mode = shared();
    const bool onStream = static_cast<int>(mode % 100) < opt.streamPercent;
    const bool fused = static_cast<int>((mode / 100) % 100) < opt.fusePercent;
    std::vector<Op> ops;
    std::vector<size_t> order;
    if (fused) {
      // Recorded in the same order on every rank: fusion requires it.
      ops = drawFusedGroup(shared, call, w.comms);
      for (size_t i = 0; i < ops.size(); ++i) order.push_back(i);
    } else {
      const bool group = static_cast<int>(shared() % 100) < opt.groupPercent;
      const int batch = group ? 2 + static_cast<int>(shared() % 3) : 1;
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
      // Issue order: in a group each rank interleaves the communicators in an order of its
      // own, keeping every communicator's calls in stream order.
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
      }
    }
    const bool group = ops.size() > 1;
    int bits = (onStream ? kPhaseStream : 0) | (fused ? kPhaseFused : 0);
    for (Op& op : ops) {
      op.onStream = onStream;
      if (isV(op.kind)) bits |= kPhaseV;
    }
    publish(bits | w.pendingBits);
    if (group) {
      run.report->groups++;
      if (fused) run.report->fusedGroups++;
      tuttiGroupStart();
    }
    bool failed = false;
    for (size_t i : order) {
      const Comm& c = w.comms[ops[i].comm];
      tuttiResult_t r = issueOp(ops[i], w.comms, onStream ? c.stream : nullptr);
      if (r != tuttiSuccess) {
        noteError(run, w, ops[i].comm, lastError(c.handle), ops[i].describe(w.comms));
        failed = true;
      }
    }
    if (group) {
      tuttiResult_t r = tuttiGroupEnd();
      if (r != tuttiSuccess && !failed) {
        std::string text = lastError(nullptr);
        // A fused group's failure is its communicator's; a group of several, any of them.
        const int which = fused ? ops[0].comm : -1;
        noteError(run, w, which, text,
                  std::string("a ") + (fused ? "fused " : "") + "group of " +
                      std::to_string(ops.size()) + " calls" + (onStream ? " on host streams" : "") +
                      ", from " + ops[0].describe(w.comms));
        failed = true;
      }
    }
    if (onStream) {
      // Enqueued (or partly): the buffers stay alive until a synchronise.
      run.report->streamSteps++;
      for (const Op& op : ops) w.streamUsed[op.comm] = true;
      w.pending.push_back(std::move(ops));
      w.pendingBits |= bits;
      if (failed) {
        drain(run, w);
        return;
      }
      // Sometimes several steps before one synchronise (at most 4).
      if (w.pending.size() >= 4 || local() % 2 == 0) {
        if (!flush(run, w)) return;
      }
      publish(w.pendingBits);
      continue;
    }
    if (failed) {
      drain(run, w);
      return;
    }
    if (fused) {
      // The group's last call ran fused (an all-gather among its members; all-reduces alone
      // pack into one all-reduce, which keeps its algorithm's name). Read only with no stream
      // call of the communicator in flight.
      run.report->fusedBlocking++;
      const Comm& c = w.comms[ops[0].comm];
      const char* algo = w.streamUsed[ops[0].comm] ? nullptr : tuttiCommLastAlgorithm(c.handle);
      if (algo != nullptr && std::strcmp(algo, "fused") == 0) run.report->fusedSaidFused++;
    }
    account(run, w, ops);
    publish(w.pendingBits);
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
int runRank(const Options& opt, const tuttiUniqueId& id, int rank, int victim,
            KillDuring killDuring, RankReport* report, const std::atomic<int>* interrupted,
            double start) {
  const int n = opt.ranks;
  if (opt.transport == "mixed")
    ::setenv("TUTTI_HOSTID", rank < (n + 1) / 2 ? "tutti-soak-host-a" : "tutti-soak-host-b", 1);
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(opt.timeout * 1000);
  if (opt.transport == "shm" || opt.transport == "tcp") config.transport = opt.transport.c_str();
  RankRun run{&opt, rank, victim, killDuring, start, start + opt.seconds, report, interrupted};
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
  // A host stream per worker communicator, made once.
  for (Worker& w : workers)
    for (Comm& c : w.comms)
      if (tuttiStreamCreate(&c.stream) != tuttiSuccess) return fatal("tuttiStreamCreate", nullptr);
  // The victim's killer (all but --kill-during boundary, which the first worker does itself
  // at the start of a step): after --kill-after it waits (at most 3 s) until the first worker
  // is inside the phase aimed at, lets it go on for 0-300 us (from the seed), and kills the
  // process whatever its threads are doing.
  if (rank == victim && killDuring != KillDuring::kBoundary) {
    // Values only: the thread outlives runRank when the run ends before the kill.
    const double killAt = start + opt.killAfter;
    const uint64_t seed = opt.seed;
    std::thread([report, killDuring, killAt, start, seed] {
      while (now() < killAt)
        usleep(static_cast<useconds_t>(std::clamp((killAt - now()) * 1e6, 50.0, 10000.0)));
      const int aim = killDuring == KillDuring::kStream  ? kPhaseStream
                      : killDuring == KillDuring::kFused ? kPhaseFused
                      : killDuring == KillDuring::kV     ? kPhaseV
                                                         : 0;
      const double deadline = now() + 3;
      int phase = report->phase.load();
      while (aim != 0 && (phase & aim) == 0 && now() < deadline) {
        usleep(20);
        phase = report->phase.load();
      }
      if (aim != 0 && (phase & aim) == 0) phase |= kPhaseMissed;
      usleep(static_cast<useconds_t>(mix(seed + 11) % 300));
      report->killPhase = phase;
      report->killMs = static_cast<int64_t>((now() - start) * 1000);
      ::kill(::getpid(), SIGKILL);
    }).detach();
  }
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
  // After a failure: abort first, so that the streams' calls still queued or in flight end
  // at once; then the streams (waiting for their calls; their errors are the failure's), and
  // only then the pending steps' buffers (with the workers) and the communicators.
  if (failed)
    for (tuttiComm_t c : all) tuttiCommAbort(c);
  for (Worker& w : workers)
    for (Comm& c : w.comms) {
      if (c.stream == nullptr) continue;
      if (tuttiStreamDestroy(c.stream) != tuttiSuccess && !failed) {
        report->errors++;
        report->note(report->firstError, sizeof(report->firstError),
                     "rank " + std::to_string(rank) + ": tuttiStreamDestroy of " + c.name +
                         "'s host stream: " + lastError(nullptr));
      }
      c.stream = nullptr;
    }
  for (Worker& w : workers) w.pending.clear();
  for (auto it = all.rbegin(); it != all.rend(); ++it) tuttiCommDestroy(*it);
  report->finished = 1;
  return report->errors > 0 || report->wrong > 0 ? 1 : 0;
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
        a != "--group-percent" && a != "--stream-percent" && a != "--fuse-percent" &&
        a != "--kill-during") {
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
    if (a == "--kill-during") {
      o->killDuring = v;
      if (o->killDuring != "seed" && o->killDuring != "boundary" && o->killDuring != "stream" &&
          o->killDuring != "fused" && o->killDuring != "v" && o->killDuring != "any") {
        std::fprintf(stderr,
                     "tutti-soak: --kill-during %s: use seed, boundary, stream, fused, v or any\n",
                     v);
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
    if (a == "--stream-percent") o->streamPercent = static_cast<int>(d);
    if (a == "--fuse-percent") o->fusePercent = static_cast<int>(d);
  }
  if (o->ranks < 1 || o->ranks > 64 || o->threads < 1 || o->threads > 16 || o->timeout < 1 ||
      o->groupPercent > 100 || o->streamPercent > 100 || o->fusePercent > 100 || o->maxBytes < 64) {
    std::fprintf(stderr,
                 "tutti-soak: out of range: --ranks 1..64, --threads 1..16, --timeout >= 1, "
                 "--group-percent, --stream-percent and --fuse-percent 0..100, --max-bytes >= "
                 "64\n");
    return false;
  }
  if ((o->killDuring == "stream" && o->streamPercent == 0) ||
      (o->killDuring == "fused" && o->fusePercent == 0)) {
    std::fprintf(stderr, "tutti-soak: --kill-during %s needs a non-zero --%s-percent\n",
                 o->killDuring.c_str(), o->killDuring == "stream" ? "stream" : "fuse");
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
  // What the victim is inside when it dies: --kill-during, or one of the phases the run has
  // chosen from the seed.
  KillDuring killDuring = KillDuring::kBoundary;
  if (opt.killDuring == "seed") {
    std::vector<KillDuring> can{KillDuring::kBoundary, KillDuring::kV, KillDuring::kAny};
    if (opt.streamPercent > 0) can.push_back(KillDuring::kStream);
    if (opt.fusePercent > 0) can.push_back(KillDuring::kFused);
    killDuring = can[mix(opt.seed + 7) % can.size()];
  } else {
    const char* names[] = {"boundary", "stream", "fused", "v", "any"};
    for (int k = 0; k < 5; ++k)
      if (opt.killDuring == names[k]) killDuring = static_cast<KillDuring>(k);
  }
  if (victim >= 0)
    std::printf(", killing rank %d after %.1f s %s", victim, opt.killAfter,
                killDuringText(killDuring));
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
      _exit(runRank(opt, id, r, victim, killDuring, &reports[r], gInterrupted, start));
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
  uint64_t streamOps = 0, streamSteps = 0, streamSyncs = 0, fusedGroups = 0, fusedAllReduce = 0,
           fusedAllGather = 0, syncErrors = 0, fusedBlocking = 0, fusedSaidFused = 0;
  uint64_t byKind[static_cast<int>(Kind::kCount)] = {};
  for (int r = 0; r < n; ++r) {
    ops += reports[r].ops;
    bytes += reports[r].bytes;
    wrong += reports[r].wrong;
    errors += reports[r].errors;
    groups += reports[r].groups;
    streamOps += reports[r].streamOps;
    streamSteps += reports[r].streamSteps;
    streamSyncs += reports[r].streamSyncs;
    fusedGroups += reports[r].fusedGroups;
    fusedAllReduce += reports[r].fusedAllReduce;
    fusedAllGather += reports[r].fusedAllGather;
    syncErrors += reports[r].syncErrors;
    fusedBlocking += reports[r].fusedBlocking;
    fusedSaidFused += reports[r].fusedSaidFused;
    for (int k = 0; k < static_cast<int>(Kind::kCount); ++k) byKind[k] += reports[r].byKind[k];
  }
  auto ull = [](uint64_t x) { return static_cast<unsigned long long>(x); };
  std::printf(
      "tutti-soak: %.1f s: %llu operations verified (summed over ranks; %llu groups), %.3f GB "
      "received, %llu wrong results, %llu errors\n",
      elapsed, static_cast<unsigned long long>(ops), static_cast<unsigned long long>(groups),
      bytes / 1e9, static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(errors));
  std::printf("tutti-soak: by call (outside fused groups):");
  for (int k = 0; k < static_cast<int>(Kind::kCount); ++k)
    std::printf(" %s %llu", kindText(static_cast<Kind>(k)), ull(byKind[k]));
  std::printf("\n");
  std::printf(
      "tutti-soak: fused groups %llu (members verified: allreduce %llu, allgather %llu; %llu of "
      "the %llu blocking ones ended with tuttiCommLastAlgorithm \"fused\"); on host streams: %llu "
      "calls verified, %llu steps enqueued, %llu synchronises, %llu synchronise errors\n",
      ull(fusedGroups), ull(fusedAllReduce), ull(fusedAllGather), ull(fusedSaidFused),
      ull(fusedBlocking), ull(streamOps), ull(streamSteps), ull(streamSyncs), ull(syncErrors));
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
      std::printf("  rank %d: killed as planned: %s", r, killed ? "yes" : "NO");
      if (killed && rep.killMs >= 0)
        std::printf(", at %.2f s, %s", rep.killMs / 1000.0, phaseText(rep.killPhase).c_str());
      std::printf("\n");
      pass = pass && killed;
      continue;
    }
    const int code = WIFEXITED(status[r]) ? WEXITSTATUS(status[r]) : -1;
    // "exit 1", or the signal that ended the rank (a crash: it reports nothing itself).
    const std::string ended = WIFSIGNALED(status[r])
                                  ? std::string("killed by signal ") +
                                        std::to_string(WTERMSIG(status[r])) + " (" +
                                        strsignal(WTERMSIG(status[r])) + ")"
                                  : "exit " + std::to_string(code);
    if (victim < 0) {
      if (code != 0 || rep.errors > 0) {
        std::printf("  rank %d: %s, %llu error(s): %s\n", r, ended.c_str(),
                    static_cast<unsigned long long>(rep.errors.load()), rep.firstError);
        pass = false;
      }
      continue;
    }
    const bool named =
        rep.errors > 0 && static_cast<uint64_t>(rep.errorsNamingVictim.load()) == rep.errors;
    // A survivor ends with exit 1 (its errors) after its teardown; anything else is printed,
    // and so are workers that ended at a stop check (the run over, for them).
    std::string how =
        code == 1 && rep.finished ? "" : ended + (rep.finished ? "" : ", unfinished") + ", ";
    if (rep.stopChecksEnded > 0)
      how += std::to_string(rep.stopChecksEnded.load()) + " worker(s) ended at a stop check, ";
    std::printf(
        "  rank %d: %s%llu error(s), %d naming rank %d (%llu from tuttiStreamSynchronize, %d "
        "naming it): %s\n",
        r, how.c_str(), ull(rep.errors.load()), rep.errorsNamingVictim.load(), victim,
        ull(rep.syncErrors.load()), rep.syncErrorsNamingVictim.load(),
        rep.firstError[0] ? rep.firstError : "(none)");
    if (rep.firstUnnamed[0] && std::strcmp(rep.firstUnnamed, rep.firstError) != 0)
      std::printf("    its first error not naming rank %d: %s\n", victim, rep.firstUnnamed);
    pass = pass && named && rep.finished;
  }
  std::printf("tutti-soak: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
