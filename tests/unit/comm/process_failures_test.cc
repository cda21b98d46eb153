// ProcessFailures (comm/process_failures.h): a communicator's lookup answers the others, never
// itself; a retired registration is never called again, also while another thread looks up;
// verdicts are kept in order and bounded; a forked child sees none of its parent's.
#include "comm/process_failures.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace tutti {
namespace {

using Process = ProcessFailures::Process;
using Finding = ProcessFailures::Finding;

// A lookup that knows one record: `by` names `first`.
ProcessFailures::RecordLookup knows(Process by, Process first, std::string text,
                                    std::atomic<int>* calls = nullptr) {
  return [=](const Process& asked) -> std::optional<Finding> {
    if (calls) ++*calls;
    if (!(asked == by)) return std::nullopt;
    return Finding{first, text};
  };
}

TEST(ProcessFailures, AnotherCommunicatorsRecordIsFoundNotTheAskersOwn) {
  ProcessFailures& pf = ProcessFailures::instance();
  const Process peer{"host-a", 101}, killed{"host-b", 202};
  auto self = pf.add(knows(peer, Process{"host-a", 999}, "own record"));
  EXPECT_FALSE(pf.recordBy(peer, self)) << "the asking communicator's own record is not used";
  {
    auto other = pf.add(knows(peer, killed, "rank 3 died"));
    auto found = pf.recordBy(peer, self);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->first, killed);
    EXPECT_EQ(found->text, "rank 3 died");
    EXPECT_FALSE(pf.recordBy(Process{"host-a", 102}, self)) << "another process: no record";
  }
  EXPECT_FALSE(pf.recordBy(peer, self)) << "the other communicator is gone";
}

TEST(ProcessFailures, ARetiredLookupIsNeverCalledAgain) {
  ProcessFailures& pf = ProcessFailures::instance();
  auto asker = pf.add(knows(Process{"x", 1}, Process{"x", 2}, ""));
  std::atomic<int> calls{0};
  std::atomic<bool> stop{false};
  // Registrations come and go while another thread looks up: each lookup runs only while its
  // registration lives (it would read a destroyed communicator otherwise).
  std::thread looker([&] {
    while (!stop) pf.recordBy(Process{"y", 7}, asker);
  });
  for (int i = 0; i < 2000; ++i) {
    auto alive = std::make_shared<std::atomic<bool>>(true);
    auto reg = pf.add([alive, &calls](const Process&) -> std::optional<Finding> {
      EXPECT_TRUE(alive->load()) << "called after its registration ended";
      ++calls;
      return std::nullopt;
    });
    reg = ProcessFailures::Registration();  // retired: waits for a lookup in progress
    alive->store(false);
  }
  stop = true;
  looker.join();
  SUCCEED() << calls.load() << " lookups ran";
}

TEST(ProcessFailures, VerdictsAreKeptInOrderAndBounded) {
  ProcessFailures& pf = ProcessFailures::instance();
  const size_t before = pf.verdicts().size();
  for (int i = 0; i < static_cast<int>(ProcessFailures::kMaxVerdicts) + 5; ++i)
    pf.noteVerdict(Process{"h", 1000 + i}, "verdict " + std::to_string(i));
  auto v = pf.verdicts();
  ASSERT_EQ(v.size(), ProcessFailures::kMaxVerdicts);
  if (before == 0) {
    EXPECT_EQ(v.front().first.pid, 1000);
    EXPECT_EQ(v.back().text, "verdict " + std::to_string(ProcessFailures::kMaxVerdicts - 1));
  }
}

TEST(ProcessFailures, AForkedChildSeesNoneOfItsParents) {
  ProcessFailures& pf = ProcessFailures::instance();
  pf.noteVerdict(Process{"h", 42}, "parent's");
  std::atomic<int> calls{0};
  auto parentComm = pf.add(knows(Process{"h", 5}, Process{"h", 6}, "parent's record", &calls));
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto mine = pf.add(knows(Process{"h", 8}, Process{"h", 9}, "child's"));
    const bool noVerdicts = pf.verdicts().empty();
    const bool noParentRecord = !pf.recordBy(Process{"h", 5}, mine).has_value();
    _exit(noVerdicts && noParentRecord && calls.load() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_FALSE(pf.verdicts().empty());
}

}  // namespace
}  // namespace tutti
