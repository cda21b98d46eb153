// Overlapping send and receive buffers (issue 30, E3): the in-place all-to-all (send == recv,
// as MPI_IN_PLACE allows) gives the right blocks at 2..8 ranks for every all-to-all algorithm,
// with and without the shared window, over tcp and on two hosts (TUTTI_HOSTID; hier where the
// hosts are even); every other overlap of a collective's
// buffers is refused with tuttiInvalidArgument before anything moves, and the communicator
// stays usable. Forked ranks; values distinct per rank, block, element and call, the expected
// blocks built independently by verifiable::fill; guard bytes around the buffer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "harness/fork_harness.h"
#include "support/verifiable.h"
#include "tutti/tutti.h"

namespace {

using tutti::test::makeId;
using tutti::test::runRanks;
namespace vf = tutti::verifiable;

struct Setting {
  const char* name;
  const char* env;  // "VAR=value" set in every rank before init, or nullptr
  bool twoHosts;    // TUTTI_HOSTID by rank parity: two hosts, where hier applies
};
const Setting kSettings[] = {{"window", nullptr, false},
                             {"nowindow", "TUTTI_SHM_WINDOW_BYTES=0", false},
                             {"tcp", "TUTTI_TRANSPORT=tcp", false},
                             {"twohosts", nullptr, true}};

std::vector<std::string> allToAllAlgorithms() {
  std::vector<std::string> out{""};  // "" = the automatic choice
  std::stringstream ss(tuttiAlgorithms("alltoall"));
  for (std::string a; std::getline(ss, a, ',');) out.push_back(a);
  return out;
}

// One in-place all-to-all on this rank; "" when every block and guard is right.
std::string inPlaceCase(tuttiComm_t comm, int rank, int n, size_t count, tuttiDataType_t t,
                        uint64_t call) {
  const vf::Spec spec{t, vf::Kind::kCopy, n, vf::seedOf({call, count})};
  const size_t es = vf::elementSize(t), g = vf::kGuardBytes, bytes = n * count * es;
  std::vector<std::byte> buf(bytes + 2 * g, vf::kGuardByte);
  std::byte* data = buf.data() + g;
  // Block b of rank r's input holds value(spec, r, b * count + k): distinct per rank and block.
  vf::fill(spec, rank, data, n * count);
  if (tuttiAllToAll(data, data, count, t, comm, nullptr) != tuttiSuccess)
    return std::string("tuttiAllToAll: ") + tuttiGetLastError(comm);
  for (size_t k = 0; k < g; ++k)
    if (buf[k] != vf::kGuardByte || buf[g + bytes + k] != vf::kGuardByte)
      return "a guard byte was overwritten";
  // Block src of the output is block `rank` of rank src's input.
  std::vector<std::byte> want(count * es);
  for (int src = 0; src < n; ++src) {
    vf::fill(spec, src, want.data(), count, rank * count);
    std::string e = vf::firstMismatch(spec, data + src * count * es, want.data(), count);
    if (!e.empty()) return "block from rank " + std::to_string(src) + ": " + e;
  }
  return "";
}

// Whether the communicator's forced all-to-all algorithm applies (the same answer on every
// rank: an empty call that fails with "does not apply" moves nothing).
bool applies(tuttiComm_t comm, int n) {
  std::vector<int32_t> a(n), b(n);
  if (tuttiAllToAll(a.data(), b.data(), 1, tuttiInt32, comm, nullptr) == tuttiSuccess) return true;
  EXPECT_NE(std::string(tuttiGetLastError(comm)).find("does not apply"), std::string::npos)
      << tuttiGetLastError(comm);
  return false;
}

class InPlaceAllToAll : public ::testing::TestWithParam<int> {};

TEST_P(InPlaceAllToAll, EveryAlgorithmAndTransportGivesTheRightBlocks) {
  const int n = GetParam();
  // Rotated by design: each rank count takes a different setting first.
  for (size_t si = 0; si < std::size(kSettings); ++si) {
    const Setting& set = kSettings[(si + n) % std::size(kSettings)];
    tuttiUniqueId id = makeId();
    auto result = runRanks(
        n,
        [&](int rank) {
          if (set.env != nullptr) putenv(const_cast<char*>(set.env));
          if (set.twoHosts)
            setenv("TUTTI_HOSTID", ("aliasing-host-" + std::to_string(rank % 2)).c_str(), 1);
          tuttiComm_t comm;
          TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
          uint64_t call = 0;
          for (const std::string& algo : allToAllAlgorithms()) {
            std::string spec = algo.empty() ? "" : "alltoall:" + algo;
            TUTTI_ASSERT_OK(tuttiCommSetAlgorithm(comm, spec.c_str()), comm);
            if (!applies(comm, n)) continue;  // hier on one host, or with uneven hosts
            const tuttiDataType_t types[] = {tuttiInt32, tuttiFloat64, tuttiInt8};
            size_t ti = 0;
            for (size_t count : {size_t{1}, size_t{1000}, size_t{65537}}) {
              const tuttiDataType_t t = types[ti++ % 3];
              // First out of place with the same arguments: the in-place call must not take
              // the plan the planner kept from it.
              std::vector<std::byte> a(n * count * 8), b(n * count * 8);
              TUTTI_ASSERT_OK(tuttiAllToAll(a.data(), b.data(), count, t, comm, nullptr), comm);
              std::string e = inPlaceCase(comm, rank, n, count, t, call++);
              ASSERT_EQ(e, "") << set.name << " algorithm '" << algo << "' n=" << n << " count "
                               << count << " dtype " << t;
              // Out of place right after, from the same schedule cache.
              std::vector<int32_t> in(n * 3), out(n * 3, -1);
              for (size_t k = 0; k < in.size(); ++k)
                in[k] = static_cast<int32_t>(rank * 100000 + k * 7 + call);
              TUTTI_ASSERT_OK(tuttiAllToAll(in.data(), out.data(), 3, tuttiInt32, comm, nullptr),
                              comm);
              for (int src = 0; src < n; ++src)
                for (size_t k = 0; k < 3; ++k)
                  ASSERT_EQ(out[src * 3 + k],
                            static_cast<int32_t>(src * 100000 + (rank * 3 + k) * 7 + call))
                      << set.name << " out of place after in place";
            }
          }
          TUTTI_ASSERT_OK(tuttiCommDestroy(comm), comm);
        },
        120);
    EXPECT_TRUE(result.allOk()) << set.name << ": " << result.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, InPlaceAllToAll, ::testing::Values(2, 3, 4, 5, 8),
                         [](const auto& info) { return "np" + std::to_string(info.param); });

// Every collective, buffers overlapping by all but one element (recv = send + 1 element, and
// send = recv + 1 element): refused naming the call, the buffer untouched; then the
// collective's own in-place layout still works on the same communicator.
TEST(OverlapRefused, PartialOverlapIsInvalidArgumentAndLosesNothing) {
  const int n = 3;
  tuttiUniqueId id = makeId();
  auto result = runRanks(n, [&](int rank) {
    tuttiComm_t comm;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
    const size_t count = 5;
    std::vector<int32_t> buf(4 * n * count + 4);
    for (size_t k = 0; k < buf.size(); ++k) buf[k] = static_cast<int32_t>(k * 31 + rank);
    const std::vector<int32_t> before = buf;
    int32_t* b = buf.data() + 2;
    for (int shift : {1, -1}) {
      int32_t* s = shift > 0 ? b : b + 1;
      int32_t* r = shift > 0 ? b + 1 : b;
      auto refused = [&](const char* name, tuttiResult_t got) {
        EXPECT_EQ(got, tuttiInvalidArgument) << name << " shift " << shift;
        std::string err = tuttiGetLastError(comm);
        EXPECT_EQ(err.find(name), 0u) << err;
        EXPECT_EQ(err.find(name, 1), std::string::npos) << "name doubled: " << err;
        EXPECT_NE(err.find("overlap"), std::string::npos) << err;
      };
      refused("tuttiAllReduce", tuttiAllReduce(s, r, count, tuttiInt32, tuttiSum, comm, nullptr));
      refused("tuttiBroadcast", tuttiBroadcast(s, r, count, tuttiInt32, rank, comm, nullptr));
      refused("tuttiReduce", tuttiReduce(s, r, count, tuttiInt32, tuttiSum, rank, comm, nullptr));
      refused("tuttiAllGather", tuttiAllGather(s, r, count, tuttiInt32, comm, nullptr));
      refused("tuttiReduceScatter",
              tuttiReduceScatter(s, r, count, tuttiInt32, tuttiSum, comm, nullptr));
      refused("tuttiAllToAll", tuttiAllToAll(s, r, count, tuttiInt32, comm, nullptr));
    }
    EXPECT_EQ(buf, before) << "a refused call changed the buffer";
    // The in-place layouts: all-gather with send = own block of recv, reduce-scatter with
    // recv = own block of send, all-reduce with send == recv.
    std::vector<int32_t> ag(n * count);
    for (size_t k = 0; k < count; ++k) ag[rank * count + k] = static_cast<int32_t>(rank * 10 + k);
    TUTTI_ASSERT_OK(
        tuttiAllGather(ag.data() + rank * count, ag.data(), count, tuttiInt32, comm, nullptr),
        comm);
    for (int src = 0; src < n; ++src)
      for (size_t k = 0; k < count; ++k)
        ASSERT_EQ(ag[src * count + k], static_cast<int32_t>(src * 10 + k));
    std::vector<int32_t> rs(n * count);
    for (size_t k = 0; k < rs.size(); ++k) rs[k] = static_cast<int32_t>(k + rank * 1000);
    TUTTI_ASSERT_OK(tuttiReduceScatter(rs.data(), rs.data() + rank * count, count, tuttiInt32,
                                       tuttiSum, comm, nullptr),
                    comm);
    for (size_t k = 0; k < count; ++k)
      ASSERT_EQ(rs[rank * count + k],
                static_cast<int32_t>(n * (rank * count + k) + 1000 * (0 + 1 + 2)));
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), comm);
  });
  EXPECT_RANKS_OK(result);
}

}  // namespace
