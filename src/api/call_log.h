// What the API layer logs per call: a COLL line per collective and a P2P line per send or
// receive (NCCL_DEBUG_SUBSYS=COLL,P2P style), and the PERF counters of a communicator (calls,
// bytes and time per call name) summarised at tuttiCommDestroy. docs/logging.md.
//
// The hot path makes one check, log::enabledAny(kInfo, kColl|kPerf) (or kP2p|kPerf); the
// functions here are the slow path taken only when it is true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/log.h"
#include "memory_space.h"
#include "tutti/tutti.h"

namespace tutti::api {

// The arguments of a collective call, as its COLL line shows them.
struct CallInfo {
  size_t count = 0;  // elements (sendcount / recvcount for all-gather / reduce-scatter)
  tuttiDataType_t dtype = tuttiUint8;
  tuttiRedOp_t op = tuttiNumOps;  // tuttiNumOps: the call has none
  int root = -1;                  // -1: the call has none
  bool hasData = true;            // false: no buffers, count or datatype (barrier)
  bool uneven = false;            // -V call: count is the send extent, recvCount the receive extent
  size_t recvCount = 0;           // uneven only
  const char* extra = "";         // appended as is (compressed: compressor, key)
};

// Per-communicator PERF counters (only filled while PERF logs at INFO).
struct PerfStats {
  struct Entry {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t timedCalls = 0;  // all but grouped sends/receives (they run together)
    double seconds = 0;       // of the timed calls
    double minSeconds = 0, maxSeconds = 0;
  };
  std::mutex mutex;
  std::map<std::string, Entry> byCall;  // by call name ("AllReduce", "Send", ...)

  void add(const char* name, uint64_t bytes, double seconds, bool timed);
};

inline constexpr unsigned kCollOrPerf =
    log::bits(log::Subsys::kColl) | log::bits(log::Subsys::kPerf);
inline constexpr unsigned kP2pOrPerf = log::bits(log::Subsys::kP2p) | log::bits(log::Subsys::kPerf);

// "tuttiAllReduce" -> "AllReduce".
const char* callName(const char* fn);

// Writes the COLL line of a collective when COLL logs at INFO; returns the communicator's
// PERF counters when PERF logs at INFO, else null. opCount: the communicator's call number.
PerfStats* logCollective(tuttiComm_t comm, const char* fn, const CallInfo& info,
                         const CallBuffers& b, tuttiStream_t stream, bool device, bool grouped,
                         uint64_t opCount);

// The same for one send or receive (P2P).
PerfStats* logP2p(tuttiComm_t comm, bool isSend, const void* buffer, size_t count,
                  tuttiDataType_t dtype, int peer, tuttiStream_t stream, bool grouped,
                  uint64_t opCount);

// At tuttiCommDestroy: one PERF line per call name with calls, bytes and time, when PERF
// logs at INFO and the communicator made any call.
void logPerfSummary(tuttiComm_t comm);

}  // namespace tutti::api
