#include "comm/communicator.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <utility>

#include "bootstrap/unique_id.h"
#include "comm/connecting_records.h"
#include "comm/connection_set.h"
#include "comm/device_allreduce.h"
#include "comm/failure_attribution.h"
#include "comm/failure_monitor.h"
#include "comm/fused_plans.h"
#include "comm/membership.h"
#include "comm/membership_report.h"
#include "comm/peer_probe.h"
#include "comm/planner.h"
#include "comm/rank_place.h"
#include "comm/shared_window.h"
#include "comm/transport_registry.h"
#include "common/dtype.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "exec/executor.h"
#include "exec/window_program.h"
#include "reduce/reduce.h"
#include "topology/binding.h"
#include "tuning/tuner.h"

namespace tutti {

namespace {

// TUTTI_BIND: the first communicator of the process binds it (later ones, possibly over a
// subset of ranks with other local indices, keep that binding).
void bindOnce(const std::string& bind, const std::vector<int>& hostOf, int rank) {
  static std::once_flag once;
  std::call_once(once, [&] {
    topo::BindMode mode = topo::parseBindMode(bind);
    if (mode == topo::BindMode::kNone) return;
    int local = 0, localRanks = 0;
    for (int r = 0; r < static_cast<int>(hostOf.size()); ++r) {
      if (hostOf[r] != hostOf[rank]) continue;
      if (r < rank) ++local;
      ++localRanks;
    }
    topo::CpuLayout layout = topo::liveCpuLayout();
    auto plan = topo::planBinding(layout, localRanks, mode);
    if (plan.empty()) return;
    const topo::Binding& b = plan[local];
    topo::applyBinding(b.cpus);
    TUTTI_INFO(kInit, "TUTTI_BIND=" << topo::bindModeName(mode) << ": local rank " << local << "/"
                                    << localRanks << " bound to NUMA node " << b.nodeOsIndex
                                    << ", CPUs " << topo::cpuListString(b.cpus));
  });
}

// While connections are made (waits in the watched store and in the transports' setup):
// throws exec::PeerFailure naming a peer that is gone (PeerProbe: the peers being connected and
// a slice of the others on this host by pid, the peers being connected elsewhere at their
// standby addresses) or that gave up on its own side (ConnectingRecords: its failure record),
// and tells the call watch which peers have not connected yet (a mismatch shows there).
void watchConnecting(PeerProbe& probe, ConnectingRecords& records, const ConnectionSet& links,
                     CallWatch* watch) {
  std::span<const int> connecting = links.connecting();
  probe.checkLocal(connecting);
  records.check(connecting);
  if (watch)
    for (int r : connecting) watch->stalledOn(r);
  probe.checkRemote(connecting);
}

}  // namespace

void testDieAt(const char* phase, int rank) {
  std::string spec = env::getString("TUTTI_TEST_DIE_AT");
  if (spec.empty()) return;
  if (spec == std::string(phase) + ":" + std::to_string(rank)) ::raise(SIGKILL);
}

Communicator::Communicator(std::shared_ptr<bootstrap::Store> store, std::string prefix, int rank,
                           int nranks, CommOptions options, std::unique_ptr<SplitSeed> seed)
    : stores_(std::move(store), std::move(prefix)),
      rank_(rank),
      nranks_(nranks),
      options_(std::move(options)),
      initialAlgo_(options_.algo) {
  TUTTI_CHECK_ARG(nranks >= 1, "nranks must be >= 1 (got ", nranks, ")");
  TUTTI_CHECK_ARG(rank >= 0 && rank < nranks, "rank ", rank, " out of range [0, ", nranks, ")");
  // Settings that would otherwise be ignored silently are errors before any rendezvous.
  std::string unknown = tuning::unknownAlgorithmItem(options_.algo);
  TUTTI_CHECK_ARG(unknown.empty(), options_.algoFrom, "='", options_.algo,
                  "': no algorithm matches '", unknown, "' (tutti-info lists them)");
  // TUTTI_TOPO_FILE / TUTTI_TOPO_DEVICE errors before any rendezvous.
  const RankPlace myPlace = describeLocalPlace();
  checkCommOptions(options_);
  lineAllReduceAuto_ = allReduceAutomatic(options_.algo);
  log::setThreadRank(rank_);
  monitor_ = std::make_unique<FailureMonitor>(stores_.own(), rank_, nranks_,
                                              static_cast<size_t>(options_.traceCalls),
                                              options_.traceFile, options_.name);
  bootstrap_ = std::make_unique<bootstrap::Bootstrap>(stores_.own(), rank_, nranks_, "bs",
                                                      seed ? (seed->ring != nullptr) : -1);
  startInspectPoint();
  Deadline deadline(options_.timeoutSec);
  meetMembers(std::move(seed), myPlace, deadline);
  logPlacement(*membership_, stores_.prefix());
  shareFailureRecords();
  if (int signo = TraceDumpSignal::parse(options_.dumpSignal); signo != 0)
    dumpOnSignal_ = TraceDumpSignal::add(
        signo, [monitor = monitor_.get()](const std::string& cause) { monitor->dumpTrace(cause); });
  planner_ = std::make_unique<Planner>(topologyCostModel(*membership_), membership_->hosts);
  fused_ = std::make_unique<FusedPlans>();
  bindOnce(options_.bind, membership_->hostOf, rank_);
  makeExecOptions();
  setupLinks(myPlace);
  publishTuningCache(myPlace);
  // Everyone has set up its transports (listening sockets published) before anyone connects.
  testDieAt("setup", rank_);
  bootstrap_->barrier("setup", deadline);
  startSelfTuning(myPlace, deadline);
  TUTTI_INFO(kInit, "communicator " << options_.name << " rank " << rank_ << "/" << nranks_
                                    << " ready, " << membership_->hosts << " host(s)");
}

void Communicator::meetMembers(std::unique_ptr<SplitSeed> seed, const RankPlace& myPlace,
                               const Deadline& deadline) {
  const bool reorder = options_.topoReorder;
  std::unique_ptr<bootstrap::StandbyStore> standby;
  if (seed) {
    TUTTI_ASSERT(static_cast<int>(seed->peers.size()) == nranks_);
    membership_ = std::make_shared<const Membership>(
        membershipFromRecords(rank_, std::move(seed->peers), std::move(seed->places),
                              std::move(seed->standbyOf), reorder));
    standby = std::move(seed->myStandby);
    if (seed->ring) bootstrap_->adoptRing(std::move(*seed->ring), seed->nextRing);
    testDieAt("split", rank_);
  } else {
    transport::PeerInfo me = localPeerInfo(rank_);
    if (inspect_) me.inspect = inspect_->address();
    // A rank claimed twice or a disagreement on nranks fails here, naming them.
    bootstrap_->join("host " + me.hostname + ", pid " + std::to_string(me.pid), deadline);
    standby = openStandby(*stores_.own());
    std::string myStandby = standby ? standby->address().encode() : std::string();
    membership_ = std::make_shared<const Membership>(
        exchangeMembership(*bootstrap_, me, myStandby, myPlace, reorder, deadline));
    if (inspect_ && rank_ == 0) inspect_->writeJobFile(options_.inspectDir, membership_->peers);
  }
  probe_ = std::make_unique<PeerProbe>(membership_);
  recovery_ = std::make_unique<Recovery>(rank_, membership_, *probe_, std::move(standby));
  bootstrap_->setDescribe([m = membership_](int r) { return m->describe(r); });
  // Bootstrap waits on the ring name a rank on this host that died before it arrived.
  bootstrap_->setWatch(
      [p = probe_.get()] { return p->sweepLocal(); },
      [p = probe_.get()](int r, const std::string& how) { throw p->diedError(r, how.c_str()); });
}

void Communicator::startInspectPoint() {
  if (!options_.inspect) return;
  try {
    std::string host = stores_.own()->localHost();
    if (host.empty()) host = bootstrap::advertisedAddress().host();
    inspect_ = std::make_unique<InspectPoint>(options_.name, rank_, nranks_, monitor_.get(), host);
  } catch (const Error& e) {
    TUTTI_WARN(kInit, "tutti-inspect cannot reach this rank: " << e.what());
  }
}

void Communicator::makeExecOptions() {
  long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const bool oversubscribed = membership_->ranksOnHostOf(rank_) > cores;
  // Direct chunks: small (in cache) when every rank has a core; the whole window otherwise
  // (each phase is a barrier of all ranks, costly when they share cores). Same on every rank:
  // ranks of one host see the same core count.
  window_.setMaxChunk(
      oversubscribed ? 0 : static_cast<size_t>(std::max<int64_t>(4096, options_.chunkBytes)));
  execOptions_.rank = rank_;
  execOptions_.timeoutSec = options_.timeoutSec;
  execOptions_.spinUs = static_cast<double>(options_.spinUs);
  execOptions_.spinYield =
      options_.spinYield == "auto" ? oversubscribed : options_.spinYield == "1";
  if (options_.spinYield == "auto" && !oversubscribed)
    execOptions_.yieldAboveCalls =
        static_cast<int>(cores / std::max(1, membership_->ranksOnHostOf(rank_)));
  execOptions_.describeCall = [](const CallTag& t) { return describeCallTag(t); };
  execOptions_.sameCallNumber = [](const CallTag& a, const CallTag& b) {
    return collectiveCallNumber(a) != 0 && collectiveCallNumber(a) == collectiveCallNumber(b);
  };
  execOptions_.aborted = monitor_->abortFlag();
  execOptions_.abortFd = monitor_->abortFd();
  execOptions_.describePeer = [m = membership_](int p) { return m->describeRank(p); };
  calls_.startWatch(stores_.own().get(), rank_, &monitor_->trace(), execOptions_.describePeer);
  execOptions_.onStall = [watch = calls_.watch(), inspect = inspect_.get(),
                          trace = &monitor_->trace()](int p, const std::string& step) {
    trace->stalled(transport::WaitPolicy::kStallReportSec);
    if (inspect) inspect->stalledOn(p, step);
    watch->stalledOn(p);
  };
}

void Communicator::setupLinks(const RankPlace& myPlace) {
  links_ = std::make_unique<ConnectionSet>(rank_, nranks_, makeTransports(options_.transport),
                                           options_.transport, execOptions_.describePeer);
  auto watch = [probe = probe_.get(), links = links_.get(), calls = calls_.watch(),
                records = std::make_shared<ConnectingRecords>(monitor_.get(), rank_,
                                                              execOptions_.describePeer)] {
    watchConnecting(*probe, *records, *links, calls);
  };
  transport::Context ctx{rank_,
                         nranks_,
                         membership_->peers,
                         stores_.watched(watch),
                         monitor_->abortFlag(),
                         myPlace.nearNics,
                         watch,
                         {}};
  // Setup all-gathers (the shared window's) around the bootstrap ring where there is one;
  // without it they stay in the watched store, whose waits watch the peers.
  if (bootstrap_->usesRing())
    ctx.allGather = [bs = bootstrap_.get()](const std::string& tag, std::span<const std::byte> mine,
                                            const Deadline& deadline) {
      return bs->allGather(tag, mine, deadline);
    };
  links_->setup(ctx);
}

Communicator::~Communicator() { links_.reset(); }

bool Communicator::allReduceAutomatic(const std::string& spec) {
  return tuning::forcedAlgorithm(spec, algo::Coll::kAllReduce).name.empty();
}

void Communicator::shareFailureRecords() {
  processRecords_ = ProcessFailures::instance().add(
      [monitor = monitor_.get(), m = membership_](
          const ProcessFailures::Process& by) -> std::optional<ProcessFailures::Finding> {
        const int r = m->rankOfProcess(by.hostId, by.pid);
        if (r < 0 || r == m->rank) return std::nullopt;
        auto record = monitor->recordOf(r);
        if (!record || record->first < 0 || record->first >= m->size()) return std::nullopt;
        return ProcessFailures::Finding{processOf(*m, record->first), record->text};
      });
}

void Communicator::revoke() { monitor_->revoke(); }

Communicator::Shrunk Communicator::shrink(std::span<const int> exclude, bool abortFirst,
                                          CommOptions options) {
  log::setThreadRank(rank_);
  std::vector<int> survivors = recovery_->survivorsWithout(exclude);
  if (abortFirst) revoke();
  Deadline deadline(options.timeoutSec);
  Recovery::Meeting meeting = recovery_->meetSurvivors(std::move(survivors), exclude, deadline);
  testDieAt("shrink", rank_);
  Shrunk result{nullptr, meeting.store, meeting.server};
  recovery_->buildWatched(meeting, [&] {
    result.comm =
        std::make_unique<Communicator>(meeting.store, meeting.prefix, meeting.newRank,
                                       static_cast<int>(meeting.survivors.size()), options);
  });
  return result;
}

std::vector<int> Communicator::agreeFailedRanks() {
  log::setThreadRank(rank_);
  return recovery_->agreeFailedRanks(Deadline(options_.timeoutSec));
}

void Communicator::abort() {
  revoke();
  // Peers waiting on this rank's window fail now, as after a failure ("gave up"), instead of
  // when this process exits or at their timeout.
  window_.markFailed();
  if (bootstrap_) bootstrap_->abort();
}

void Communicator::rethrowCallFailure() {
  try {
    throw;
  } catch (const exec::CallMismatch& e) {
    monitor_->trace().end(false);
    failWith(e.code(), e.what(), rank_);
    throw;
  } catch (const exec::PeerFailure& e) {
    FailureVerdict verdict =
        attributePeerFailure(e, *monitor_, *probe_, *membership_, processRecords_);
    monitor_->trace().end(false);
    failWith(tuttiRemoteError, verdict.text, verdict.first);
    throw Error(tuttiRemoteError, verdict.text);
  } catch (const Error& e) {
    if (e.code() == tuttiTimeout) {
      int silent = -1;
      // The peers time out about now too and report within a second; a call with a short
      // timeout (a monitored barrier's 0) waits for them as long as its own timeout, 50 ms
      // at least.
      const double waitSec = std::min(1.0, std::max(0.05, options_.timeoutSec));
      std::string text =
          std::string(e.what()) + "; " + monitor_->gatherCallStates(&silent, waitSec);
      if (silent >= 0) text += " (the first rank to fail: " + std::to_string(silent) + ")";
      monitor_->trace().end(false);
      failWith(e.code(), text, silent >= 0 ? silent : rank_);
      throw Error(tuttiTimeout, text);
    }
    monitor_->trace().end(false);
    // Any other failure inside a running call (a size the peer's message does not match, a
    // connection this rank could not set up) leaves the ranks out of step too: the peers may
    // wait on this rank in this call or the next. Failing the communicator releases them with
    // an error naming this rank instead of a wait for the timeout (issue 68 F3, F5).
    failWith(e.code(), e.what(), rank_);
    throw;
  }
}

std::string Communicator::traceText() const { return monitor_->traceText(); }

void Communicator::failWith(tuttiResult_t code, const std::string& text, int firstFailed) {
  // The record first, then the connections: a peer that sees them close can read why.
  if (!monitor_->record(code, text, firstFailed)) return;
  if (firstFailed >= 0 && firstFailed != rank_ && firstFailed < nranks_)
    ProcessFailures::instance().noteVerdict(processOf(*membership_, firstFailed), text);
  // The peers may still wait on this rank in this call or the next: closing the connections
  // and marking the shared window failed turn their waits into errors naming this rank
  // instead of a timeout, or a success with data from another call.
  window_.markFailed();
  if (links_) links_->closeAll();
}

void Communicator::leave() {
  if (monitor_->aborted() || !bootstrap_) return;
  try {
    bootstrap_->leave(Deadline(std::min(options_.timeoutSec, 10.0)));
    // Every rank is done with this communicator's keys (the bootstrap's and the transports'
    // published addresses); a child of split keeps its own, under another prefix.
    if (rank_ == 0) stores_.own()->erasePrefix("");
  } catch (const Error& e) {
    TUTTI_INFO(kInit, "rank " << rank_ << ": leaving the store: " << e.what());
  }
}

std::string Communicator::describePeer(int peer) const { return membership_->describeRank(peer); }

void Communicator::connect(std::span<const int> peers) {
  if (!links_->needsConnection(peers)) return;
  testDieAt("connect", rank_);
  links_->connect(peers, options_.timeoutSec);
}

std::string Communicator::transportsInUse() const { return links_->inUse(); }

void Communicator::execute(const exec::Schedule& schedule, std::span<std::byte* const> buffers) {
  std::vector<int> peers = exec::peersOf(schedule);
  execute(schedule, peers, buffers);
}

void Communicator::execute(const exec::Schedule& schedule, std::span<const int> peers,
                           std::span<std::byte* const> buffers) {
  const exec::ExecOptions& options = callOptions();
  if (!peers.empty()) connect(peers);
  exec::execute(schedule, buffers, links_->table(), options);
}

void Communicator::execute(const exec::Schedule& schedule, std::span<const int> peers,
                           const exec::WindowProgram* program,
                           std::span<std::byte* const> buffers) {
  if (program)
    program->run(buffers, callOptions());
  else
    execute(schedule, peers, buffers);
}

const exec::ExecOptions& Communicator::callOptions() {
  monitor_->throwIfFailed();
  window_.fill(execOptions_);
  execOptions_.callTag = calls_.current();
  return execOptions_;
}

algo::CollArgs Communicator::baseArgs(algo::Coll coll, size_t count, tuttiDataType_t dtype) const {
  algo::CollArgs a = placedArgs(*membership_);
  a.coll = coll;
  a.count = count;
  a.dtype = dtype;
  a.deterministic = options_.deterministic;
  return a;
}

void Communicator::setAlgorithm(const std::string& spec) {
  std::string unknown = tuning::unknownAlgorithmItem(spec);
  TUTTI_CHECK_ARG(unknown.empty(), "algorithm spec '", spec, "': no algorithm matches '", unknown,
                  "' (tutti-info lists them)");
  const std::string& next = spec.empty() ? initialAlgo_ : spec;
  options_.algo = next;  // the planner plans again when the spec differs
  lineAllReduceAuto_ = allReduceAutomatic(options_.algo);
}

void Communicator::setTimeout(double seconds) {
  TUTTI_CHECK_ARG(seconds > 0, "timeout must be positive (got ", seconds, " s)");
  options_.timeoutSec = seconds;
  execOptions_.timeoutSec = seconds;
}

// TUTTI_CHECK_CALLS: an all-gather of every rank's call tag before the call itself.
void Communicator::allGatherInCall(const void* mine, void* all, size_t count,
                                   tuttiDataType_t dtype) {
  algo::CollArgs a = baseArgs(algo::Coll::kAllGather, count, dtype);
  exec::Schedule s = algo::find(algo::Coll::kAllGather, "bruck")->build(a);
  std::vector<std::byte> tmp(s.scratchBytes);
  std::byte* buffers[3] = {const_cast<std::byte*>(static_cast<const std::byte*>(mine)),
                           static_cast<std::byte*>(all), tmp.data()};
  execute(s, buffers);
}

void Communicator::checkSameCall(const CallTag& mine) {
  std::vector<uint64_t> all(2 * static_cast<size_t>(nranks_));
  allGatherInCall(mine.data(), all.data(), 2, tuttiUint64);
  for (int r = 0; r < nranks_; ++r) {
    CallTag theirs{all[2 * r], all[2 * r + 1]};
    if (theirs != mine)
      throw exec::CallMismatch(tuttiInvalidUsage,
                               "TUTTI_CHECK_CALLS: rank " + std::to_string(rank_) + " called " +
                                   describeCallTag(mine) + " but " + describePeer(r) + " called " +
                                   describeCallTag(theirs));
  }
}

bool Communicator::windowWanted() const {
  return nranks_ >= 2 && !membership_->multiHost() && options_.shmWindowBytes > 0;
}

void Communicator::ensureWindow() {
  if (!window_.firstTry()) return;
  const int64_t bytes = options_.shmWindowBytes;
  if (!windowWanted()) return;
  testDieAt("window", rank_);
  Deadline deadline(options_.timeoutSec);
  try {
    window_.adopt(links_->createWindow(static_cast<size_t>(bytes), deadline));
    planner_->setWindow(window_.get());
  } catch (const exec::PeerFailure& e) {
    // As a failed call: later calls fail with this cause, the peers read the record.
    std::string text =
        std::string(e.what()) + " (the first rank to fail: " + std::to_string(e.peer()) + ")";
    failWith(tuttiRemoteError, text, e.peer());
    throw Error(tuttiRemoteError, text);
  }
}

void Communicator::runP2p(std::span<const P2pOp> ops) {
  log::setThreadRank(rank_);
  P2pBatch batch = makeP2pBatch(ops, rank_);
  copySelfSends(batch);
  calls_.setLastAlgorithm("p2p");
  const size_t messages = batch.schedule.rounds[0].ops.size();
  if (messages == 0) return;
  monitor_->trace().begin(p2pCallTag(messages), "p2p");
  try {
    std::vector<int> peers = exec::peersOf(batch.schedule);
    announceP2pContact(peers);
    calls_.executing(p2pMessageTag(), [&] { execute(batch.schedule, peers, batch.buffers); });
  } catch (const Error&) {
    rethrowCallFailure();
  }
  monitor_->trace().end(true);
}

void Communicator::runP2pOpen(std::span<const P2pOp> first,
                              const std::function<bool(std::vector<P2pOp>&)>& more, int wakeFd) {
  log::setThreadRank(rank_);
  calls_.setLastAlgorithm("p2p");
  std::deque<exec::Op> ops;
  std::vector<std::byte*> buffers(exec::kFirstUserBuf, nullptr);
  // Appends the operations to the open round; returns their peers.
  auto append = [&](std::span<const P2pOp> ops_, std::deque<exec::Op>& to,
                    std::vector<std::byte*>& bufs) {
    std::vector<int> peers;
    for (const P2pOp& op : ops_) {
      TUTTI_ASSERT(op.peer != rank_);
      TUTTI_CHECK_ARG(bufs.size() < 65535, "at most ", 65535 - exec::kFirstUserBuf,
                      " sends and receives run together");
      exec::Slice slice{static_cast<exec::Buf>(bufs.size()), 0, op.bytes};
      bufs.push_back(op.buffer);
      to.push_back(op.isSend ? exec::Schedule::send(op.peer, slice)
                             : exec::Schedule::recv(op.peer, slice));
      peers.push_back(op.peer);
    }
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    return peers;
  };
  // Appends the operations and connects their peers. Those posted while it connects join the
  // round and the connect: a first contact waiting for its peer cannot hold back the first
  // contact that peer waits for from this rank.
  auto add = [&](std::span<const P2pOp> ops_, std::deque<exec::Op>& to,
                 std::vector<std::byte*>& bufs) {
    std::vector<int> peers = append(ops_, to, bufs);
    if (!links_->needsConnection(peers)) return;
    testDieAt("connect", rank_);
    announceP2pContact(peers);
    std::vector<P2pOp> late;
    links_->connect(peers, options_.timeoutSec, [&]() -> std::vector<int> {
      late.clear();
      if (!more(late)) return {};
      std::vector<int> added = append(late, to, bufs);
      announceP2pContact(added);
      return added;
    });
  };
  monitor_->trace().begin(p2pCallTag(first.size()), "p2p");
  try {
    add(first, ops, buffers);
    std::vector<P2pOp> extra;
    calls_.executing(p2pMessageTag(), [&] {
      exec::executeOpenRound(
          ops, buffers, links_->table(), callOptions(),
          [&](std::deque<exec::Op>& to, std::vector<std::byte*>& bufs) {
            extra.clear();
            if (!more(extra)) return false;
            add(extra, to, bufs);
            return true;
          },
          wakeFd);
    });
  } catch (const Error&) {
    rethrowCallFailure();
  }
  monitor_->trace().end(true);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, CommOptions options) {
  std::string tag = stores_.nextSplitTag();
  // A member makes the child's standby store and ring listener now and passes their addresses
  // through the split's all-gather: the child then needs no roll call, no exchange of peer
  // records and no store request to connect its ring (SplitSeed).
  auto seed = std::make_unique<SplitSeed>();
  if (color != TUTTI_SPLIT_NOCOLOR) {
    seed->myStandby = openStandby(*stores_.own());
    if (bootstrap_->usesRing())
      seed->ring = std::make_unique<bootstrap::RingListener>(bootstrap_->ringHost());
  }
  std::string mine = splitRecord(color, key, *seed);
  auto bytes = std::as_bytes(std::span<const char>(mine.data(), mine.size()));
  // Its keys go at once: a parent may split many times and make no other bootstrap call.
  auto all =
      bootstrap_->allGather(tag, {bytes.begin(), bytes.end()}, Deadline(options_.timeoutSec), true);
  if (color == TUTTI_SPLIT_NOCOLOR) return nullptr;
  const int newRank = seedFromRecords(all, color, rank_, *membership_, *seed);
  const int n = static_cast<int>(seed->peers.size());
  return std::make_unique<Communicator>(stores_.childStore(), stores_.childPrefix(tag, color),
                                        newRank, n, std::move(options), std::move(seed));
}

}  // namespace tutti
