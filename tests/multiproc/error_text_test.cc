// Error texts (issue 30, E11): the failing function is named once, also when the error comes
// from a helper that names it itself (and the compressed all-reduce refuses a pointer the host
// cannot read); tuttiCommGetAsyncError with a NULL argument records why,
// replacing the communicator's previous error text. One forked rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace {

using tutti::test::makeId;
using tutti::test::runRanks;

size_t occurrences(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST(ErrorText, FunctionNamedOnceAndNullAsyncErrorRecorded) {
  // Where CUDA is usable the pointer check asks CUDA, not the host mappings (docs/cuda.md).
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "a CUDA driver is present";
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int rank) {
    tuttiComm_t comm;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 1, id, rank), nullptr);
    // A pointer no process maps: refused by the memory-space check, which names the call.
    float out[4];
    const void* bogus = reinterpret_cast<const void*>(uintptr_t{0x10});
    EXPECT_EQ(tuttiAllReduce(bogus, out, 4, tuttiFloat32, tuttiSum, comm, nullptr),
              tuttiInvalidArgument);
    std::string err = tuttiGetLastError(comm);
    EXPECT_EQ(err.rfind("tuttiAllReduce: ", 0), 0u) << err;
    EXPECT_EQ(occurrences(err, "tuttiAllReduce"), 1u) << err;
    // The compressed all-reduce refuses it too instead of reading it.
    EXPECT_EQ(tuttiAllReduceCompressed(bogus, out, 4, tuttiFloat32, "none", 0, 0, comm, nullptr),
              tuttiInvalidArgument);
    err = tuttiGetLastError(comm);
    EXPECT_EQ(occurrences(err, "tuttiAllReduceCompressed"), 1u) << err;
    EXPECT_NE(err.find("not readable host memory"), std::string::npos) << err;
    // The NULL out-argument gets its own text, not the all-reduce's stale one.
    EXPECT_EQ(tuttiCommGetAsyncError(comm, nullptr), tuttiInvalidArgument);
    err = tuttiGetLastError(comm);
    EXPECT_NE(err.find("tuttiCommGetAsyncError"), std::string::npos) << err;
    EXPECT_NE(err.find("asyncError is NULL"), std::string::npos) << err;
    EXPECT_EQ(tuttiCommGetAsyncError(nullptr, nullptr), tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(nullptr)).find("comm is NULL"), std::string::npos);
    // The communicator still works.
    float in[4] = {1, 2, 3, 4};
    TUTTI_ASSERT_OK(tuttiAllReduce(in, out, 4, tuttiFloat32, tuttiSum, comm, nullptr), comm);
    EXPECT_EQ(out[3], 4.0f);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), comm);
  });
  EXPECT_RANKS_OK(result);
}

}  // namespace

namespace {

TEST(Algorithms, EveryCollectiveTuttiHAcceptsHasAList) {
  for (const char* c :
       {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"})
    EXPECT_NE(tuttiAlgorithms(c), nullptr) << c;
  ASSERT_NE(tuttiAlgorithms("neighborallreduce"), nullptr);
  EXPECT_STREQ(tuttiAlgorithms("neighborallreduce"), "neighbor,neighbor_hier");
  EXPECT_EQ(tuttiAlgorithms("allreducex"), nullptr);
  EXPECT_EQ(tuttiAlgorithms(nullptr), nullptr);
}

}  // namespace
