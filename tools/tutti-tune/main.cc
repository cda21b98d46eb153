// tutti-tune: fits the cost model's alpha and beta for shm and tcp from all_reduce_perf
// measurements (CSV written by --csv) by least squares on the same timing that the tuner and
// tutti-sim use, measures gamma (the local reduction) directly, and writes a tuning file for
// TUTTI_TUNING_FILE. docs/tuning.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "comm/rank_place.h"
#include "common/error.h"
#include "interfaces/algorithm.h"
#include "reduce/reduce.h"
#include "tuning/calibration.h"
#include "tuning/cost_model.h"
#include "tuning/timed_sim.h"
#include "tuning/tuning_cache.h"

namespace algo = tutti::algo;
namespace tuning = tutti::tuning;

namespace {

void usage(std::ostream& os) {
  os << "usage: tutti-tune [--shm CSV,..] [--tcp CSV,..] [--run-shm N,..] [options] -o FILE\n"
        "  --shm CSV,..      all_reduce_perf --csv files measured on one host (shm)\n"
        "  --tcp CSV,..      files measured with one rank per host (tcp), e.g. under\n"
        "                    tuttirun --hosts h0,h1\n"
        "  --run-shm N,..    measure shm here first: tuttirun -np N all_reduce_perf -A ring\n"
        "  --tuttirun PATH   default: ../tuttirun/tuttirun next to this binary\n"
        "  --perf PATH       all_reduce_perf (default: ../../perf_tests/all_reduce_perf)\n"
        "  --cores C         cores shared by the ranks of a host (default: this machine's)\n"
        "  --gamma-gbps X    local reduction speed (default: measured here)\n"
        "  --min-bytes B     ignore smaller messages (default 0)\n"
        "  -o FILE           tuning file to write (default: print only)\n"
        "  --cache           also write the fitted links into this host's tuning cache\n"
        "                    (docs/tuning.md, Self-tuning): later jobs plan with them\n";
}

// One CSV line; fields may be double-quoted ("shm,tcp").
std::vector<std::string> csvFields(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      f.emplace_back();
    } else {
      f.back() += c;
    }
  }
  return f;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string c; std::getline(ss, c, sep);)
    if (!c.empty()) out.push_back(c);
  return out;
}

struct Point {
  std::string file;
  int nranks = 0;
  size_t size = 0;
  std::string algo;
  double seconds = 0;  // median over the file's rows
};

// Median time per (nranks, size, algorithm) of an all_reduce_perf --csv file.
std::vector<Point> readCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) tutti::fail(tuttiInvalidArgument, "tutti-tune: cannot open ", path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> head = split(line, ',');
  auto col = [&](const char* name) {
    auto it = std::find(head.begin(), head.end(), name);
    if (it == head.end())
      tutti::fail(tuttiInvalidArgument, "tutti-tune: ", path, " has no column '", name,
                  "' (not an all_reduce_perf --csv file?)");
    return static_cast<size_t>(it - head.begin());
  };
  size_t cColl = col("collective"), cN = col("nranks"), cSize = col("size"),
         cAlgo = col("algo_used"), cTime = col("time_us");
  std::map<std::tuple<int, size_t, std::string>, std::vector<double>> times;
  while (std::getline(in, line)) {
    std::vector<std::string> f = csvFields(line);
    if (f.size() <= cTime || f[cTime].empty()) continue;
    if (f[cColl] != "all_reduce_perf")
      tutti::fail(tuttiInvalidArgument, "tutti-tune: ", path, ": only all_reduce_perf rows");
    times[{std::stoi(f[cN]), std::stoul(f[cSize]), f[cAlgo]}].push_back(std::stod(f[cTime]));
  }
  std::vector<Point> pts;
  for (auto& [key, v] : times) {
    std::sort(v.begin(), v.end());
    double med = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    pts.push_back({path, std::get<0>(key), std::get<1>(key), std::get<2>(key), med * 1e-6});
  }
  return pts;
}

// Seconds that one unit of a model parameter contributes to the point's predicted time.
using Features = tuning::PointFeatures;

Features featuresOf(const Point& p, bool tcp, int cores) {
  const algo::AlgorithmInfo* info = algo::find(algo::Coll::kAllReduce, p.algo);
  if (!info) tutti::fail(tuttiInvalidArgument, "tutti-tune: unknown algorithm ", p.algo);
  algo::CollArgs a;
  a.nranks = p.nranks;
  a.count = p.size / 4;
  if (tcp)
    for (int r = 0; r < p.nranks; ++r) {
      a.hostOf.push_back(r);
      a.ringOrder.push_back(r);
    }
  return tuning::featuresOf(*info, a, tcp ? tuning::FitLink::kTcp : tuning::FitLink::kShm, cores);
}

std::pair<double, double> fit(const std::vector<Point>& pts, const std::vector<Features>& f,
                              double gamma) {
  std::vector<double> seconds;
  for (const Point& p : pts) seconds.push_back(p.seconds);
  return tuning::fitAlphaBeta(seconds, f, gamma);
}

// 16 MiB of floats, beyond the caches.
double measureGamma() { return tuning::measureGammaPerByte(size_t{16} << 20, 7); }

std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> shm, tcp, runShm;
  bool intoCache = false;
  std::string out, tuttirun = selfDir() + "/../tuttirun/tuttirun",
                   perf = selfDir() + "/../../perf_tests/all_reduce_perf";
  int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  double gammaGbps = 0;
  size_t minBytes = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string f = argv[i];
      auto need = [&]() -> std::string {
        if (i + 1 >= argc) tutti::fail(tuttiInvalidArgument, f, " needs a value");
        return argv[++i];
      };
      if (f == "-h" || f == "--help") {
        usage(std::cout);
        return 0;
      } else if (f == "--shm") {
        for (auto& s : split(need(), ',')) shm.push_back(s);
      } else if (f == "--tcp") {
        for (auto& s : split(need(), ',')) tcp.push_back(s);
      } else if (f == "--run-shm") {
        runShm = split(need(), ',');
      } else if (f == "--tuttirun") {
        tuttirun = need();
      } else if (f == "--perf") {
        perf = need();
      } else if (f == "--cores") {
        cores = std::stoi(need());
      } else if (f == "--gamma-gbps") {
        gammaGbps = std::stod(need());
      } else if (f == "--min-bytes") {
        minBytes = std::stoul(need());
      } else if (f == "-o") {
        out = need();
      } else if (f == "--cache") {
        intoCache = true;
      } else {
        std::cerr << "tutti-tune: unknown option '" << f << "'\n";
        usage(std::cerr);
        return 2;
      }
    }
    for (const std::string& np : runShm) {
      std::string csv = "/tmp/tutti-tune-shm-" + std::to_string(getpid()) + "-" + np + ".csv";
      for (const char* sizes : {"-b 8 -e 1K -f 4 -n 100 -w 10", "-b 1M -e 64M -f 4 -n 10 -w 2"}) {
        std::string part = csv + (sizes[3] == '8' ? ".small" : ".large");
        std::string cmd = tuttirun + " -np " + np + " " + perf + " " + sizes +
                          " -c 0 -A ring --csv " + part + " > /dev/null";
        std::cerr << "tutti-tune: " << cmd << "\n";
        if (std::system(cmd.c_str()) != 0)
          tutti::fail(tuttiSystemError, "tutti-tune: measurement failed: ", cmd);
        shm.push_back(part);
      }
    }
    if (shm.empty() && tcp.empty()) {
      usage(std::cerr);
      return 2;
    }
    tuning::CostModel m = tuning::CostModel::builtin();
    m.coresPerHost = cores;
    m.gammaPerByte = gammaGbps > 0 ? 1.0 / (gammaGbps * 1e9) : measureGamma();
    std::ostringstream report;
    report << "tutti-tune: gamma " << 1e-9 / m.gammaPerByte << " GB/s ("
           << (gammaGbps > 0 ? "given" : "measured") << "), cores " << cores << "\n";
    for (int kind = 0; kind < 2; ++kind) {
      const auto& files = kind == 0 ? shm : tcp;
      if (files.empty()) continue;
      std::vector<Point> pts;
      for (const auto& f : files)
        for (const Point& p : readCsv(f))
          if (p.size >= minBytes) pts.push_back(p);
      std::vector<Features> feats;
      for (const Point& p : pts) feats.push_back(featuresOf(p, kind == 1, cores));
      auto [alpha, beta] = fit(pts, feats, m.gammaPerByte);
      (kind == 0 ? m.intraHost : m.interHost) = {alpha, beta};
      const char* name = kind == 0 ? "shm" : "tcp";
      report << name << ": alpha " << alpha * 1e6 << " us, " << 1e-9 / beta << " GB/s from "
             << pts.size() << " points\n";
      report << "  nranks      size(B)  algo   measured(us)  fitted(us)  error\n";
      for (size_t i = 0; i < pts.size(); ++i) {
        double pred =
            alpha * feats[i].alpha + beta * feats[i].beta + m.gammaPerByte * feats[i].gamma;
        char line[160];
        std::snprintf(line, sizeof line, "  %6d %12zu  %-6s %12.1f %11.1f  %+5.0f%%\n",
                      pts[i].nranks, pts[i].size, pts[i].algo.c_str(), pts[i].seconds * 1e6,
                      pred * 1e6, 100 * (pred / pts[i].seconds - 1));
        report << line;
      }
    }
    std::cout << report.str();
    if (intoCache) {
      std::string dir = tuning::tuningCacheDir();
      if (dir.empty())
        tutti::fail(tuttiInvalidArgument, "tutti-tune --cache: the tuning cache is off");
      tuning::TuningCache cache(dir, tutti::hardwareIdentity(tutti::describeLocalPlace()));
      cache.update([&](tuning::TuningRecord& r) {
        if (!shm.empty() || !runShm.empty()) tuning::setCalibrated(r, "shm", m);
        if (!tcp.empty()) tuning::setCalibrated(r, "tcp", m);
      });
      std::cout << "tutti-tune: wrote the fitted links into " << cache.path() << "\n";
    }
    if (!out.empty()) {
      tuning::writeTuningFile(
          m, out, "written by tutti-tune (load with TUTTI_TUNING_FILE)\n" + report.str());
      std::cout << "tutti-tune: wrote " << out << "\n";
    } else {
      std::cout << tuning::tuningFileText(m);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
