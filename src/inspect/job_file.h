// The file a job leaves for tutti-inspect: rank 0 of each communicator made at a launch (not
// split from another) writes where every rank's responder listens (responder.h), in a
// directory only its user can read (TUTTI_INSPECT_DIR, else $TMPDIR/tutti-inspect-<uid>, else
// /tmp/...), and removes it when the communicator is destroyed. Files whose rank 0 is gone
// (same host, no such process) are removed by the next job's rank 0 and by tutti-inspect.
// Knows nothing of communicators.
#pragma once

#include <string>
#include <vector>

namespace tutti::inspect {

struct JobRank {
  int rank = -1;
  std::string host;
  long pid = 0;
  std::string address;  // "host:port|token" ("" when the rank has no responder)
};

struct JobFile {
  std::string name;  // the communicator's
  int nranks = 0;
  long started = 0;  // unix seconds
  std::vector<JobRank> ranks;
  std::string path;  // where it was read from / written to
};

// The directory: `configured` (TUTTI_INSPECT_DIR) when not empty, else the default above.
std::string jobDirectory(const std::string& configured);

// Writes the file (created 0600 in a 0700 directory, renamed into place) and returns its path;
// removes stale files of this host first. Throws tuttiSystemError when it cannot.
std::string writeJobFile(const std::string& dir, const JobFile& job);
// Throws tuttiInvalidArgument naming the file when it is not one.
JobFile readJobFile(const std::string& path);
// The job files in dir, newest first (none when dir does not exist).
std::vector<std::string> listJobFiles(const std::string& dir);
// Whether the file's rank 0 runs on this host and its process is gone.
bool staleOnThisHost(const JobFile& job);
// Removes dir's files that are stale on this host; returns how many.
int pruneJobFiles(const std::string& dir);

}  // namespace tutti::inspect
