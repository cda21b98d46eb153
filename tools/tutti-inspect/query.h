// Asks every rank of a job file what it is doing (src/inspect/responder.h), all at once,
// within one deadline; a rank that does not answer gets the reason, and on this host what
// its process is (gone, stopped, zombie).
#pragma once

#include <string>
#include <vector>

#include "inspect/job_file.h"
#include "inspect/report.h"

namespace tutti::inspect {

struct RankAnswer {
  int rank = -1;
  bool answered = false;
  ProcessReport report;  // when answered
  std::string why;       // when not: "no answer within 1 s; its process is stopped (SIGSTOP...)"
  bool gone = false;     // the process is known to be gone (refused, or no such pid here)
  double seconds = 0;    // how long its answer took
};

std::vector<RankAnswer> queryJob(const JobFile& job, double timeoutSec);

// On this host: "gone", "stopped", "zombie", "running", "sleeping", ... of pid ("" when the
// host is another one).
std::string processState(const std::string& host, long pid);

}  // namespace tutti::inspect
