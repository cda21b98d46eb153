// tutti-inspect's pieces without a job: a report survives its text form (also with newlines in
// a failure text), a job file is read back as written and a malformed one is refused naming
// it, and the verdict names the rank that holds the job up in each kind of stall.
#include "verdict.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "inspect/job_file.h"
#include "inspect/report.h"

namespace tutti::inspect {
namespace {

using State = CommReport::State;

CommReport comm(int rank, State state, uint64_t number, double seconds, int waitPeer = -1) {
  CommReport c;
  c.name = "job";
  c.rank = rank;
  c.nranks = 4;
  c.state = state;
  c.record = number + 3;
  c.collective = number;
  c.call = "allreduce(count 8, float, sum)";
  c.algorithm = "ring";
  c.seconds = seconds;
  c.waitPeer = waitPeer;
  c.waitSeconds = waitPeer >= 0 ? seconds - 0.1 : 0;
  return c;
}

TEST(InspectReport, SurvivesItsTextForm) {
  ProcessReport p{
      "host-a", 4242, {comm(1, State::kRunning, 17, 2.5, 3), comm(0, State::kDone, 9, 0.25)}};
  p.comms[0].failure = "line one\nline two";
  p.comms[0].waitStep = "window phase 12, it reached 11";
  p.comms[0].recent = {"#1 a", "#2 b"};
  p.comms[0].latency = {"allreduce 8 B-16 B [line]: 3 calls"};
  p.comms[1].name = "other group";
  const ProcessReport q = decode(encode(p));
  EXPECT_EQ(q.host, "host-a");
  EXPECT_EQ(q.pid, 4242);
  ASSERT_EQ(q.comms.size(), 2u);
  const CommReport& c = q.comms[0];
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.state, State::kRunning);
  EXPECT_EQ(c.record, 20u);
  EXPECT_EQ(c.collective, 17u);
  EXPECT_EQ(c.call, "allreduce(count 8, float, sum)");
  EXPECT_EQ(c.waitPeer, 3);
  EXPECT_DOUBLE_EQ(c.waitSeconds, 2.4);
  EXPECT_EQ(c.waitStep, "window phase 12, it reached 11");
  EXPECT_EQ(c.failure, "line one line two");
  EXPECT_EQ(c.recent, (std::vector<std::string>{"#1 a", "#2 b"}));
  EXPECT_EQ(c.latency.size(), 1u);
  EXPECT_EQ(q.comms[1].name, "other group");
  EXPECT_EQ(q.comms[1].state, State::kDone);
  EXPECT_THROW(decode("host x\nrank 1 2\n"), Error);  // a field before any communicator
  EXPECT_THROW(decode("pid twelve\n"), Error);
}

TEST(InspectJobFile, ReadsBackWhatWasWrittenAndRefusesOthers) {
  char dir[] = "/tmp/tutti-jobfile-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  JobFile job{"world", 2, 1234, {{0, "h0", ::getpid(), "127.0.0.1:5|ab"}, {1, "h1", 77, ""}}, ""};
  const std::string path = writeJobFile(dir, job);
  const JobFile back = readJobFile(path);
  EXPECT_EQ(back.name, "world");
  EXPECT_EQ(back.nranks, 2);
  EXPECT_EQ(back.started, 1234);
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[0].address, "127.0.0.1:5|ab");
  EXPECT_EQ(back.ranks[1].address, "");  // no responder
  EXPECT_EQ(back.ranks[1].pid, 77);
  EXPECT_EQ(listJobFiles(dir), std::vector<std::string>{path});
  // The same job again (two communicators named alike in one process, the same second): a
  // file of its own, so that one's removal leaves the other's.
  const std::string again = writeJobFile(dir, job);
  EXPECT_NE(again, path);
  EXPECT_EQ(listJobFiles(dir).size(), 2u);
  ::unlink(again.c_str());
  EXPECT_FALSE(staleOnThisHost(back));  // rank 0 on another host ("h0"): never pruned here
  const std::string bad = std::string(dir) + "/bad.job";
  std::FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("tutti-inspect-job 1\nranks 3\nrank 0 h 1 -\n", f);
  std::fclose(f);
  try {
    readJobFile(bad);
    ADD_FAILURE() << "a job file listing 1 rank of 3 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  ::unlink(bad.c_str());
  ::unlink(path.c_str());
  // A directory others may read is refused (the file would show the ranks' tokens).
  ::chmod(dir, 0755);
  EXPECT_THROW(writeJobFile(dir, job), Error);
  EXPECT_TRUE(listJobFiles(dir).empty());
  ::rmdir(dir);
}

std::vector<RankView> views(const std::vector<CommReport>& comms) {
  std::vector<RankView> v;
  for (const CommReport& c : comms) v.push_back({c.rank, &c, "", false});
  return v;
}

TEST(InspectVerdict, RankLists) {
  EXPECT_EQ(rankList({3}), "rank 3");
  EXPECT_EQ(rankList({2, 0, 1, 5}), "ranks 0-2, 5");
  EXPECT_EQ(rankList({0, 1, 3}), "ranks 0, 1, 3");
}

TEST(InspectVerdict, AJobACallApartIsHealthy) {
  const std::vector<CommReport> c = {
      comm(0, State::kRunning, 12, 0.001), comm(1, State::kDone, 11, 0.0001),
      comm(2, State::kRunning, 12, 0.002), comm(3, State::kNoCall, 0, 0)};
  const Verdict v = judge(views(c));
  EXPECT_TRUE(v.healthy) << v.text;
}

TEST(InspectVerdict, NamesTheRankARingWaitsFor) {
  // Rank 2 has not reached call 20; rank 1 waits for rank 3, which waits for rank 2.
  const std::vector<CommReport> c = {
      comm(0, State::kRunning, 20, 3, 2), comm(1, State::kRunning, 20, 3, 3),
      comm(2, State::kDone, 19, 3.1), comm(3, State::kRunning, 20, 3, 2)};
  const Verdict v = judge(views(c));
  EXPECT_FALSE(v.healthy);
  EXPECT_NE(v.text.find("ranks 0, 1, 3 wait in allreduce(count 8, float, sum) #20 for rank 2;"),
            std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("rank 2 is behind: between calls, 3.1 s after"), std::string::npos)
      << v.text;
}

TEST(InspectVerdict, NamesSilentGoneAndFailedRanks) {
  std::vector<CommReport> c = {comm(0, State::kFailed, 7, 1), comm(1, State::kFailed, 7, 1),
                               comm(2, State::kRunning, 7, 2, 3), comm(3, State::kRunning, 7, 0)};
  c[0].failure = "peer rank 3 died";
  std::vector<RankView> v = views(c);
  v[3] = {3, nullptr, "does not answer: refused", true};
  Verdict verdict = judge(v);
  EXPECT_NE(verdict.text.find("ranks 0, 1 have failed (rank 0: peer rank 3 died)"),
            std::string::npos)
      << verdict.text;
  EXPECT_NE(verdict.text.find("rank 2 waits in allreduce(count 8, float, sum) #7 for rank 3"),
            std::string::npos)
      << verdict.text;
  EXPECT_NE(verdict.text.find("rank 3's process is gone"), std::string::npos) << verdict.text;
  v[3] = {3, nullptr, "does not answer: no answer within 1 s", false};
  verdict = judge(v);
  EXPECT_NE(verdict.text.find("rank 3 does not answer: no answer within 1 s"), std::string::npos)
      << verdict.text;
}

}  // namespace
}  // namespace tutti::inspect
