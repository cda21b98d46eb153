// shm segments are memory (memfd or tmpfs pages): one larger than what the host or the
// process's cgroup has left must be refused with the sizes and the setting to lower, never
// handed to fallocate (a large TUTTI_SHM_FIFO_BYTES made the OOM killer kill other processes).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.h"
#include "harness/fork_harness.h"
#include "harness/memory_cgroup.h"
#include "shm_os.h"

namespace tutti::transport::shm {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::string refusal(size_t bytes, const MemoryRoom& room) {
  try {
    checkMemoryRoom(bytes, room, "segment s", "TUTTI_SHM_FIFO_BYTES");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiSystemError);
    return e.what();
  }
  return "";
}

TEST(ShmMemory, ParsesMeminfoAndCgroupFiles) {
  EXPECT_EQ(parseMemAvailable("MemTotal:       32000000 kB\nMemFree:  100 kB\n"
                              "MemAvailable:   22745776 kB\nBuffers: 1 kB\n"),
            uint64_t{22745776} * 1024);
  EXPECT_FALSE(parseMemAvailable("MemTotal: 1 kB\n").has_value());
  EXPECT_EQ(parseCgroupValue("67108864\n"), uint64_t{67108864});
  EXPECT_FALSE(parseCgroupValue("max\n").has_value());
  EXPECT_FALSE(parseCgroupValue("9223372036854771712\n").has_value());  // v1: no limit
  EXPECT_FALSE(parseCgroupValue("").has_value());
  // This machine: MemAvailable is known.
  EXPECT_TRUE(readMemoryRoom().memAvailable.has_value());
}

TEST(ShmMemory, SegmentsLargerThanTheRoomAreRefused) {
  MemoryRoom cg;
  cg.memAvailable = 1024 * kMiB;
  cg.cgroupRoom = 32 * kMiB;
  cg.cgroupLimit = 64 * kMiB;
  cg.cgroupPath = "/sys/fs/cgroup/job";
  std::string m = refusal(128 * kMiB, cg);
  EXPECT_NE(m.find("segment s needs 134217728 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("33554432 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("cgroup /sys/fs/cgroup/job (67108864 bytes)"), std::string::npos) << m;
  EXPECT_NE(m.find("set TUTTI_SHM_FIFO_BYTES smaller"), std::string::npos) << m;
  EXPECT_EQ(refusal(32 * kMiB, cg), "");  // exactly what is left fits

  MemoryRoom host;
  host.memAvailable = 100 * kMiB;
  m = refusal(200 * kMiB, host);
  EXPECT_NE(m.find("104857600 bytes (100.0 MiB) of memory are available (MemAvailable)"),
            std::string::npos)
      << m;
  EXPECT_EQ(refusal(99 * kMiB, host), "");
  // The host shorter than the cgroup: the host is named.
  MemoryRoom both = cg;
  both.memAvailable = 16 * kMiB;
  m = refusal(48 * kMiB, both);
  EXPECT_NE(m.find("MemAvailable"), std::string::npos) << m;
  // Nothing known: nothing refused.
  EXPECT_EQ(refusal(SIZE_MAX, MemoryRoom{}), "");
}

// A real limit: a 64 MiB memory cgroup (v2, or v1's memory controller) made by the test, a
// process moved into it asks for a 128 MiB memfd segment. Refused by the check, so nothing
// beyond the cgroup is ever allocated (before the check, the cgroup's OOM killer killed the
// process).
TEST(ShmMemory, SegmentAboveTheCgroupLimitIsRefused) {
  std::string whyNot;
  auto cgroup = test::MemoryCgroup::make(64 * kMiB, &whyNot);
  if (!cgroup) GTEST_SKIP() << whyNot;
  auto r = test::runRanks(1, [&](int) {
    ASSERT_TRUE(cgroup->join());
    MemoryRoom room = readMemoryRoom();
    ASSERT_TRUE(room.cgroupRoom.has_value());
    EXPECT_LE(*room.cgroupRoom, 64 * kMiB);
    EXPECT_NE(room.cgroupPath.find("tutti-test-"), std::string::npos) << room.cgroupPath;
    try {
      Segment::create(SegmentMode::kMemfd, 128 * kMiB, "/dev/shm", "big", "TUTTI_SHM_FIFO_BYTES");
      ADD_FAILURE() << "a 128 MiB segment was created in a 64 MiB cgroup";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_EQ(e.code(), tuttiSystemError) << m;
      EXPECT_NE(m.find("134217728"), std::string::npos) << m;
      EXPECT_NE(m.find("memory limit of cgroup"), std::string::npos) << m;
      EXPECT_NE(m.find("TUTTI_SHM_FIFO_BYTES"), std::string::npos) << m;
    }
    // A segment that fits is made.
    Segment ok = Segment::create(SegmentMode::kMemfd, 8 * kMiB, "/dev/shm", "small");
    EXPECT_EQ(ok.size(), 8 * kMiB);
  });
  EXPECT_TRUE(r.allOk()) << r.describe();
}

}  // namespace
}  // namespace tutti::transport::shm
