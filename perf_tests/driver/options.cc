#include "driver/options.h"

#include <getopt.h>
#include <libgen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "driver/types.h"
#include "tutti/datatype.hpp"

namespace tutti_perf {

double parseSize(const char* value) {
  double size;
  char lit[2] = {0, 0};
  const int n = sscanf(value, "%lf %1s", &size, lit);
  double units = 1;
  if (n == 2) {
    switch (lit[0]) {
      case 'G':
      case 'g':
        units = 1024.0 * 1024 * 1024;
        break;
      case 'M':
      case 'm':
        units = 1024.0 * 1024;
        break;
      case 'K':
      case 'k':
        units = 1024.0;
        break;
      default:
        return -1.0;
    }
  } else if (n != 1) {
    return -1.0;
  }
  return size < 0 ? -1.0 : size * units;
}

namespace {

enum LongOnly { kAlgos = 1000, kMemory, kCsv, kLimit, kLinkGbps, kShowAlgo, kSyncEach, kAlternate };

void usage(const char* prog) {
  printf(
      "USAGE: %s \n\t"
      "[-t,--nthreads <num threads>] (1 only: one rank per process) \n\t"
      "[-g,--ngpus <gpus per thread>] (1 only) \n\t"
      "[-b,--minbytes <min size in bytes>] \n\t"
      "[-e,--maxbytes <max size in bytes>] \n\t"
      "[-i,--stepbytes <increment size>] \n\t"
      "[-f,--stepfactor <increment factor>] \n\t"
      "[-n,--iters <iteration count>] \n\t"
      "[-m,--agg_iters <aggregated iteration count>] \n\t"
      "[-w,--warmup_iters <warmup iteration count>] \n\t"
      "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n\t"
      "[-p,--parallel_init <0/1>] \n\t"
      "[-c,--check <check iteration count>] \n\t"
      "[-o,--op <sum/prod/min/max/avg/band/bor/bxor/all>] \n\t"
      "[-d,--datatype <type/all>] \n\t"
      "[-r,--root <root/all>] \n\t"
      "[-z,--blocking <0/1>] \n\t"
      "[-y,--stream_null <0/1>] \n\t"
      "[-T,--timeout <time in seconds>] \n\t"
      "[-G,--cudagraph <num graph launches>] (ignored) \n\t"
      "[-C,--report_cputime <0/1>] \n\t"
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
      "[-u,--unalign <index of first element>] \n\t"
      "[-J,--output_file <file> write JSON output to file] \n\t"
      "tutti additions: \n\t"
      "[-A,--algo <name/all/a,b,c> force the algorithm (TUTTI_ALGO); all: one busbw column per "
      "algorithm] \n\t"
      "[--algos <a,b,c> algorithms that -A all sweeps (default: built-in list)] \n\t"
      "[--alternate <0/1> with -A all and -N: every other cycle runs the columns, auto first, in "
      "reverse order (printed in the usual order)] \n\t"
      "[--memory <host/host-stream/cuda> where buffers live (default host; host-stream: host "
      "buffers, the calls on a tutti host stream)] \n\t"
      "[--sync_each <0/1> wait for each call's stream before the next (no barrier)] \n\t"
      "[--csv <file> write results as CSV (long format) on rank 0] \n\t"
      "[--limit <0/1> print a ceiling measured on this machine and busbw as %% of it] \n\t"
      "[--link-gbps <Gbit/s> ceiling for jobs across hosts (with --limit)] \n\t"
      "[--show_algo <0/1> add algorithm and transport columns] \n\t"
      "[-h,--help]\n",
      prog);
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The options whose value is a plain integer, and the member each sets.
struct IntFlag {
  int flag;
  int Options::*member;
};
constexpr IntFlag kIntFlags[] = {
    {'t', &Options::nThreads},       {'g', &Options::nGpus},
    {'n', &Options::iters},          {'m', &Options::aggIters},
    {'w', &Options::warmupIters},    {'N', &Options::runCycles},
    {'p', &Options::parallelInit},   {'c', &Options::check},
    {'z', &Options::blocking},       {'y', &Options::streamNull},
    {'T', &Options::timeoutSec},     {'C', &Options::reportCputime},
    {'a', &Options::average},        {'u', &Options::unalign},
    {kLimit, &Options::limit},       {kShowAlgo, &Options::showAlgo},
    {kSyncEach, &Options::syncEach}, {kAlternate, &Options::alternate},
};

// -o and -d: "all" is -1; a name that does not parse falls back to sum / float32, as in
// nccl-tests.
int opOption(const char* arg) {
  tuttiRedOp_t op;
  if (strcmp(arg, "all") == 0) return -1;
  if (parseOp(arg, &op)) return op;
  printf("invalid op %s, defaulting to %s .. \n", arg, opName(tuttiSum));
  return tuttiSum;
}

int typeOption(const char* arg) {
  tuttiDataType_t t;
  if (strcmp(arg, "all") == 0) return -1;
  if (parseType(arg, &t)) return t;
  printf("invalid type %s, defaulting to %s .. \n", arg, tutti::dataTypeName(tuttiFloat32));
  return tuttiFloat32;
}

// Applies one option that getopt_long returned (c, with optarg). Returns -1 to go on, else
// the exit code (0 after --help).
int applyOption(int c, const char* arg, Options* o, const char* prog) {
  for (const IntFlag& f : kIntFlags)
    if (f.flag == c) {
      o->*f.member = static_cast<int>(strtol(arg, nullptr, 0));
      return -1;
    }
  double parsed;
  switch (c) {
    case 'b':
    case 'e':
      if ((parsed = parseSize(arg)) < 0) {
        fprintf(stderr, "invalid size specified for '%s'\n", c == 'b' ? "minbytes" : "maxbytes");
        return 1;
      }
      (c == 'b' ? o->minBytes : o->maxBytes) = static_cast<size_t>(parsed);
      return -1;
    case 'i':
      o->stepBytes = strtoul(arg, nullptr, 0);
      return -1;
    case 'f':
      o->stepFactor = strtoul(arg, nullptr, 0);
      return -1;
    case 'o':
      o->op = opOption(arg);
      return -1;
    case 'd':
      o->type = typeOption(arg);
      return -1;
    case 'r':
      o->root = strcmp(arg, "all") == 0 ? -1 : static_cast<int>(strtol(arg, nullptr, 0));
      return -1;
    case 'G':
      if (strtol(arg, nullptr, 0) != 0)
        printf("Option -G (CUDA graph) not supported by tutti. Ignoring\n");
      o->cudaGraph = 0;
      return -1;
    case 'J':
      o->jsonFile = arg;
      return -1;
    case 'A':
      o->algo = arg;
      return -1;
    case kAlgos:
      o->algoList = splitList(arg);
      return -1;
    case kMemory:
      o->memory = arg;
      return -1;
    case kCsv:
      o->csvFile = arg;
      return -1;
    case kLinkGbps:
      o->linkGbps = strtod(arg, nullptr);
      return -1;
    case 'h':
      usage(prog);
      return 0;
    default:
      if (c != '?') printf("invalid option '%c'\n", c);
      usage(prog);
      return 1;
  }
}

// The options together: 0 when they make sense, else 1 (with the reason on stderr).
int checkOptions(Options* o, const char* prog, bool hasOp) {
  if (o->minBytes > o->maxBytes) {
    fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %llu > %llu\n",
            static_cast<unsigned long long>(o->minBytes),
            static_cast<unsigned long long>(o->maxBytes));
    return 1;
  }
  if (o->nThreads != 1 || o->nGpus != 1) {
    fprintf(stderr,
            "%s: -t and -g must be 1: tutti runs one rank per process (launch N processes "
            "with tuttirun -np N)\n",
            prog);
    return 1;
  }
  if (o->iters < 1 || o->aggIters < 1 || o->warmupIters < 0 || o->check < 0 || o->runCycles < 0 ||
      o->unalign < 0 || o->average < 0 || o->average > 3) {
    fprintf(stderr, "%s: invalid -n/-m/-w/-c/-N/-u/-a value\n", prog);
    return 1;
  }
  if (o->memory != "host" && o->memory != "host-stream" && o->memory != "cuda") {
    fprintf(stderr, "%s: --memory must be host, host-stream or cuda\n", prog);
    return 1;
  }
  if (!o->algoList.empty() && o->algo.empty()) o->algo = "all";
  if (!hasOp) o->op = tuttiSum;
  if (o->op >= 0 && o->type >= 0 &&
      !opApplies(static_cast<tuttiDataType_t>(o->type), static_cast<tuttiRedOp_t>(o->op))) {
    fprintf(stderr, "%s: op %s is not defined on %s (bitwise ops take integer types only)\n", prog,
            opName(static_cast<tuttiRedOp_t>(o->op)),
            tutti::dataTypeName(static_cast<tuttiDataType_t>(o->type)));
    return 1;
  }
  return 0;
}

}  // namespace

int parseOptions(int argc, char** argv, Options* o, bool hasOp, bool /*hasRoot*/) {
  static const struct option longopts[] = {{"nthreads", required_argument, 0, 't'},
                                           {"ngpus", required_argument, 0, 'g'},
                                           {"minbytes", required_argument, 0, 'b'},
                                           {"maxbytes", required_argument, 0, 'e'},
                                           {"stepbytes", required_argument, 0, 'i'},
                                           {"stepfactor", required_argument, 0, 'f'},
                                           {"iters", required_argument, 0, 'n'},
                                           {"agg_iters", required_argument, 0, 'm'},
                                           {"warmup_iters", required_argument, 0, 'w'},
                                           {"run_cycles", required_argument, 0, 'N'},
                                           {"parallel_init", required_argument, 0, 'p'},
                                           {"check", required_argument, 0, 'c'},
                                           {"op", required_argument, 0, 'o'},
                                           {"datatype", required_argument, 0, 'd'},
                                           {"root", required_argument, 0, 'r'},
                                           {"blocking", required_argument, 0, 'z'},
                                           {"stream_null", required_argument, 0, 'y'},
                                           {"timeout", required_argument, 0, 'T'},
                                           {"cudagraph", required_argument, 0, 'G'},
                                           {"report_cputime", required_argument, 0, 'C'},
                                           {"average", required_argument, 0, 'a'},
                                           {"unalign", required_argument, 0, 'u'},
                                           {"output_file", required_argument, 0, 'J'},
                                           {"algo", required_argument, 0, 'A'},
                                           {"algos", required_argument, 0, kAlgos},
                                           {"memory", required_argument, 0, kMemory},
                                           {"csv", required_argument, 0, kCsv},
                                           {"limit", required_argument, 0, kLimit},
                                           {"link-gbps", required_argument, 0, kLinkGbps},
                                           {"link_gbps", required_argument, 0, kLinkGbps},
                                           {"show_algo", required_argument, 0, kShowAlgo},
                                           {"sync_each", required_argument, 0, kSyncEach},
                                           {"alternate", required_argument, 0, kAlternate},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  const char* prog = basename(argv[0]);
  optind = 1;
  for (;;) {
    int longindex = 0;
    const int c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:a:u:J:A:h",
                              longopts, &longindex);
    if (c == -1) break;
    if (const int code = applyOption(c, optarg, o, prog); code >= 0) return code;
  }
  if (optind < argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
    return 1;
  }
  return checkOptions(o, prog, hasOp) == 0 ? -1 : 1;
}

}  // namespace tutti_perf
