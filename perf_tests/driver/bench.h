// One measurement as nccl-tests' BenchTime: data init, a synchronising call, the timed loop
// (iters x agg_iters), the cross-rank time reduction (-a), bandwidths, then -c check rounds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/collective.h"
#include "driver/memory.h"
#include "driver/options.h"
#include "tutti/tutti.h"

namespace tutti_perf {

// Everything a measurement needs; owned by the driver.
struct Bench {
  const Collective* coll = nullptr;
  Options opt;
  tuttiComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  std::unique_ptr<Memory> mem;
  char* sendBase = nullptr;  // device (or host) buffers of maxBytes (+ unalign padding)
  char* recvBase = nullptr;
  size_t maxBytes = 0;
  std::vector<char> stage;     // host staging: inputs, results
  std::vector<char> expected;  // host: expected results
  bool corrupt = false;        // TUTTI_TEST_CORRUPT=1
  int errors = 0;              // checks that found wrong elements on this rank
  uint64_t rep = 0;
};

struct Measurement {
  bool ran = false;  // false: the library rejected the call (unsupported algorithm, ...)
  std::string why;   // when !ran
  double timeUs = 0;
  double algBw = 0;      // GB/s
  double busBw = 0;      // GB/s
  int64_t wrong = 0;     // summed over ranks
  bool checked = false;  // false: #wrong is N/A
  std::string algoUsed;  // tuttiCommLastAlgorithm after the timed loop
};

// `algo`: "" keeps the communicator's own choice (TUTTI_ALGO at init, else automatic), else
// <algoKey>:<algo> is forced (tuttiCommSetAlgorithm) around the measured calls only.
// `mayFail`: a rejected first call gives !ran instead of exiting.
Measurement benchTime(Bench& b, const Layout& l, tuttiDataType_t type, tuttiRedOp_t op, int root,
                      bool inPlace, const std::string& algo, bool mayFail);

// Forces <algoKey>:<algo> on the communicator (tuttiCommSetAlgorithm); an empty `algo`
// restores its own choice.
void forceAlgorithm(const Bench& b, const std::string& algo);

// Cross-rank helpers through the library itself (as nccl-tests uses MPI for them).
double allreduceTime(Bench& b, double v, int average);  // 0=rank0 1=avg 2=min 3=max
int64_t allreduceSum(Bench& b, int64_t v);
void barrier(Bench& b);

// Exits the process after printing a nccl-tests style failure line.
[[noreturn]] void failCall(const Bench* b, const char* call, tuttiResult_t r, const char* file,
                           int line);

#define PERF_CHECK(b, call)                                                           \
  do {                                                                                \
    const tuttiResult_t r_ = (call);                                                  \
    if (r_ != tuttiSuccess) ::tutti_perf::failCall(b, #call, r_, __FILE__, __LINE__); \
  } while (0)

}  // namespace tutti_perf
