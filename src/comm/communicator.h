// Communicator: a group of ranks, their bootstrap, transports and (lazily made) connections.
// It turns collective calls into schedules (through the tuner and the algorithm registry),
// connects the peers a schedule needs, and runs the schedule with the executor.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/store.h"
#include "comm/call_state.h"
#include "comm/call_tag.h"
#include "comm/comm_options.h"
#include "comm/comm_stores.h"
#include "comm/failure_monitor.h"
#include "comm/inspect_point.h"
#include "comm/membership.h"
#include "comm/p2p_batch.h"
#include "comm/peer_probe.h"
#include "comm/process_failures.h"
#include "comm/rank_place.h"
#include "comm/recovery.h"
#include "comm/shared_window.h"
#include "comm/split_seed.h"
#include "comm/test_die.h"
#include "comm/trace_dump_signal.h"
#include "exec/executor.h"
#include "exec/schedule.h"
#include "interfaces/algorithm.h"
#include "interfaces/transport.h"

namespace tutti {
namespace exec {
class WindowProgram;
}  // namespace exec
class ConnectionSet;
class DeviceAllReduce;
class FusedPlans;
class Planner;
namespace tuning {
struct CostModel;
struct TuneKey;
enum class FitLink;
}  // namespace tuning

class Communicator {
 public:
  // Collective over all ranks: exchanges peer information and sets up the transports. A split
  // child (seed) skips the roll call and the exchange of peer records, which its parent has
  // done, and connects its bootstrap ring without the store.
  Communicator(std::shared_ptr<bootstrap::Store> store, std::string prefix, int rank, int nranks,
               CommOptions options, std::unique_ptr<SplitSeed> seed = nullptr);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const CommOptions& options() const { return options_; }

  // Collectives (host buffers). For in-place calls pass the aliasing NCCL defines.
  void allReduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                 tuttiRedOp_t op);
  // A group's small all-reduces packed into one all-reduce of `count` elements
  // (api/group_fusion.h), tagged by its `members` calls and the digest of their shapes
  // (call_tag.h): ranks whose packed calls differ fail with a mismatch, even where the counts
  // add up alike.
  void packedAllReduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                       tuttiRedOp_t op, size_t members, uint64_t membersDigest);
  void broadcast(const void* send, void* recv, size_t count, tuttiDataType_t dtype, int root);
  void reduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype, tuttiRedOp_t op,
              int root);
  void allGather(const void* send, void* recv, size_t sendcount, tuttiDataType_t dtype);
  void reduceScatter(const void* send, void* recv, size_t recvcount, tuttiDataType_t dtype,
                     tuttiRedOp_t op);
  void allToAll(const void* send, void* recv, size_t count, tuttiDataType_t dtype);
  // count: one rank's block; the root's recv (gather) / send (scatter) holds nranks blocks, the
  // other ranks' is not touched.
  void gather(const void* send, void* recv, size_t count, tuttiDataType_t dtype, int root);
  void scatter(const void* send, void* recv, size_t count, tuttiDataType_t dtype, int root);
  // The V-collectives (nranks counts and displacements in elements, as the C API takes them;
  // CollArgs::counts explains which buffer they describe). Buffers are host memory, any
  // overlap other than the documented in-place layout already resolved by the caller.
  void allGatherV(const void* send, void* recv, std::span<const size_t> counts,
                  std::span<const size_t> displs, tuttiDataType_t dtype);
  void reduceScatterV(const void* send, void* recv, std::span<const size_t> counts,
                      std::span<const size_t> displs, tuttiDataType_t dtype, tuttiRedOp_t op);
  void gatherV(const void* send, void* recv, std::span<const size_t> counts,
               std::span<const size_t> displs, tuttiDataType_t dtype, int root);
  void scatterV(const void* send, void* recv, std::span<const size_t> counts,
                std::span<const size_t> displs, tuttiDataType_t dtype, int root);
  void allToAllV(const void* send, std::span<const size_t> sendCounts,
                 std::span<const size_t> sendDispls, void* recv, std::span<const size_t> recvCounts,
                 std::span<const size_t> recvDispls, tuttiDataType_t dtype);
  void barrier();
  // The cost model's time (seconds) of a collective of these arguments on this communicator
  // (Planner::estimate) and of a batch of sends and receives; local, nothing runs. Before the
  // first collective has made the shared window, as if it had the window this communicator
  // would make.
  double estimateCollective(algo::Coll coll, size_t count, tuttiDataType_t dtype, tuttiRedOp_t op,
                            int root);
  double estimateP2p(std::span<const P2pOp> ops);
  // All-reduce of CUDA device buffers enqueued on `stream` (a cudaStream_t) and run on the
  // device without staging (device_allreduce.h), for ranks that all share one host. The first
  // call sets the path up (collective); false, on every rank alike, when it cannot serve this
  // communicator: the caller then stages the call through host memory.
  bool allReduceDevice(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                       tuttiRedOp_t op, void* stream);
  // One collective of a fused group: an all-reduce, all-gather, reduce-scatter or all-to-all
  // (count as the single call takes it) on host buffers; op is the caller's (tuttiAvg divides
  // after the call).
  struct FusedCall {
    algo::Coll coll = algo::Coll::kAllReduce;
    const void* send = nullptr;
    void* recv = nullptr;
    size_t count = 0;
    tuttiDataType_t dtype = tuttiFloat32;
    tuttiRedOp_t op = tuttiSum;
  };
  // Runs the calls as one collective call whose schedule interleaves theirs round by round
  // (comm/fused_plans.h), with the results of the calls one after another, provided that no
  // call reads or writes what another writes. Returns false having run nothing when they
  // cannot be fused (another collective, more than FusedPlans::kMaxRanks ranks, a member
  // with no algorithm that merges): the caller runs them one by one. membersDigest: a
  // ShapeDigest of what the calls stand for where a member packs several (0: nothing more than
  // their shapes); the call's tag covers it with the members' shapes.
  bool fusedCollectives(std::span<const FusedCall> calls, uint64_t membersDigest = 0);
  // The collectives fusedCollectives takes.
  static bool fusible(algo::Coll c) {
    return c == algo::Coll::kAllReduce || c == algo::Coll::kAllGather ||
           c == algo::Coll::kReduceScatter || c == algo::Coll::kAllToAll;
  }
  // Neighbour all-reduce (algorithms/neighbor.cc): x <- W x over `graph` (nodes = ranks, or
  // hosts when hierarchical), at the graph's call `step`. graphId names the graph for the
  // schedule cache (same id, same graph).
  void neighborAllReduce(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                         const algo::NeighborGraph& graph, bool hierarchical, uint64_t graphId,
                         uint64_t step);
  // Hosts the ranks are on (the nodes of a hierarchical neighbour graph).
  int hostCount() const;
  // Runs point-to-point operations together (a group, or a single call).
  void runP2p(std::span<const P2pOp> ops);
  // Runs point-to-point operations (none to or from this rank itself) together as runP2p does,
  // and takes in more while they run (exec::executeOpenRound): more(ops) appends operations
  // and returns whether it did; it is asked between progress passes and once more before the
  // call returns. wakeFd (-1: none) is readable when `more` may have some.
  void runP2pOpen(std::span<const P2pOp> first,
                  const std::function<bool(std::vector<P2pOp>&)>& more, int wakeFd);
  // Receives the first point-to-point message to arrive from any peer (tuttiRecvAny) into
  // `buffer` (`bytes`, which the message must have: otherwise tuttiInvalidUsage, and the
  // message stays for a receive of its size); returns the sender. Looks at the head of every
  // connection, and connects the peers that announced a first contact to this rank (sends
  // announce one in the store before they connect); a collective's message at a head is left
  // for its collective. tuttiTimeout after the communicator's timeout.
  int recvAny(std::byte* buffer, size_t bytes);

  std::unique_ptr<Communicator> split(int color, int key, CommOptions options);

  // Recovery after failures (comm/recovery.h; docs/reliability.md). Neither needs the
  // communicator's store nor the excluded or failed ranks: they meet at the standby store of
  // their lowest rank (bootstrap/standby.h), which every rank published at init.
  //
  // The communicator of the ranks not in `exclude` (renumbered in order), made by exactly
  // those ranks; its store is the standby store of the lowest of them (`server` holds it on
  // that rank). abortFirst (TUTTI_SHRINK_ABORT): revoke() this communicator first. Throws
  // tuttiInvalidArgument on a bad list, tuttiInvalidUsage when the ranks' lists differ,
  // tuttiRemoteError naming a rank not excluded that has failed.
  struct Shrunk {
    std::unique_ptr<Communicator> comm;
    std::shared_ptr<bootstrap::Store> store;
    std::shared_ptr<void> server;  // non-null on the new rank 0
  };
  Shrunk shrink(std::span<const int> exclude, bool abortFirst, CommOptions options);
  // The ranks that have failed, ascending, the same list on every rank that returns: the
  // ranks that did not take part, found dead by their standby address refusing connections
  // (or not answering). Collective over the ranks alive; a live rank that does not call
  // within the timeout is a tuttiTimeout naming it.
  std::vector<int> agreeFailedRanks();
  // Ends the calls in progress on other threads (they fail) and fails every later call, as
  // abort() does, without aborting the store (split siblings share it).
  void revoke();

  // Before destruction: tells the store this rank is done with it, and on the rank that
  // serves the store waits (bounded) until every rank is, so no request is cut off.
  void leave();
  // Non-blocking, any thread.
  void abort();
  bool aborted() const { return monitor_->aborted(); }
  // After a failure that leaves the ranks out of step (mismatched collective calls): every
  // later call fails at once with this cause, and the connections are closed so the peers
  // see an error too. tuttiSuccess / "" while none.
  tuttiResult_t failure() const { return monitor_->failure(); }
  std::string failureText() const { return monitor_->failureText(); }

  const char* lastAlgorithm() const { return calls_.lastAlgorithm(); }
  // Forces algorithms for the following calls (TUTTI_ALGO syntax, names checked here); an
  // empty spec restores the communicator's own (its config's algo, else TUTTI_ALGO at init).
  void setAlgorithm(const std::string& spec);
  // The timeout of the following calls (every wait, setup and rendezvous included).
  void setTimeout(double seconds);
  double timeoutSeconds() const { return options_.timeoutSec; }
  std::string transportsInUse() const;
  // The flight recorder's text: the last calls, oldest first (any thread).
  std::string traceText() const;
  std::string describePeer(int peer) const;

 private:
  // The constructor's steps. meetMembers: the Membership (exchanged over the bootstrap, or the
  // split seed's), the peer probe and the bootstrap's callbacks. makeExecOptions: the
  // executor's options and the call watch. setupLinks: the connection set and its transports'
  // setup (their waits watch the peers being connected).
  void meetMembers(std::unique_ptr<SplitSeed> seed, const RankPlace& myPlace,
                   const Deadline& deadline);
  // Registers with the process's tutti-inspect responder (TUTTI_INSPECT; inspect_).
  void startInspectPoint();
  void makeExecOptions();
  void setupLinks(const RankPlace& myPlace);
  void collective(algo::CollArgs args, const void* send, void* recv, size_t outputAvgElems,
                  size_t outputAvgOffsetElems, bool applyAvg);
  // All-to-all-v across hosts (algo::hostSendCountsExchange): the send counts of every
  // member of this rank's host, inside the running call.
  std::vector<size_t> hostSendCounts(const algo::CollArgs& args);
  void ensureWindow();
  void checkSameCall(const CallTag& mine);
  // Inside a running call (its tag): every rank's `count` elements of `mine`, in rank order,
  // into `all` (a bruck all-gather built here, outside the planner: never refined or mutated).
  void allGatherInCall(const void* mine, void* all, size_t count, tuttiDataType_t dtype);
  // Self-tuning (self_tuning_calls.cc): rank 0 publishes its host's tuning cache before the
  // setup barrier, every rank starts from that text after it; calibrate() at the first
  // collective call; refine() after each call online refinement has not settled;
  // maxOverRanks: every rank's values, the maximum of each (allGatherInCall).
  void publishTuningCache(const RankPlace& myPlace);
  void startSelfTuning(const RankPlace& myPlace, const Deadline& deadline);
  void calibrate();
  // One calibration of `link`: measures, fits and writes the calibrated model to *m (left as
  // it was when the fit is out of range: then false) and a one-line summary to *summary.
  bool measureAndFit(tuning::FitLink link, tuning::CostModel* m, std::string* summary);
  // Calibration's calls, each owning its buffers: the ring all-reduce of `count` floats, and
  // the direct all-reduce through the shared window (empty without a window or where direct
  // does not apply); the call's args in *args.
  std::function<void()> ringAllReduceCall(size_t count, algo::CollArgs* args);
  std::function<void()> windowAllReduceCall(size_t count, algo::CollArgs* args);
  void refine(const tuning::TuneKey& key, int sample, double seconds);
  std::vector<double> maxOverRanks(const std::vector<double>& mine);
  // Runs one collective call as `tag`: records it in the flight recorder, checks it across
  // ranks under TUTTI_CHECK_CALLS, gives its messages the tag, and turns a failure into the
  // communicator's failed state (rethrowCallFailure).
  template <typename Run>
  void runTaggedCall(const CallTag& tag, const char* algorithm, Run&& run) {
    monitor_->trace().begin(tag, algorithm);
    try {
      if (options_.checkCalls && nranks_ > 1) checkSameCall(tag);
      window_.writeTag(tag);
      calls_.executing(tag, run);
    } catch (const Error&) {
      rethrowCallFailure();
    }
    monitor_->trace().end(true);
  }
  // In a catch block: a failure inside a running call leaves the ranks out of step (mismatch,
  // dead or failed peer, timeout, a message size the call did not expect, a connection that
  // could not be made) and fails the communicator (failWith); a peer failure is rethrown naming the
  // rank that failed first (from the peer's failure record when it has one).
  [[noreturn]] void rethrowCallFailure();
  // Records the failure (FailureMonitor::record: later calls fail with it, the peers can read
  // it) and then closes the connections and marks the shared window failed.
  void failWith(tuttiResult_t code, const std::string& text, int firstFailed);
  // Registers this communicator's failure records with ProcessFailures (processRecords_).
  void shareFailureRecords();
  // Whether an algorithm spec (TUTTI_ALGO syntax) leaves all-reduce to the automatic choice.
  static bool allReduceAutomatic(const std::string& spec);
  // An all-reduce over the window's line slots (exec/line_allreduce.h): as a call of its own
  // (the automatic choice), or inside a planned call whose schedule asks for it.
  // The peer and size of the first point-to-point message found at a connection's head
  // (recvAny); waits for one.
  std::pair<int, size_t> waitAnyP2pMessage();
  // Connects the peers not connected yet that announced a first contact to this rank
  // (announceP2pContact); whether there were any.
  bool connectAnnouncedPeers();
  // Writes the first-contact notices of this rank's point-to-point operations to `peers` not
  // connected yet (recvAny on those peers looks for them).
  void announceP2pContact(std::span<const int> peers);
  void runLineCall(const algo::CollArgs& args, const void* send, void* recv, tuttiRedOp_t userOp);
  void runLine(const algo::CollArgs& args, const void* send, void* recv);
  // A collective as the planner plans it (collective() without the line all-reduce and avg).
  void plannedCollective(algo::CollArgs& args, const void* send, void* recv, tuttiRedOp_t userOp);
  void connect(std::span<const int> peers);
  void execute(const exec::Schedule& schedule, std::span<std::byte* const> buffers);
  void execute(const exec::Schedule& schedule, std::span<const int> peers,
               std::span<std::byte* const> buffers);
  // The schedule's window program where it has one (Planner::Planned::program), else the
  // schedule over its peers.
  void execute(const exec::Schedule& schedule, std::span<const int> peers,
               const exec::WindowProgram* program, std::span<std::byte* const> buffers);
  // The execution options of the call about to run (window, call tag); fails when aborted.
  const exec::ExecOptions& callOptions();
  algo::CollArgs baseArgs(algo::Coll coll, size_t count, tuttiDataType_t dtype) const;
  // Whether ranks like these make a shared window at their first collective (ensureWindow).
  bool windowWanted() const;
  // The shared window's chunk for the direct algorithms, also before the window is made.
  size_t estimatedWindowChunk() const;

  // The store it was made from, its prefixed view, the transports' watched view, split names.
  CommStores stores_;
  int rank_;
  int nranks_;
  int anySourceFirst_ = 0;  // the peer recvAny looks at first (rotates: none is starved)
  CommOptions options_;
  std::string initialAlgo_;  // options_.algo as made at init (setAlgorithm("") restores it)
  // options_.algo leaves all-reduce automatic (allReduceAutomatic): small ones on one host
  // run as line all-reduces.
  bool lineAllReduceAuto_ = true;
  std::set<size_t> lineLogged_;  // counts whose line all-reduce was logged (TUNING at INFO)
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  // Who the ranks are (peers, places, hosts, ring order, standby addresses); made once.
  std::shared_ptr<const Membership> membership_;
  std::unique_ptr<ConnectionSet> links_;  // transports and lazily made connections
  // Abort, the failure that ended the communicator, the flight recorder, failure records.
  std::unique_ptr<FailureMonitor> monitor_;
  std::unique_ptr<Planner> planner_;   // algorithm choice, schedules and their caches
  std::unique_ptr<FusedPlans> fused_;  // fused groups' merged schedules
  // The shared window (made at the first collective), its bookkeeping and tag slots.
  SharedWindow window_;
  CallState calls_;  // call numbers, the call running, its watch and scratch, last algorithm
  std::unique_ptr<PeerProbe> probe_;  // which ranks are gone (by pid here, standby elsewhere)
  // This communicator's failure records, readable by the process's other communicators
  // (ProcessFailures); after monitor_ and membership_, so it goes before them.
  ProcessFailures::Registration processRecords_;
  // The flight recorder on TUTTI_DUMP_SIGNAL (none when off); before monitor_'s end too.
  TraceDumpSignal::Registration dumpOnSignal_;
  // What tutti-inspect hears of this communicator (null with TUTTI_INSPECT=0); before
  // monitor_'s end, which it reads.
  std::unique_ptr<InspectPoint> inspect_;
  // This rank's standby store, shrink's meeting and the agreement on failed ranks.
  std::unique_ptr<Recovery> recovery_;
  exec::ExecOptions execOptions_;  // made once; window and callTag set per call
  // The direct device all-reduce, set up at the first device all-reduce (null when it
  // declined); last, so it goes first and still reports to the monitor while it waits.
  bool deviceTried_ = false;
  std::unique_ptr<DeviceAllReduce> device_;
};

}  // namespace tutti
