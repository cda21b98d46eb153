// The job-wide verdict of tutti-inspect from every rank's answer: healthy, or which ranks
// wait in which call for whom, and which rank holds them up (not answering, gone, in an
// earlier call, failed). Pure logic over the answers.
#pragma once

#include <string>
#include <vector>

#include "inspect/job_file.h"
#include "inspect/report.h"
#include "query.h"

namespace tutti::inspect {

// A running call counts as stalled once it has run this long.
constexpr double kStalledSec = 1.0;

struct RankView {
  int rank = -1;
  const CommReport* comm = nullptr;  // the job's communicator in the rank's answer (null: none)
  std::string why;                   // when comm is null: why not
  bool gone = false;
};

// The job's communicator in each rank's answer (matched by name, size and rank).
std::vector<RankView> viewsOf(const JobFile& job, const std::vector<RankAnswer>& answers);

struct Verdict {
  bool healthy = false;
  std::string text;  // one sentence (or a few, joined by "; ")
};
Verdict judge(const std::vector<RankView>& views);

// "rank 3", "ranks 0-2, 5"
std::string rankList(const std::vector<int>& ranks);
// What one rank does, in a phrase: "in allreduce(count 8, float32, sum) #12 [ring] for 3.2 s,
// waiting for rank 3 for 2.2 s"
std::string describeView(const RankView& v);

}  // namespace tutti::inspect
