// TUTTI_DEBUG_SUBSYS: for every subsystem the documentation lists (docs/env.md, generated from
// the environment table), a 2-rank job (log_subsys_job under tuttirun: all-reduce, broadcast,
// reduce, send/recv, a grouped exchange, a compressed all-reduce) run with TUTTI_DEBUG=TRACE,
// TUTTI_DEBUG_SUBSYS=<that one> and TUTTI_DEBUG_FILE must log at least one line of that
// subsystem and none of another. A documented subsystem that prints nothing fails here, and so
// does one missing from docs/logging.md, which says what each prints.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/temp_dir.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The subsystems of TUTTI_DEBUG_SUBSYS's row in docs/env.md: "(INIT, BOOTSTRAP, ..., ALL)".
std::vector<std::string> documentedSubsystems() {
  std::vector<std::string> out;
  std::istringstream doc(readFile(std::string(TUTTI_SOURCE_DIR) + "/docs/env.md"));
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| `TUTTI_DEBUG_SUBSYS` |", 0) != 0) continue;
    size_t open = line.find('('), close = line.find(')', open);
    if (open == std::string::npos || close == std::string::npos) break;
    std::stringstream list(line.substr(open + 1, close - open - 1));
    for (std::string name; std::getline(list, name, ',');) {
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!name.empty() && name != "ALL") out.push_back(name);
    }
    break;
  }
  return out;
}

std::string run(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return "popen failed";
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

TEST(LogSubsys, DocumentationListsTheSubsystems) {
  std::vector<std::string> subsystems = documentedSubsystems();
  ASSERT_GE(subsystems.size(), 5u) << "no subsystem list in docs/env.md's TUTTI_DEBUG_SUBSYS row";
  std::string logging = readFile(std::string(TUTTI_SOURCE_DIR) + "/docs/logging.md");
  for (const std::string& s : subsystems)
    EXPECT_NE(logging.find("| `" + s + "` |"), std::string::npos)
        << "docs/logging.md does not say what " << s << " prints";
}

// An unwritable TUTTI_DEBUG_FILE is said on stderr (the log goes there instead), not ignored.
TEST(LogFile, UnwritableDebugFileIsReported) {
  int rc = 0;
  std::string out = run(std::string(TUTTIRUN_PATH) +
                            " -np 2 --timeout 120 -x TUTTI_DEBUG=WARN"
                            " -x TUTTI_DEBUG_FILE=/nonexistent-dir/tutti-%p.log " +
                            LOG_SUBSYS_JOB_PATH,
                        &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("TUTTI_DEBUG_FILE=/nonexistent-dir/tutti-%p.log: cannot open "
                     "/nonexistent-dir/tutti-"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("No such file or directory); logging to stderr"), std::string::npos) << out;
}

// TUTTI_TOPO_DUMP_FILE: %p gives one file per process; a shared path holds one complete
// topology however many ranks of the host write it.
TEST(TopoDump, PerProcessPlaceholderAndSharedPath) {
  tutti::test::TempDir dir("tutti-topo-dump");
  int rc = 0;
  const std::string topo = std::string(" -x TUTTI_TOPO_FILE=") + TUTTI_SOURCE_DIR +
                           "/tests/data/topologies/hwloc2_pascal_2xP100-pcie_cx5.xml ";
  std::string out =
      run(std::string(TUTTIRUN_PATH) + " -np 2 --timeout 120" + topo +
              "-x TUTTI_TOPO_DUMP_FILE=" + dir.file("topo-%p.json") + " " + LOG_SUBSYS_JOB_PATH,
          &rc);
  ASSERT_EQ(rc, 0) << out;
  std::string listing = run("ls " + dir.path(), &rc);
  int files = 0;
  std::istringstream names(listing);
  for (std::string name; std::getline(names, name);) {
    ++files;
    EXPECT_EQ(name.rfind("topo-", 0), 0u) << name;
    EXPECT_NE(readFile(dir.path() + "/" + name).find("\"packages\""), std::string::npos) << name;
  }
  EXPECT_EQ(files, 2) << listing;
  out = run(std::string(TUTTIRUN_PATH) + " -np 2 --timeout 120" + topo +
                "-x TUTTI_TOPO_DUMP_FILE=" + dir.file("shared.json") + " " + LOG_SUBSYS_JOB_PATH,
            &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string shared = readFile(dir.file("shared.json"));
  EXPECT_EQ(shared, readFile(dir.path() + "/" + listing.substr(0, listing.find('\n'))));
}

class LogSubsys : public testing::TestWithParam<std::string> {};

TEST_P(LogSubsys, JobLogsThisSubsystemOnly) {
  const std::string subsys = GetParam();
  tutti::test::TempDir dir("tutti-log-subsys");
  const std::string file = dir.file("log.txt");
  // TUTTI_TOPO_FILE: the topology is loaded from a file (TOPO logs it) instead of probed.
  int rc = 0;
  std::string out =
      run(std::string(TUTTIRUN_PATH) +
              " -np 2 --timeout 120 -x TUTTI_DEBUG=TRACE -x TUTTI_DEBUG_SUBSYS=" + subsys +
              " -x TUTTI_DEBUG_FILE=" + file + " -x TUTTI_TOPO_FILE=" + TUTTI_SOURCE_DIR +
              "/tests/data/topologies/hwloc2_pascal_2xP100-pcie_cx5.xml " + LOG_SUBSYS_JOB_PATH,
          &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string log = readFile(file);
  // Lines: "host:pid:rank tutti LEVEL SUBSYS message".
  std::istringstream lines(log);
  int mine = 0;
  std::map<std::string, int> others;
  std::set<int> ranks;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string where, tag, level, name;
    words >> where >> tag >> level >> name;
    ASSERT_EQ(tag, "tutti") << "not a log line: " << line;
    // The one line shown whatever the mask: a warning about the logging settings themselves
    // (docs/logging.md). These settings are valid, so there is none here.
    if (name == subsys) {
      ++mine;
      ranks.insert(std::stoi(where.substr(where.rfind(':') + 1)));
    } else {
      ++others[name];
      ADD_FAILURE() << "TUTTI_DEBUG_SUBSYS=" << subsys << " logged a line of " << name << ": "
                    << line;
    }
  }
  EXPECT_GT(mine, 0) << "TUTTI_DEBUG_SUBSYS=" << subsys << " logged nothing in a 2-rank job; log:\n"
                     << log << "\njob output:\n"
                     << out;
  EXPECT_TRUE(others.empty());
  // Printed for the whole log, so a failure shows what the subsystem says.
  RecordProperty("lines", mine);
  if (HasFailure()) std::cerr << log;
}

INSTANTIATE_TEST_SUITE_P(Documented, LogSubsys, testing::ValuesIn(documentedSubsystems()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
