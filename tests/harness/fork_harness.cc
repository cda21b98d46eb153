#include "harness/fork_harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <thread>

namespace tutti::test {

namespace {

[[noreturn]] void runChild(int rank, const std::function<void(int)>& body, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);  // the parent died before prctl took effect
  int code = 0;
  try {
    body(rank);
    if (::testing::Test::HasFailure()) code = kExitGtestFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] exception: %s\n", rank, e.what());
    code = kExitException;
  } catch (...) {
    std::fprintf(stderr, "[rank %d] unknown exception\n", rank);
    code = kExitException;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);  // no atexit handlers or static destructors of the parent's state
}

void record(RankStatus& s, int status) {
  if (WIFEXITED(status)) {
    s.exited = true;
    s.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
}

}  // namespace

pid_t forkChild(const std::function<void()>& body, unsigned timeoutSec) {
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    ::alarm(timeoutSec);  // never outlive a failed parent
    runChild(
        0, [&](int) { body(); }, parent);
  }
  return pid;
}

int waitChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool RanksResult::allOk() const {
  if (ranks.empty()) return false;
  for (const auto& r : ranks)
    if (!r.ok()) return false;
  return true;
}

std::string RanksResult::describe() const {
  if (allOk()) return "all " + std::to_string(ranks.size()) + " ranks ok";
  std::ostringstream os;
  bool first = true;
  for (const auto& r : ranks) {
    if (r.ok()) continue;
    if (!first) os << "; ";
    first = false;
    os << "rank " << r.rank << ": ";
    if (r.pid < 0) {
      os << "fork failed";
    } else if (r.exited) {
      os << "exit code " << r.exitCode;
      if (r.exitCode == kExitGtestFailure) os << " (gtest assertion failed)";
      if (r.exitCode == kExitException) os << " (exception, see stderr)";
    } else if (r.signal) {
      os << "killed by signal " << r.signal << " (" << strsignal(r.signal) << ")";
      if (r.timedOut) os << " (timed out)";
    } else {
      os << "unknown status";
    }
  }
  return os.str();
}

RanksResult runRanks(int nranks, std::function<void(int rank)> body, double timeoutSec) {
  // ctest's PROCESSORS (tutti_add_test passes it as TUTTI_TEST_PROCESSORS): a test that runs
  // more ranks than it declares would overload the machine beside other tests.
  if (const char* declared = std::getenv("TUTTI_TEST_PROCESSORS");
      declared != nullptr && nranks > std::atoi(declared))
    ADD_FAILURE() << "runs " << nranks << " ranks but declares PROCESSORS " << declared
                  << " (tutti_add_test ... PROCESSORS " << nranks << ")";
  using Clock = std::chrono::steady_clock;
  RanksResult result;
  result.ranks.resize(nranks);
  auto start = Clock::now();
  pid_t parent = ::getpid();
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < nranks; ++r) {
    result.ranks[r].rank = r;
    pid_t pid = ::fork();
    if (pid == 0) runChild(r, body, parent);
    result.ranks[r].pid = pid;  // -1 when fork failed: reported by describe()
  }
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeoutSec));
  int running = 0;
  for (auto& s : result.ranks) running += s.pid > 0 ? 1 : 0;
  int sleepUs = 200;
  while (running > 0) {
    bool reaped = false;
    for (auto& s : result.ranks) {
      if (s.pid <= 0 || s.exited || s.signal) continue;
      int status = 0;
      pid_t w = ::waitpid(s.pid, &status, WNOHANG);
      if (w == s.pid) {
        record(s, status);
        --running;
        reaped = true;
      }
    }
    if (running == 0) break;
    if (Clock::now() >= deadline) {
      for (auto& s : result.ranks) {
        if (s.pid <= 0 || s.exited || s.signal) continue;
        ::kill(s.pid, SIGKILL);
        int status = 0;
        while (::waitpid(s.pid, &status, 0) < 0 && errno == EINTR) {
        }
        record(s, status);
        s.timedOut = true;
      }
      break;
    }
    if (!reaped) {
      std::this_thread::sleep_for(std::chrono::microseconds(sleepUs));
      sleepUs = std::min(sleepUs * 2, 20000);
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tutti::test
