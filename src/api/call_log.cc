#include "call_log.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "comm_handle.h"
#include "common/dtype.h"

namespace tutti::api {

namespace {

// Pointers as NCCL prints them ("0x7f3a2c000000", "(nil)").
std::string ptr(const void* p) {
  char text[32];
  snprintf(text, sizeof(text), "%p", p);
  return text;
}

PerfStats* perfOf(tuttiComm_t comm) {
  if (!log::enabled(log::Level::kInfo, log::Subsys::kPerf)) return nullptr;
  std::lock_guard<std::mutex> lock(comm->errorMutex);
  if (!comm->perf) comm->perf = std::make_unique<PerfStats>();
  return comm->perf.get();
}

std::string bytesText(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char text[32];
  snprintf(text, sizeof(text), u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return text;
}

}  // namespace

void PerfStats::add(const char* name, uint64_t bytes, double seconds, bool timed) {
  std::lock_guard<std::mutex> lock(mutex);
  Entry& e = byCall[name];
  ++e.calls;
  e.bytes += bytes;
  if (timed) {
    e.minSeconds = e.timedCalls == 0 ? seconds : std::min(e.minSeconds, seconds);
    e.maxSeconds = std::max(e.maxSeconds, seconds);
    ++e.timedCalls;
    e.seconds += seconds;
  }
}

const char* callName(const char* fn) { return std::strncmp(fn, "tutti", 5) == 0 ? fn + 5 : fn; }

PerfStats* logCollective(tuttiComm_t comm, const char* fn, const CallInfo& info,
                         const CallBuffers& b, tuttiStream_t stream, bool device, bool grouped,
                         uint64_t opCount) {
  const Communicator& c = *comm->impl;
  log::setThreadRank(c.rank());
  if (log::enabled(log::Level::kInfo, log::Subsys::kColl)) {
    std::ostringstream os;
    os << callName(fn) << ": opCount " << opCount;
    if (info.hasData) {
      os << " sendbuff " << ptr(b.send) << " recvbuff " << ptr(b.recv);
      if (info.uneven)
        os << " sendcount " << info.count << " recvcount " << info.recvCount;
      else
        os << " count " << info.count;
      os << " datatype " << dtypeName(info.dtype);
      if (info.op != tuttiNumOps) os << " op " << opName(info.op);
      if (info.root >= 0) os << " root " << info.root;
    }
    os << info.extra << " comm " << ptr(comm) << " [nranks=" << c.size() << "]";
    if (stream != nullptr) os << " stream " << ptr(stream);
    if (device) os << " device";
    if (grouped) os << " grouped";
    log::write(log::Level::kInfo, log::Subsys::kColl, os.str());
  }
  return perfOf(comm);
}

PerfStats* logP2p(tuttiComm_t comm, bool isSend, const void* buffer, size_t count,
                  tuttiDataType_t dtype, int peer, tuttiStream_t stream, bool grouped,
                  uint64_t opCount) {
  const Communicator& c = *comm->impl;
  log::setThreadRank(c.rank());
  if (log::enabled(log::Level::kInfo, log::Subsys::kP2p)) {
    std::ostringstream os;
    os << (isSend ? "Send" : "Recv") << ": opCount " << opCount << " "
       << (isSend ? "sendbuff " : "recvbuff ") << ptr(buffer) << " count " << count << " datatype "
       << dtypeName(dtype) << " (" << count * dtypeSize(dtype) << " B) " << (isSend ? "to" : "from")
       << " peer " << peer << " comm " << ptr(comm) << " [nranks=" << c.size() << "]";
    if (stream != nullptr) os << " stream " << ptr(stream);
    os << (grouped ? " grouped" : " not grouped");
    log::write(log::Level::kInfo, log::Subsys::kP2p, os.str());
  }
  return perfOf(comm);
}

void logPerfSummary(tuttiComm_t comm) {
  if (!comm->perf || !comm->impl || !log::enabled(log::Level::kInfo, log::Subsys::kPerf)) return;
  const Communicator& c = *comm->impl;
  log::setThreadRank(c.rank());
  std::lock_guard<std::mutex> lock(comm->perf->mutex);
  for (const auto& [name, e] : comm->perf->byCall) {
    std::ostringstream os;
    os << "comm " << ptr(comm) << " rank " << c.rank() << "/" << c.size() << " " << name << ": "
       << e.calls << " calls, " << bytesText(static_cast<double>(e.bytes));
    if (e.timedCalls > 0) {
      // The first call of a kind includes connecting the peers it needs: see max.
      char text[200];
      const double perCall = e.seconds / static_cast<double>(e.timedCalls);
      snprintf(text, sizeof(text), ", %.1f us in %llu timed calls (avg %.2f, min %.2f, max %.2f us",
               e.seconds * 1e6, static_cast<unsigned long long>(e.timedCalls), perCall * 1e6,
               e.minSeconds * 1e6, e.maxSeconds * 1e6);
      os << text;
      if (e.seconds > 0 && e.bytes > 0 && e.timedCalls == e.calls) {
        snprintf(text, sizeof(text), "; %.3f GB/s", static_cast<double>(e.bytes) / e.seconds / 1e9);
        os << text;
      }
      os << ")";
    }
    if (e.timedCalls < e.calls) os << ", " << e.calls - e.timedCalls << " in groups (untimed)";
    log::write(log::Level::kInfo, log::Subsys::kPerf, os.str());
  }
}

}  // namespace tutti::api
