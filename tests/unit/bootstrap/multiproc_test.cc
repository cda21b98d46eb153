// Stores and tuttirun across real processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/file_store.h"
#include "bootstrap/tcp_store.h"
#include "harness/fork_harness.h"
#include "harness/temp_dir.h"

namespace tutti::bootstrap {
namespace {

constexpr int kRanks = 8;

void allGatherBody(const std::shared_ptr<Store>& store, int rank) {
  Bootstrap b(store, rank, kRanks, "mp");
  for (int call = 0; call < 3; ++call) {
    std::string mine = std::to_string(rank * 100 + call) + ":" + std::to_string(::getpid());
    auto all = b.allGather("t", std::as_bytes(std::span(mine.data(), mine.size())), Deadline(20));
    for (int r = 0; r < kRanks; ++r) {
      std::string s(reinterpret_cast<const char*>(all[r].data()), all[r].size());
      ASSERT_EQ(s.substr(0, s.find(':')), std::to_string(r * 100 + call));
    }
    EXPECT_EQ(store->add("counter" + std::to_string(call), 1) <= kRanks, true);
    b.barrier("t", Deadline(20));
    EXPECT_EQ(store->add("counter" + std::to_string(call), 0), kRanks);
  }
}

TEST(MultiProc, FileStoreEightProcesses) {
  tutti::test::TempDir dir;
  auto r = tutti::test::runRanks(
      kRanks, [&](int rank) { allGatherBody(std::make_shared<FileStore>(dir.path()), rank); });
  EXPECT_RANKS_OK(r);
}

TEST(MultiProc, TcpStoreEightProcesses) {
  Secret secret = randomSecret();
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1:0", secret);
  SockAddr addr = server->sockAddr();
  auto r = tutti::test::runRanks(kRanks, [&](int rank) {
    allGatherBody(std::make_shared<TcpStore>(addr, secret, Deadline(10)), rank);
  });
  EXPECT_RANKS_OK(r);
}

// A process killed between two all-gathers of the bootstrap ring: every other rank's second
// all-gather fails at its deadline naming the dead rank, none hangs.
TEST(MultiProc, RingNamesAProcessKilledBetweenAllGathers) {
  constexpr int n = 5, dead = 2;
  Secret secret = randomSecret();
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1:0", secret);
  SockAddr addr = server->sockAddr();
  auto r = tutti::test::runRanks(
      n,
      [&](int rank) {
        Bootstrap b(std::make_shared<TcpStore>(addr, secret, Deadline(10)), rank, n, "kill", 1);
        std::string mine = std::to_string(rank);
        b.allGather("one", std::as_bytes(std::span(mine.data(), mine.size())), Deadline(20));
        if (rank == dead) ::raise(SIGKILL);
        try {
          b.allGather("two", std::as_bytes(std::span(mine.data(), mine.size())), Deadline(2));
          ADD_FAILURE() << "rank " << rank << ": the second all-gather succeeded";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), tuttiTimeout) << e.what();
          EXPECT_NE(std::string(e.what()).find("rank(s) 2 of 5 did not arrive at allGather 'two'"),
                    std::string::npos)
              << e.what();
        }
      },
      30);
  for (int rank = 0; rank < n; ++rank) {
    if (rank == dead) {
      EXPECT_EQ(r.ranks[rank].signal, SIGKILL);
    } else {
      EXPECT_TRUE(r.ranks[rank].ok()) << r.describe();
    }
  }
  EXPECT_LT(r.seconds, 15.0);
}

TEST(MultiProc, HarnessReportsFailures) {
  auto r = tutti::test::runRanks(
      3,
      [](int rank) {
        if (rank == 1) {
          EXPECT_EQ(1, 2) << "intended failure in a child";
        }
        if (rank == 2) throw std::runtime_error("intended");
      },
      10);
  EXPECT_FALSE(r.allOk());
  EXPECT_TRUE(r.ranks[0].ok());
  EXPECT_EQ(r.ranks[1].exitCode, tutti::test::kExitGtestFailure);
  EXPECT_EQ(r.ranks[2].exitCode, tutti::test::kExitException);
  auto t = tutti::test::runRanks(
      2, [](int) { std::this_thread::sleep_for(std::chrono::seconds(30)); }, 0.3);
  EXPECT_TRUE(t.ranks[0].timedOut);
  EXPECT_LT(t.seconds, 5.0);
  EXPECT_NE(t.describe().find("timed out"), std::string::npos) << t.describe();
}

// ---- tuttirun ----

struct JobRun {
  int code;
  double seconds;
};

JobRun tuttirun(const std::vector<std::string>& args, pid_t* pidOut = nullptr,
                int signalAfterMs = 0, int sig = 0) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(TUTTIRUN_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(TUTTIRUN_PATH, argv.data());
    ::_exit(99);
  }
  if (pidOut) *pidOut = pid;
  if (signalAfterMs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(signalAfterMs));
    ::kill(pid, sig);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), s};
}

std::vector<pid_t> readPids(const tutti::test::TempDir& dir, int n) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::ifstream f(dir.file("pid." + std::to_string(r)));
    pid_t p = 0;
    if (f >> p) pids.push_back(p);
  }
  return pids;
}

void expectAllGone(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    errno = 0;
    EXPECT_TRUE(::kill(p, 0) != 0 && errno == ESRCH) << "pid " << p << " survived";
  }
}

TEST(Tuttirun, ExitCodePropagation) {
  EXPECT_EQ(tuttirun({"-np", "3", "sh", "-c", "exit 0"}).code, 0);
  EXPECT_EQ(tuttirun({"-np", "3", "sh", "-c", "[ $TUTTI_RANK = 1 ] && exit 7; exit 0"}).code, 7);
  EXPECT_EQ(tuttirun({"-np", "2", "sh", "-c", "kill -SEGV $$"}).code, 128 + SIGSEGV);
  EXPECT_EQ(tuttirun({"-np", "1", "/nonexistent/cmd"}).code, 127);
  EXPECT_EQ(tuttirun({"-np", "0", "true"}).code, 2);
  EXPECT_EQ(tuttirun({"--bogus", "true"}).code, 2);
}

TEST(Tuttirun, PassesVariables) {
  tutti::test::TempDir dir;
  std::string script =
      "echo \"$FOO $BAR $TUTTI_RANK $TUTTI_WORLD_SIZE $TUTTI_LOCAL_RANK "
      "${#TUTTI_SECRET} ${TUTTI_ADDR%%:*}\" > " +
      dir.path() + "/out.$TUTTI_RANK";
  ::setenv("BAR", "from-parent", 1);
  EXPECT_EQ(tuttirun({"-np", "2", "-x", "FOO=a b", "-x", "BAR", "sh", "-c", script}).code, 0);
  for (int r = 0; r < 2; ++r) {
    std::ifstream f(dir.file("out." + std::to_string(r)));
    std::string line;
    std::getline(f, line);
    EXPECT_EQ(line,
              "a b from-parent " + std::to_string(r) + " 2 " + std::to_string(r) + " 32 127.0.0.1");
  }
}

TEST(Tuttirun, KillingOneRankStopsTheOthers) {
  tutti::test::TempDir dir;
  std::string script = "echo $$ > " + dir.path() +
                       "/pid.$TUTTI_RANK; if [ $TUTTI_RANK = 2 ]; then sleep 0.5; kill -9 $$; "
                       "fi; exec sleep 60";
  JobRun r = tuttirun({"-np", "4", "sh", "-c", script});
  EXPECT_EQ(r.code, 128 + SIGKILL);
  EXPECT_LT(r.seconds, 5.0);
  auto pids = readPids(dir, 4);
  EXPECT_EQ(pids.size(), 4u);
  expectAllGone(pids);
}

TEST(Tuttirun, RankIgnoringSigtermIsKilledAfterGrace) {
  tutti::test::TempDir dir;
  std::string script = "trap '' TERM; echo $$ > " + dir.path() +
                       "/pid.$TUTTI_RANK; [ $TUTTI_RANK = 0 ] && { sleep 0.3; exit 3; }; "
                       "while true; do sleep 0.1; done";
  JobRun r = tuttirun({"-np", "3", "sh", "-c", script});
  EXPECT_EQ(r.code, 3);
  EXPECT_GE(r.seconds, 3.0);
  EXPECT_LT(r.seconds, 7.0);
  expectAllGone(readPids(dir, 3));
}

TEST(Tuttirun, SigtermToTuttirunStopsTheJob) {
  tutti::test::TempDir dir;
  std::string script = "echo $$ > " + dir.path() + "/pid.$TUTTI_RANK; exec sleep 60";
  JobRun r = tuttirun({"-np", "3", "sh", "-c", script}, nullptr, 500, SIGTERM);
  EXPECT_EQ(r.code, 128 + SIGTERM);
  EXPECT_LT(r.seconds, 5.0);
  expectAllGone(readPids(dir, 3));
}

TEST(Tuttirun, TimeoutAndTaggedOutput) {
  tutti::test::TempDir dir;
  JobRun r = tuttirun({"--timeout", "0.5", "-np", "2", "sleep", "60"});
  EXPECT_EQ(r.code, 124);
  EXPECT_LT(r.seconds, 5.0);
  // --tag-output: run through sh so we can capture tuttirun's stdout in a file.
  std::string cmd = std::string(TUTTIRUN_PATH) +
                    " --tag-output -np 2 sh -c 'echo hi; printf partial' > " + dir.file("out");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(dir.file("out"));
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("[0] hi\n"), std::string::npos) << all;
  EXPECT_NE(all.find("[1] hi\n"), std::string::npos) << all;
  EXPECT_NE(all.find("[1] partial\n"), std::string::npos) << all;
}

// Repeated: rank 0 exits as soon as it has seen the last rank's leave key, and that rank must
// still get the OK of its SET (before rank 0 stopped its store server at exit, about one run
// in 30 failed here).
TEST(Tuttirun, EnvLaunchedRanksRendezvousOverTcp) {
  for (int run = 0; run < 30; ++run) {
    JobRun r = tuttirun({"-np", "8", "--timeout", "60", ENV_RANK_PATH});
    ASSERT_EQ(r.code, 0) << "run " << run;
  }
}

}  // namespace
}  // namespace tutti::bootstrap
