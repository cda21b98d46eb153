// tutti-inspect: what a running job's ranks are doing, without stopping it (docs/reliability.md,
// "My job hangs").
//   tutti-inspect                 the newest job of this user on this host
//   tutti-inspect FILE            the job of that job file
//   tutti-inspect --list          the job files and whether their rank 0 still runs
// Options: --dir DIR (where job files are; TUTTI_INSPECT_DIR), --timeout SEC (1), --recent
// (each rank's last calls), --latency (counts and latency histograms).
// Exit status: 0 healthy, 1 something holds the job up (the verdict says what), 2 no job or bad
// arguments.
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <string>

#include "common/env.h"
#include "common/error.h"
#include "inspect/job_file.h"
#include "query.h"
#include "verdict.h"

namespace {

using namespace tutti::inspect;

struct Args {
  std::string file, dir;
  double timeoutSec = 1.0;
  bool list = false, recent = false, latency = false;
};

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: tutti-inspect [FILE] [--dir DIR] [--timeout SEC] [--recent] [--latency]\n"
               "       tutti-inspect --list [--dir DIR]\n"
               "Asks every rank of a running job what it is doing and names what holds it up.\n"
               "FILE: a job file (default: the newest in DIR, TUTTI_INSPECT_DIR or\n"
               "$TMPDIR/tutti-inspect-<uid>). Exit status: 0 healthy, 1 held up, 2 no job.\n");
}

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--dir") {
      const char* v = value();
      if (!v) return false;
      a->dir = v;
    } else if (arg == "--timeout") {
      const char* v = value();
      char* end = nullptr;
      if (!v || (a->timeoutSec = std::strtod(v, &end)) <= 0 || *end) return false;
    } else if (arg == "--list") {
      a->list = true;
    } else if (arg == "--recent") {
      a->recent = true;
    } else if (arg == "--latency") {
      a->latency = true;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      std::exit(0);
    } else if (!arg.empty() && arg[0] != '-' && a->file.empty()) {
      a->file = arg;
    } else {
      return false;
    }
  }
  return true;
}

int listJobs(const std::string& dir) {
  const auto files = listJobFiles(dir);
  if (files.empty()) std::printf("no job files in %s\n", dir.c_str());
  for (const std::string& path : files) {
    try {
      const JobFile job = readJobFile(path);
      const std::string state = processState(job.ranks[0].host, job.ranks[0].pid);
      std::printf("%s: %s, %d ranks, rank 0 on %s pid %ld%s\n", path.c_str(), job.name.c_str(),
                  job.nranks, job.ranks[0].host.c_str(), job.ranks[0].pid,
                  state.empty() ? "" : (" (" + state + ")").c_str());
    } catch (const tutti::Error& e) {
      std::printf("%s: unreadable (%s)\n", path.c_str(), e.what());
    }
  }
  return 0;
}

// The newest job file in dir whose rank 0 is not known to be gone ("" when none).
std::string newestLiveJob(const std::string& dir) {
  pruneJobFiles(dir);
  for (const std::string& path : listJobFiles(dir)) {
    try {
      if (!staleOnThisHost(readJobFile(path))) return path;
    } catch (const tutti::Error&) {
    }
  }
  return "";
}

void printRank(const RankView& v, const RankAnswer& a, const JobRank& r, const Args& args) {
  std::printf("rank %d (host %s, pid %ld): %s\n", v.rank, r.host.c_str(), r.pid,
              describeView(v).c_str());
  if (!v.comm) return;
  if (args.recent)
    for (const std::string& line : v.comm->recent) std::printf("    %s\n", line.c_str());
  if (args.latency)
    for (const std::string& line : v.comm->latency) std::printf("    %s\n", line.c_str());
  // The process's other communicators, a line each.
  for (const CommReport& c : a.report.comms)
    if (&c != v.comm) {
      RankView other{c.rank, &c, "", false};
      std::printf("    also communicator '%s' rank %d/%d: %s\n", c.name.c_str(), c.rank, c.nranks,
                  describeView(other).c_str());
    }
}

int inspect(const Args& args, const std::string& dir) {
  const std::string path = args.file.empty() ? newestLiveJob(dir) : args.file;
  if (path.empty()) {
    std::fprintf(stderr,
                 "tutti-inspect: no running job's file in %s (rank 0 writes one at init unless "
                 "TUTTI_INSPECT=0; TUTTI_INSPECT_DIR moves it)\n",
                 dir.c_str());
    return 2;
  }
  const JobFile job = readJobFile(path);
  const auto answers = queryJob(job, args.timeoutSec);
  const auto views = viewsOf(job, answers);
  const std::string name = job.name.empty() ? "" : " '" + job.name + "'";
  std::printf("job%s: %d ranks, started %ld s ago (%s)\n", name.c_str(), job.nranks,
              static_cast<long>(std::time(nullptr)) - job.started, path.c_str());
  for (size_t i = 0; i < views.size(); ++i) printRank(views[i], answers[i], job.ranks[i], args);
  const Verdict verdict = judge(views);
  std::printf("verdict: %s\n", verdict.text.c_str());
  return verdict.healthy ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, &args)) {
    usage(stderr);
    return 2;
  }
  try {
    const std::string dir =
        jobDirectory(args.dir.empty() ? tutti::env::getString("TUTTI_INSPECT_DIR") : args.dir);
    return args.list ? listJobs(dir) : inspect(args, dir);
  } catch (const tutti::Error& e) {
    std::fprintf(stderr, "tutti-inspect: %s\n", e.what());
    return 2;
  }
}
