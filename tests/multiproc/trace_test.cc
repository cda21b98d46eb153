// The flight recorder (issue 19): tuttiCommDumpTrace lists a communicator's last calls in
// order with their state; a timeout names the call every rank is in and the rank that never
// reported; TUTTI_TRACE_FILE receives the record when a call fails; TUTTI_DUMP_SIGNAL writes
// it on a signal while the job goes on, also from a rank stuck in a call.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Trace, DumpListsTheCallsInOrder) {
  TempDir dir;
  tuttiUniqueId id = makeId();
  auto r = runRanks(2, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 2, id, rank), nullptr);
    std::vector<float> a(10, 1.0f);
    TUTTI_ASSERT_OK(tuttiAllReduce(a.data(), a.data(), 10, tuttiFloat32, tuttiSum, comm, nullptr),
                    comm);
    TUTTI_ASSERT_OK(tuttiBroadcast(a.data(), a.data(), 7, tuttiFloat32, 1, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiBarrier(comm, nullptr), comm);
    std::vector<int32_t> out(3, rank), in(3, -1);
    TUTTI_ASSERT_OK(tuttiGroupStart(), comm);
    TUTTI_ASSERT_OK(tuttiSend(out.data(), 3, tuttiInt32, 1 - rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiRecv(in.data(), 3, tuttiInt32, 1 - rank, comm, nullptr), comm);
    TUTTI_ASSERT_OK(tuttiGroupEnd(), comm);
    std::string path = dir.path() + "/dump" + std::to_string(rank);
    TUTTI_ASSERT_OK(tuttiCommDumpTrace(comm, path.c_str()), comm);
    auto l = lines(readFile(path));
    ASSERT_EQ(l.size(), 4u) << readFile(path);
    EXPECT_EQ(l[0].rfind("#1 allreduce(count 10, float, sum)", 0), 0u) << l[0];
    EXPECT_EQ(l[1].rfind("#2 broadcast(count 7, float, root 1)", 0), 0u) << l[1];
    EXPECT_EQ(l[2].rfind("#3 barrier", 0), 0u) << l[2];
    EXPECT_EQ(l[3].rfind("#4 point-to-point batch of 2 operation(s) [p2p]", 0), 0u) << l[3];
    // Every call done; the first is always timed (short ones: one in 16, CallTrace).
    for (const auto& line : l) EXPECT_NE(line.find(" done"), std::string::npos) << line;
    EXPECT_NE(l[0].find(" done after "), std::string::npos) << l[0];
    EXPECT_EQ(tuttiCommDumpTrace(comm, "/nonexistent-dir/x"), tuttiSystemError);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_TRUE(r.allOk()) << r.describe();
}

// Rank 2 stays away (busy elsewhere) while ranks 0 and 1 wait in call #2: their timeouts
// report each other's call and name rank 2 as silent; the trace file has the record.
// TUTTI_DUMP_SIGNAL=USR1: rank 1 stays out of the third all-reduce for a while and signals
// rank 0, stuck in it: rank 0's trace file then lists the two done calls and the one in
// progress, written by its dump thread while the call waits; the call then completes with the
// right sum, and a second signal appends a second dump. Rank 1's file stays empty (not
// signalled). A bad value is refused at init, naming the variable.
TEST(Trace, ASignalDumpsTheFlightRecorderWhileTheJobGoesOn) {
  TempDir dir;
  tuttiUniqueId id = makeId();
  const std::string pattern = dir.path() + "/trace.%r";
  auto r = runRanks(2, [&](int rank) {
    setenv("TUTTI_DUMP_SIGNAL", "USR1", 1);
    setenv("TUTTI_TRACE_FILE", pattern.c_str(), 1);
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 2, id, rank), nullptr);
    const std::string mine = dir.path() + "/trace." + std::to_string(rank);
    std::vector<int32_t> a(300);
    for (int call = 0; call < 3; ++call) {
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int32_t>(rank * 7 + i + call);
      if (rank == 1 && call == 2) {
        ::usleep(200000);  // rank 0 is inside call #3 by now
        std::ifstream pid(dir.path() + "/pid0");
        pid_t p0 = 0;
        pid >> p0;
        ASSERT_GT(p0, 0);
        ::kill(p0, SIGUSR1);
        ::usleep(500000);  // its dump thread writes while it waits for this rank
      }
      if (rank == 0 && call == 2) std::ofstream(dir.path() + "/pid0") << ::getpid();
      TUTTI_ASSERT_OK(
          tuttiAllReduce(a.data(), a.data(), a.size(), tuttiInt32, tuttiSum, comm, nullptr), comm);
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(a[i], static_cast<int32_t>(7 + 2 * (i + call))) << "call " << call;
    }
    if (rank == 0) {
      const std::string text = readFile(mine);
      EXPECT_NE(text.find("on signal SIGUSR1:"), std::string::npos) << text;
      EXPECT_NE(text.find("#1 allreduce(count 300, int32, sum)"), std::string::npos) << text;
      EXPECT_NE(text.find("#2 allreduce(count 300, int32, sum)"), std::string::npos) << text;
      auto third = text.find("#3 allreduce(count 300, int32, sum)");
      ASSERT_NE(third, std::string::npos) << text;
      EXPECT_EQ(text.find(" done after ", third), std::string::npos)
          << "call #3 was in progress when the signal came:\n"
          << text;
      ::raise(SIGUSR1);
      for (int i = 0; i < 100 && readFile(mine).size() <= text.size(); ++i) ::usleep(10000);
      EXPECT_GT(readFile(mine).size(), text.size()) << "no second dump";
    } else {
      EXPECT_EQ(readFile(mine), "") << "rank 1 was not signalled";
    }
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
    setenv("TUTTI_DUMP_SIGNAL", "TERM", 1);
    tuttiComm_t bad = nullptr;
    EXPECT_EQ(tuttiCommInitRank(&bad, 2, makeId(), rank), tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("TUTTI_DUMP_SIGNAL=TERM"),
              std::string::npos)
        << tuttiGetLastError(nullptr);
    unsetenv("TUTTI_DUMP_SIGNAL");
    unsetenv("TUTTI_TRACE_FILE");
  });
  EXPECT_TRUE(r.allOk()) << r.describe();
}

TEST(Trace, TimeoutNamesEveryRanksCall) {
  TempDir dir;
  setenv("TUTTI_TIMEOUT", "2", 1);
  setenv("TUTTI_ALGO", "allreduce:ring", 1);
  setenv("TUTTI_TRACE_FILE", (dir.path() + "/trace.%r.txt").c_str(), 1);
  tuttiUniqueId id = makeId();
  auto r = runRanks(3, [&](int rank) {
    tuttiComm_t comm = nullptr;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 3, id, rank), nullptr);
    std::vector<float> a(1000, 1.0f);
    TUTTI_ASSERT_OK(
        tuttiAllReduce(a.data(), a.data(), a.size(), tuttiFloat32, tuttiSum, comm, nullptr), comm);
    if (rank == 2) {
      ::sleep(6);
      tuttiCommAbort(comm);
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    tuttiResult_t res =
        tuttiAllReduce(a.data(), a.data(), a.size(), tuttiFloat32, tuttiSum, comm, nullptr);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string msg = tuttiGetLastError(comm);
    EXPECT_TRUE(res == tuttiTimeout || res == tuttiRemoteError) << msg;
    EXPECT_LT(secs, 2 + 4.0) << msg;
    // Every error names the silent rank as the first to fail; a rank that timed out itself
    // also lists the calls.
    EXPECT_NE(msg.find("(the first rank to fail: 2)"), std::string::npos) << msg;
    if (res == tuttiTimeout) {
      EXPECT_NE(msg.find("rank " + std::to_string(rank) +
                         ": in call #2 allreduce(count 1000, float, sum)"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("rank 2: no report within 1 s"), std::string::npos) << msg;
    }
    std::string trace = readFile(dir.path() + "/trace." + std::to_string(rank) + ".txt");
    EXPECT_NE(trace.find("failed:"), std::string::npos) << trace;
    auto l = lines(trace);
    // The header, the two calls, then their counts and latencies (both calls: the failed one
    // too).
    ASSERT_EQ(l.size(), 5u) << trace;
    EXPECT_EQ(l[1].rfind("#1 allreduce(count 1000, float, sum) [ring] done", 0), 0u) << l[1];
    EXPECT_EQ(l[2].rfind("#2 allreduce(count 1000, float, sum) [ring] FAILED", 0), 0u) << l[2];
    EXPECT_EQ(l[3], "calls by collective, size and algorithm:");
    EXPECT_EQ(l[4].rfind("  allreduce 2 KiB-4 KiB [ring]: 2 calls: mean ", 0), 0u) << l[4];
    tuttiCommAbort(comm);
  });
  unsetenv("TUTTI_TIMEOUT");
  unsetenv("TUTTI_ALGO");
  unsetenv("TUTTI_TRACE_FILE");
  EXPECT_TRUE(r.allOk()) << r.describe();
}

}  // namespace
}  // namespace tutti::test
