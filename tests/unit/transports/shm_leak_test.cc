// Named shm objects never outlive their use (issue 68 F6): a doorbell FIFO whose setup failed or
// was aborted (never released) is unlinked when it is destroyed, and moving it hands that duty
// on; names that a process killed during setup left are removed by a later transport once their
// pid is gone and they are older than the setups still in flight, and nothing else is.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "harness/temp_dir.h"
#include "shm_os.h"

namespace tutti::transport::shm {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(ShmNames, AnUnreleasedDoorbellIsUnlinkedWhenDestroyed) {
  test::TempDir dir;
  std::string path;
  {
    Doorbell bell = Doorbell::create(SegmentMode::kFile, dir.path(), uniqueName("shm-0to1-bell"));
    path = bell.path();
    ASSERT_TRUE(exists(path));
    Doorbell moved = std::move(bell);  // the moved-from one unlinks nothing
    EXPECT_TRUE(exists(path));
  }
  EXPECT_FALSE(exists(path)) << path << " leaked";
  // Released (the peer opened it): unlinked at once, and nothing is left to do after.
  Doorbell bell = Doorbell::create(SegmentMode::kFile, dir.path(), uniqueName("shm-1to0-bell"));
  path = bell.path();
  bell.release();
  EXPECT_FALSE(exists(path));
}

// A pid that has exited (a child reaped at once).
pid_t deadPid() {
  pid_t child = ::fork();
  if (child == 0) _exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

void touch(const std::string& path, double ageSec) {
  { std::ofstream(path) << "x"; }
  struct timespec times[2];
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= static_cast<time_t>(ageSec);
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(ShmNames, StaleNamesOfDeadProcessesAreRemovedAndNothingElse) {
  test::TempDir dir;
  const std::string dead = std::to_string(deadPid());
  const std::string live = std::to_string(::getpid());
  const std::string d = dir.path() + "/";
  touch(d + "tutti-shm-0to1-" + dead + "-1a2b-0", 60);       // stale segment
  touch(d + "tutti-shm-0to1-bell-" + dead + "-1a2b-1", 60);  // stale doorbell
  touch(d + "tutti-shm-1to0-" + dead + "-1a2b-2", 5);        // too young: a setup in flight
  touch(d + "tutti-shm-1to0-" + live + "-1a2b-3", 60);       // its process lives
  touch(d + "other-shm-0to1-" + dead + "-1a2b-4", 60);       // not tutti's
  touch(d + "tutti-oddname", 60);                            // no pid in it
  EXPECT_EQ(removeStaleNames(dir.path(), 30), 2);
  EXPECT_FALSE(exists(d + "tutti-shm-0to1-" + dead + "-1a2b-0"));
  EXPECT_FALSE(exists(d + "tutti-shm-0to1-bell-" + dead + "-1a2b-1"));
  EXPECT_TRUE(exists(d + "tutti-shm-1to0-" + dead + "-1a2b-2"));
  EXPECT_TRUE(exists(d + "tutti-shm-1to0-" + live + "-1a2b-3"));
  EXPECT_TRUE(exists(d + "other-shm-0to1-" + dead + "-1a2b-4"));
  EXPECT_TRUE(exists(d + "tutti-oddname"));
  EXPECT_EQ(removeStaleNames(dir.path() + "/missing", 30), 0);
}

}  // namespace
}  // namespace tutti::transport::shm
