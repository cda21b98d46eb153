// Command line of the perf tests: nccl-tests' flags and defaults, plus tutti additions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_perf {

struct Options {
  // nccl-tests flags (same letters, long names and defaults).
  int nThreads = 1;                    // -t (only 1 supported: one rank per process)
  int nGpus = 1;                       // -g (only 1 supported)
  size_t minBytes = 32 * 1024 * 1024;  // -b
  size_t maxBytes = 32 * 1024 * 1024;  // -e
  size_t stepBytes = 1 * 1024 * 1024;  // -i
  size_t stepFactor = 1;               // -f
  int iters = 20;                      // -n
  int aggIters = 1;                    // -m
  int warmupIters = 5;                 // -w
  int runCycles = 1;                   // -N (0: forever)
  int parallelInit = 0;                // -p (accepted, no effect)
  int check = 1;                       // -c (number of check iterations)
  int op = tuttiSum;                   // -o (-1: all)
  int type = tuttiFloat32;             // -d (-1: all)
  int root = 0;                        // -r (-1: all roots)
  int blocking = 0;                    // -z
  int streamNull = 0;                  // -y (accepted, no effect on host memory)
  int timeoutSec = 0;                  // -T
  int cudaGraph = 0;                   // -G (accepted, ignored)
  int reportCputime = 0;               // -C
  int average = 1;                     // -a 0=rank0 1=avg 2=min 3=max
  int unalign = 0;                     // -u index of first element
  std::string jsonFile;                // -J
  // tutti additions.
  std::string algo;                   // -A NAME | all | a,b,c
  std::vector<std::string> algoList;  // --algos a,b,c (list used by -A all)
  std::string memory = "host";        // --memory host|host-stream|cuda
  std::string csvFile;                // --csv FILE
  int limit = 0;                      // --limit 0/1
  double linkGbps = 0;                // --link-gbps X (Gbit/s)
  int showAlgo = 0;                   // --show_algo 0/1: algorithm + transports columns
  int syncEach = 0;                   // --sync_each 0/1: synchronize the stream after each call
  int alternate = 0;                  // --alternate 0/1: -A's columns in reverse every other cycle
};

// Parses argv. Returns -1 to continue, else the exit status (help printed: 0; error: 1).
int parseOptions(int argc, char** argv, Options* o, bool hasOp, bool hasRoot);

// "32M" -> 33554432 as nccl-tests' parsesize (K, M, G are powers of 1024); < 0 when invalid.
double parseSize(const char* s);

}  // namespace tutti_perf
