// The shared perf test program (nccl-tests' common.cu for tutti): flags, communicator from the
// environment, the size sweep, the table / JSON / CSV output and the exit status.
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "driver/bench.h"
#include "driver/collective.h"
#include "driver/memory.h"
#include "driver/options.h"
#include "driver/output.h"
#include "driver/types.h"
#include "tutti/datatype.hpp"

extern char** environ;

namespace tutti_perf {

namespace {

constexpr size_t kRankLine = 256;

struct Run {
  Bench b;
  bool main = false;  // rank 0 prints
  JsonWriter json;
  FILE* csv = nullptr;
  std::vector<std::string> sweep;  // algorithms of -A all / a,b,c (empty: normal table)
  std::string forced;              // -A NAME
  std::string transports;
  double ceiling = 0;  // GB/s, --limit
  double bwSum = 0;
  int bwCount = 0;
  bool otherAlgo = false;  // the library reported another algorithm than requested
};

#define PRINT(...)                     \
  do {                                 \
    if (run.main) printf(__VA_ARGS__); \
  } while (0)

int localRankFromEnv() {
  for (const char* v :
       {"TUTTI_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* s = getenv(v)) return atoi(s);
  }
  return 0;
}

std::string nowString() {
  char buf[64];
  const time_t t = time(nullptr);
  struct tm tmv;
  localtime_r(&t, &tmv);
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tmv);
  return buf;
}

// "#  Rank  r Group  0 Pid ... on host device d [host] model" of every rank, in rank order.
std::vector<std::string> gatherRankLines(Run& run) {
  Bench& b = run.b;
  char host[128] = "?";
  gethostname(host, sizeof(host) - 1);
  std::vector<char> mine(kRankLine, 0);
  const std::string dev = b.mem->deviceDescription();
  const bool cuda = std::string(b.mem->name()) == "cuda";
  snprintf(mine.data(), kRankLine, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s",
           b.rank, 0, static_cast<int>(getpid()), host, b.mem->deviceIndex(),
           cuda ? "cuda" : "host", dev.c_str());
  std::vector<char> all(kRankLine * b.nranks, 0);
  PERF_CHECK(&b, tuttiAllGather(mine.data(), all.data(), kRankLine, tuttiUint8, b.comm, nullptr));
  std::vector<std::string> lines;
  for (int r = 0; r < b.nranks; ++r) {
    lines.emplace_back(all.data() + r * kRankLine, strnlen(all.data() + r * kRankLine, kRankLine));
  }
  return lines;
}

void writeJsonPreamble(Run& run, int argc, char** argv) {
  JsonWriter& j = run.json;
  j.beginObject();
  j.key("version");
  j.integer(2);
  j.key("start_time");
  j.str(nowString());
  j.key("args");
  j.beginList();
  for (int i = 0; i < argc; ++i) j.str(argv[i]);
  j.endList();
  j.key("env");  // tutti's own variables only, never the rendezvous secret
  j.beginList();
  for (char** e = environ; e && *e; ++e) {
    if (strncmp(*e, "TUTTI_", 6) == 0 && strncmp(*e, "TUTTI_SECRET=", 13) != 0) j.str(*e);
  }
  j.endList();
  int version = 0;
  tuttiGetVersion(&version);
  j.key("tutti_version");
  j.integer(version);
}

void writeJsonConfig(Run& run, const std::vector<std::string>& rankLines) {
  const Options& o = run.b.opt;
  JsonWriter& j = run.json;
  j.key("config");
  j.beginObject();
  j.key("nthreads");
  j.integer(o.nThreads);
  j.key("ngpus");
  j.integer(o.nGpus);
  j.key("nranks");
  j.integer(run.b.nranks);
  j.key("minimum_bytes");
  j.integer(static_cast<int64_t>(o.minBytes));
  j.key("maximum_bytes");
  j.integer(static_cast<int64_t>(o.maxBytes));
  if (o.stepFactor > 1) {
    j.key("step_factor");
    j.integer(static_cast<int64_t>(o.stepFactor));
  } else {
    j.key("step_bytes");
    j.integer(static_cast<int64_t>(o.stepBytes));
  }
  j.key("warmup_iters");
  j.integer(o.warmupIters);
  j.key("iterations");
  j.integer(o.iters);
  j.key("aggregated_iterations");
  j.integer(o.aggIters);
  j.key("validation");
  j.integer(o.check);
  j.key("graph");
  j.integer(0);
  j.key("blocking_collectives");
  j.boolean(o.blocking != 0);
  j.key("memory");
  j.str(o.memory);
  j.key("algorithm");
  j.str(run.sweep.empty() ? (run.forced.empty() ? "auto" : run.forced) : "sweep");
  j.key("transports");
  j.str(run.transports);
  if (run.ceiling > 0) {
    j.key("ceiling_gbps");
    j.num(run.ceiling);
  }
  j.key("devices");
  j.beginList();
  for (const auto& line : rankLines) j.str(line);
  j.endList();
  j.endObject();
}

void printHeader(Run& run, const std::vector<std::string>& rankLines) {
  const Options& o = run.b.opt;
  int version = 0;
  tuttiGetVersion(&version);
  PRINT("# tutti perf tests version %d.%d.%d tutti-headers=%d tutti-library=%d\n", TUTTI_MAJOR,
        TUTTI_MINOR, TUTTI_PATCH, TUTTI_VERSION_CODE, version);
  PRINT("# Collective test starting: %s\n", run.b.coll->program);
  PRINT(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, o.stepFactor > 1 ? o.stepFactor : o.stepBytes,
      o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, 0,
      o.unalign);
  if (o.blocking) {
    PRINT("# Blocking Enabled: wait for completion and barrier after each collective \n");
  }
  PRINT("#\n");
  PRINT("# Using devices\n");
  for (const auto& line : rankLines) PRINT("%s\n", line.c_str());
  const char* env = getenv("TUTTI_ALGO");
  PRINT("# tutti: nranks %d memory %s transports %s algorithm %s\n", run.b.nranks, o.memory.c_str(),
        run.transports.empty() ? "-" : run.transports.c_str(),
        !run.sweep.empty()    ? "sweep (-A)"
        : !run.forced.empty() ? run.forced.c_str()
        : env                 ? env
                              : "automatic");
  if (o.limit) {
    if (run.ceiling > 0) {
      PRINT(
          "# Ceiling: %.2f GB/s (%s); %%ceil = busbw / ceiling\n", run.ceiling,
          o.linkGbps > 0 ? "--link-gbps / 8" : "single-thread memcpy, 256 MiB, best of 5, rank 0");
    } else {
      PRINT("# Ceiling: unknown for a job across hosts: give --link-gbps <Gbit/s>\n");
    }
  }
}

void printTableHeader(Run& run) {
  const Options& o = run.b.opt;
  const char* timeStr = o.reportCputime ? "cputime" : "time";
  PRINT("#\n");
  if (run.sweep.empty()) {
    std::string extra1, extra2, extra3;
    if (o.limit && run.ceiling > 0) {
      extra2 += "  %ceil  %ceil";
      extra3 += "   (oop)   (ip)";
    }
    if (o.showAlgo) {
      extra2 += "  algo          transports";
    }
    PRINT(
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place         "
        " \n",
        "", "", "", "", "");
    PRINT("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "size",
          "count", "type", "redop", "root", timeStr, "algbw", "busbw", "#wrong", timeStr, "algbw",
          "busbw", "#wrong", extra2.c_str());
    PRINT("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
          extra3.c_str());
    return;
  }
  std::string names, units;
  for (const auto& a : run.sweep) {
    const int w = std::max<int>(7, static_cast<int>(a.size()));
    char buf[128];
    snprintf(buf, sizeof(buf), "  %*s", w, a.c_str());
    names += buf;
    snprintf(buf, sizeof(buf), "  %*s", w, "(GB/s)");
    units += buf;
  }
  PRINT("# %10s  %12s  %8s  %6s  %6s  out-of-place busbw by algorithm (%s:<algo>)\n", "", "", "",
        "", "", run.b.coll->algoKey);
  PRINT("# %10s  %12s  %8s  %6s  %6s%s  %7s  %-12s  %6s\n", "size", "count", "type", "redop",
        "root", names.c_str(), "auto", "auto-algo", "#wrong");
  PRINT("# %10s  %12s  %8s  %6s  %6s%s  %7s  %-12s  %6s\n", "(B)", "(elements)", "", "", "",
        units.c_str(), "(GB/s)", "", "");
}

void jsonMeasurement(Run& run, const char* key, const Measurement& m, const std::string& algo) {
  JsonWriter& j = run.json;
  if (!j.active()) return;
  j.key(key);
  if (!m.ran) {
    j.null();
    return;
  }
  j.beginObject();
  j.key(run.b.opt.reportCputime ? "cpu_time" : "time");
  j.num(m.timeUs);
  j.key("alg_bw");
  j.num(m.algBw);
  j.key("bus_bw");
  j.num(m.busBw);
  j.key("nwrong");
  if (m.checked) {
    j.num(static_cast<double>(m.wrong));
  } else {
    j.null();
  }
  j.key("algorithm_requested");
  j.str(algo.empty() ? "auto" : algo);
  j.key("algorithm");
  j.str(m.algoUsed);
  j.endObject();
}

void csvRow(Run& run, const Layout& l, tuttiDataType_t type, const char* opStr, int root,
            const char* placement, const std::string& algo, const Measurement& m) {
  if (!run.csv) return;
  const size_t ws = typeSize(type);
  fprintf(run.csv, "%s,%d,%zu,%zu,%s,%s,%d,%s,%s,%s,%s,", run.b.coll->program, run.b.nranks,
          std::max(l.sendCount, l.recvCount) * ws, l.paramCount, tutti::dataTypeName(type), opStr,
          root, placement, csvEscape(algo.empty() ? "auto" : algo).c_str(),
          csvEscape(m.algoUsed).c_str(), csvEscape(run.transports).c_str());
  if (m.ran) {
    fprintf(run.csv, "%.3f,%.6f,%.6f,", m.timeUs, m.algBw, m.busBw);
    if (m.checked) {
      fprintf(run.csv, "%lld\n", static_cast<long long>(m.wrong));
    } else {
      fprintf(run.csv, "\n");
    }
  } else {
    fprintf(run.csv, ",,,\n");
  }
  fflush(run.csv);
}

std::string resultColumns(const Measurement& m) {
  char buf[128];
  if (!m.ran) {
    snprintf(buf, sizeof(buf), "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
    return buf;
  }
  const std::string t = formatFloat(m.timeUs, 7);
  const std::string a = formatFloat(m.algBw, 6);
  const std::string s = formatFloat(m.busBw, 6);
  if (m.checked) {
    snprintf(buf, sizeof(buf), "  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), s.c_str(),
             static_cast<double>(m.wrong));
  } else {
    snprintf(buf, sizeof(buf), "  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), s.c_str());
  }
  return buf;
}

// The -A sweep's measurements of one size: each forced algorithm in run.sweep's order, then the
// automatic choice last. With --alternate, odd cycles run them in reverse (auto first), so that no
// column always follows the same one; the result keeps the printed order.
std::vector<Measurement> measureSweep(Run& run, const Layout& l, tuttiDataType_t type,
                                      tuttiRedOp_t op, int root, int cycle) {
  const size_t n = run.sweep.size();
  std::vector<Measurement> ms(n + 1);
  const bool reverse = run.b.opt.alternate && cycle % 2 == 1;
  // Column i: run.sweep[i], or the automatic choice (i == n).
  auto measure = [&](size_t i) {
    return i < n ? benchTime(run.b, l, type, op, root, false, run.sweep[i], true)
                 : benchTime(run.b, l, type, op, root, false, "", false);
  };
  // A lead-in, not reported: the sweep's first column, measured one extra time. The first column
  // after a row measured slower than the same algorithm's later columns (docs/perf-tests.md).
  measure(reverse ? n : 0);
  for (size_t k = 0; k <= n; ++k) {
    const size_t i = reverse ? n - k : k;
    ms[i] = measure(i);
  }
  return ms;
}

// One line of the table: nccl-tests' size count type redop root + out-of-place + in-place.
// cycle: the -N cycle it belongs to (0 first).
void testSize(Run& run, const Layout& l, tuttiDataType_t type, tuttiRedOp_t op, const char* opStr,
              int root, int cycle) {
  Bench& b = run.b;
  const size_t ws = typeSize(type);
  const int printedRoot = b.coll->hasRoot ? root : -1;
  PRINT("%12zu  %12zu  %8s  %6s  %6i", std::max(l.sendCount, l.recvCount) * ws, l.paramCount,
        tutti::dataTypeName(type), opStr, printedRoot);
  if (run.json.active()) {
    run.json.beginObject();
    run.json.key("size");
    run.json.integer(static_cast<int64_t>(std::max(l.sendCount, l.recvCount) * ws));
    run.json.key("count");
    run.json.integer(static_cast<int64_t>(l.paramCount));
    run.json.key("type");
    run.json.str(tutti::dataTypeName(type));
    run.json.key("redop");
    run.json.str(opStr);
    run.json.key("root");
    run.json.integer(printedRoot);
  }

  if (run.sweep.empty()) {
    Measurement res[2];
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      // In-place alltoall / sendrecv are not checked (as nccl-tests); tolerate a library that
      // rejects aliased buffers for them.
      const bool mayFail = inPlace && !b.coll->inPlaceChecked;
      res[inPlace] = benchTime(b, l, type, op, root, inPlace, run.forced, mayFail);
      const Measurement& m = res[inPlace];
      PRINT("%s", resultColumns(m).c_str());
      if (m.ran) {
        run.bwSum += m.busBw;
        run.bwCount++;
      }
      jsonMeasurement(run, inPlace ? "in_place" : "out_of_place", m, run.forced);
      csvRow(run, l, type, opStr, printedRoot, inPlace ? "in-place" : "out-of-place", run.forced,
             m);
    }
    if (b.opt.limit && run.ceiling > 0) {
      PRINT("  %5.1f  %5.1f", res[0].busBw / run.ceiling * 100, res[1].busBw / run.ceiling * 100);
    }
    if (b.opt.showAlgo) {
      PRINT("  %-12s  %s", res[0].algoUsed.empty() ? "-" : res[0].algoUsed.c_str(),
            run.transports.c_str());
    }
  } else {
    int64_t wrong = 0;
    bool anyChecked = false;
    if (run.json.active()) {
      run.json.key("algorithms");
      run.json.beginObject();
    }
    const std::vector<Measurement> ms = measureSweep(run, l, type, op, root, cycle);
    for (size_t i = 0; i < run.sweep.size(); ++i) {
      const std::string& a = run.sweep[i];
      const Measurement& m = ms[i];
      const int w = std::max<int>(7, static_cast<int>(a.size()));
      if (m.ran) {
        const bool other = !m.algoUsed.empty() && m.algoUsed != a;
        run.otherAlgo |= other;
        PRINT("  %*s%s", w, formatFloat(m.busBw, w).c_str(), other ? "*" : "");
        wrong += m.wrong;
        anyChecked |= m.checked;
      } else {
        PRINT("  %*s", w, "n/a");
      }
      jsonMeasurement(run, a.c_str(), m, a);
      csvRow(run, l, type, opStr, printedRoot, "out-of-place", a, m);
    }
    if (run.json.active()) run.json.endObject();
    const Measurement& autoM = ms.back();
    wrong += autoM.wrong;
    anyChecked |= autoM.checked;
    run.bwSum += autoM.busBw;
    run.bwCount++;
    PRINT("  %7s  %-12s", formatFloat(autoM.busBw, 7).c_str(),
          autoM.algoUsed.empty() ? "-" : autoM.algoUsed.c_str());
    if (anyChecked) {
      PRINT("  %6g", static_cast<double>(wrong));
    } else {
      PRINT("     N/A");
    }
    jsonMeasurement(run, "auto", autoM, "");
    csvRow(run, l, type, opStr, printedRoot, "out-of-place", "", autoM);
  }
  PRINT("\n");
  if (run.json.active()) run.json.endObject();
}

// nccl-tests' TimeTest: warm-up at the largest and smallest size, then the sweep.
void timeTest(Run& run, tuttiDataType_t type, tuttiRedOp_t op, const char* opStr, int root) {
  Bench& b = run.b;
  const Options& o = b.opt;
  const size_t ws = typeSize(type);
  barrier(b);
  for (size_t bytes : {o.maxBytes, o.minBytes}) {
    const Layout l = b.coll->layout(bytes / ws, b.nranks);
    forceAlgorithm(b, run.forced);
    for (int i = 0; i < o.warmupIters; ++i) {
      const auto* send = b.sendBase;
      PERF_CHECK(
          &b, b.coll->run(send, b.recvBase, l.paramCount, type, op, root, b.comm, b.mem->stream()));
    }
    b.mem->synchronize();
    forceAlgorithm(b, "");
  }
  int cycles = o.runCycles;
  int cycle = 0;
  do {
    for (size_t size = o.minBytes; size <= o.maxBytes;
         size = o.stepFactor > 1 ? size * o.stepFactor : size + o.stepBytes) {
      testSize(run, b.coll->layout(size / ws, b.nranks), type, op, opStr, root, cycle);
      if (o.stepFactor <= 1 && o.stepBytes == 0) break;
      if (o.stepFactor > 1 && size == 0) break;
    }
    ++cycle;
  } while (o.runCycles == 0 || --cycles > 0);
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// -A: one forced algorithm, or the columns of a sweep ("all": --algos, else every algorithm
// the library has for the collective; none for gather, scatter, the V variants and send/recv).
void chooseAlgorithms(Run& run, const Collective& coll, const Options& o) {
  if (o.algo == "all") {
    if (!o.algoList.empty()) {
      run.sweep = o.algoList;
    } else if (const char* list = tuttiAlgorithms(coll.algoKey)) {
      run.sweep = splitComma(list);
    }
  } else if (o.algo.find(',') != std::string::npos) {
    run.sweep = splitComma(o.algo);
  } else {
    run.forced = o.algo;
  }
  // "auto" is always a column of a multi-algorithm run, never a forced algorithm.
  std::erase(run.sweep, std::string("auto"));
}

// Rank 0's JSON (-J) and CSV (--csv) files. False (with the reason on stderr) when the CSV
// file cannot be written.
bool openOutputs(Run& run, const Collective& coll, int argc, char** argv) {
  const Options& o = run.b.opt;
  if (!run.main) return true;
  if (!o.jsonFile.empty()) {
    if (run.json.open(o.jsonFile)) {
      printf("# Writing JSON output to %s\n", run.json.path().c_str());
      writeJsonPreamble(run, argc, argv);
    } else {
      printf("# skipping json output; %s not accessible\n", o.jsonFile.c_str());
    }
  }
  if (o.csvFile.empty()) return true;
  run.csv = fopen(o.csvFile.c_str(), "w");
  if (!run.csv) {
    fprintf(stderr, "%s: cannot write %s: %s\n", coll.program, o.csvFile.c_str(), strerror(errno));
    return false;
  }
  fprintf(run.csv,
          "collective,nranks,size,count,type,redop,root,placement,algo_requested,algo_used,"
          "transports,time_us,algbw_GBps,busbw_GBps,wrong\n");
  return true;
}

// Buffers: maxBytes each (nccl-tests), plus room for -u. False (with the reason on stderr)
// when they cannot be had.
bool allocateBuffers(Bench& b, const Collective& coll) {
  const Options& o = b.opt;
  b.maxBytes = o.maxBytes;
  const size_t pad = static_cast<size_t>(o.unalign) * 8;
  b.sendBase = static_cast<char*>(b.mem->alloc(o.maxBytes + pad));
  b.recvBase = static_cast<char*>(b.mem->alloc(o.maxBytes + pad));
  if (!b.sendBase || !b.recvBase) {
    fprintf(stderr, "%s: cannot allocate 2 x %zu bytes of %s memory\n", coll.program,
            o.maxBytes + pad, o.memory.c_str());
    return false;
  }
  b.stage.assign(o.maxBytes + 64, 0);
  b.expected.assign(o.maxBytes + 64, 0);
  return true;
}

// --limit: the ceiling busbw is measured against (--link-gbps across hosts, else this host's
// memory copy speed; none over a network without --link-gbps).
void measureCeiling(Run& run) {
  Bench& b = run.b;
  const Options& o = b.opt;
  if (!o.limit) return;
  if (o.linkGbps > 0) {
    run.ceiling = o.linkGbps / 8.0;
  } else if (run.transports.find("tcp") == std::string::npos &&
             run.transports.find("ibverbs") == std::string::npos) {
    barrier(b);
    // On a helper thread: the scheduler charges the ~1 s of copying to that thread, not to
    // rank 0's main thread, which would otherwise get less CPU than the other ranks for
    // seconds afterwards (time-shared cores: the first sizes measured up to 2x slower).
    double mine = 0.0;
    if (b.rank == 0) std::thread([&mine] { mine = measureMemcpyGBps(); }).join();
    run.ceiling = allreduceTime(b, mine, 0);
  }
}

// Every type x op x root the options ask for (-d all, -o all, -r all), each over all sizes.
void runTests(Run& run, const Collective& coll) {
  const Options& o = run.b.opt;
  const std::vector<tuttiDataType_t> types =
      o.type == -1 ? allTypes()
                   : std::vector<tuttiDataType_t>{static_cast<tuttiDataType_t>(o.type)};
  const std::vector<tuttiRedOp_t> ops =
      (coll.hasOp && o.op == -1) ? allOps()
                                 : std::vector<tuttiRedOp_t>{static_cast<tuttiRedOp_t>(o.op)};
  std::vector<int> roots;
  if (coll.hasRoot && o.root == -1) {
    for (int r = 0; r < run.b.nranks; ++r) roots.push_back(r);
  } else {
    roots.push_back(coll.hasRoot ? o.root : 0);
  }
  for (tuttiDataType_t t : types) {
    for (tuttiRedOp_t op : ops) {
      if (coll.hasOp && !opApplies(t, op)) continue;  // -d all / -o all: no bitwise op on floats
      for (int root : roots) timeTest(run, t, op, coll.hasOp ? opName(op) : "none", root);
    }
  }
}

void writeJsonFooter(Run& run, int errors, double avgBw, const char* lastError) {
  JsonWriter& j = run.json;
  j.key("out_of_bounds");
  j.beginObject();
  j.key("count");
  j.integer(errors);
  j.key("okay");
  j.boolean(errors == 0);
  j.endObject();
  j.key("average_bus_bandwidth");
  j.beginObject();
  j.key("bandwidth");
  j.num(avgBw);
  j.key("okay");
  j.str("unchecked");
  j.endObject();
  j.key("errors");
  j.beginList();
  if (lastError && *lastError) j.str(lastError);
  j.endList();
  j.key("end_time");
  j.str(nowString());
  j.close();
}

// The summary after the table (every rank takes part: the error count is summed). Returns
// the job's wrong values.
int finishRun(Run& run, const Collective& coll) {
  Bench& b = run.b;
  const int errors = static_cast<int>(allreduceSum(b, b.errors));
  const double avgBw = run.bwCount ? run.bwSum / run.bwCount : 0.0;
  if (run.json.active()) run.json.endList();
  if (run.otherAlgo) {
    PRINT("# *: tuttiCommLastAlgorithm named another algorithm than the one requested\n");
  }
  PRINT("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  PRINT("# %-20s : %g %s\n", "Avg bus bandwidth", avgBw, "");
  PRINT("#\n");
  PRINT("# Collective test concluded: %s\n", coll.program);
  // The library's last error explains a failure; after a clean run it may only name an
  // algorithm a sweep tried and the library declined, so it is printed only on failure.
  const char* lastError = errors ? tuttiGetLastError(nullptr) : nullptr;
  if (lastError && *lastError) {
    PRINT("# error: %s\n", lastError);
  } else {
    PRINT("\n");
  }
  if (run.json.active()) writeJsonFooter(run, errors, avgBw, lastError);
  if (run.csv) fclose(run.csv);
  return errors;
}

bool envTrue(const char* name) {
  const char* v = getenv(name);
  return v && (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
               strcasecmp(v, "on") == 0);
}

}  // namespace

int perfMain(const Collective& coll, int argc, char** argv) {
  setlinebuf(stdout);
  Run run;
  Bench& b = run.b;
  b.coll = &coll;
  const int parsed = parseOptions(argc, argv, &b.opt, coll.hasOp, coll.hasRoot);
  if (parsed >= 0) return parsed;
  const Options& o = b.opt;
  chooseAlgorithms(run, coll, o);
  b.corrupt = envTrue("TUTTI_TEST_CORRUPT");

  std::string memError;
  b.mem = Memory::create(o.memory, localRankFromEnv(), &memError);
  if (!b.mem) {
    fprintf(stderr, "%s: %s\n", coll.program, memError.c_str());
    return EXIT_FAILURE;
  }
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  if (o.timeoutSec > 0) config.timeoutMs = o.timeoutSec * 1000;
  PERF_CHECK(&b, tuttiCommInitFromEnv(&b.comm, &config));
  PERF_CHECK(&b, tuttiCommUserRank(b.comm, &b.rank));
  PERF_CHECK(&b, tuttiCommCount(b.comm, &b.nranks));
  run.main = b.rank == 0;
  if (o.root >= b.nranks) {
    if (run.main)
      fprintf(stderr, "%s: invalid root %d for %d ranks\n", coll.program, o.root, b.nranks);
    tuttiCommDestroy(b.comm);
    return EXIT_FAILURE;
  }
  if (!openOutputs(run, coll, argc, argv) || !allocateBuffers(b, coll)) return EXIT_FAILURE;

  const std::vector<std::string> rankLines = gatherRankLines(run);
  const char* tr = tuttiCommTransports(b.comm);
  run.transports = tr ? tr : "";
  measureCeiling(run);
  printHeader(run, rankLines);
  if (run.json.active()) writeJsonConfig(run, rankLines);
  printTableHeader(run);
  if (run.json.active()) {
    run.json.key("results");
    run.json.beginList();
  }
  runTests(run, coll);
  const int errors = finishRun(run, coll);
  // Rank 0 has printed everything before any rank exits: a launcher that stops the job when
  // one rank exits non-zero (tuttirun, mpirun) must not cut the footer off.
  fflush(stdout);
  barrier(b);

  b.mem->free(b.sendBase);
  b.mem->free(b.recvBase);
  PERF_CHECK(&b, tuttiCommDestroy(b.comm));
  b.comm = nullptr;
  return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}

}  // namespace tutti_perf
