// C++ wrapper over the whole C API of tutti.h: an RAII communicator, graph, host stream and
// event, every collective, send/recv and groups, with failures thrown as tutti::Error
// (tutti/error.hpp) carrying the result code and the communicator's last error text. Header-only:
// the ABI stays the C one, and nothing here adds behaviour to the C calls.
//
// Buffers are given either as pointer + count + tuttiDataType_t (as in C) or as std::span of
// a supported element type (int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, float,
// double), whose datatype is deduced; counts follow the C functions (per rank where the C
// function takes a per-rank count). Where a span overload takes both buffers it checks their
// sizes against the communicator's size before the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tutti/datatype.hpp"
#include "tutti/error.hpp"
#include "tutti/tutti.h"

namespace tutti {

// Throws Error for any result other than success (and tuttiInProgress, which a non-blocking
// init returns), with tuttiGetLastError(comm)'s text.
inline void check(tuttiResult_t r, tuttiComm_t comm = nullptr) {
  if (r == tuttiSuccess || r == tuttiInProgress) return;
  const char* text = tuttiGetLastError(comm);
  throw Error(r, std::string(tuttiGetErrorString(r)) + ": " + (text ? text : ""));
}

// The tuttiDataType_t of an element type (compile error for others).
template <typename T>
constexpr tuttiDataType_t dataTypeOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, int8_t>)
    return tuttiInt8;
  else if constexpr (std::is_same_v<U, uint8_t>)
    return tuttiUint8;
  else if constexpr (std::is_same_v<U, int16_t>)
    return tuttiInt16;
  else if constexpr (std::is_same_v<U, uint16_t>)
    return tuttiUint16;
  else if constexpr (std::is_same_v<U, int32_t>)
    return tuttiInt32;
  else if constexpr (std::is_same_v<U, uint32_t>)
    return tuttiUint32;
  else if constexpr (std::is_same_v<U, int64_t>)
    return tuttiInt64;
  else if constexpr (std::is_same_v<U, uint64_t>)
    return tuttiUint64;
  else if constexpr (std::is_same_v<U, float>)
    return tuttiFloat32;
  else if constexpr (std::is_same_v<U, double>)
    return tuttiFloat64;
  else
    static_assert(sizeof(T) == 0, "no tutti datatype for this element type");
}

inline tuttiUniqueId uniqueId() {
  tuttiUniqueId id;
  check(tuttiGetUniqueId(&id));
  return id;
}

// tuttiGetVersion: major * 10000 + minor * 100 + patch.
inline int version() {
  int v = 0;
  check(tuttiGetVersion(&v));
  return v;
}

// tuttiAlgorithms: the algorithm names of a collective ("allreduce", ...); throws Error
// (tuttiInvalidArgument) for an unknown collective.
inline std::vector<std::string> algorithms(const std::string& collective) {
  const char* list = tuttiAlgorithms(collective.c_str());
  if (list == nullptr)
    throw Error(tuttiInvalidArgument, "tuttiAlgorithms: unknown collective '" + collective + "'");
  std::vector<std::string> names;
  std::string all(list);
  for (size_t start = 0; start <= all.size();) {
    size_t comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    if (comma > start) names.push_back(all.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

class Graph;

class Comm {
 public:
  Comm() = default;  // empty (no communicator)
  // Takes ownership of a handle made by the C API.
  explicit Comm(tuttiComm_t handle) noexcept : comm_(handle) {}

  static Comm fromEnv(tuttiConfig_t* config = nullptr) {
    Comm c;
    c.init(tuttiCommInitFromEnv(&c.comm_, config));
    return c;
  }
  static Comm fromUniqueId(int nranks, const tuttiUniqueId& id, int rank,
                           tuttiConfig_t* config = nullptr) {
    Comm c;
    c.init(tuttiCommInitRankConfig(&c.comm_, nranks, id, rank, config));
    return c;
  }
  static Comm fromStore(int nranks, int rank, const tuttiStore_t& store,
                        tuttiConfig_t* config = nullptr) {
    Comm c;
    c.init(tuttiCommInitRankStore(&c.comm_, nranks, rank, &store, config));
    return c;
  }
  // mpiComm: the address of an MPI_Comm (tuttiUnsupported without MPI).
  static Comm fromMPI(void* mpiComm, tuttiConfig_t* config = nullptr) {
    Comm c;
    c.init(tuttiCommInitMPI(&c.comm_, mpiComm, config));
    return c;
  }

  Comm(Comm&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  Comm& operator=(Comm&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  // Destroys the communicator; errors of tuttiCommDestroy are not thrown from here (call
  // destroy() to see them).
  ~Comm() { reset(); }

  tuttiComm_t get() const noexcept { return comm_; }
  explicit operator bool() const noexcept { return comm_ != nullptr; }
  // tuttiCommDestroy now, throwing its error (the handle is freed either way).
  void destroy() {
    if (comm_ == nullptr) return;
    tuttiResult_t r = tuttiCommDestroy(std::exchange(comm_, nullptr));
    check(r);  // the communicator is gone: its text is the thread's last error
  }
  // Hands the handle over (the caller destroys it).
  tuttiComm_t release() noexcept { return std::exchange(comm_, nullptr); }

  int rank() const {
    int r = -1;
    check(tuttiCommUserRank(comm_, &r), comm_);
    return r;
  }
  int size() const {
    int n = 0;
    check(tuttiCommCount(comm_, &n), comm_);
    return n;
  }
  Comm split(int color, int key, tuttiConfig_t* config = nullptr) const {
    Comm c;
    check(tuttiCommSplit(comm_, color, key, &c.comm_, config), comm_);
    return c;
  }
  void abort() const { check(tuttiCommAbort(comm_), comm_); }
  // tuttiCommAgreeFailedRanks: the failed ranks every live rank agrees on, ascending.
  std::vector<int> agreeFailedRanks() const {
    std::vector<int> failed(static_cast<size_t>(size()));
    int count = 0;
    check(tuttiCommAgreeFailedRanks(comm_, failed.data(), &count), comm_);
    failed.resize(static_cast<size_t>(count));
    return failed;
  }
  // tuttiCommShrink: a communicator of the ranks not in `exclude` (flags
  // TUTTI_SHRINK_DEFAULT or TUTTI_SHRINK_ABORT).
  Comm shrink(std::vector<int> exclude, int flags = TUTTI_SHRINK_DEFAULT,
              tuttiConfig_t* config = nullptr) const {
    Comm c;
    check(tuttiCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &c.comm_, config,
                          flags),
          comm_);
    return c;
  }
  // The communicator's asynchronous state: tuttiSuccess, tuttiInProgress, or its first
  // failure (returned, not thrown).
  tuttiResult_t asyncError() const {
    tuttiResult_t e = tuttiSuccess;
    check(tuttiCommGetAsyncError(comm_, &e), comm_);
    return e;
  }
  std::string lastError() const {
    const char* t = tuttiGetLastError(comm_);
    return t ? t : "";
  }
  std::string lastAlgorithm() const {
    const char* a = tuttiCommLastAlgorithm(comm_);
    return a ? a : "";
  }
  void setAlgorithm(const std::string& spec) const {
    check(tuttiCommSetAlgorithm(comm_, spec.c_str()), comm_);
  }
  // tuttiCommSetTimeout / tuttiCommGetTimeout: the timeout of the following calls (ms).
  void setTimeout(int timeoutMs) const { check(tuttiCommSetTimeout(comm_, timeoutMs), comm_); }
  int timeoutMs() const {
    int ms = 0;
    check(tuttiCommGetTimeout(comm_, &ms), comm_);
    return ms;
  }
  std::string transports() const {
    const char* t = tuttiCommTransports(comm_);
    return t ? t : "";
  }
  void dumpTrace(const std::string& path) const {
    check(tuttiCommDumpTrace(comm_, path.c_str()), comm_);
  }

  // ---- Collectives, as in C ----
  // stream: NULL blocks until done; a Stream (or its get()) enqueues and returns at once
  // (tutti.h, "Host streams"); a cudaStream_t stages device buffers on it.
  void allReduce(const void* send, void* recv, size_t count, tuttiDataType_t t, tuttiRedOp_t op,
                 tuttiStream_t stream = nullptr) const {
    check(tuttiAllReduce(send, recv, count, t, op, comm_, stream), comm_);
  }
  void broadcast(const void* send, void* recv, size_t count, tuttiDataType_t t, int root,
                 tuttiStream_t stream = nullptr) const {
    check(tuttiBroadcast(send, recv, count, t, root, comm_, stream), comm_);
  }
  void reduce(const void* send, void* recv, size_t count, tuttiDataType_t t, tuttiRedOp_t op,
              int root, tuttiStream_t stream = nullptr) const {
    check(tuttiReduce(send, recv, count, t, op, root, comm_, stream), comm_);
  }
  void allGather(const void* send, void* recv, size_t sendcount, tuttiDataType_t t,
                 tuttiStream_t stream = nullptr) const {
    check(tuttiAllGather(send, recv, sendcount, t, comm_, stream), comm_);
  }
  void reduceScatter(const void* send, void* recv, size_t recvcount, tuttiDataType_t t,
                     tuttiRedOp_t op, tuttiStream_t stream = nullptr) const {
    check(tuttiReduceScatter(send, recv, recvcount, t, op, comm_, stream), comm_);
  }
  void allToAll(const void* send, void* recv, size_t count, tuttiDataType_t t,
                tuttiStream_t stream = nullptr) const {
    check(tuttiAllToAll(send, recv, count, t, comm_, stream), comm_);
  }
  void allGatherV(const void* send, size_t sendcount, void* recv, const size_t* recvcounts,
                  const size_t* displs, tuttiDataType_t t, tuttiStream_t stream = nullptr) const {
    check(tuttiAllGatherV(send, sendcount, recv, recvcounts, displs, t, comm_, stream), comm_);
  }
  void reduceScatterV(const void* send, void* recv, const size_t* recvcounts, const size_t* displs,
                      tuttiDataType_t t, tuttiRedOp_t op, tuttiStream_t stream = nullptr) const {
    check(tuttiReduceScatterV(send, recv, recvcounts, displs, t, op, comm_, stream), comm_);
  }
  void gatherV(const void* send, size_t sendcount, void* recv, const size_t* recvcounts,
               const size_t* displs, tuttiDataType_t t, int root,
               tuttiStream_t stream = nullptr) const {
    check(tuttiGatherV(send, sendcount, recv, recvcounts, displs, t, root, comm_, stream), comm_);
  }
  void scatterV(const void* send, const size_t* sendcounts, const size_t* displs, void* recv,
                size_t recvcount, tuttiDataType_t t, int root,
                tuttiStream_t stream = nullptr) const {
    check(tuttiScatterV(send, sendcounts, displs, recv, recvcount, t, root, comm_, stream), comm_);
  }
  void allToAllV(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                 const size_t* recvcounts, const size_t* rdispls, tuttiDataType_t t,
                 tuttiStream_t stream = nullptr) const {
    check(tuttiAllToAllV(send, sendcounts, sdispls, recv, recvcounts, rdispls, t, comm_, stream),
          comm_);
  }
  void gather(const void* send, void* recv, size_t count, tuttiDataType_t t, int root,
              tuttiStream_t stream = nullptr) const {
    check(tuttiGather(send, recv, count, t, root, comm_, stream), comm_);
  }
  void scatter(const void* send, void* recv, size_t count, tuttiDataType_t t, int root,
               tuttiStream_t stream = nullptr) const {
    check(tuttiScatter(send, recv, count, t, root, comm_, stream), comm_);
  }
  void barrier(tuttiStream_t stream = nullptr) const { check(tuttiBarrier(comm_, stream), comm_); }
  void send(const void* buf, size_t count, tuttiDataType_t t, int peer,
            tuttiStream_t stream = nullptr) const {
    check(tuttiSend(buf, count, t, peer, comm_, stream), comm_);
  }
  void recv(void* buf, size_t count, tuttiDataType_t t, int peer,
            tuttiStream_t stream = nullptr) const {
    check(tuttiRecv(buf, count, t, peer, comm_, stream), comm_);
  }
  // The first message of a send from any peer; returns the sender (with a host stream: the
  // sender is written to *peer when the stream reaches the call, use the C form).
  int recvAny(void* buf, size_t count, tuttiDataType_t t) const {
    int peer = -1;
    check(tuttiRecvAny(buf, count, t, &peer, comm_, nullptr), comm_);
    return peer;
  }
  void allReduceCompressed(const void* send, void* recv, size_t count, tuttiDataType_t t,
                           const std::string& compressor, uint64_t key, bool errorFeedback) const {
    check(tuttiAllReduceCompressed(send, recv, count, t, compressor.c_str(), key,
                                   errorFeedback ? 1 : 0, comm_, nullptr),
          comm_);
  }
  tuttiCompressionStats_t compressionStats() const {
    tuttiCompressionStats_t s{};
    check(tuttiCompressionStats(comm_, &s), comm_);
    return s;
  }
  void compressionResetKey(uint64_t key) const {
    check(tuttiCompressionResetKey(comm_, key), comm_);
  }
  inline void neighborAllReduce(const void* send, void* recv, size_t count, tuttiDataType_t t,
                                const Graph& graph) const;

  // ---- Collectives on spans (datatype deduced) ----
  template <typename T>
  void allReduce(std::span<const T> send, std::span<T> recv, tuttiRedOp_t op) const {
    sameSize(send.size(), recv.size(), "allReduce");
    allReduce(send.data(), recv.data(), recv.size(), dataTypeOf<T>(), op);
  }
  template <typename T>
  void allReduce(std::span<T> inPlace, tuttiRedOp_t op) const {
    allReduce(inPlace.data(), inPlace.data(), inPlace.size(), dataTypeOf<T>(), op);
  }
  template <typename T>
  void broadcast(std::span<T> buf, int root) const {
    broadcast(buf.data(), buf.data(), buf.size(), dataTypeOf<T>(), root);
  }
  // recv is used on the root only (may be empty elsewhere).
  template <typename T>
  void reduce(std::span<const T> send, std::span<T> recv, tuttiRedOp_t op, int root) const {
    if (rank() == root) sameSize(send.size(), recv.size(), "reduce");
    reduce(send.data(), recv.data(), send.size(), dataTypeOf<T>(), op, root);
  }
  // recv holds size() * send.size() elements.
  template <typename T>
  void allGather(std::span<const T> send, std::span<T> recv) const {
    sameSize(send.size() * static_cast<size_t>(size()), recv.size(), "allGather");
    allGather(send.data(), recv.data(), send.size(), dataTypeOf<T>());
  }
  // send holds size() * recv.size() elements.
  template <typename T>
  void reduceScatter(std::span<const T> send, std::span<T> recv, tuttiRedOp_t op) const {
    sameSize(recv.size() * static_cast<size_t>(size()), send.size(), "reduceScatter");
    reduceScatter(send.data(), recv.data(), recv.size(), dataTypeOf<T>(), op);
  }
  // Both hold size() blocks of equal length.
  template <typename T>
  void allToAll(std::span<const T> send, std::span<T> recv) const {
    sameSize(send.size(), recv.size(), "allToAll");
    size_t n = static_cast<size_t>(size());
    if (send.size() % n != 0)
      throw Error(tuttiInvalidArgument, "allToAll: " + std::to_string(send.size()) +
                                            " elements are not " + std::to_string(n) +
                                            " equal blocks");
    allToAll(send.data(), recv.data(), send.size() / n, dataTypeOf<T>());
  }
  template <typename T>
  void send(std::span<const T> buf, int peer) const {
    send(buf.data(), buf.size(), dataTypeOf<T>(), peer);
  }
  template <typename T>
  void recv(std::span<T> buf, int peer) const {
    recv(buf.data(), buf.size(), dataTypeOf<T>(), peer);
  }
  template <typename T>
  int recvAny(std::span<T> buf) const {
    return recvAny(buf.data(), buf.size(), dataTypeOf<T>());
  }

 private:
  // A failed init leaves the handle to destroy (non-blocking init aside) and its text on it.
  void init(tuttiResult_t r) {
    if (r == tuttiSuccess || r == tuttiInProgress) return;
    std::string text = comm_ ? lastError() : "";
    if (text.empty()) {
      const char* t = tuttiGetLastError(nullptr);
      text = t ? t : "";
    }
    reset();
    throw Error(r, std::string(tuttiGetErrorString(r)) + ": " + text);
  }
  static void sameSize(size_t want, size_t got, const char* what) {
    if (want != got)
      throw Error(tuttiInvalidArgument, std::string(what) + ": buffer of " + std::to_string(got) +
                                            " elements where " + std::to_string(want) +
                                            " are needed");
  }
  void reset() noexcept {
    if (comm_ != nullptr) tuttiCommDestroy(comm_);
    comm_ = nullptr;
  }
  tuttiComm_t comm_ = nullptr;
};

// A neighbour graph of a communicator (tuttiGraphCreate / tuttiGraphCreateAdjacent), destroyed
// with the object; it must not outlive its communicator.
class Graph {
 public:
  Graph(const Comm& comm, tuttiGraphKind_t kind, int rows = 0, bool hierarchical = false) {
    check(tuttiGraphCreate(comm.get(), kind, rows, hierarchical ? 1 : 0, &graph_), comm.get());
  }
  // sourceWeights empty: Metropolis-Hastings weights (and selfWeight ignored).
  Graph(const Comm& comm, const std::vector<int>& sources, const std::vector<double>& sourceWeights,
        double selfWeight, const std::vector<int>& destinations) {
    if (!sourceWeights.empty() && sourceWeights.size() != sources.size())
      throw Error(tuttiInvalidArgument, "Graph: " + std::to_string(sourceWeights.size()) +
                                            " weights for " + std::to_string(sources.size()) +
                                            " sources");
    check(tuttiGraphCreateAdjacent(comm.get(), static_cast<int>(sources.size()), sources.data(),
                                   sourceWeights.empty() ? nullptr : sourceWeights.data(),
                                   selfWeight, static_cast<int>(destinations.size()),
                                   destinations.data(), &graph_),
          comm.get());
  }
  Graph(Graph&& o) noexcept : graph_(std::exchange(o.graph_, nullptr)) {}
  Graph& operator=(Graph&& o) noexcept {
    if (this != &o) {
      if (graph_) tuttiGraphDestroy(graph_);
      graph_ = std::exchange(o.graph_, nullptr);
    }
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (graph_) tuttiGraphDestroy(graph_);
  }
  tuttiGraph_t get() const noexcept { return graph_; }

 private:
  tuttiGraph_t graph_ = nullptr;
};

inline void Comm::neighborAllReduce(const void* send, void* recv, size_t count, tuttiDataType_t t,
                                    const Graph& graph) const {
  check(tuttiNeighborAllReduce(send, recv, count, t, graph.get(), comm_, nullptr), comm_);
}

// RAII group: tuttiGroupStart in the constructor, tuttiGroupEnd in end() (which throws its
// error) or, if end() was not called, in the destructor (errors dropped: call end()).
class Group {
 public:
  Group() { check(tuttiGroupStart()); }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  void end() {
    if (open_) {
      open_ = false;
      check(tuttiGroupEnd());
    }
  }
  ~Group() {
    if (open_) tuttiGroupEnd();
  }

 private:
  bool open_ = true;
};

// RAII host stream (tuttiStreamCreate / tuttiStreamDestroy): pass it where a call takes a
// tuttiStream_t (it converts), and the call is enqueued and returns at once. The destructor
// waits for its calls (their errors dropped: call synchronize() to see them).
class Event;
class Stream {
 public:
  Stream() { check(tuttiStreamCreate(&stream_)); }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      if (stream_) tuttiStreamDestroy(stream_);
      stream_ = std::exchange(o.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_) tuttiStreamDestroy(stream_);
  }
  tuttiStream_t get() const noexcept { return stream_; }
  operator tuttiStream_t() const noexcept { return stream_; }
  // Waits for every call enqueued so far; throws the first failure among them.
  void synchronize() const { check(tuttiStreamSynchronize(stream_)); }
  // Whether every call enqueued so far has completed; throws a failure among them.
  bool done() const {
    tuttiResult_t r = tuttiStreamQuery(stream_);
    if (r == tuttiInProgress) return false;
    check(r);
    return true;
  }
  // The stream's later calls wait for the event (tuttiStreamWaitEvent).
  inline void wait(const Event& event) const;
  // fn(userData) runs in the stream's order (tuttiStreamLaunchHostFunc).
  void launchHostFunc(tuttiHostFn_t fn, void* userData) const {
    check(tuttiStreamLaunchHostFunc(stream_, fn, userData));
  }

 private:
  tuttiStream_t stream_ = nullptr;
};

// RAII event (tuttiEventCreate / tuttiEventDestroy): a position in a host stream.
class Event {
 public:
  Event() { check(tuttiEventCreate(&event_)); }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      if (event_) tuttiEventDestroy(event_);
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event_) tuttiEventDestroy(event_);
  }
  tuttiEvent_t get() const noexcept { return event_; }
  // Marks the stream's calls enqueued so far.
  void record(const Stream& stream) { check(tuttiEventRecord(event_, stream.get())); }
  bool done() const {
    tuttiResult_t r = tuttiEventQuery(event_);
    if (r == tuttiInProgress) return false;
    check(r);
    return true;
  }
  void synchronize() const { check(tuttiEventSynchronize(event_)); }

 private:
  tuttiEvent_t event_ = nullptr;
};

inline void Stream::wait(const Event& event) const {
  check(tuttiStreamWaitEvent(stream_, event.get()));
}

}  // namespace tutti
