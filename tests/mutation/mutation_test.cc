// The mutation run: every fault of faults.h, injected into every schedule the communicator
// builds (the test-only hook tuttiTestMutateSchedule, defined here), must make the correctness
// matrix fail at 3, 4 and 8 ranks over shm and over tcp, and at 4 ranks on two hosts
// (TUTTI_HOSTID, where the hierarchical algorithms run); without a fault (the control rows)
// the same cases pass. Prints the table (fault x ranks x transport -> caught) that
// docs/testing.md shows; TUTTI_MUTATION_TABLE=file also writes it there. A cell "caught (W of
// C)": W wrong cases on the rank with most, out of C run (a rank stops at a failed call).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "comm_test_util.h"
#include "faults.h"
#include "harness/fork_harness.h"
#include "tutti/tutti.h"

namespace {
tutti::mutation::Fault gFault = tutti::mutation::Fault::kNone;  // set before the ranks fork
}  // namespace

// The hook the communicator calls on every schedule it builds (weak reference there).
extern "C" __attribute__((visibility("default"))) void tuttiTestMutateSchedule(
    tutti::exec::Schedule* schedule, const tutti::algo::CollArgs* args) {
  tutti::mutation::apply(gFault, *schedule, *args);
}

namespace tutti::test {
namespace {

using mutation::FaultInfo;

// The cases of the core matrix (buildCases(n, Matrix::kCore), the default run's) that a fault
// touches: its collectives with every algorithm (and the automatic choice), counts 1, 7 and
// 1023, in and out of place, roots 0 and n-1; float32, int32 and bfloat16 with sum and max,
// or (deterministic mode) float32 and float64 with rank-order sums.
std::vector<Case> casesFor(const FaultInfo& f, int n) {
  const std::vector<tuttiDataType_t> types =
      f.deterministic ? std::vector{tuttiFloat32, tuttiFloat64}
                      : std::vector{tuttiFloat32, tuttiInt32, tuttiBfloat16};
  auto has = [](const auto& list, auto x) {
    return std::find(list.begin(), list.end(), x) != list.end();
  };
  std::vector<Case> cases;
  for (Case c : buildCases(n, Matrix::kCore)) {
    bool wanted = false;
    for (algo::Coll coll : f.colls) wanted |= coll == c.coll->algoColl;
    if (!wanted || c.count == 0 || c.count > 1023 || !has(types, c.dtype)) continue;
    if (c.op != tuttiSum && (f.deterministic || !c.coll->hasOp || c.op != tuttiMax)) continue;
    c.inOrder = f.deterministic;
    cases.push_back(c);
  }
  return cases;
}

struct RankOutcome {
  int cases;
  int wrong;
  int hierCases, hierWrong;  // the cases of the hierarchical algorithms (two hosts)
  char first[240];
};

struct Cell {
  bool caught = false;
  int wrong = 0, cases = 0;
  int hierWrong = 0, hierCases = 0;
  std::string first, error;
};

// Where the ranks run: one host over shm (the default choice), one host over tcp only, or two
// hosts (TUTTI_HOSTID: ranks interleaved, shm inside a host, tcp across), where the
// hierarchical algorithms apply too.
enum class Where { kShm, kTcp, kTwoHosts };

Cell runFault(const FaultInfo& f, int n, Where where) {
  const std::vector<Case> cases = casesFor(f, n);
  auto* out = static_cast<RankOutcome*>(mmap(
      nullptr, sizeof(RankOutcome) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::memset(out, 0, sizeof(RankOutcome) * n);
  gFault = f.fault;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        setenv("TUTTI_TIMEOUT", "20", 1);
        if (where == Where::kTcp) setenv("TUTTI_TRANSPORT", "tcp", 1);
        if (where == Where::kTwoHosts)
          setenv("TUTTI_HOSTID", ("mutation-host-" + std::to_string(rank % 2)).c_str(), 1);
        if (f.deterministic) setenv("TUTTI_DETERMINISTIC", "1", 1);
        tuttiComm_t comm = nullptr;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        RankOutcome& o = out[rank];
        for (const Case& c : cases) {
          bool notApplicable = false;
          std::string err = runCase(comm, c, rank, n, &notApplicable);
          ++o.cases;
          const bool hier = std::string(c.algo) == "hier" && !notApplicable;
          o.hierCases += hier;
          if (err.empty()) continue;
          o.hierWrong += hier;
          if (o.wrong++ == 0)
            std::snprintf(o.first, sizeof(o.first), "%s", (describe(c, n) + ": " + err).c_str());
          if (err.rfind("call failed", 0) == 0) break;  // the communicator is gone
        }
        tuttiCommDestroy(comm);  // may fail after a failed call: not what is measured here
      },
      120);
  gFault = mutation::Fault::kNone;
  Cell cell;
  for (int r = 0; r < n; ++r) {
    cell.wrong = std::max(cell.wrong, out[r].wrong);
    cell.cases = std::max(cell.cases, out[r].cases);
    cell.hierWrong = std::max(cell.hierWrong, out[r].hierWrong);
    cell.hierCases = std::max(cell.hierCases, out[r].hierCases);
    if (cell.first.empty() && out[r].wrong > 0)
      cell.first = "rank " + std::to_string(r) + " " + out[r].first;
  }
  cell.caught = cell.wrong > 0;
  if (!result.allOk()) cell.error = result.describe();
  munmap(out, sizeof(RankOutcome) * n);
  return cell;
}

TEST(Mutation, EveryFaultFailsTheMatrixAt3_4_8RanksOnShmAndTcpAndOn2Hosts) {
  struct Column {
    Where where;
    int n;
    const char* name;
  };
  const Column kColumns[] = {{Where::kShm, 3, "shm 3"},           {Where::kShm, 4, "shm 4"},
                             {Where::kShm, 8, "shm 8"},           {Where::kTcp, 3, "tcp 3"},
                             {Where::kTcp, 4, "tcp 4"},           {Where::kTcp, 8, "tcp 8"},
                             {Where::kTwoHosts, 4, "2 hosts x 2"}};
  std::ostringstream table, details;
  table << "| fault |";
  for (const Column& col : kColumns) table << " " << col.name << " |";
  table << "\n|---|";
  for (size_t k = 0; k < std::size(kColumns); ++k) table << "---|";
  table << "\n";
  for (const FaultInfo& f : mutation::faults()) {
    table << "| " << f.name;
    for (const Column& col : kColumns) {
      Cell c = runFault(f, col.n, col.where);
      const std::string where = std::string(f.name) + " at " + col.name;
      EXPECT_EQ(c.error, "") << where;
      if (f.fault == mutation::Fault::kNone) {
        EXPECT_FALSE(c.caught) << where << ": " << c.first;
        table << " | pass (" << c.cases << " cases";
        if (c.hierCases) table << ", " << c.hierCases << " hier";
        table << ")";
      } else {
        EXPECT_TRUE(c.caught) << where << ": no case failed out of " << c.cases;
        table << " | " << (c.caught ? "caught" : "MISSED") << " (" << c.wrong << " of " << c.cases;
        if (c.hierCases) table << "; hier " << c.hierWrong << " of " << c.hierCases;
        table << ")";
        details << where << ": " << (c.first.empty() ? "-" : c.first) << "\n";
      }
    }
    table << " |\n";
  }
  std::printf("%s\nfirst wrong case per cell:\n%s", table.str().c_str(), details.str().c_str());
  if (const char* file = std::getenv("TUTTI_MUTATION_TABLE")) std::ofstream(file) << table.str();
}

}  // namespace
}  // namespace tutti::test
