// c10d::Backend (torch 2.x) over a tutti communicator: the "tutti" torch.distributed backend.
// Every operation is checked on the caller's thread, then runs on the group's tutti host stream
// in issue order (work_stream.h; tensors made contiguous on the way in and copied back on the
// way out), or now when it is synchronous or small and nothing is in flight.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "completion_hooks.h"
#include "monitored_barrier.h"
#include "reached_peers.h"
#include "sync_use.h"
#include "tutti/tutti.h"
#include "work.h"
#include "work_stream.h"

namespace tutti::torch_backend {

// A neighbour-averaging graph of a group's communicator (tuttiGraphCreate), destroyed with the
// last reference (the steps of operations in flight hold one).
struct GraphHandle {
  tuttiGraph_t graph = nullptr;
  GraphHandle() = default;
  GraphHandle(const GraphHandle&) = delete;
  GraphHandle& operator=(const GraphHandle&) = delete;
  ~GraphHandle() { tuttiGraphDestroy(graph); }
};

// One send or receive of a batch (batch_isend_irecv) or of the point-to-point operations
// posted outside one, and the work it returned.
struct P2pOp {
  bool isSend;
  int peer;
  at::Tensor tensor;
  c10::intrusive_ptr<TuttiWork> work;
};

// isend/irecv posted outside a batch with a peer not reached yet (a first contact:
// ReachedPeers) wait here until something needs them -- a wait, a completion poll or a future
// on one of them, or the group's next other operation -- and then run as one tutti group: ranks
// that each post irecv before isend (in any order, any number) complete instead of stalling on
// first contacts that each wait for their peer to connect back (over ibverbs; over shm and tcp
// the library's rounds resolve such a cycle too).
struct PendingP2p {
  std::mutex mu;
  std::vector<P2pOp> ops;
  std::function<void(std::vector<P2pOp>)> submit;  // the group's; cleared when it goes
  void flush();
};

// What every operation's options carry: async_op, and a per-call timeout (torch's
// opts.timeout; unset: the group's).
struct CallOpts {
  bool asyncOp = true;
  std::chrono::milliseconds timeout{0};
  bool runNow = false;  // on the caller's thread, with blocking calls, after what is in flight
};

class ProcessGroupTutti : public c10d::Backend {
 public:
  // Collective over the group's ranks: meets through store (no port of tutti's own).
  // timeoutSeconds bounds every wait of the communicator (torch's group timeout).
  ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    double timeoutSeconds);
  // A group over comm, which it owns from now on (a shrink's or a split's child);
  // commTimeout: comm's timeout, passed on to its own children (0: TUTTI_TIMEOUT). store: the
  // caller's store comm still reaches through (a split's: its parent's), kept alive here.
  ProcessGroupTutti(tuttiComm_t comm, std::chrono::milliseconds commTimeout,
                    c10::intrusive_ptr<c10d::Store> store = {});
  ~ProcessGroupTutti() override;
  // The flight recorder's pg_id of this group (flight_recorder.h).
  uint64_t recorderId() const { return recorderId_; }

  const std::string getBackendName() const override { return "tutti"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  // Sparse COO tensors (sum only): gathered and coalesced as gloo does (sparse_allreduce.h);
  // allreduce passes them here.
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  // monitored_barrier: gloo's, over the group's store (monitored_barrier.h): rank 0 names the
  // first rank that did not arrive within the timeout, or every one with waitAllRanks.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  // batch_isend_irecv / _coalescing_manager: the sends and receives between start and end
  // run as one tutti group; endCoalescing returns the work of the whole batch.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  // torch.distributed._time_estimator: between startTimeEstimate and endTimeEstimate (on one
  // thread) the operations issued on this thread run nothing: their tutti calls are recorded
  // in a tutti group and their works complete at once, tensors untouched; endTimeEstimate
  // returns the cost model's time for them in microseconds (tuttiGroupSimulateEnd). An
  // operation that cannot be recorded (sparse all-reduce, compressed all-reduce) ends the
  // estimate and throws.
  bool supportsTimeEstimation() const override { return true; }
  void startTimeEstimate();
  float endTimeEstimate();
  // Timing of later operations: Work::getDuration (ms from the operation's start to its
  // completion) and the hooks' activeDuration.
  void enableCollectivesTiming() override { timing_ = true; }
  // torch's on-completion hook: called once per later operation with its WorkInfo, on a
  // thread of the group's own (completion_hooks.h). One per group.
  void registerOnCompletionHook(
      std::function<void(std::shared_ptr<c10d::WorkInfo>)>&& hook) override;
  // Waits until every operation issued so far completed and its hook ran.
  void waitForPendingWorks() override;
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
  // The default timeout of wait() for later operations (ms; 0: none).
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  // Ends work in flight on every rank's communicator (tuttiCommAbort); later calls fail.
  void abort() override;
  // Waits for the operations in flight, then destroys the communicator (a collective with the
  // peers).
  void shutdown() override;
  // SUCCESS, TIMEOUT or REMOTE_ERROR from the communicator's first failure.
  c10d::ErrorType getError() override;
  // torch.distributed.shrink_group: the group without ranks_to_exclude (tuttiCommShrink;
  // collective over the other ranks; works after a rank died, this group failed). Work in
  // flight here runs (or fails) first; shrink_flags SHRINK_ABORT (1) aborts it instead.
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranks_to_exclude,
                                           int shrink_flags,
                                           const c10::intrusive_ptr<Options>& opts) override;
  // ProcessGroup.split_group (torch.distributed.split_group, DeviceMesh where a device is
  // bound): every rank of this group calls with its own sorted group of ranks (disjoint across
  // ranks), or ranks without itself to take no part; tuttiCommSplit, no rendezvous. nullptr
  // for a rank that takes no part.
  bool supportsSplitting() const override { return true; }
  // The options a split child starts from: backend "tutti" and the communicator's timeout.
  c10::intrusive_ptr<Options> getBackendOptions() override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;

  // tutti additions (tutti.torch): the compressed all-reduce (sum) of a float tensor.
  c10::intrusive_ptr<c10d::Work> allreduceCompressed(at::Tensor& tensor,
                                                     const std::string& compressor, uint64_t key,
                                                     bool errorFeedback);
  // Neighbour all-reduce: a graph of the group's ranks (tuttiGraphCreate, once the operations in
  // flight completed: collective), and tensor <- W tensor over it, in place
  // (tuttiNeighborAllReduce).
  std::shared_ptr<GraphHandle> makeGraph(int kind, int rows, bool hierarchical);
  c10::intrusive_ptr<c10d::Work> neighborAllreduce(at::Tensor& tensor,
                                                   std::shared_ptr<GraphHandle> graph);
  // The raw C call on the caller's thread (the overhead benchmark's baseline).
  void rawAllreduce(at::Tensor& tensor);
  tuttiComm_t comm() const { return comm_; }
  // Forces algorithms (tuttiCommSetAlgorithm) once the operations in flight completed.
  void setAlgorithm(const std::string& spec);
  std::string lastAlgorithm();
  // Where this group's operations ran so far (work_stream.h).
  WorkStream::Stats streamStats() { return stream_->stats(); }

 private:
  // What names an operation: its type and profiling title for c10d, its name in error texts,
  // and its bytes (kNeverNow: never run at submit).
  struct OpInfo {
    c10d::OpType type;
    const char* title;
    const char* what;
    size_t bytes;
    std::optional<std::vector<at::Tensor>> inputs = std::nullopt;  // profiler (none: outputs)
    bool internal = false;  // a batch's own work: no profiler event, timing or hooks
  };
  // Point-to-point batches never run at submit: the caller may be the one who has to post the
  // matching operation first.
  static constexpr size_t kNeverNow = SIZE_MAX;
  using Issue = std::function<tuttiResult_t(tuttiStream_t)>;
  // While estimating: the operation's calls recorded in the open group, its work complete.
  c10::intrusive_ptr<c10d::Work> recordForEstimate(const OpInfo& op,
                                                   std::vector<at::Tensor> outputs,
                                                   const Issue& issue, bool runsNow);
  // Ends an estimate that met an operation it cannot record, and throws naming it.
  [[noreturn]] void abandonEstimate(const std::string& why);
  template <typename Opts>
  static CallOpts callOpts(const Opts& o) {
    return {o.asyncOp, o.timeout.count() > 0 ? o.timeout : std::chrono::milliseconds(0)};
  }
  // issue with the communicator's timeout set to `timeout` while its calls run.
  Issue withCallTimeout(Issue issue, std::chrono::milliseconds timeout);
  // Runs the operation now on the caller's thread (synchronous or at most inlineBytes_, and
  // nothing in flight; or with a timeout of its own, after what is in flight) or submits it
  // to the stream.
  c10::intrusive_ptr<c10d::Work> enqueue(const OpInfo& op, std::vector<at::Tensor> outputs,
                                         WorkSteps steps, CallOpts call = {});
  // Throws with tutti's error text when r is not tuttiSuccess (marks the group failed).
  void check(tuttiResult_t r, const char* what);
  void drain();
  std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists,
                                   const at::Tensor& like, int root, const char* op,
                                   const char* which) const;

  c10::intrusive_ptr<c10d::Store> store_;
  tuttiStore_t bridge_{};
  tuttiComm_t comm_ = nullptr;
  std::atomic<bool> failed_{false};
  bool destroyed_ = false;
  std::chrono::milliseconds timeout_{0};      // wait()'s default (setTimeout; 0: none)
  std::chrono::milliseconds commTimeout_{0};  // the communicator's (0: TUTTI_TIMEOUT)
  uint64_t sequence_ = 0;
  std::mutex coalesceMu_;
  bool coalescing_ = false;
  bool estimating_ = false;  // between startTimeEstimate and endTimeEstimate
  using P2p = P2pOp;
  std::vector<P2p> batch_;
  std::shared_ptr<PendingP2p> pending_ = std::make_shared<PendingP2p>();
  std::shared_ptr<ReachedPeers> reached_;
  // call(i) for i < n inside one tutti group; the first failure.
  static tuttiResult_t grouped(size_t n, const std::function<tuttiResult_t(size_t)>& call);
  // Submits the batch as one work that completes each operation's own work: as one tutti
  // group, or (asGroup false, one operation) as a lone send or receive, which progresses
  // independently of the ones issued after it.
  c10::intrusive_ptr<c10d::Work> submitBatch(std::vector<P2p> batch, const char* title,
                                             bool asGroup = true);
  // A send or receive posted outside a batch: issued at once to a peer reached before
  // (ReachedPeers), else pending until flushed (PendingP2p).
  c10::intrusive_ptr<c10d::Work> postP2p(bool isSend, int peer, at::Tensor tensor,
                                         c10d::OpType type, const char* title);
  // Waits until every operation issued so far has run (or failed).
  void quiesce();
  // Applies the group's timing and hooks to a new user-visible work and records it in the
  // flight recorder.
  // inputs: none when they are the work's outputs; peer: a send's or receive's (-1: a
  // collective).
  void observe(TuttiWork& work, const char* title,
               const std::optional<std::vector<at::Tensor>>& inputs, int peer);
  std::atomic<uint64_t> collectiveSeq_{0}, p2pSeq_{0}, opId_{0};  // the flight recorder's numbers
  const uint64_t recorderId_ = nextRecorderId();  // the recorder's pg_id of the group
  static uint64_t nextRecorderId() {
    static std::atomic<uint64_t> next{0};
    return next++;
  }
  bool timing_ = false;
  std::shared_ptr<CompletionHooks> hooks_;
  std::unique_ptr<MonitoredBarrier> monitored_;  // with a store of the group's own
  // The communicator config for a child: opts' timeout when given, else this group's.
  std::chrono::milliseconds childTimeout(const c10::intrusive_ptr<Options>& opts) const;
  void startStream();
  size_t inlineBytes_ = 0;
  std::unique_ptr<WorkStream> stream_;
  std::shared_ptr<SyncUse> syncUse_ = std::make_shared<SyncUse>();  // works hold it weakly
};

}  // namespace tutti::torch_backend
