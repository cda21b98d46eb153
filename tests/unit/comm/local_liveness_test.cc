// LocalLiveness: a peer's process that exited (reaped or a zombie) is gone, a running one is
// not, invisible ranks are never checked, and sweeps cover every visible peer in slices.
#include "comm/local_liveness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <vector>

namespace tutti {
namespace {

pid_t sleepingChild() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

pid_t exitedChild() {  // a zombie until reaped
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);  // exited, not reaped
  return pid;
}

TEST(LocalLiveness, ExitedAndZombieProcessesAreGoneRunningOnesAreNot) {
  pid_t running = sleepingChild();
  pid_t zombie = exitedChild();
  pid_t reaped = exitedChild();
  ::waitpid(reaped, nullptr, 0);
  // Ranks: 0 self, 1 running, 2 zombie, 3 reaped, 4 on another host (pid 0).
  LocalLiveness live({::getpid(), running, zombie, reaped, 0}, 0);
  EXPECT_FALSE(live.gone(0));
  EXPECT_FALSE(live.gone(1));
  EXPECT_TRUE(live.gone(2));
  EXPECT_TRUE(live.gone(3));
  EXPECT_FALSE(live.visible(4));
  EXPECT_FALSE(live.gone(4));
  ::kill(running, SIGKILL);
  ::waitpid(running, nullptr, 0);
  ::waitpid(zombie, nullptr, 0);
}

// 1024 visible ranks: each sweep checks one peer (256 / 1024, at least 1), starting after
// this rank, so 1023 sweeps find every gone peer once; at 8 ranks one sweep checks them all.
TEST(LocalLiveness, SweepsCheckASliceAndCoverEveryPeer) {
  pid_t zombie = exitedChild();
  const int n = 1024, self = 700;
  std::vector<pid_t> pids(n, ::getpid());  // this process stands in for live peers
  const std::set<int> dead = {3, 699, 701, 1023};
  for (int r : dead) pids[r] = zombie;
  LocalLiveness live(pids, self);
  EXPECT_EQ(live.sliceSize(), 1u);
  std::vector<int> first = live.sweep();
  EXPECT_EQ(first, (std::vector<int>{701}));  // the rank after this one comes first
  std::multiset<int> found(first.begin(), first.end());
  for (int i = 1; i < n - 1; ++i)
    for (int r : live.sweep()) found.insert(r);
  EXPECT_EQ(found, std::multiset<int>(dead.begin(), dead.end()));

  LocalLiveness small(std::vector<pid_t>(pids.begin(), pids.begin() + 8), 2);
  EXPECT_EQ(small.sliceSize(), 7u);
  EXPECT_EQ(small.sweep(), (std::vector<int>{3}));
  ::waitpid(zombie, nullptr, 0);
}

}  // namespace
}  // namespace tutti
