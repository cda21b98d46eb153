#include "process_group.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "monitored_barrier.h"
#include "sparse_allreduce.h"
#include "store_bridge.h"
#include "types.h"

namespace tutti::torch_backend {

namespace {

using c10d::OpType;

// TUTTI_TORCH_INLINE_BYTES (docs/env.md): a non-negative integer, else the process group is
// refused naming the value.
size_t inlineBytesFromEnv() {
  const char* v = std::getenv("TUTTI_TORCH_INLINE_BYTES");
  if (v == nullptr || *v == '\0') return size_t{64} << 10;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || errno != 0 || std::string(v).find('-') != std::string::npos)
    throw std::invalid_argument(std::string("tutti: TUTTI_TORCH_INLINE_BYTES='") + v +
                                "' is not a non-negative integer (bytes)");
  return static_cast<size_t>(n);
}

size_t bytesOf(const at::Tensor& t) { return t.numel() * t.element_size(); }

void* ptr(const at::Tensor& t) { return t.numel() == 0 ? nullptr : t.data_ptr(); }

at::Tensor single(const std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.size() != 1)
    throw std::invalid_argument(std::string("tutti ") + op +
                                ": expects one tensor per process, got " +
                                std::to_string(tensors.size()));
  checkCpu(tensors[0], "the tensor");
  dataTypeOf(tensors[0]);
  return tensors[0];
}

void checkSameType(const at::Tensor& a, const at::Tensor& b, const char* op) {
  checkCpu(b, "a tensor");
  if (a.scalar_type() != b.scalar_type())
    throw std::invalid_argument(std::string("tutti ") + op + ": tensors of different dtypes (" +
                                c10::toString(a.scalar_type()) + " and " +
                                c10::toString(b.scalar_type()) + ")");
}

// fn as a step when cond holds, else no step (an empty one costs no host function).
template <typename F>
std::function<void()> when(bool cond, F fn) {
  return cond ? std::function<void()>(std::move(fn)) : std::function<void()>();
}

// A tensor as the tutti calls see it: the user's own when contiguous, else a contiguous
// buffer allocated at submit, filled before the calls and copied back after them, in stream
// order (the user's tensor is read and written only once the operations before completed).
struct Dense {
  at::Tensor user, buf;
  explicit Dense(const at::Tensor& t)
      : user(t), buf(t.is_contiguous() ? t : at::empty(t.sizes(), t.options())) {}
  bool staged() const { return !buf.is_same(user); }
  void in() const {
    if (staged()) buf.copy_(user);
  }
  void out() const {
    if (staged()) user.copy_(buf);
  }
  // The steps that fill the buffer before the calls and copy it back after them (none when
  // the calls use the user's tensor).
  std::function<void()> copyIn() const {
    return when(staged(), [d = *this] { d.in(); });
  }
  std::function<void()> copyOut() const {
    return when(staged(), [d = *this] { d.out(); });
  }
};

// An input the calls must not change: the tensor itself when contiguous and not to be
// scaled, else a contiguous copy made before the calls (times the factor of PREMUL_SUM).
struct Input {
  at::Tensor user, buf;
  bool scale = false;
  double factor = 1.0;
  explicit Input(const at::Tensor& t, const Reduction& red = {})
      : user(t),
        buf(t.is_contiguous() && !red.premultiply ? t : at::empty(t.sizes(), t.options())),
        scale(red.premultiply),
        factor(red.factor) {}
  bool staged() const { return !buf.is_same(user); }
  void in() const {
    if (!staged()) return;
    buf.copy_(user);
    if (scale) buf.mul_(factor);
  }
  // The step that makes the copy before the calls (none when they read the user's tensor).
  std::function<void()> copyIn() const {
    return when(staged(), [i = *this] { i.in(); });
  }
};

// A list of tensors side by side in one contiguous 1-D buffer (list order), allocated at
// submit.
struct Flat {
  std::vector<at::Tensor> list;
  at::Tensor buf;
  Flat(std::vector<at::Tensor> tensors, const at::Tensor& like) : list(std::move(tensors)) {
    int64_t n = 0;
    for (const auto& t : list) n += t.numel();
    buf = at::empty({n}, like.options());
  }
  void in() const {
    int64_t off = 0;
    for (const auto& t : list) {
      buf.narrow(0, off, t.numel()).view(t.sizes()).copy_(t);
      off += t.numel();
    }
  }
  void out() const {
    int64_t off = 0;
    for (const auto& t : list) {
      t.copy_(buf.narrow(0, off, t.numel()).view(t.sizes()));
      off += t.numel();
    }
  }
};

// The pairs of a coalesced all-gather (gather: each output holds size x its input) or
// reduce-scatter (each input holds size x its output): checked like the single calls; returns
// the bytes of the larger side.
size_t checkCoalesced(const std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                      int size, bool gather) {
  const char* op = gather ? "all_gather_into_tensor_coalesced" : "reduce_scatter_tensor_coalesced";
  const std::string prefix = std::string("tutti ") + op + ": ";
  if (outputs.size() != inputs.size() || inputs.empty())
    throw std::invalid_argument(prefix + "as many outputs as inputs, at least one");
  size_t bytes = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkCpu(outputs[i], "an output");
    checkSameType(outputs[i], inputs[i], op);
    dataTypeOf(inputs[i]);
    const at::Tensor& big = gather ? outputs[i] : inputs[i];
    const at::Tensor& small = gather ? inputs[i] : outputs[i];
    if (big.numel() != small.numel() * size)
      throw std::invalid_argument(prefix + "each " + (gather ? "output" : "input") +
                                  " must hold world_size (" + std::to_string(size) + ") x its " +
                                  (gather ? "input" : "output") + "'s elements");
    bytes += bytesOf(big);
  }
  return bytes;
}

int rankIn(tuttiComm_t comm) {
  int rank = 0;
  if (tuttiCommUserRank(comm, &rank) != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: ") + tuttiGetLastError(comm));
  return rank;
}

int sizeOf(tuttiComm_t comm) {
  int size = 0;
  if (tuttiCommCount(comm, &size) != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: ") + tuttiGetLastError(comm));
  return size;
}

void checkRoot(int root, int size, const char* op) {
  if (root < 0 || root >= size)
    throw std::invalid_argument(std::string("tutti ") + op + ": root " + std::to_string(root) +
                                " out of range [0, " + std::to_string(size) + ")");
}

}  // namespace

ProcessGroupTutti::ProcessGroupTutti(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, double timeoutSeconds)
    : c10d::Backend(rank, size), store_(store) {
  bridge_ = storeBridge(store_.get());
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  double ms = timeoutSeconds * 1000.0;
  if (ms >= 1 && ms < 2e9) config.timeoutMs = static_cast<int>(ms);
  std::string name = "torch" + std::to_string(size);
  config.commName = name.c_str();
  tuttiResult_t r = tuttiCommInitRankStore(&comm_, size, rank, &bridge_, &config);
  if (r != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: communicator init failed: ") +
                             tuttiGetErrorString(r) + ": " + tuttiGetLastError(nullptr));
  commTimeout_ = std::chrono::milliseconds(config.timeoutMs > 0 ? config.timeoutMs : 0);
  monitored_ = std::make_unique<MonitoredBarrier>(store_, "tutti_monitored_barrier", rank, size);
  startStream();
}

ProcessGroupTutti::ProcessGroupTutti(tuttiComm_t comm, std::chrono::milliseconds timeout,
                                     c10::intrusive_ptr<c10d::Store> store)
    : c10d::Backend(rankIn(comm), sizeOf(comm)),
      store_(std::move(store)),
      comm_(comm),
      commTimeout_(timeout) {
  startStream();
}

void ProcessGroupTutti::startStream() {
  inlineBytes_ = inlineBytesFromEnv();
  stream_ = std::make_unique<WorkStream>([this] { failed_ = true; });
  reached_ = std::make_shared<ReachedPeers>(size_);
  pending_->submit = [this](std::vector<P2p> batch) {
    submitBatch(std::move(batch), "tutti:p2p_group");
  };
}

ProcessGroupTutti::~ProcessGroupTutti() {
  pending_->flush();
  {
    std::lock_guard lock(pending_->mu);
    pending_->submit = nullptr;
  }
  stream_.reset();  // runs (or fails) what was submitted
  hooks_.reset();   // runs the hooks of what completed
  if (destroyed_) return;
  if (failed_) tuttiCommAbort(comm_);  // a failed group leaves without waiting for peers
  tuttiCommDestroy(comm_);
}

void ProcessGroupTutti::abort() {
  failed_ = true;
  if (!destroyed_) tuttiCommAbort(comm_);
}

void ProcessGroupTutti::shutdown() {
  if (destroyed_) return;
  quiesce();
  if (hooks_) hooks_->drain();
  if (failed_) tuttiCommAbort(comm_);
  tuttiCommDestroy(comm_);
  comm_ = nullptr;  // later operations fail at the C call
  destroyed_ = true;
}

void ProcessGroupTutti::quiesce() {
  pending_->flush();
  stream_->synchronize();
}

void ProcessGroupTutti::observe(TuttiWork& work, const char* title,
                                const std::optional<std::vector<at::Tensor>>& inputs, int peer) {
  const bool isP2P = peer >= 0;
  if (timing_) work.enableTiming();
  if (hooks_) work.reportTo(hooks_);
  auto& recorder = FlightRecorder::get();
  if (!recorder.enabled()) return;
  const auto outputs = work.result();  // also the inputs when none are given
  const uint64_t collective = isP2P ? 0 : ++collectiveSeq_;
  const uint64_t p2p = isP2P ? ++p2pSeq_ : 0;
  work.setRecord(recorder.record({recorderId_, getGroupUid(), getGroupDesc(), collective, p2p,
                                  ++opId_, title, inputs ? &*inputs : &outputs, &outputs,
                                  commTimeout_.count(), isP2P, rank_, peer}));
}

void ProcessGroupTutti::registerOnCompletionHook(
    std::function<void(std::shared_ptr<c10d::WorkInfo>)>&& hook) {
  if (hooks_) throw std::runtime_error("tutti: an on-completion hook is already registered");
  onCompletionHook_ = hook;  // Backend::hasHooks()
  hooks_ = std::make_shared<CompletionHooks>(std::move(hook));
}

void ProcessGroupTutti::waitForPendingWorks() {
  quiesce();
  if (hooks_) hooks_->drain();
}

std::chrono::milliseconds ProcessGroupTutti::childTimeout(
    const c10::intrusive_ptr<Options>& opts) const {
  return opts && opts->timeout.count() > 0 ? opts->timeout : commTimeout_;
}

namespace {
// A communicator config with the timeout of a child group (0: the parent's).
tuttiConfig_t childConfig(std::chrono::milliseconds timeout) {
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  if (timeout.count() >= 1 && timeout.count() < 2000000000)
    config.timeoutMs = static_cast<int>(timeout.count());
  return config;
}
}  // namespace

c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::shrink(
    const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
    const c10::intrusive_ptr<Options>& opts) {
  if (destroyed_) throw std::runtime_error("tutti shrink: the group was shut down");
  if ((shrink_flags & ~1) != 0)
    throw std::invalid_argument("tutti shrink: unknown shrink_flags " +
                                std::to_string(shrink_flags) +
                                " (SHRINK_DEFAULT 0, SHRINK_ABORT 1)");
  const bool abortFirst = (shrink_flags & 1) != 0;
  if (abortFirst) abort();  // work in flight fails at once instead of being waited for
  quiesce();
  std::vector<int> exclude;
  for (int64_t r : ranks_to_exclude) {
    if (r < 0 || r >= size_)
      throw std::invalid_argument("tutti shrink: rank " + std::to_string(r) + " out of range [0, " +
                                  std::to_string(size_) + ")");
    exclude.push_back(static_cast<int>(r));
  }
  const auto timeout = childTimeout(opts);
  tuttiConfig_t config = childConfig(timeout);
  tuttiComm_t child = nullptr;
  tuttiResult_t r =
      tuttiCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &child, &config,
                      abortFirst ? TUTTI_SHRINK_ABORT : TUTTI_SHRINK_DEFAULT);
  if (r != tuttiSuccess)
    throw std::runtime_error(std::string("tutti shrink failed: ") + tuttiGetErrorString(r) + ": " +
                             tuttiGetLastError(comm_));
  return c10::make_intrusive<ProcessGroupTutti>(child, timeout);
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupTutti::getBackendOptions() {
  return c10::make_intrusive<Options>(
      "tutti", commTimeout_.count() > 0 ? commTimeout_ : ::kBackendDefaultTimeout);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTutti::split(
    const c10::intrusive_ptr<c10d::Store>& /*store*/, const std::vector<int>& ranks,
    const c10::intrusive_ptr<Options>& opts) {
  if (destroyed_) throw std::runtime_error("tutti split: the group was shut down");
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] < 0 || ranks[i] >= size_ || (i > 0 && ranks[i] <= ranks[i - 1]))
      throw std::invalid_argument(
          "tutti split: ranks must be distinct ranks of the parent group in ascending order");
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  // Groups are disjoint, so the lowest rank names a group; its members are ordered by rank.
  const int color = me == ranks.end() ? TUTTI_SPLIT_NOCOLOR : ranks.front();
  const int key = static_cast<int>(me - ranks.begin());
  quiesce();  // the split is a collective call on the communicator, after what was issued
  const auto timeout = childTimeout(opts);
  tuttiConfig_t config = childConfig(timeout);
  tuttiComm_t child = nullptr;
  tuttiResult_t r = tuttiCommSplit(comm_, color, key, &child, &config);
  if (r != tuttiSuccess)
    throw std::runtime_error(std::string("tutti split failed: ") + tuttiGetErrorString(r) + ": " +
                             tuttiGetLastError(comm_));
  if (child == nullptr) return nullptr;
  const int childSize = sizeOf(child);
  if (childSize != static_cast<int>(ranks.size())) {
    tuttiCommDestroy(child);
    throw std::invalid_argument("tutti split: this rank's group has " +
                                std::to_string(ranks.size()) + " ranks, but " +
                                std::to_string(childSize) +
                                " ranks named the same lowest rank: the groups must be disjoint "
                                "and every member must pass the same ranks");
  }
  // The child meets (destroy, its own splits) through this group's store: it keeps it.
  return c10::make_intrusive<ProcessGroupTutti>(child, timeout, store_);
}

c10d::ErrorType ProcessGroupTutti::getError() {
  if (destroyed_) return c10d::ErrorType::SUCCESS;
  tuttiResult_t async = tuttiSuccess;
  if (tuttiCommGetAsyncError(comm_, &async) != tuttiSuccess) return c10d::ErrorType::COMM_ERROR;
  switch (async) {
    case tuttiSuccess:
    case tuttiInProgress:
      return c10d::ErrorType::SUCCESS;
    case tuttiTimeout:
      return c10d::ErrorType::TIMEOUT;
    case tuttiRemoteError:
      return c10d::ErrorType::REMOTE_ERROR;
    default:
      return c10d::ErrorType::COMM_ERROR;
  }
}

void ProcessGroupTutti::check(tuttiResult_t r, const char* what) {
  if (r == tuttiSuccess) return;
  failed_ = true;
  throw std::runtime_error(std::string("tutti ") + what + " failed: " + tuttiGetErrorString(r) +
                           ": " + tuttiGetLastError(comm_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue(const OpInfo& op,
                                                          std::vector<at::Tensor> outputs,
                                                          WorkSteps steps, CallOpts call) {
  pending_->flush();  // point-to-point posted before this operation runs before it
  {
    std::lock_guard lock(coalesceMu_);
    if (coalescing_)
      throw std::invalid_argument(
          "tutti: only send and recv may be issued between start and end of coalescing "
          "(batch_isend_irecv)");
  }
  if (estimating_) return recordForEstimate(op, std::move(outputs), steps.issue, call.runNow);
  ++sequence_;
  auto work = c10::make_intrusive<TuttiWork>(rank_, op.type, op.internal ? nullptr : op.title,
                                             std::move(outputs), op.inputs);
  work->setSequenceNumber(sequence_);
  if (!op.internal) observe(*work, op.title, op.inputs, -1);
  work->defaultTimeout = timeout_;
  work->helpBound = commTimeout_;
  work->onTimeout = [comm = comm_, this] {
    failed_ = true;
    tuttiCommAbort(comm);
  };
  if (call.timeout.count() > 0 || call.runNow) {
    // tuttiCommSetTimeout waits for the communicator's calls before it: such an operation
    // runs now, once the earlier ones completed (as one whose calls depend on each other's
    // results: runNow).
    stream_->synchronize();
    if (call.timeout.count() > 0)
      steps.issue = withCallTimeout(std::move(steps.issue), call.timeout);
    stream_->runNow(work, op.what, std::move(steps), comm_);
    return work;
  }
  // A synchronous call (async_op=False), a small one, or a larger one whose kind of use was
  // learnt as synchronous (sync_use.h) runs now when nothing is in flight.
  const bool idle = stream_->idle();
  const bool learnable = call.asyncOp && op.bytes != kNeverNow && op.bytes > inlineBytes_;
  bool now = op.bytes != kNeverNow && (!call.asyncOp || op.bytes <= inlineBytes_) && idle;
  if (learnable) {
    work->watchSyncUse(syncUse_);
    now = syncUse_->submitted(work.get(), idle);
  }
  if (now)
    stream_->runNow(work, op.what, std::move(steps), comm_);
  else
    stream_->submit(work, op.what, std::move(steps), comm_);
  if (learnable) work->markSubmitted();  // a synchronous caller's wait comes right after this
  return work;
}

void ProcessGroupTutti::startTimeEstimate() {
  if (estimating_)
    throw std::invalid_argument("tutti: a time estimate is already open on this group");
  pending_->flush();  // posted before the estimate: they run
  if (tuttiGroupStart() != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: time estimate: ") + tuttiGetLastError(nullptr));
  estimating_ = true;
}

float ProcessGroupTutti::endTimeEstimate() {
  if (!estimating_) throw std::invalid_argument("tutti: no time estimate is open on this group");
  estimating_ = false;
  tuttiSimInfo_t info = TUTTI_SIM_INFO_INITIALIZER;
  if (tuttiResult_t r = tuttiGroupSimulateEnd(&info); r != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: time estimate failed: ") + tuttiGetErrorString(r) +
                             ": " + tuttiGetLastError(nullptr));
  return info.estimatedTime;
}

void ProcessGroupTutti::abandonEstimate(const std::string& why) {
  estimating_ = false;
  tuttiSimInfo_t info = TUTTI_SIM_INFO_INITIALIZER;
  tuttiGroupSimulateEnd(&info);  // runs nothing; the group is closed
  throw std::invalid_argument("tutti: time estimate ended: " + why);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recordForEstimate(const OpInfo& op,
                                                                    std::vector<at::Tensor> outputs,
                                                                    const Issue& issue,
                                                                    bool runsNow) {
  if (runsNow)
    abandonEstimate(std::string(op.what) + " cannot be estimated (its calls depend on each " +
                    "other's results)");
  if (tuttiResult_t r = issue(nullptr); r != tuttiSuccess)
    abandonEstimate(std::string(op.what) + " cannot be estimated: " + tuttiGetErrorString(r) +
                    ": " + tuttiGetLastError(comm_));
  auto work =
      c10::make_intrusive<TuttiWork>(rank_, op.type, nullptr, std::move(outputs), op.inputs);
  work->complete(nullptr);
  return work;
}

ProcessGroupTutti::Issue ProcessGroupTutti::withCallTimeout(Issue issue,
                                                            std::chrono::milliseconds timeout) {
  const int ms = static_cast<int>(std::min<int64_t>(timeout.count(), INT32_MAX));
  return [this, issue = std::move(issue), ms](tuttiStream_t stream) {
    int base = 0;
    if (tuttiResult_t r = tuttiCommGetTimeout(comm_, &base); r != tuttiSuccess) return r;
    if (tuttiResult_t r = tuttiCommSetTimeout(comm_, ms); r != tuttiSuccess) return r;
    const tuttiResult_t r = issue(stream);
    tuttiCommSetTimeout(comm_, base);
    return r;
  };
}

void ProcessGroupTutti::drain() { barrier(c10d::BarrierOptions())->wait(); }

// ---- reductions ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].is_sparse()) return allreduce_sparse(tensors, opts);
  at::Tensor t = single(tensors, "allreduce");
  Reduction red = reductionOf(opts.reduceOp, t.scalar_type());
  auto dtype = dataTypeOf(t);
  Dense d(t);
  WorkSteps s;
  // In place: the result overwrites the premultiplied input anyway.
  s.before = when(d.staged() || red.premultiply, [d, red] {
    d.in();
    if (red.premultiply) d.buf.mul_(red.factor);
  });
  s.issue = [this, d, red, dtype](tuttiStream_t st) {
    return tuttiAllReduce(ptr(d.buf), ptr(d.buf), d.buf.numel(), dtype, red.op, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::ALLREDUCE, "tutti:all_reduce", "allreduce", bytesOf(t)}, {t},
                 std::move(s), callOpts(opts));
}

// Sparse COO tensors, summed as gloo does (sparse_allreduce.h). The entry counts decide the
// later calls' sizes, so it runs on the caller's thread once the operations before it ran.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce_sparse(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  if (tensors.size() != 1)
    throw std::invalid_argument("tutti allreduce: expects one tensor per process, got " +
                                std::to_string(tensors.size()));
  at::Tensor t = tensors[0];
  if (!t.is_sparse() || t.layout() != at::kSparse)
    throw std::invalid_argument("tutti allreduce_sparse: the tensor is not a sparse COO tensor");
  if (!t.device().is_cpu())
    throw std::invalid_argument("tutti allreduce: the tensor is on " + t.device().str() +
                                "; the torch backend serves CPU tensors");
  if (opts.reduceOp != c10d::ReduceOp::SUM)
    throw std::invalid_argument("tutti allreduce: sparse tensors are summed only (ReduceOp.SUM)");
  dataTypeOf(t);
  WorkSteps s;
  s.issue = [this, t](tuttiStream_t) mutable {
    at::Tensor sum;
    const tuttiResult_t r = sparseAllReduceSum(t, comm_, size_, sum);
    if (r == tuttiSuccess) t.copy_(sum);
    return r;
  };
  CallOpts call = callOpts(opts);
  call.runNow = true;
  return enqueue({OpType::ALLREDUCE, "tutti:all_reduce", "allreduce (sparse)", kNeverNow}, {t},
                 std::move(s), call);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  if (tensors.empty()) throw std::invalid_argument("tutti allreduce_coalesced: no tensors");
  for (const auto& t : tensors) checkSameType(tensors[0], t, "allreduce_coalesced");
  Reduction red = reductionOf(opts.reduceOp, tensors[0].scalar_type());
  auto dtype = dataTypeOf(tensors[0]);
  Flat flat(tensors, tensors[0]);
  WorkSteps s;
  s.before = [flat, red] {
    flat.in();
    if (red.premultiply) flat.buf.mul_(red.factor);
  };
  s.issue = [this, flat, red, dtype](tuttiStream_t st) {
    return tuttiAllReduce(ptr(flat.buf), ptr(flat.buf), flat.buf.numel(), dtype, red.op, comm_, st);
  };
  s.after = [flat] { flat.out(); };
  return enqueue({OpType::ALLREDUCE_COALESCED, "tutti:all_reduce_coalesced", "allreduce_coalesced",
                  bytesOf(flat.buf)},
                 tensors, std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  checkRoot(opts.rootRank, size_, "reduce");
  Reduction red = reductionOf(opts.reduceOp, t.scalar_type());
  auto dtype = dataTypeOf(t);
  const int root = opts.rootRank;
  const bool isRoot = rank_ == root;
  // A non-root's tensor must not change: it reduces into scratch, from a copy when scaled.
  Input in(t, red);
  at::Tensor out = isRoot ? in.buf : at::empty(t.sizes(), t.options());
  WorkSteps s;
  s.before = in.copyIn();
  s.issue = [this, in, out, red, dtype, root](tuttiStream_t st) {
    return tuttiReduce(ptr(in.buf), ptr(out), in.buf.numel(), dtype, red.op, root, comm_, st);
  };
  s.after = when(isRoot && in.staged(), [t, out] { t.copy_(out); });
  return enqueue({OpType::REDUCE, "tutti:reduce", "reduce", bytesOf(t)}, {t}, std::move(s),
                 callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = single(outputs, "reduce_scatter");
  if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != size_)
    throw std::invalid_argument("tutti reduce_scatter: expects one input list of " +
                                std::to_string(size_) + " tensors");
  for (const auto& t : inputs[0]) {
    checkSameType(out, t, "reduce_scatter");
    if (t.numel() != out.numel())
      throw std::invalid_argument(
          "tutti reduce_scatter: every input tensor must have the output's number of elements");
  }
  Reduction red = reductionOf(opts.reduceOp, out.scalar_type());
  auto dtype = dataTypeOf(out);
  Flat flat(inputs[0], out);
  Dense d(out);
  WorkSteps s;
  s.before = [flat, red] {
    flat.in();
    if (red.premultiply) flat.buf.mul_(red.factor);
  };
  s.issue = [this, flat, d, red, dtype](tuttiStream_t st) {
    return tuttiReduceScatter(ptr(flat.buf), ptr(d.buf), d.buf.numel(), dtype, red.op, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::REDUCE_SCATTER, "tutti:reduce_scatter", "reduce_scatter",
                  bytesOf(out) * size_, inputs[0]},
                 {out}, std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  checkCpu(output, "the output");
  checkSameType(output, input, "reduce_scatter_tensor");
  if (input.numel() != output.numel() * size_)
    throw std::invalid_argument("tutti reduce_scatter_tensor: input must hold world_size (" +
                                std::to_string(size_) + ") x the output's elements");
  Reduction red = reductionOf(opts.reduceOp, output.scalar_type());
  auto dtype = dataTypeOf(output);
  Dense d(output);
  Input in(input, red);
  WorkSteps s;
  s.before = in.copyIn();
  s.issue = [this, d, in, red, dtype](tuttiStream_t st) {
    return tuttiReduceScatter(ptr(in.buf), ptr(d.buf), d.buf.numel(), dtype, red.op, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::_REDUCE_SCATTER_BASE, "tutti:reduce_scatter_base",
                  "reduce_scatter_tensor", bytesOf(input), std::vector<at::Tensor>{input}},
                 {output}, std::move(s), callOpts(opts));
}

// ---- data movement ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  checkRoot(opts.rootRank, size_, "broadcast");
  if (opts.rootTensor != 0)
    throw std::invalid_argument("tutti broadcast: rootTensor must be 0 (one tensor per process)");
  auto dtype = dataTypeOf(t);
  const int root = opts.rootRank;
  Dense d(t);
  WorkSteps s;
  s.before = when(d.staged() && rank_ == root, [d] { d.in(); });
  s.issue = [this, d, dtype, root](tuttiStream_t st) {
    return tuttiBroadcast(ptr(d.buf), ptr(d.buf), d.buf.numel(), dtype, root, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::BROADCAST, "tutti:broadcast", "broadcast", bytesOf(t)}, {t}, std::move(s),
                 callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  at::Tensor in = single(inputs, "allgather");
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != size_)
    throw std::invalid_argument("tutti allgather: expects one output list of " +
                                std::to_string(size_) + " tensors");
  std::vector<size_t> counts(size_), displs(size_);
  bool even = true;
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    checkSameType(in, outputs[0][r], "allgather");
    counts[r] = outputs[0][r].numel();
    displs[r] = total;
    total += counts[r];
    even = even && counts[r] == counts[0];
  }
  if (counts[rank_] != static_cast<size_t>(in.numel()))
    throw std::invalid_argument("tutti allgather: output tensor " + std::to_string(rank_) +
                                " has " + std::to_string(counts[rank_]) +
                                " elements but this rank's input has " +
                                std::to_string(in.numel()));
  auto dtype = dataTypeOf(in);
  Input src(in);
  Flat flat(outputs[0], in);
  WorkSteps s;
  s.before = src.copyIn();
  s.issue = [this, src, flat, counts, displs, even, dtype](tuttiStream_t st) {
    if (even) return tuttiAllGather(ptr(src.buf), ptr(flat.buf), counts[0], dtype, comm_, st);
    return tuttiAllGatherV(ptr(src.buf), src.buf.numel(), ptr(flat.buf), counts.data(),
                           displs.data(), dtype, comm_, st);
  };
  s.after = [flat] { flat.out(); };
  return enqueue(
      {OpType::ALLGATHER, "tutti:all_gather", "allgather", total * in.element_size(), inputs},
      outputs[0], std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  checkCpu(output, "the output");
  checkSameType(output, input, "all_gather_into_tensor");
  if (output.numel() != input.numel() * size_)
    throw std::invalid_argument("tutti all_gather_into_tensor: output must hold world_size (" +
                                std::to_string(size_) + ") x the input's elements");
  auto dtype = dataTypeOf(input);
  Dense d(output);
  Input src(input);
  WorkSteps s;
  s.before = src.copyIn();
  s.issue = [this, d, src, dtype](tuttiStream_t st) {
    return tuttiAllGather(ptr(src.buf), ptr(d.buf), src.buf.numel(), dtype, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::_ALLGATHER_BASE, "tutti:all_gather_base", "all_gather_into_tensor",
                  bytesOf(output), std::vector<at::Tensor>{input}},
                 {output}, std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  if (inputs.empty()) throw std::invalid_argument("tutti allgather_coalesced: no input tensors");
  if (static_cast<int>(outputLists.size()) != size_)
    throw std::invalid_argument("tutti allgather_coalesced: expects " + std::to_string(size_) +
                                " output lists");
  std::vector<size_t> counts(size_), displs(size_);
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    if (outputLists[r].size() != inputs.size())
      throw std::invalid_argument(
          "tutti allgather_coalesced: each output list must match the input list's length");
    size_t n = 0;
    for (const auto& t : outputLists[r]) {
      checkSameType(inputs[0], t, "allgather_coalesced");
      n += t.numel();
    }
    counts[r] = n;
    displs[r] = total;
    total += n;
  }
  size_t mine = 0;
  for (const auto& t : inputs) {
    checkSameType(inputs[0], t, "allgather_coalesced");
    mine += t.numel();
  }
  if (mine != counts[rank_])
    throw std::invalid_argument(
        "tutti allgather_coalesced: this rank's output list does not match its inputs' sizes");
  auto dtype = dataTypeOf(inputs[0]);
  std::vector<at::Tensor> all;
  for (auto& l : outputLists) all.insert(all.end(), l.begin(), l.end());
  Flat src(inputs, inputs[0]), flat(all, inputs[0]);
  WorkSteps s;
  s.before = [src] { src.in(); };
  s.issue = [this, src, flat, counts, displs, dtype](tuttiStream_t st) {
    return tuttiAllGatherV(ptr(src.buf), src.buf.numel(), ptr(flat.buf), counts.data(),
                           displs.data(), dtype, comm_, st);
  };
  s.after = [flat] { flat.out(); };
  return enqueue({OpType::ALLGATHER_COALESCED, "tutti:all_gather_coalesced", "allgather_coalesced",
                  total * inputs[0].element_size(), inputs},
                 all, std::move(s), callOpts(opts));
}

// gather's outputs / scatter's inputs: world_size tensors like `like` on the root, none
// elsewhere.
std::vector<at::Tensor> ProcessGroupTutti::rootList(
    const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like, int root,
    const char* op, const char* which) const {
  const std::string prefix = std::string("tutti ") + op + ": ";
  if (rank_ != root) {
    if (!lists.empty() && !(lists.size() == 1 && lists[0].empty()))
      throw std::invalid_argument(prefix + "only the root passes " + which + " tensors");
    return {};
  }
  if (lists.size() != 1 || static_cast<int>(lists[0].size()) != size_)
    throw std::invalid_argument(prefix + "the root expects one " + which + " list of " +
                                std::to_string(size_) + " tensors");
  for (const auto& t : lists[0]) {
    checkSameType(like, t, op);
    if (t.numel() != like.numel())
      throw std::invalid_argument(prefix + "every " + which +
                                  " tensor must have as many elements as this rank's tensor");
  }
  return lists[0];
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  at::Tensor in = single(inputs, "gather");
  checkRoot(opts.rootRank, size_, "gather");
  const int root = opts.rootRank;
  std::vector<at::Tensor> outs = rootList(outputs, in, root, "gather", "output");
  auto dtype = dataTypeOf(in);
  Input src(in);
  Flat flat(outs, in);  // empty on other ranks
  const bool isRoot = rank_ == root;
  WorkSteps s;
  s.before = src.copyIn();
  s.issue = [this, src, flat, root, dtype, isRoot](tuttiStream_t st) {
    return tuttiGather(ptr(src.buf), isRoot ? ptr(flat.buf) : nullptr, src.buf.numel(), dtype, root,
                       comm_, st);
  };
  s.after = when(isRoot, [flat] { flat.out(); });
  return enqueue({OpType::GATHER, "tutti:gather", "gather", bytesOf(in) * size_, inputs}, outs,
                 std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  checkRoot(opts.rootRank, size_, "scatter");
  const int root = opts.rootRank;
  std::vector<at::Tensor> ins = rootList(inputs, out, root, "scatter", "input");
  auto dtype = dataTypeOf(out);
  Dense d(out);
  Flat flat(ins, out);  // empty on other ranks
  const bool isRoot = rank_ == root;
  WorkSteps s;
  s.before = when(isRoot, [flat] { flat.in(); });
  s.issue = [this, d, flat, root, dtype, isRoot](tuttiStream_t st) {
    return tuttiScatter(isRoot ? ptr(flat.buf) : nullptr, ptr(d.buf), d.buf.numel(), dtype, root,
                        comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::SCATTER, "tutti:scatter", "scatter", bytesOf(out) * size_}, {out},
                 std::move(s), callOpts(opts));
}

namespace {
// all_to_all_single's split sizes (rows of dim 0) as element counts and offsets; empty
// splits mean equal parts.
void splitsToCounts(const at::Tensor& t, const std::vector<int64_t>& splits, int size,
                    const char* which, std::vector<size_t>& counts, std::vector<size_t>& displs) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t rowElems = rows == 0 ? 0 : t.numel() / rows;
  counts.assign(size, 0);
  displs.assign(size, 0);
  if (splits.empty()) {
    if (rows % size != 0)
      throw std::invalid_argument(std::string("tutti alltoall_base: ") + which + " dim 0 (" +
                                  std::to_string(rows) + ") is not divisible by world_size " +
                                  std::to_string(size) + " and no split sizes were given");
    for (int r = 0; r < size; ++r) counts[r] = rows / size * rowElems;
  } else {
    if (static_cast<int>(splits.size()) != size)
      throw std::invalid_argument(std::string("tutti alltoall_base: ") + which +
                                  " split sizes must have world_size entries");
    int64_t sum = 0;
    for (int r = 0; r < size; ++r) {
      if (splits[r] < 0) throw std::invalid_argument("tutti alltoall_base: negative split size");
      counts[r] = splits[r] * rowElems;
      sum += splits[r];
    }
    if (sum != rows)
      throw std::invalid_argument(std::string("tutti alltoall_base: ") + which +
                                  " split sizes add up to " + std::to_string(sum) +
                                  ", not dim 0 (" + std::to_string(rows) + ")");
  }
  size_t off = 0;
  for (int r = 0; r < size; ++r) {
    displs[r] = off;
    off += counts[r];
  }
}
}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall_base(at::Tensor& output,
                                                                at::Tensor& input,
                                                                std::vector<int64_t>& outputSplits,
                                                                std::vector<int64_t>& inputSplits,
                                                                const c10d::AllToAllOptions& opts) {
  checkCpu(output, "the output");
  checkSameType(output, input, "alltoall_base");
  dataTypeOf(input);
  std::vector<size_t> sc, sd, rc, rd;
  splitsToCounts(input, inputSplits, size_, "input", sc, sd);
  splitsToCounts(output, outputSplits, size_, "output", rc, rd);
  const bool even = inputSplits.empty() && outputSplits.empty() && input.numel() == output.numel();
  auto dtype = dataTypeOf(input);
  Dense d(output);
  Input src(input);
  WorkSteps s;
  s.before = src.copyIn();
  s.issue = [this, d, src, sc, sd, rc, rd, even, dtype](tuttiStream_t st) {
    if (even)
      return tuttiAllToAll(ptr(src.buf), ptr(d.buf), src.buf.numel() / size_, dtype, comm_, st);
    return tuttiAllToAllV(ptr(src.buf), sc.data(), sd.data(), ptr(d.buf), rc.data(), rd.data(),
                          dtype, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue({OpType::ALLTOALL_BASE, "tutti:all_to_all", "alltoall_base", bytesOf(input),
                  std::vector<at::Tensor>{input}},
                 {output}, std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions& opts) {
  if (static_cast<int>(outputs.size()) != size_ || static_cast<int>(inputs.size()) != size_)
    throw std::invalid_argument("tutti alltoall: expects world_size (" + std::to_string(size_) +
                                ") input and output tensors");
  std::vector<size_t> sc(size_), sd(size_), rc(size_), rd(size_);
  size_t sOff = 0, rOff = 0;
  for (int r = 0; r < size_; ++r) {
    checkSameType(inputs[0], inputs[r], "alltoall");
    checkSameType(inputs[0], outputs[r], "alltoall");
    sc[r] = inputs[r].numel();
    rc[r] = outputs[r].numel();
    sd[r] = sOff;
    rd[r] = rOff;
    sOff += sc[r];
    rOff += rc[r];
  }
  auto dtype = dataTypeOf(inputs[0]);
  Flat src(inputs, inputs[0]), flat(outputs, inputs[0]);
  WorkSteps s;
  s.before = [src] { src.in(); };
  s.issue = [this, src, flat, sc, sd, rc, rd, dtype](tuttiStream_t st) {
    return tuttiAllToAllV(ptr(src.buf), sc.data(), sd.data(), ptr(flat.buf), rc.data(), rd.data(),
                          dtype, comm_, st);
  };
  s.after = [flat] { flat.out(); };
  return enqueue({OpType::ALLTOALL, "tutti:all_to_all_list", "alltoall",
                  sOff * inputs[0].element_size(), inputs},
                 outputs, std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::barrier(const c10d::BarrierOptions& opts) {
  WorkSteps s;
  s.issue = [this](tuttiStream_t st) { return tuttiBarrier(comm_, st); };
  return enqueue({OpType::BARRIER, "tutti:barrier", "barrier", 0}, {}, std::move(s),
                 callOpts(opts));
}

// ---- coalesced collectives: one tutti group (fused where the library can) ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const size_t bytes = checkCoalesced(outputs, inputs, size_, true);
  std::vector<Dense> dst(outputs.begin(), outputs.end());
  std::vector<Input> src(inputs.begin(), inputs.end());
  WorkSteps s;
  s.before = [src] {
    for (const auto& i : src) i.in();
  };
  s.issue = [this, dst, src](tuttiStream_t st) {
    return grouped(dst.size(), [&](size_t i) {
      return tuttiAllGather(ptr(src[i].buf), ptr(dst[i].buf), src[i].buf.numel(),
                            dataTypeOf(src[i].buf), comm_, st);
    });
  };
  s.after = [dst] {
    for (const auto& d : dst) d.out();
  };
  return enqueue({OpType::COALESCED, "tutti:all_gather_into_tensor_coalesced",
                  "all_gather_into_tensor_coalesced", bytes, inputs},
                 outputs, std::move(s), callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const size_t bytes = checkCoalesced(outputs, inputs, size_, false);
  std::vector<Dense> dst(outputs.begin(), outputs.end());
  std::vector<Input> src;
  std::vector<Reduction> reds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    reds.push_back(reductionOf(opts.reduceOp, outputs[i].scalar_type()));
    src.emplace_back(inputs[i], reds.back());
  }
  WorkSteps s;
  s.before = [src] {
    for (const auto& i : src) i.in();
  };
  s.issue = [this, dst, src, reds](tuttiStream_t st) {
    return grouped(dst.size(), [&](size_t i) {
      return tuttiReduceScatter(ptr(src[i].buf), ptr(dst[i].buf), dst[i].buf.numel(),
                                dataTypeOf(dst[i].buf), reds[i].op, comm_, st);
    });
  };
  s.after = [dst] {
    for (const auto& d : dst) d.out();
  };
  return enqueue({OpType::COALESCED, "tutti:reduce_scatter_tensor_coalesced",
                  "reduce_scatter_tensor_coalesced", bytes, inputs},
                 outputs, std::move(s), callOpts(opts));
}

void ProcessGroupTutti::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  if (monitored_) {
    auto timeout = opts.timeout;
    if (timeout.count() < 0) {  // unset: the communicator's
      int ms = 0;
      check(tuttiCommGetTimeout(comm_, &ms), "monitored_barrier");
      timeout = std::chrono::milliseconds(ms);
    }
    quiesce();  // as a barrier: after this rank's operations before it
    monitored_->run(timeout, waitAllRanks);
    return;
  }
  // Without a store of the group's own (a split's or a shrink's group): a tutti barrier with
  // the timeout, which names a rank that did not reach it. A timeout of 0 expires at once: the
  // barrier runs with a per-call timeout of 1 ms.
  c10d::BarrierOptions o = opts;
  if (o.timeout.count() == 0) o.timeout = std::chrono::milliseconds(1);
  auto work = barrier(o);
  work->wait(o.timeout.count() > 0 ? o.timeout : std::chrono::milliseconds(0));
}
// ---- point to point ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::send(std::vector<at::Tensor>& tensors, int dst,
                                                       int tag) {
  at::Tensor t = single(tensors, "send");
  checkRoot(dst, size_, "send");
  return postP2p(true, dst, t, OpType::SEND, "tutti:send");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors, int src,
                                                       int tag) {
  at::Tensor t = single(tensors, "recv");
  checkRoot(src, size_, "recv");
  return postP2p(false, src, t, OpType::RECV, "tutti:recv");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::postP2p(bool isSend, int peer, at::Tensor tensor,
                                                          OpType type, const char* title) {
  if (estimating_) {
    const tuttiDataType_t dtype = dataTypeOf(tensor);
    const OpInfo op{type, title, isSend ? "send" : "recv", 0};
    return recordForEstimate(
        op, {tensor},
        [&](tuttiStream_t) {
          return isSend ? tuttiSend(ptr(tensor), tensor.numel(), dtype, peer, comm_, nullptr)
                        : tuttiRecv(ptr(tensor), tensor.numel(), dtype, peer, comm_, nullptr);
        },
        false);
  }
  auto work = c10::make_intrusive<TuttiWork>(rank_, type, title, std::vector<at::Tensor>{tensor});
  work->setSequenceNumber(sequence_);
  observe(*work, title, std::nullopt, peer);  // its tensor is its output
  {
    std::lock_guard lock(coalesceMu_);
    if (coalescing_) {  // batch_isend_irecv: runs at endCoalescing
      batch_.push_back({isSend, peer, tensor, work});
      return work;
    }
  }
  work->defaultTimeout = timeout_;
  if (reached_->has(peer)) {
    pending_->flush();  // posted before it: messages between two ranks match in posting order
    submitBatch({{isSend, peer, tensor, work}}, title, /*asGroup=*/false);
    return work;
  }
  work->beforeUse = [pending = std::weak_ptr<PendingP2p>(pending_)] {
    if (auto p = pending.lock()) p->flush();
  };
  std::lock_guard lock(pending_->mu);
  pending_->ops.push_back({isSend, peer, tensor, work});
  return work;
}

void PendingP2p::flush() {
  std::vector<P2pOp> batch;
  std::function<void(std::vector<P2pOp>)> run;
  {
    std::lock_guard lock(mu);
    if (ops.empty()) return;
    batch.swap(ops);
    run = submit;
  }
  if (run) {
    run(std::move(batch));
    return;
  }
  auto error = std::make_exception_ptr(
      std::runtime_error("tutti: the process group was destroyed before this send/recv ran"));
  for (auto& p : batch) p.work->complete(error);
}

// The first message of a send from any rank (tuttiRecvAny), in stream order after what was
// posted before it; the work's sourceRank() names the sender once it completed.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                int tag) {
  at::Tensor t = single(tensors, "recv");
  auto source = std::make_shared<int>(-1);
  Dense d(t);
  WorkSteps s;
  s.issue = [this, d, source](tuttiStream_t st) {
    return tuttiRecvAny(ptr(d.buf), d.buf.numel(), dataTypeOf(d.buf), source.get(), comm_, st);
  };
  s.after = when(d.staged(), [d] { d.out(); });
  auto work =
      enqueue({OpType::RECVANYSOURCE, "tutti:recvAnySource", "recv", kNeverNow}, {t}, std::move(s));
  if (auto* mine = dynamic_cast<TuttiWork*>(work.get())) mine->setSourceSlot(source);
  return work;
}

void ProcessGroupTutti::startCoalescing() {
  pending_->flush();  // what was posted before the batch runs before it
  std::lock_guard lock(coalesceMu_);
  if (coalescing_) throw std::invalid_argument("tutti: coalescing already started");
  coalescing_ = true;
  batch_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::endCoalescing() {
  std::vector<P2p> batch;
  {
    std::lock_guard lock(coalesceMu_);
    if (!coalescing_) throw std::invalid_argument("tutti: coalescing was not started");
    coalescing_ = false;
    batch.swap(batch_);
  }
  return submitBatch(std::move(batch), "tutti:batch_p2p");
}

// The batch's sends and receives as one tutti group on the stream (they progress together, so
// any order of posting on the ranks completes); each operation's own work completes with it.
c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::submitBatch(std::vector<P2p> batch,
                                                              const char* title, bool asGroup) {
  std::vector<at::Tensor> outputs;
  std::vector<Dense> bufs;
  std::vector<c10::intrusive_ptr<TuttiWork>> works;
  bool stagedSend = false;
  for (const auto& p : batch) {
    if (!p.isSend) outputs.push_back(p.tensor);
    bufs.emplace_back(p.tensor);
    works.push_back(p.work);
    stagedSend = stagedSend || (p.isSend && bufs.back().staged());
  }
  WorkSteps s;
  bool timed = false;
  for (const auto& w : works) timed = timed || w->wantsStart();
  s.before = when(stagedSend || timed, [batch, bufs, works] {
    for (const auto& w : works)
      if (w->wantsStart()) w->markStarted();
    for (size_t i = 0; i < batch.size(); ++i)
      if (batch[i].isSend) bufs[i].in();
  });
  s.issue = [this, batch, bufs, asGroup](tuttiStream_t st) {
    auto call = [&](size_t i) {
      const auto& b = bufs[i].buf;
      if (batch[i].isSend)
        return tuttiSend(ptr(b), b.numel(), dataTypeOf(b), batch[i].peer, comm_, st);
      return tuttiRecv(ptr(b), b.numel(), dataTypeOf(b), batch[i].peer, comm_, st);
    };
    return asGroup || batch.size() != 1 ? grouped(batch.size(), call) : call(0);
  };
  s.after = [batch, bufs] {
    for (size_t i = 0; i < batch.size(); ++i)
      if (!batch[i].isSend) bufs[i].out();
  };
  std::vector<int> peers;
  for (const auto& p : batch)
    if (p.peer != rank_) peers.push_back(p.peer);  // with itself: a copy that needs its pair
  s.done = [works, peers, reached = reached_](std::exception_ptr error) {
    if (!error)
      for (int peer : peers) reached->mark(peer);  // connected now (ReachedPeers)
    for (const auto& w : works) w->complete(error);
  };
  // The batch's own work is internal: each operation's work carries the profiler's event and
  // the hooks (one event per operation).
  return enqueue({OpType::COALESCED, title, "batch_isend_irecv", kNeverNow, std::nullopt,
                  /*internal=*/true},
                 outputs, std::move(s));
}

// call(i) for i < n inside one tutti group (they progress together, and small collectives
// fuse); the first failure.
tuttiResult_t ProcessGroupTutti::grouped(size_t n,
                                         const std::function<tuttiResult_t(size_t)>& call) {
  if (tuttiResult_t r = tuttiGroupStart(); r != tuttiSuccess) return r;
  tuttiResult_t r = tuttiSuccess;
  try {
    for (size_t i = 0; i < n && r == tuttiSuccess; ++i) r = call(i);
  } catch (...) {
    tuttiGroupEnd();  // the calls made so far still run: the peers wait for them
    throw;
  }
  const tuttiResult_t end = tuttiGroupEnd();
  return r != tuttiSuccess ? r : end;
}

// ---- tutti additions ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduceCompressed(at::Tensor& tensor,
                                                                      const std::string& compressor,
                                                                      uint64_t key,
                                                                      bool errorFeedback) {
  std::vector<at::Tensor> one{tensor};
  at::Tensor t = single(one, "allreduce_compressed");
  auto dtype = dataTypeOf(t);
  if (dtype != tuttiFloat32 && dtype != tuttiFloat16 && dtype != tuttiBfloat16)
    throw std::invalid_argument(
        "tutti allreduce_compressed: float32, float16 or bfloat16 tensors only");
  Dense d(t);
  WorkSteps s;
  s.before = d.copyIn();
  s.issue = [this, d, compressor, key, errorFeedback, dtype](tuttiStream_t st) {
    return tuttiAllReduceCompressed(ptr(d.buf), ptr(d.buf), d.buf.numel(), dtype,
                                    compressor.c_str(), key, errorFeedback ? 1 : 0, comm_, st);
  };
  s.after = d.copyOut();
  return enqueue(
      {OpType::ALLREDUCE, "tutti:all_reduce_compressed", "allreduce_compressed", bytesOf(t)}, {t},
      std::move(s));
}

void ProcessGroupTutti::rawAllreduce(at::Tensor& tensor) {
  check(tuttiAllReduce(ptr(tensor), ptr(tensor), tensor.numel(), dataTypeOf(tensor), tuttiSum,
                       comm_, nullptr),
        "allreduce");
}

std::shared_ptr<GraphHandle> ProcessGroupTutti::makeGraph(int kind, int rows, bool hierarchical) {
  drain();
  auto g = std::make_shared<GraphHandle>();
  check(tuttiGraphCreate(comm_, static_cast<tuttiGraphKind_t>(kind), rows, hierarchical ? 1 : 0,
                         &g->graph),
        "graph");
  return g;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::neighborAllreduce(
    at::Tensor& tensor, std::shared_ptr<GraphHandle> graph) {
  std::vector<at::Tensor> one{tensor};
  at::Tensor t = single(one, "neighbor_allreduce");
  auto dtype = dataTypeOf(t);
  if (dtype != tuttiFloat32 && dtype != tuttiFloat64 && dtype != tuttiFloat16 &&
      dtype != tuttiBfloat16)
    throw std::invalid_argument(
        "tutti neighbor_allreduce: float32, float64, float16 or bfloat16 tensors only");
  if (!graph || graph->graph == nullptr)
    throw std::invalid_argument("tutti neighbor_allreduce: no graph");
  Dense d(t);
  WorkSteps s;
  s.before = d.copyIn();
  // The graph lives until the last step ran (the steps hold it).
  s.issue = [this, d, graph, dtype](tuttiStream_t st) {
    return tuttiNeighborAllReduce(ptr(d.buf), ptr(d.buf), d.buf.numel(), dtype, graph->graph, comm_,
                                  st);
  };
  s.after = [d, graph] { d.out(); };
  return enqueue({OpType::ALLREDUCE, "tutti:neighbor_allreduce", "neighbor_allreduce", bytesOf(t)},
                 {t}, std::move(s));
}

void ProcessGroupTutti::setAlgorithm(const std::string& spec) {
  drain();
  check(tuttiCommSetAlgorithm(comm_, spec.empty() ? nullptr : spec.c_str()), "set_algorithm");
}

std::string ProcessGroupTutti::lastAlgorithm() {
  const char* a = tuttiCommLastAlgorithm(comm_);
  return a ? a : "";
}

}  // namespace tutti::torch_backend
