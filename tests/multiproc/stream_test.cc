// Host streams (tuttiStreamCreate) and events over real processes (issue 32): every collective
// and send/recv through a stream over shm and tcp at 1-8 ranks against the independent
// reference values of the collective cases; many calls in flight on several streams and two
// communicators; calls that return before their peers arrive; events ordering streams;
// failures (a killed rank, a mismatch, an abort) surfacing at the synchronise with the call
// and the rank named; destroy with calls pending; an idle stream spending no CPU.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective_cases.h"
#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Element i of call k on rank r: distinct per rank, element and call, exact in float64.
double valueOf(int r, int k, size_t i) { return 1000.0 * (r + 1) + 7.0 * k + 0.5 * i; }
// The sum over n ranks of valueOf(r, k, i).
double sumOf(int n, int k, size_t i) { return 1000.0 * n * (n + 1) / 2 + n * (7.0 * k + 0.5 * i); }

// Every collective (auto and each algorithm) at the small counts, through one host stream,
// checked by the collective cases' runner (reference values, guard bytes, untouched input).
struct Setting {
  int n;
  const char* transport;
};

class EveryCollective : public ::testing::TestWithParam<Setting> {};

TEST_P(EveryCollective, ThroughAHostStream) {
  const auto [n, transport] = GetParam();
  tuttiUniqueId id = makeId();
  std::vector<Case> cases;
  for (const Case& c : buildCases(n, Matrix::kCore))
    if (c.count <= 1023) cases.push_back(c);
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, transport);
        ASSERT_NE(comm, nullptr);
        tuttiStream_t stream = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&stream), nullptr);
        int failures = 0;
        // Rotate: every case on a stream at its index's parity with the rank count, the rest
        // blocking, so that stream and blocking calls interleave on one communicator.
        for (size_t k = 0; k < cases.size(); ++k) {
          const bool onStream = (k + n) % 4 != 0;
          std::string err = runCase(comm, cases[k], rank, n, nullptr, onStream ? stream : nullptr);
          if (!err.empty()) {
            ADD_FAILURE() << "rank " << rank << " " << describe(cases[k], n)
                          << (onStream ? " (stream)" : " (blocking)") << ": " << err;
            if (++failures > 5) break;
          }
        }
        TUTTI_ASSERT_OK(tuttiStreamDestroy(stream), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      300);
  EXPECT_RANKS_OK(result);
}

INSTANTIATE_TEST_SUITE_P(Ranks, EveryCollective,
                         ::testing::Values(Setting{1, "shm"}, Setting{2, "tcp"}, Setting{3, "shm"},
                                           Setting{4, "tcp"}, Setting{8, "shm"}),
                         [](const ::testing::TestParamInfo<Setting>& i) {
                           return "np" + std::to_string(i.param.n) + "_" + i.param.transport;
                         });

// 24 all-reduces on three streams over two communicators (the world and a reversed split),
// all issued before any completes; then send/recv around a ring on a stream (a group).
// Every result is checked against its closed form; events show per-stream completion order.
TEST(HostStream, ManyCallsInFlightOnSeveralStreams) {
  const int n = 4;
  const int calls = 24;
  const size_t count = 3001;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t world = initComm(n, id, rank, nullptr);
        ASSERT_NE(world, nullptr);
        tuttiComm_t other = nullptr;
        TUTTI_ASSERT_OK(tuttiCommSplit(world, 0, n - rank, &other, nullptr), world);
        tuttiStream_t streams[3];
        for (auto& s : streams) TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<std::vector<double>> bufs(calls, std::vector<double>(count));
        std::vector<tuttiEvent_t> events(calls);
        for (int k = 0; k < calls; ++k) {
          for (size_t i = 0; i < count; ++i) bufs[k][i] = valueOf(rank, k, i);
          tuttiComm_t comm = k % 2 ? other : world;
          tuttiStream_t s = streams[k % 3];
          TUTTI_ASSERT_OK(tuttiAllReduce(bufs[k].data(), bufs[k].data(), count, tuttiFloat64,
                                         tuttiSum, comm, s),
                          comm);
          TUTTI_ASSERT_OK(tuttiEventCreate(&events[k]), nullptr);
          TUTTI_ASSERT_OK(tuttiEventRecord(events[k], s), nullptr);
        }
        // Per stream, completion in issue order: once an event completed, every earlier event
        // of its stream has too.
        for (int k = calls - 1; k >= 0; --k) {
          TUTTI_ASSERT_OK(tuttiEventSynchronize(events[k]), nullptr);
          for (int j = k % 3; j < k; j += 3)
            EXPECT_EQ(tuttiEventQuery(events[j]), tuttiSuccess) << "event " << j << " after " << k;
        }
        for (auto s : streams) TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
        for (int k = 0; k < calls; ++k) {
          for (size_t i = 0; i < count; ++i)
            if (bufs[k][i] != sumOf(n, k, i)) {
              ADD_FAILURE() << "rank " << rank << " call " << k << " element " << i << ": "
                            << bufs[k][i] << " != " << sumOf(n, k, i);
              break;
            }
          tuttiEventDestroy(events[k]);
        }
        // A ring exchange on a stream: a group of a send and a receive, enqueued as one task.
        std::vector<int64_t> out(777), in(777, -1);
        for (size_t i = 0; i < out.size(); ++i) out[i] = rank * 1000003 + static_cast<int64_t>(i);
        const int to = (rank + 1) % n, from = (rank + n - 1) % n;
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        TUTTI_ASSERT_OK(tuttiSend(out.data(), out.size(), tuttiInt64, to, world, streams[0]),
                        world);
        TUTTI_ASSERT_OK(tuttiRecv(in.data(), in.size(), tuttiInt64, from, world, streams[0]),
                        world);
        TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(streams[0]), nullptr);
        for (size_t i = 0; i < in.size(); ++i)
          ASSERT_EQ(in[i], from * 1000003 + static_cast<int64_t>(i)) << "element " << i;
        for (auto s : streams) TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(other), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(world), nullptr);
      },
      120);
  EXPECT_RANKS_OK(result);
}

// A call on a stream returns before its peer has called: rank 1 joins 300 ms late, and rank
// 0's stream reports tuttiInProgress until then; the result is right after the synchronise.
TEST(HostStream, CallReturnsBeforeItsPeersArrive) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr);
        ASSERT_NE(comm, nullptr);
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<float> buf(1 << 16);
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(rank * 3 + i % 1000);
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        auto t0 = Clock::now();
        TUTTI_ASSERT_OK(
            tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, s),
            comm);
        if (rank == 0) {
          EXPECT_LT(secondsSince(t0), 0.2) << "the call waited for its peer";
          EXPECT_EQ(tuttiStreamQuery(s), tuttiInProgress);
        }
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
        EXPECT_EQ(tuttiStreamQuery(s), tuttiSuccess);
        for (size_t i = 0; i < buf.size(); ++i)
          ASSERT_EQ(buf[i], static_cast<float>(3 + 2 * (i % 1000))) << "element " << i;
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// A synchronising thread runs queued calls itself while the worker sleeps: a chain
// of calls where each reads the previous call's output (run out of order, a call would read a
// buffer not yet written) on 2 ranks over shm and tcp, synchronised after every call, after
// every third, through an event, and by a second thread synchronising the same stream in a
// loop meanwhile, so that the worker and two waiting threads race for each call.
TEST(HostStream, SynchronizingThreadsRunQueuedCallsInOrder) {
  const int n = 2, calls = 240;
  const size_t count = 33;
  for (const char* transport : {"shm", "tcp"}) {
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          tuttiComm_t comm = initComm(n, id, rank, transport);
          ASSERT_NE(comm, nullptr);
          tuttiStream_t s = nullptr;
          TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
          tuttiEvent_t e = nullptr;
          TUTTI_ASSERT_OK(tuttiEventCreate(&e), nullptr);
          // buf[k + 1] = sum over ranks of buf[k]; buf[0] distinct per rank and element.
          std::vector<std::vector<double>> buf(calls + 1, std::vector<double>(count, -1.0));
          for (size_t i = 0; i < count; ++i) buf[0][i] = valueOf(rank, 0, i);
          std::atomic<bool> done{false};
          std::thread racer([&] {
            while (!done.load()) EXPECT_EQ(tuttiStreamSynchronize(s), tuttiSuccess);
          });
          for (int k = 0; k < calls; ++k) {
            TUTTI_ASSERT_OK(tuttiAllReduce(buf[k].data(), buf[k + 1].data(), count, tuttiFloat64,
                                           tuttiSum, comm, s),
                            comm);
            if (k % 4 == 0) TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
            if (k % 4 == 1) {
              TUTTI_ASSERT_OK(tuttiEventRecord(e, s), nullptr);
              TUTTI_ASSERT_OK(tuttiEventSynchronize(e), nullptr);
            }
          }
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
          done = true;
          racer.join();
          for (int k = 1; k <= calls; ++k)
            for (size_t i = 0; i < count; ++i)
              ASSERT_EQ(buf[k][i], std::ldexp(sumOf(n, 0, i), k - 1))
                  << transport << " call " << k << " element " << i;
          TUTTI_ASSERT_OK(tuttiEventDestroy(e), nullptr);
          TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        120);
    EXPECT_RANKS_OK(result);
  }
}

// Synchronous use learnt (host_stream.h: after a few synchronises right after the enqueue, an
// enqueue no longer wakes the worker): a call that nobody synchronises afterwards still runs,
// found by the worker's timed wake-up, whether the caller polls tuttiStreamQuery or an event,
// or sleeps without calling tutti at all; and the learning comes back after that.
TEST(HostStream, LearntSynchronousUseStillProgressesWithoutAWaiter) {
  const int n = 2;
  const size_t count = 17;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, "shm");
        ASSERT_NE(comm, nullptr);
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        tuttiEvent_t e = nullptr;
        TUTTI_ASSERT_OK(tuttiEventCreate(&e), nullptr);
        std::vector<double> in(count), out(count);
        int call = 0;
        auto check = [&](const char* how) {
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(out[i], sumOf(n, call, i)) << how << " call " << call << " element " << i;
        };
        auto enqueue = [&] {
          ++call;
          for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, call, i);
          std::fill(out.begin(), out.end(), -1.0);
          TUTTI_ASSERT_OK(
              tuttiAllReduce(in.data(), out.data(), count, tuttiFloat64, tuttiSum, comm, s), comm);
        };
        for (int round = 0; round < 3; ++round) {
          for (int k = 0; k < 20; ++k) {  // enqueue + synchronise: learnt
            enqueue();
            TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), comm);
            check("synchronised");
          }
          enqueue();  // polled with tuttiStreamQuery only
          auto t0 = Clock::now();
          tuttiResult_t q;
          while ((q = tuttiStreamQuery(s)) == tuttiInProgress && secondsSince(t0) < 5) usleep(50);
          ASSERT_EQ(q, tuttiSuccess) << "round " << round;
          check("queried");
          for (int k = 0; k < 5; ++k) {
            enqueue();
            TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), comm);
          }
          enqueue();  // an event polled
          TUTTI_ASSERT_OK(tuttiEventRecord(e, s), nullptr);
          t0 = Clock::now();
          while ((q = tuttiEventQuery(e)) == tuttiInProgress && secondsSince(t0) < 5) usleep(50);
          ASSERT_EQ(q, tuttiSuccess) << "round " << round;
          check("event");
          for (int k = 0; k < 5; ++k) {
            enqueue();
            TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), comm);
          }
          enqueue();  // nothing asked: it completes while the caller sleeps
          usleep(200000);
          EXPECT_EQ(tuttiStreamQuery(s), tuttiSuccess) << "round " << round;
          check("slept");
        }
        TUTTI_ASSERT_OK(tuttiEventDestroy(e), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Host functions (tuttiStreamLaunchHostFunc) run in the stream's order between its calls: each
// one checks the all-reduce before it and writes the input of the one after it, on two ranks
// over shm and tcp; a host function's error is the stream's failure at the synchronise, with its
// text; bad arguments and a launch inside a group are refused at the call.
struct Chain {
  std::vector<double>* in;
  const std::vector<double>* out;
  int rank = 0, n = 0, call = 0;
  int checked = 0, wrong = 0;
};

tuttiResult_t checkAndRefill(void* p) {
  auto* c = static_cast<Chain*>(p);
  for (size_t i = 0; i < c->out->size(); ++i) c->wrong += (*c->out)[i] != sumOf(c->n, c->call, i);
  ++c->checked;
  ++c->call;  // the next all-reduce's input, written only now
  for (size_t i = 0; i < c->in->size(); ++i) (*c->in)[i] = valueOf(c->rank, c->call, i);
  return tuttiSuccess;
}

tuttiResult_t refuse(void*) { return tuttiInvalidArgument; }

// What a host function learns from synchronising its own stream: the failure of the calls
// before it (and the text), at once.
struct Learnt {
  tuttiStream_t stream = nullptr;
  std::vector<tuttiResult_t> results;
  std::vector<std::string> texts;
};
tuttiResult_t learnFailure(void* p) {
  auto* l = static_cast<Learnt*>(p);
  l->results.push_back(tuttiStreamSynchronize(l->stream));
  l->texts.push_back(tuttiGetLastError(nullptr));
  return tuttiSuccess;
}

TEST(HostStream, HostFunctionsRunInStreamOrder) {
  const int n = 2, calls = 30;
  const size_t count = 19;
  for (const char* transport : {"shm", "tcp"}) {
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          tuttiComm_t comm = initComm(n, id, rank, transport);
          ASSERT_NE(comm, nullptr);
          tuttiStream_t s = nullptr;
          TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
          std::vector<double> in(count), out(count, -1.0);
          Chain chain{&in, &out, rank, n, 0};
          for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, 0, i);
          for (int k = 0; k < calls; ++k) {
            TUTTI_ASSERT_OK(
                tuttiAllReduce(in.data(), out.data(), count, tuttiFloat64, tuttiSum, comm, s),
                comm);
            TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, checkAndRefill, &chain), nullptr);
            if (k % 7 == 3) TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
          }
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
          EXPECT_EQ(chain.checked, calls);
          EXPECT_EQ(chain.wrong, 0) << transport;
          // A host function's error: the stream's failure, reported once, with its text.
          TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, refuse, nullptr), nullptr);
          EXPECT_EQ(tuttiStreamSynchronize(s), tuttiInvalidArgument);
          EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("host function returned"),
                    std::string::npos)
              << tuttiGetLastError(nullptr);
          EXPECT_EQ(tuttiStreamSynchronize(s), tuttiSuccess);
          // A host function synchronising its own stream: the failure before it, once.
          Learnt learnt{s, {}, {}};
          TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, refuse, nullptr), nullptr);
          TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, learnFailure, &learnt), nullptr);
          TUTTI_ASSERT_OK(
              tuttiAllReduce(in.data(), out.data(), count, tuttiFloat64, tuttiSum, comm, s), comm);
          TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, learnFailure, &learnt), nullptr);
          TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, checkAndRefill, &chain), nullptr);
          EXPECT_EQ(tuttiStreamSynchronize(s), tuttiSuccess);  // reported inside: cleared
          ASSERT_EQ(learnt.results.size(), 2u);
          EXPECT_EQ(learnt.results[0], tuttiInvalidArgument);
          EXPECT_NE(learnt.texts[0].find("host function returned"), std::string::npos)
              << learnt.texts[0];
          EXPECT_EQ(learnt.results[1], tuttiSuccess);
          EXPECT_EQ(chain.wrong, 0);
          // Refused at the call.
          EXPECT_EQ(tuttiStreamLaunchHostFunc(s, nullptr, nullptr), tuttiInvalidArgument);
          EXPECT_EQ(tuttiStreamLaunchHostFunc(nullptr, refuse, nullptr), tuttiInvalidArgument);
          TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
          EXPECT_EQ(tuttiStreamLaunchHostFunc(s, refuse, nullptr), tuttiInvalidUsage);
          TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
          TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        },
        60);
    EXPECT_RANKS_OK(result);
  }
}

tuttiResult_t endThread(void*) { pthread_exit(nullptr); }
tuttiResult_t countRun(void* p) {
  ++*static_cast<std::atomic<int>*>(p);
  return tuttiSuccess;
}

// A host function that ends the thread running it (pthread_exit; an interpreter finalising
// ends threads that wait for its lock this way): the stream fails, saying so, instead of
// waiting for it for ever, and the tasks after it still run (on the synchronising thread).
TEST(HostStream, HostFunctionEndingItsThreadFailsTheStream) {
  tuttiStream_t s = nullptr;
  TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
  TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, endThread, nullptr), nullptr);
  // Polled (a query never runs tasks): the worker runs it, not this thread.
  tuttiResult_t r = tuttiInProgress;
  for (int i = 0; i < 5000 && r == tuttiInProgress; ++i) {
    r = tuttiStreamQuery(s);
    if (r == tuttiInProgress) usleep(1000);
  }
  EXPECT_EQ(r, tuttiInternalError);
  EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("ended the thread"), std::string::npos)
      << tuttiGetLastError(nullptr);
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i)
    TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, countRun, &ran), nullptr);
  EXPECT_EQ(tuttiStreamSynchronize(s), tuttiInternalError);  // reported once
  EXPECT_EQ(ran.load(), 3);
  TUTTI_ASSERT_OK(tuttiStreamLaunchHostFunc(s, countRun, &ran), nullptr);
  TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);  // runs it, then ends
  EXPECT_EQ(ran.load(), 4);
}

// The neighbour all-reduce through a stream (tutti.h lists it among the stream calls): on a
// ring of 3 ranks each rank's result is the average of all three inputs.
TEST(HostStream, NeighborAllReduceThroughAStream) {
  const int n = 3;
  const size_t count = 4099;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr);
        ASSERT_NE(comm, nullptr);
        tuttiGraph_t graph = nullptr;
        TUTTI_ASSERT_OK(tuttiGraphCreate(comm, tuttiGraphRing, 0, 0, &graph), comm);
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<double> x(count), y(count, -1);
        for (size_t i = 0; i < count; ++i) x[i] = valueOf(rank, 5, i);
        TUTTI_ASSERT_OK(
            tuttiNeighborAllReduce(x.data(), y.data(), count, tuttiFloat64, graph, comm, s), comm);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
        for (size_t i = 0; i < count; ++i)
          ASSERT_NEAR(y[i], sumOf(n, 5, i) / n, 1e-9 * sumOf(n, 5, i)) << "element " << i;
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiGraphDestroy(graph), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Streams ordered only by an event: stream A all-reduces x on the world; stream B waits for
// A's event, then all-reduces x again on another communicator (reading A's result). Without
// the wait B's call could read x before A wrote it; the values show which happened.
TEST(HostStream, EventWaitOrdersTwoStreams) {
  const int n = 3;
  const size_t count = 1 << 18;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t world = initComm(n, id, rank, nullptr);
        ASSERT_NE(world, nullptr);
        tuttiComm_t other = nullptr;
        TUTTI_ASSERT_OK(tuttiCommSplit(world, 0, rank, &other, nullptr), world);
        tuttiStream_t a = nullptr, b = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&a), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamCreate(&b), nullptr);
        tuttiEvent_t done = nullptr;
        TUTTI_ASSERT_OK(tuttiEventCreate(&done), nullptr);
        for (int round = 0; round < 3; ++round) {
          std::vector<double> x(count), y(count, -1);
          for (size_t i = 0; i < count; ++i) x[i] = valueOf(rank, round, i);
          if (rank == round % n) std::this_thread::sleep_for(std::chrono::milliseconds(100));
          TUTTI_ASSERT_OK(
              tuttiAllReduce(x.data(), x.data(), count, tuttiFloat64, tuttiSum, world, a), world);
          TUTTI_ASSERT_OK(tuttiEventRecord(done, a), nullptr);
          TUTTI_ASSERT_OK(tuttiStreamWaitEvent(b, done), nullptr);
          TUTTI_ASSERT_OK(
              tuttiAllReduce(x.data(), y.data(), count, tuttiFloat64, tuttiSum, other, b), other);
          TUTTI_ASSERT_OK(tuttiStreamSynchronize(b), nullptr);
          EXPECT_EQ(tuttiStreamQuery(a), tuttiSuccess) << "b finished before the event it waited";
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(y[i], n * sumOf(n, round, i)) << "round " << round << " element " << i;
        }
        TUTTI_ASSERT_OK(tuttiEventDestroy(done), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(a), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(b), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(other), nullptr);
        TUTTI_ASSERT_OK(tuttiCommDestroy(world), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// A rank killed before its call: the survivors' stream call fails, and the synchronise (not
// the call) returns the error, naming the call and the dead rank, well within the timeout.
TEST(HostStream, KilledRankSurfacesAtSynchronize) {
  const int n = 3, dead = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr, 10000);
        ASSERT_NE(comm, nullptr);
        int warm = rank, sum = 0;
        TUTTI_ASSERT_OK(tuttiAllReduce(&warm, &sum, 1, tuttiInt32, tuttiSum, comm, nullptr), comm);
        if (rank == dead) _exit(0);
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<float> buf(4096, 1.0f);
        auto t0 = Clock::now();
        TUTTI_ASSERT_OK(
            tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, s),
            comm);
        tuttiResult_t r = tuttiStreamSynchronize(s);
        const std::string text = tuttiGetLastError(nullptr);
        EXPECT_TRUE(r == tuttiRemoteError || r == tuttiTimeout) << tuttiGetErrorString(r);
        EXPECT_LT(secondsSince(t0), 9.0);
        EXPECT_NE(text.find("tuttiAllReduce"), std::string::npos) << text;
        EXPECT_NE(text.find("rank 2"), std::string::npos) << text;
        tuttiResult_t async = tuttiSuccess;
        TUTTI_ASSERT_OK(tuttiCommGetAsyncError(comm, &async), nullptr);
        EXPECT_EQ(async, r);
        // Reported once; a later call on the failed communicator fails at once (at the call,
        // or on the stream when the failure came after it).
        EXPECT_EQ(tuttiStreamSynchronize(s), tuttiSuccess);
        tuttiResult_t again = tuttiBarrier(comm, s);
        if (again == tuttiSuccess) again = tuttiStreamSynchronize(s);
        EXPECT_EQ(again, r);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiCommAbort(comm), nullptr);
        tuttiCommDestroy(comm);
      },
      60);
  for (const auto& st : result.ranks)
    EXPECT_TRUE(st.ok()) << "rank " << st.rank << ": " << result.describe();
}

// Ranks whose stream calls differ (count 4096 against 4097): the mismatch is a stream error
// naming the collective, reported by the synchronise on every rank that saw it.
TEST(HostStream, MismatchSurfacesAtSynchronize) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr, 10000);
        ASSERT_NE(comm, nullptr);
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<float> buf(4097, 1.0f);
        const size_t count = rank == 0 ? 4096 : 4097;
        TUTTI_ASSERT_OK(
            tuttiAllReduce(buf.data(), buf.data(), count, tuttiFloat32, tuttiSum, comm, s), comm);
        tuttiResult_t r = tuttiStreamSynchronize(s);
        const std::string text = tuttiGetLastError(nullptr);
        EXPECT_NE(r, tuttiSuccess) << "a mismatched stream call succeeded";
        EXPECT_NE(text.find("tuttiAllReduce"), std::string::npos) << text;
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        tuttiCommAbort(comm);
        tuttiCommDestroy(comm);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Abort ends work in flight: rank 1 never calls; rank 0's stream call (timeout 60 s) ends
// within seconds of tuttiCommAbort, with the error at the synchronise; destroy then returns.
TEST(HostStream, AbortEndsWorkInFlight) {
  const int n = 2;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr, 60000);
        ASSERT_NE(comm, nullptr);
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          tuttiCommAbort(comm);
          tuttiCommDestroy(comm);
          return;
        }
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        std::vector<float> buf(1 << 16, 1.0f);
        for (int k = 0; k < 3; ++k)
          TUTTI_ASSERT_OK(
              tuttiAllReduce(buf.data(), buf.data(), buf.size(), tuttiFloat32, tuttiSum, comm, s),
              comm);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        EXPECT_EQ(tuttiStreamQuery(s), tuttiInProgress);
        auto t0 = Clock::now();
        TUTTI_ASSERT_OK(tuttiCommAbort(comm), nullptr);
        tuttiResult_t r = tuttiStreamSynchronize(s);
        EXPECT_NE(r, tuttiSuccess);
        EXPECT_LT(secondsSince(t0), 5.0) << "the aborted call went on";
        tuttiCommDestroy(comm);
        EXPECT_LT(secondsSince(t0), 10.0);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// Destroy with calls pending: tuttiStreamDestroy right after issuing waits for them (the
// results are right), and tuttiCommDestroy waits for the communicator's calls on a stream.
TEST(HostStream, DestroyWithCallsPending) {
  const int n = 3;
  const size_t count = 50000;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        tuttiComm_t comm = initComm(n, id, rank, nullptr);
        ASSERT_NE(comm, nullptr);
        std::vector<std::vector<double>> bufs(6, std::vector<double>(count));
        tuttiStream_t s = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        for (int k = 0; k < 6; ++k) {
          for (size_t i = 0; i < count; ++i) bufs[k][i] = valueOf(rank, k, i);
          TUTTI_ASSERT_OK(tuttiAllReduce(bufs[k].data(), bufs[k].data(), count, tuttiFloat64,
                                         tuttiSum, comm, s),
                          comm);
          if (k == 2) {
            TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);  // calls 0-2 done when it returns
            for (int j = 0; j <= 2; ++j) ASSERT_EQ(bufs[j][count - 1], sumOf(n, j, count - 1));
            TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
          }
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);  // waits for calls 3-5
        for (int k = 3; k < 6; ++k)
          for (size_t i = 0; i < count; i += 997) ASSERT_EQ(bufs[k][i], sumOf(n, k, i));
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

// The CPU time (user + system) of this process's threads, in clock ticks.
long processTicks() {
  long ticks = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int f = 3; f <= 15 && rest >> field; ++f)
      if (f == 14 || f == 15) ticks += std::stol(field);
  }
  return ticks;
}

// Arguments and usage: wrong ones fail at the call (nothing enqueued); a group naming two
// streams on one communicator is refused; a stream that is not one is named; an idle stream
// spends no CPU (its worker sleeps).
TEST(HostStream, ErrorsAtTheCallAndAnIdleStreamSleeps) {
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      1,
      [&](int) {
        tuttiComm_t comm = initComm(1, id, 0, nullptr);
        ASSERT_NE(comm, nullptr);
        tuttiStream_t s = nullptr, t = nullptr;
        TUTTI_ASSERT_OK(tuttiStreamCreate(&s), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamCreate(&t), nullptr);
        EXPECT_EQ(tuttiAllReduce(nullptr, nullptr, 5, tuttiFloat32, tuttiSum, comm, s),
                  tuttiInvalidArgument);
        EXPECT_EQ(tuttiStreamQuery(s), tuttiSuccess) << "a refused call was enqueued";
        float x = 1, y = 0;
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        TUTTI_ASSERT_OK(tuttiAllReduce(&x, &y, 1, tuttiFloat32, tuttiSum, comm, s), comm);
        EXPECT_EQ(tuttiAllReduce(&x, &y, 1, tuttiFloat32, tuttiSum, comm, t), tuttiInvalidUsage);
        EXPECT_NE(std::string(tuttiGetLastError(comm)).find("one stream"), std::string::npos)
            << tuttiGetLastError(comm);
        // The group's end fails with the refused call's code, enqueueing none of its calls.
        EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidUsage);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
        EXPECT_EQ(y, 0.0f);
        TUTTI_ASSERT_OK(tuttiGroupStart(), nullptr);
        TUTTI_ASSERT_OK(tuttiAllReduce(&x, &y, 1, tuttiFloat32, tuttiSum, comm, s), comm);
        TUTTI_ASSERT_OK(tuttiGroupEnd(), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamSynchronize(s), nullptr);
        EXPECT_EQ(y, 1.0f);
        int notAStream = 0;
        EXPECT_EQ(tuttiStreamSynchronize(&notAStream), tuttiInvalidArgument);
        EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("not a host stream"),
                  std::string::npos);
        // A forked child has no copy of the stream's worker: its use is refused, not a hang.
        pid_t child = forkChild([&] {
          EXPECT_EQ(tuttiStreamQuery(s), tuttiInvalidUsage);
          EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("before a fork"),
                    std::string::npos)
              << tuttiGetLastError(nullptr);
        });
        EXPECT_EQ(waitChild(child), 0);
        const long before = processTicks();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        // Two idle streams: a worker that spins or polls would spend about 50 ticks of 500 ms.
        EXPECT_LE(processTicks() - before, 5) << "idle streams spent CPU";
        TUTTI_ASSERT_OK(tuttiStreamDestroy(s), nullptr);
        TUTTI_ASSERT_OK(tuttiStreamDestroy(t), nullptr);
        EXPECT_EQ(tuttiStreamDestroy(s), tuttiInvalidArgument) << "destroyed twice";
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
      },
      60);
  EXPECT_RANKS_OK(result);
}

}  // namespace
}  // namespace tutti::test
