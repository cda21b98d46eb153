// CommOptions: the struct's defaults are the environment's (a communicator made from a
// hand-built CommOptions behaves as one made from an empty environment), every field is read
// from its variable, and checkCommOptions names the setting that is out of range.
#include "comm/comm_options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "common/error.h"

namespace tutti {
namespace {

const char* const kVars[] = {"TUTTI_TIMEOUT",    "TUTTI_DETERMINISTIC",    "TUTTI_ALGO",
                             "TUTTI_TRANSPORT",  "TUTTI_CHECK_CALLS",      "TUTTI_TRACE_CALLS",
                             "TUTTI_TRACE_FILE", "TUTTI_SHM_WINDOW_BYTES", "TUTTI_CHUNK_BYTES",
                             "TUTTI_SPIN_US",    "TUTTI_SPIN_YIELD",       "TUTTI_TOPO_REORDER",
                             "TUTTI_BIND"};

TEST(CommOptions, DefaultsAreTheEnvironmentsDefaults) {
  for (const char* v : kVars) unsetenv(v);
  CommOptions d, e = commOptionsFromEnv();
  EXPECT_EQ(d.timeoutSec, e.timeoutSec);
  EXPECT_EQ(d.deterministic, e.deterministic);
  EXPECT_EQ(d.algo, e.algo);
  EXPECT_EQ(d.transport, e.transport);
  EXPECT_EQ(d.checkCalls, e.checkCalls);
  EXPECT_EQ(d.traceCalls, e.traceCalls);
  EXPECT_EQ(d.traceFile, e.traceFile);
  EXPECT_EQ(d.shmWindowBytes, e.shmWindowBytes);
  EXPECT_EQ(d.chunkBytes, e.chunkBytes);
  EXPECT_EQ(d.spinUs, e.spinUs);
  EXPECT_EQ(d.spinYield, e.spinYield);
  EXPECT_EQ(d.topoReorder, e.topoReorder);
  EXPECT_EQ(d.bind, e.bind);
  EXPECT_NO_THROW(checkCommOptions(d));
}

TEST(CommOptions, EveryFieldFromItsVariable) {
  const std::pair<const char*, const char*> set[] = {{"TUTTI_TIMEOUT", "7.5"},
                                                     {"TUTTI_DETERMINISTIC", "1"},
                                                     {"TUTTI_ALGO", "allreduce:ring"},
                                                     {"TUTTI_TRANSPORT", "tcp"},
                                                     {"TUTTI_CHECK_CALLS", "1"},
                                                     {"TUTTI_TRACE_CALLS", "9"},
                                                     {"TUTTI_TRACE_FILE", "/tmp/t.%r"},
                                                     {"TUTTI_SHM_WINDOW_BYTES", "8192"},
                                                     {"TUTTI_CHUNK_BYTES", "16384"},
                                                     {"TUTTI_SPIN_US", "3"},
                                                     {"TUTTI_SPIN_YIELD", "1"},
                                                     {"TUTTI_TOPO_REORDER", "0"},
                                                     {"TUTTI_BIND", "numa"}};
  for (auto [k, v] : set) setenv(k, v, 1);
  CommOptions o = commOptionsFromEnv();
  for (const char* v : kVars) unsetenv(v);
  EXPECT_EQ(o.timeoutSec, 7.5);
  EXPECT_TRUE(o.deterministic);
  EXPECT_EQ(o.algo, "allreduce:ring");
  EXPECT_EQ(o.transport, "tcp");
  EXPECT_TRUE(o.checkCalls);
  EXPECT_EQ(o.traceCalls, 9);
  EXPECT_EQ(o.traceFile, "/tmp/t.%r");
  EXPECT_EQ(o.shmWindowBytes, 8192);
  EXPECT_EQ(o.chunkBytes, 16384);
  EXPECT_EQ(o.spinUs, 3);
  EXPECT_EQ(o.spinYield, "1");
  EXPECT_FALSE(o.topoReorder);
  EXPECT_EQ(o.bind, "numa");
}

TEST(CommOptions, OutOfRangeNamesTheSetting) {
  auto message = [](const CommOptions& o) {
    try {
      checkCommOptions(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CommOptions o;
  o.traceCalls = 65537;
  EXPECT_NE(message(o).find("TUTTI_TRACE_CALLS=65537"), std::string::npos) << message(o);
  o = CommOptions{};
  o.shmWindowBytes = int64_t{1} << 31;
  EXPECT_NE(message(o).find("TUTTI_SHM_WINDOW_BYTES=2147483648 is more than the limit"),
            std::string::npos)
      << message(o);
  o = CommOptions{};
  o.spinYield = "sometimes";
  EXPECT_NE(message(o).find("TUTTI_SPIN_YIELD=sometimes"), std::string::npos) << message(o);
  o = CommOptions{};
  o.bind = "socket";
  EXPECT_NE(message(o).find("TUTTI_BIND=socket"), std::string::npos) << message(o);
}

}  // namespace
}  // namespace tutti
