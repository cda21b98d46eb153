#include "group.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api_guard.h"
#include "arg_checks.h"
#include "comm_handle.h"
#include "common/clock.h"
#include "common/dtype.h"
#include "common/log.h"
#include "memory_space.h"
#include "ordered_call.h"

namespace tutti::api {

namespace {

struct PerComm {
  tuttiComm_t comm;
  uint64_t serial;
  std::vector<RecordedCall> collectives;
  std::vector<P2pOp> p2p;
  std::shared_ptr<HostStream> stream;  // the host stream its calls name, if any
  // Sets the group's stream for this communicator at its first call; a later call naming
  // another one is refused.
  void useStream(std::shared_ptr<HostStream> s) {
    if (collectives.empty() && p2p.empty()) {
      stream = std::move(s);
      return;
    }
    if (s != stream)
      fail(tuttiInvalidUsage,
           "a group's calls on one communicator must name one stream (this call names ",
           s ? "a host stream" : "no host stream", ", the group's earlier calls on it ",
           stream ? (s ? "another host stream" : "a host stream") : "none", ")");
  }
};

// The depth is asked at every collective call. Not in the initial-exec TLS model: that marks
// libtutti STATIC_TLS, and a dlopen (Python's import of the torch backend) then fails with
// "cannot allocate memory in static TLS block"; TLS descriptors (-mtls-dialect=gnu2, see
// CMakeLists.txt) keep the access cheap instead.
thread_local int tlsGroupDepth = 0;

struct GroupState {
  std::vector<PerComm> comms;
  // Handles whose init started inside the group (their init threads run now; tuttiGroupEnd
  // joins them before the group's calls run).
  std::vector<std::pair<tuttiComm_t, uint64_t>> inits;  // handle, serial
  // The first call of the group that was refused (noteRefusedInGroup), and how many were.
  tuttiResult_t refused = tuttiSuccess;
  std::string refusedText;
  size_t refusedCalls = 0;
  PerComm& of(tuttiComm_t comm) {
    for (auto& pc : comms)
      if (pc.comm == comm) return pc;
    return comms.emplace_back(PerComm{comm, comm->serial, {}, {}, nullptr});
  }
};

GroupState& state() {
  thread_local GroupState s;
  return s;
}

std::mutex& liveMutex() {
  static std::mutex m;
  return m;
}
std::set<uint64_t>& liveSerials() {
  static std::set<uint64_t> s;
  return s;
}

bool isLive(uint64_t serial) {
  std::lock_guard<std::mutex> lock(liveMutex());
  return liveSerials().count(serial) != 0;
}

}  // namespace

uint64_t registerComm() {
  static std::atomic<uint64_t> next{1};
  uint64_t serial = next.fetch_add(1);
  std::lock_guard<std::mutex> lock(liveMutex());
  liveSerials().insert(serial);
  return serial;
}

void unregisterComm(uint64_t serial) {
  std::lock_guard<std::mutex> lock(liveMutex());
  liveSerials().erase(serial);
}

int groupDepth() { return tlsGroupDepth; }

void deferCollective(tuttiComm_t comm, std::function<void()> run,
                     std::shared_ptr<HostStream> stream, std::optional<FusibleCall> fusible,
                     std::function<double(Communicator&)> estimate) {
  PerComm& pc = state().of(comm);
  pc.useStream(std::move(stream));
  pc.collectives.push_back(RecordedCall{std::move(run), fusible, std::move(estimate)});
}

void deferP2p(tuttiComm_t comm, const P2pOp& op, std::shared_ptr<HostStream> stream) {
  PerComm& pc = state().of(comm);
  pc.useStream(std::move(stream));
  pc.p2p.push_back(op);
}

void deferInit(tuttiComm_t comm) { state().inits.emplace_back(comm, comm->serial); }

bool recordedByGroups(std::string_view function) {
  static constexpr std::string_view kRecorded[] = {"tuttiAllReduce",
                                                   "tuttiBroadcast",
                                                   "tuttiReduce",
                                                   "tuttiAllGather",
                                                   "tuttiReduceScatter",
                                                   "tuttiAllToAll",
                                                   "tuttiGather",
                                                   "tuttiScatter",
                                                   "tuttiBarrier",
                                                   "tuttiAllGatherV",
                                                   "tuttiReduceScatterV",
                                                   "tuttiGatherV",
                                                   "tuttiScatterV",
                                                   "tuttiAllToAllV",
                                                   "tuttiNeighborAllReduce",
                                                   "tuttiAllReduceCompressed",
                                                   "tuttiSend",
                                                   "tuttiRecv"};
  for (std::string_view name : kRecorded)
    if (function == name) return true;
  return false;
}

void noteRefusedInGroup(tuttiResult_t code, const std::string& text) {
  GroupState& s = state();
  if (s.refusedCalls++ == 0) {
    s.refused = code;
    s.refusedText = text;
  }
}

namespace {

// Runs one communicator's recorded calls in its call order: its collectives in call order
// (small all-reduces packed: group_fusion.h), then its sends and receives as one batch; now, or
// enqueued on the host stream they name. Returns the code; *error gets the text of a failure.
tuttiResult_t runRecorded(PerComm& pc, std::string* error) {
  tuttiResult_t r = guarded(pc.comm, "tuttiGroupEnd", [&] {
    tuttiComm_t comm = pc.comm;
    runInOrder(comm, "tuttiGroupEnd", pc.stream,
               [comm, collectives = std::move(pc.collectives), p2p = std::move(pc.p2p)] {
                 if (!collectives.empty()) runRecordedCalls(ready(comm), collectives);
                 if (!p2p.empty()) ready(comm).runP2p(p2p);
               });
    return tuttiSuccess;
  });
  if (r != tuttiSuccess) *error = threadLastError();
  return r;
}

// The group held a refused call: none of its recorded calls run (the ranks that made them
// alike would otherwise run a group this rank did not make whole); End returns the refused
// call's code with its text, also on each live communicator of the group.
tuttiResult_t failRefusedGroup(const std::vector<PerComm>& comms, tuttiResult_t code,
                               const std::string& text, size_t refusedCalls) {
  size_t dropped = 0;
  for (const PerComm& pc : comms) dropped += pc.collectives.size() + pc.p2p.size();
  const std::string error = "tuttiGroupEnd: " + std::to_string(refusedCalls) +
                            " call(s) of the group were refused, the first: " + text +
                            "; the group's " + std::to_string(dropped) +
                            " recorded call(s) were not run";
  for (const PerComm& pc : comms)
    if (isLive(pc.serial)) {
      std::lock_guard<std::mutex> lock(pc.comm->errorMutex);
      pc.comm->lastError = error;
    }
  TUTTI_WARN(kInit, error);
  threadLastError() = error;
  return code;
}

// Joins the inits started in the group; the first failure's code and text, if any.
tuttiResult_t finishInits(std::vector<std::pair<tuttiComm_t, uint64_t>>& inits,
                          std::string* error) {
  tuttiResult_t result = tuttiSuccess;
  for (auto [h, serial] : inits) {
    if (!isLive(serial)) continue;  // destroyed inside the group (its destroy joined the init)
    if (h->initThread.joinable()) h->initThread.join();
    tuttiResult_t r = h->asyncError.load();
    if (r != tuttiSuccess && result == tuttiSuccess) {
      result = r;
      std::lock_guard<std::mutex> lock(h->errorMutex);
      *error = h->lastError;
    }
  }
  return result;
}

// The outermost End's group, taken from this thread (whose next group starts afresh), with the
// inits it started joined (*result and *error: their first failure).
struct EndedGroup {
  std::vector<PerComm> comms;
  tuttiResult_t refused = tuttiSuccess;
  std::string refusedText;
  size_t refusedCalls = 0;
  std::vector<PerComm*> live;           // its communicators still alive
  tuttiResult_t result = tuttiSuccess;  // the first failure so far, and its text
  std::string error;
};

std::vector<PerComm*> liveComms(std::vector<PerComm>& comms, tuttiResult_t* result,
                                std::string* error);

// Ends the outermost group into *g. A group that held a refused call fails here (the refused
// call's code, returned; nothing of it may run); else tuttiSuccess, with g->result / g->error
// the first failure of its inits or of a dropped communicator.
tuttiResult_t endGroup(EndedGroup* g) {
  GroupState& s = state();
  g->comms = std::move(s.comms);
  g->refused = std::exchange(s.refused, tuttiSuccess);
  g->refusedText = std::exchange(s.refusedText, std::string());
  g->refusedCalls = std::exchange(s.refusedCalls, 0);
  auto inits = std::move(s.inits);
  s.comms.clear();
  s.inits.clear();
  g->result = finishInits(inits, &g->error);
  if (g->refused != tuttiSuccess)
    return failRefusedGroup(g->comms, g->refused, g->refusedText, g->refusedCalls);
  g->live = liveComms(g->comms, &g->result, &g->error);
  return tuttiSuccess;
}

// The group's communicators still alive. Calls recorded on one destroyed inside the group are
// dropped (never run on freed memory), and *result / *error say so (unless set already).
std::vector<PerComm*> liveComms(std::vector<PerComm>& comms, tuttiResult_t* result,
                                std::string* error) {
  std::vector<PerComm*> live;
  for (auto& pc : comms) {
    if (isLive(pc.serial)) {
      live.push_back(&pc);
      continue;
    }
    if (*result == tuttiSuccess) {
      *result = tuttiInvalidUsage;
      *error = "tuttiGroupEnd: " + std::to_string(pc.collectives.size() + pc.p2p.size()) +
               " call(s) recorded on a communicator that was destroyed before tuttiGroupEnd "
               "were dropped";
    }
  }
  return live;
}

// The cost model's time of one communicator's recorded calls, in seconds (its collectives one
// after another, then its sends and receives as one batch).
tuttiResult_t estimateRecorded(const PerComm& pc, double* seconds) {
  return guarded(pc.comm, "tuttiGroupSimulateEnd", [&] {
    Communicator& c = ready(pc.comm);
    double sum = 0;
    for (const RecordedCall& call : pc.collectives) {
      if (!call.estimate)
        fail(tuttiUnsupported,
             "the group holds a call the cost model cannot price (tuttiNeighborAllReduce, "
             "tuttiAllReduceCompressed)");
      sum += call.estimate(c);
    }
    if (!pc.p2p.empty()) sum += c.estimateP2p(pc.p2p);
    *seconds = sum;
    return tuttiSuccess;
  });
}

}  // namespace

}  // namespace tutti::api

namespace {

// Checks a send or receive and runs it now, or records it in the open group. Logs its P2P line
// and counts it for PERF (call_log.h) when those log at INFO.
tuttiResult_t issueP2p(bool isSend, void* buffer, size_t count, const tuttiDataType_t& datatype,
                       int peer, tuttiComm_t comm, tuttiStream_t stream) {
  tutti::api::checkDatatype(datatype);
  TUTTI_CHECK_ARG(count == 0 || buffer != nullptr, isSend ? "sendbuff" : "recvbuff",
                  " is NULL with count ", count);
  auto& c = tutti::api::ready(comm);
  tutti::api::checkRank(c, peer, "peer");
  // Send/receive have no device path (no staging, no CUDA IPC for p2p): a device buffer is
  // refused instead of being read as host memory.
  tutti::api::CallBuffers bufs;
  if (isSend) {
    bufs.send = buffer;
    bufs.sendBytes = count == 0 ? 0 : 1;
  } else {
    bufs.recv = buffer;
    bufs.recvBytes = count == 0 ? 0 : 1;
  }
  TUTTI_CHECK_ARG(!tutti::api::buffersOnDevice(isSend ? "tuttiSend" : "tuttiRecv", bufs),
                  isSend ? "sendbuff" : "recvbuff",
                  " is CUDA device memory: tuttiSend/tuttiRecv take host memory only (copy "
                  "to host memory first; the collectives stage device buffers)");
  tutti::P2pOp op{isSend, peer, static_cast<std::byte*>(buffer),
                  tutti::api::bufferBytes("count", count, datatype)};
  const bool grouped = tutti::api::groupDepth() > 0;
  const uint64_t opCount = comm->opCount++;
  tutti::api::PerfStats* perf = nullptr;
  if (tutti::log::enabledAny(tutti::log::Level::kInfo, tutti::api::kP2pOrPerf)) [[unlikely]]
    perf =
        tutti::api::logP2p(comm, isSend, buffer, count, datatype, peer, stream, grouped, opCount);
  const char* name = isSend ? "Send" : "Recv";
  auto host = tutti::api::hostStreamOf(stream);
  if (grouped) {
    tutti::api::deferP2p(comm, op, std::move(host));
    if (perf != nullptr) perf->add(name, op.bytes, 0, false);
    return tuttiSuccess;
  }
  std::function<void(double)> after;
  if (perf != nullptr)
    after = [perf, name, bytes = op.bytes](double s) { perf->add(name, bytes, s, true); };
  tutti::api::runP2pInOrder(comm, isSend ? "tuttiSend" : "tuttiRecv", host, op, std::move(after));
  return tuttiSuccess;
}

// A receive from any source: runs alone in the communicator's call order (never absorbed into
// a point-to-point batch, and never in a group: its peer is known only once a message came).
tuttiResult_t issueRecvAny(void* buffer, size_t count, const tuttiDataType_t& datatype, int* peer,
                           tuttiComm_t comm, tuttiStream_t stream) {
  tutti::api::checkDatatype(datatype);
  TUTTI_CHECK_ARG(count == 0 || buffer != nullptr, "recvbuff is NULL with count ", count);
  TUTTI_CHECK_ARG(peer != nullptr, "peer is NULL (the call sets it to the sender's rank)");
  tutti::api::ready(comm);
  if (tutti::api::groupDepth() > 0)
    tutti::fail(tuttiInvalidUsage,
                "tuttiRecvAny cannot be part of a group (its peer is known only once a message "
                "arrived): call it outside tuttiGroupStart/tuttiGroupEnd");
  tutti::api::CallBuffers bufs;
  bufs.recv = buffer;
  bufs.recvBytes = count == 0 ? 0 : 1;
  TUTTI_CHECK_ARG(!tutti::api::buffersOnDevice("tuttiRecvAny", bufs),
                  "recvbuff is CUDA device memory: tuttiRecvAny takes host memory only");
  const size_t bytes = tutti::api::bufferBytes("count", count, datatype);
  ++comm->opCount;
  tutti::api::runInOrder(
      comm, "tuttiRecvAny", tutti::api::hostStreamOf(stream), [comm, buffer, bytes, peer] {
        *peer = tutti::api::ready(comm).recvAny(static_cast<std::byte*>(buffer), bytes);
      });
  return tuttiSuccess;
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiGroupStart(void) {
  ++tutti::api::tlsGroupDepth;
  return tuttiSuccess;
}

TUTTI_API tuttiResult_t tuttiGroupEnd(void) {
  if (tutti::api::tlsGroupDepth == 0) {
    tutti::api::threadLastError() = "tuttiGroupEnd: no matching tuttiGroupStart";
    return tuttiInvalidUsage;
  }
  if (--tutti::api::tlsGroupDepth > 0) return tuttiSuccess;
  tutti::api::EndedGroup group;
  if (tuttiResult_t refused = tutti::api::endGroup(&group); refused) return refused;
  std::vector<tutti::api::PerComm*>& live = group.live;
  tuttiResult_t& result = group.result;
  std::string& error = group.error;
  // Every communicator's calls progress at the same time (one thread each beyond the
  // first), as NCCL issues a group's operations together: ranks may record the
  // communicators in different orders, and one thread may drive several ranks of one
  // communicator.
  std::vector<tuttiResult_t> codes(live.size(), tuttiSuccess);
  std::vector<std::string> errors(live.size());
  std::vector<std::thread> helpers;
  std::vector<size_t> here;  // run on this thread: the first, and any a thread was refused for
  for (size_t i = 0; i < live.size(); ++i) {
    if (i == 0) {
      here.push_back(i);
      continue;
    }
    try {
      helpers.emplace_back([&, i] {
        if (live[i]->comm->impl) tutti::log::setThreadRank(live[i]->comm->impl->rank());
        codes[i] = tutti::api::runRecorded(*live[i], &errors[i]);
      });
    } catch (const std::exception&) {
      here.push_back(i);
    }
  }
  for (size_t i : here) codes[i] = tutti::api::runRecorded(*live[i], &errors[i]);
  for (auto& t : helpers) t.join();
  for (size_t i = 0; i < live.size(); ++i) {
    if (codes[i] != tuttiSuccess && result == tuttiSuccess) {
      result = codes[i];
      error = errors[i];
    }
  }
  if (result != tuttiSuccess) tutti::api::threadLastError() = error;
  return result;
}

TUTTI_API tuttiResult_t tuttiGroupSimulateEnd(tuttiSimInfo_t* simInfo) {
  if (simInfo == nullptr || simInfo->size != sizeof(tuttiSimInfo_t) ||
      simInfo->magic != TUTTI_SIM_INFO_MAGIC) {
    tutti::api::threadLastError() =
        "tuttiGroupSimulateEnd: simInfo is NULL or not made with TUTTI_SIM_INFO_INITIALIZER (the "
        "group stays open)";
    return tuttiInvalidArgument;
  }
  if (tutti::api::tlsGroupDepth != 1) {
    tutti::api::threadLastError() =
        tutti::api::tlsGroupDepth == 0
            ? "tuttiGroupSimulateEnd: no matching tuttiGroupStart"
            : "tuttiGroupSimulateEnd: only the outermost group may be simulated (the group stays "
              "open)";
    return tuttiInvalidUsage;
  }
  tutti::api::tlsGroupDepth = 0;
  tutti::api::EndedGroup group;
  if (tuttiResult_t refused = tutti::api::endGroup(&group); refused) return refused;
  std::vector<tutti::api::PerComm*>& live = group.live;
  tuttiResult_t& result = group.result;
  std::string& error = group.error;
  double slowest = 0;  // the communicators progress at the same time
  for (tutti::api::PerComm* pc : live) {
    double seconds = 0;
    const tuttiResult_t r = tutti::api::estimateRecorded(*pc, &seconds);
    if (r != tuttiSuccess && result == tuttiSuccess) {
      result = r;
      error = tutti::api::threadLastError();
    }
    slowest = std::max(slowest, seconds);
  }
  simInfo->estimatedTime = static_cast<float>(slowest * 1e6);
  if (result != tuttiSuccess) tutti::api::threadLastError() = error;
  return result;
}

TUTTI_API tuttiResult_t tuttiSend(const void* sendbuff, size_t count, tuttiDataType_t datatype,
                                  int peer, tuttiComm_t comm, tuttiStream_t stream) {
  return tutti::api::guarded(comm, "tuttiSend", [&] {
    return issueP2p(true, const_cast<void*>(sendbuff), count, datatype, peer, comm, stream);
  });
}

TUTTI_API tuttiResult_t tuttiRecv(void* recvbuff, size_t count, tuttiDataType_t datatype, int peer,
                                  tuttiComm_t comm, tuttiStream_t stream) {
  return tutti::api::guarded(comm, "tuttiRecv", [&] {
    return issueP2p(false, recvbuff, count, datatype, peer, comm, stream);
  });
}

TUTTI_API tuttiResult_t tuttiRecvAny(void* recvbuff, size_t count, tuttiDataType_t datatype,
                                     int* peer, tuttiComm_t comm, tuttiStream_t stream) {
  return tutti::api::guarded(comm, "tuttiRecvAny", [&] {
    return issueRecvAny(recvbuff, count, datatype, peer, comm, stream);
  });
}

}  // extern "C"
