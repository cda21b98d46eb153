// The host's kept probe (TUTTI_TOPO_CACHE): the first probe writes hwloc's XML with its
// stamp, the next imports it and converts to the same topology; a file that does not load or
// carries another stamp is probed again and rewritten; 0 keeps nothing.
#include "topology/probe_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "harness/temp_dir.h"
#include "topology/json.h"
#include "topology/load.h"
#include "tutti/config.h"

namespace tutti::test {
namespace {

class EnvGuard {
 public:
  EnvGuard(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (old) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~EnvGuard() { had_ ? (void)setenv(name_, old_.c_str(), 1) : (void)unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::string readAll(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// The topology as JSON without its origin (which says where it came from).
std::string shape(topo::Topology t) {
  t.origin.clear();
  return topo::topologyJson(t);
}

TEST(ProbeCache, FirstProbeKeepsItAndTheNextImportsTheSameTopology) {
  if (!TUTTI_HAVE_HWLOC) GTEST_SKIP() << "built without hwloc: no live probe to keep";
  TempDir dir("tutti-topo-cache");
  EnvGuard cache("TUTTI_TOPO_CACHE", dir.path() + "/sub");
  const std::string file = topo::probeCacheFile();
  ASSERT_EQ(file.rfind(dir.path() + "/sub/topology-", 0), 0u) << file;
  topo::Topology live = topo::probeTopology();
  EXPECT_EQ(live.origin, "hwloc live discovery");
  std::string xml = readAll(file);
  ASSERT_FALSE(xml.empty()) << "no cache written at " << file;
  EXPECT_NE(xml.find(topo::probeStamp()), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  topo::Topology kept = topo::probeTopology();
  EXPECT_EQ(kept.origin, "hwloc live discovery (kept in " + file + ")");
  EXPECT_EQ(shape(kept), shape(live));
  EXPECT_GE(kept.numaNodes.size(), 1u);
}

TEST(ProbeCache, CorruptOrStaleFilesAreProbedAgainAndRewritten) {
  if (!TUTTI_HAVE_HWLOC) GTEST_SKIP() << "built without hwloc: no live probe to keep";
  TempDir dir("tutti-topo-cache");
  EnvGuard cache("TUTTI_TOPO_CACHE", dir.path());
  const std::string file = topo::probeCacheFile();
  topo::Topology live = topo::probeTopology();
  const std::string good = readAll(file);

  ASSERT_TRUE(topo::writeFileAtomically(file, good.substr(0, good.size() / 2)));  // truncated
  EXPECT_EQ(topo::probeTopology().origin, "hwloc live discovery");
  EXPECT_NE(readAll(file).find(topo::probeStamp()), std::string::npos);
  EXPECT_NE(topo::probeTopology().origin, "hwloc live discovery");  // kept again

  std::string stale = good;
  const std::string stamp = topo::probeStamp();
  size_t at = stale.find(stamp);
  ASSERT_NE(at, std::string::npos);
  stale.replace(at, stamp.size(), "tutti-probe 1 boot another-boot");
  ASSERT_TRUE(topo::writeFileAtomically(file, stale));
  EXPECT_EQ(topo::probeTopology().origin, "hwloc live discovery");
  EXPECT_NE(readAll(file).find(stamp), std::string::npos);
}

TEST(ProbeCache, ZeroKeepsNothing) {
  EnvGuard cache("TUTTI_TOPO_CACHE", "0");
  EXPECT_EQ(topo::probeCacheFile(), "");
}

}  // namespace
}  // namespace tutti::test
