// tutti-sim as a user runs it: CSV rows for every algorithm and size, a topology file with a
// synthetic 16384-GPU cluster in seconds, and clear errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Sanitizer builds run several times slower: scale the time limits.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kSlow = 5.0;
#else
constexpr double kSlow = 1.0;
#endif

std::string runSim(const std::string& args, int* rc) {
  std::string out;
  FILE* p = popen((std::string(TUTTI_SIM_BIN) + " " + args + " 2>&1").c_str(), "r");
  if (!p) {
    *rc = -1;
    return "";
  }
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int st = pclose(p);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

// algo -> size -> busbw from --csv output.
std::map<std::string, std::map<long, double>> parseCsv(const std::string& out) {
  std::map<std::string, std::map<long, double>> res;
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) f.push_back(c);
    if (f.size() != 9) continue;
    res[f[4]][std::stol(f[3])] = std::stod(f[7]);
  }
  return res;
}

TEST(TuttiSimTool, CsvForEveryAlgorithmAndSize) {
  int rc = 0;
  std::string out = runSim("-n 8 --hosts 2 --net-gbps 1 -b 1M -e 64M -f 4 --csv", &rc);
  ASSERT_EQ(rc, 0) << out;
  auto res = parseCsv(out);
  for (const char* a : {"ring", "tree", "dbtree", "butterfly", "rabenseifner", "hier"}) {
    ASSERT_EQ(res[a].size(), 4u) << a << "\n" << out;
    for (auto& [size, busbw] : res[a]) EXPECT_GT(busbw, 0) << a << " " << size;
  }
  // Two hosts with one 1 Gbit/s NIC each: hierarchical beats the flat ring at 64 MiB.
  EXPECT_GT(res["hier"][64l << 20], res["ring"][64l << 20]) << out;
  // Busbw never exceeds the link: 1 Gbit/s = 0.125 GB/s per direction (ring crosses twice).
  EXPECT_LT(res["ring"][64l << 20], 0.125 * 2) << out;
}

// Ranks interleaved across 2 hosts (rank r on host r % 2, as tuttirun --hosts h0:1,h1:1,...):
// recursive doubling's exchanges at distance 2 and 4 stay inside a host, so only its first
// step (one block per rank) crosses the link and it predicts about the hierarchy's time; in
// blocks (ranks 0-3 on host 0) its last step (four blocks per rank) crosses: four times the
// bytes. hier is the same either way.
TEST(TuttiSimTool, InterleavedPlacement) {
  int rc = 0;
  const std::string base = "--coll allgather -n 8 --hosts 2 --net-gbps 1 -b 16M -e 16M --csv";
  std::string out = runSim(base, &rc);
  ASSERT_EQ(rc, 0) << out;
  auto blocked = parseCsv(out);
  out = runSim(base + " --interleave", &rc);
  ASSERT_EQ(rc, 0) << out;
  auto inter = parseCsv(out);
  const long s = 16l << 20;
  EXPECT_GT(inter["rd"][s], 1.5 * blocked["rd"][s]) << out;
  EXPECT_NEAR(inter["rd"][s], inter["hier"][s], 0.05 * inter["hier"][s]) << out;
  EXPECT_NEAR(inter["hier"][s], blocked["hier"][s], 0.05 * blocked["hier"][s]) << out;
}

TEST(TuttiSimTool, DgxLike16384GpusInSeconds) {
  int rc = 0;
  auto start = std::chrono::steady_clock::now();
  std::string out = runSim(std::string("--topo ") + TUTTI_TOPO_DATA_DIR +
                               "/nccl_oci-bm-gpu-h100_8xH100_8xcx7-dualport.xml -n 16384"
                               " --net-gbps 400 --algos ring,tree,butterfly,hier"
                               " -b 256M -e 256M",
                           &rc);
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_LT(sec, 10.0 * kSlow) << out;
  EXPECT_NE(out.find("16384 ranks on 2048 host(s) x 8"), std::string::npos) << out;
  EXPECT_NE(out.find("NV18"), std::string::npos) << out;
  EXPECT_NE(out.find("symmetric mode"), std::string::npos) << out;
  EXPECT_NE(out.find("  hier\n"), std::string::npos) << "hier should win at 256 MiB\n" << out;
  std::printf("%s(%.2f s)\n", out.c_str(), sec);
}

TEST(TuttiSimTool, ErrorsAreClear) {
  int rc = 0;
  std::string out = runSim("--topo /nonexistent.xml", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("/nonexistent.xml"), std::string::npos) << out;
  out = runSim("--coll nosuch", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("unknown collective"), std::string::npos) << out;
  out = runSim("-n 4 --algos nosuch", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("no allreduce algorithm"), std::string::npos) << out;
}

}  // namespace
