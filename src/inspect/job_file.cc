// The job file for tutti-inspect (job_file.h).
#include "inspect/job_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/host_name.h"
#include "common/process_gone.h"
#include "common/unique_fd.h"

namespace tutti::inspect {

namespace {

constexpr const char* kMagic = "tutti-inspect-job 1";

// Letters, digits, '-', '_' and '.' of name (others become '_'), at most 48.
std::string fileSafe(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 48))
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.empty() ? "comm" : out;
}

}  // namespace

std::string jobDirectory(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* tmp = std::getenv("TMPDIR");  // the system's, not a tutti setting
  std::string base = tmp && *tmp ? tmp : "/tmp";
  return base + "/tutti-inspect-" + std::to_string(::getuid());
}

std::string writeJobFile(const std::string& dir, const JobFile& job) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throwSystemError("tutti-inspect: mkdir " + dir);
  // The file holds the ranks' tokens: only a directory of this user's that nobody else may
  // write to or read (not a link someone else left there).
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throwSystemError("tutti-inspect: stat " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0)
    fail(tuttiSystemError, "tutti-inspect: ", dir,
         " is not a directory of this user's that only it can use (mode 0700): no job file");
  pruneJobFiles(dir);
  std::ostringstream text;
  text << kMagic << "\nname " << job.name << "\nranks " << job.nranks << "\nstarted " << job.started
       << "\n";
  for (const JobRank& r : job.ranks)
    text << "rank " << r.rank << " " << r.host << " " << r.pid << " "
         << (r.address.empty() ? "-" : r.address) << "\n";
  // Two communicators of one process, named alike and made in the same second, get two files.
  static std::atomic<unsigned> written{0};
  const std::string base = dir + "/" + std::to_string(job.started) + "-" + fileSafe(hostName()) +
                           "-" + std::to_string(::getpid()) + "-" + std::to_string(written++) +
                           "-" + fileSafe(job.name);
  const std::string tmp = base + ".tmp", path = base + ".job";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) throwSystemError("tutti-inspect: open " + tmp);
  const std::string s = text.str();
  const bool ok = ::write(fd.get(), s.data(), s.size()) == static_cast<ssize_t>(s.size());
  fd.reset();
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throwSystemError("tutti-inspect: write " + path);
  }
  return path;
}

JobFile readJobFile(const std::string& path) {
  std::ifstream in(path);
  TUTTI_CHECK_ARG(in.good(), "tutti-inspect: cannot read the job file ", path);
  JobFile job;
  job.path = path;
  std::string line;
  TUTTI_CHECK_ARG(std::getline(in, line) && line == kMagic, path, " is not a tutti job file");
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "name") {
      job.name = line.size() > 5 ? line.substr(5) : "";
    } else if (key == "ranks") {
      words >> job.nranks;
    } else if (key == "started") {
      words >> job.started;
    } else if (key == "rank") {
      JobRank r;
      words >> r.rank >> r.host >> r.pid >> r.address;
      if (r.address == "-") r.address.clear();
      TUTTI_CHECK_ARG(!words.fail(), path, ": malformed line '", line, "'");
      job.ranks.push_back(r);
    }
    TUTTI_CHECK_ARG(!words.fail(), path, ": malformed line '", line, "'");
  }
  TUTTI_CHECK_ARG(job.nranks > 0 && static_cast<int>(job.ranks.size()) == job.nranks, path,
                  " lists ", job.ranks.size(), " ranks of ", job.nranks);
  std::sort(job.ranks.begin(), job.ranks.end(),
            [](const JobRank& a, const JobRank& b) { return a.rank < b.rank; });
  return job;
}

std::vector<std::string> listJobFiles(const std::string& dir) {
  std::vector<std::pair<std::filesystem::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".job") found.emplace_back(e.last_write_time(ec), e.path());
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<std::string> out;
  for (auto& [time, path] : found) out.push_back(path);
  return out;
}

bool staleOnThisHost(const JobFile& job) {
  if (job.ranks.empty() || job.ranks[0].host != hostName()) return false;
  return processGone(static_cast<pid_t>(job.ranks[0].pid));
}

int pruneJobFiles(const std::string& dir) {
  int removed = 0;
  for (const std::string& path : listJobFiles(dir)) {
    try {
      if (!staleOnThisHost(readJobFile(path))) continue;
    } catch (const Error&) {
      continue;  // being written, or not ours: left alone
    }
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace tutti::inspect
