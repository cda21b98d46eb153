#include "process_group.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

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

// The size given for point-to-point work: never run at submit on the caller's thread (an
// irecv there would block the caller until the peer sends, and the caller may be the one
// who has to send first). wait() may still run it when it is next.
constexpr size_t kNeverAtSubmit = WorkQueue::kNeverAtSubmit;

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

// Every tensor of list flattened into one contiguous 1-D tensor (in list order).
at::Tensor flatten(const std::vector<at::Tensor>& list, const at::Tensor& like) {
  if (list.empty()) return at::empty({0}, like.options());
  std::vector<at::Tensor> flat;
  flat.reserve(list.size());
  for (const auto& t : list) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// Copies consecutive slices of flat back into each tensor of list.
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& list) {
  int64_t off = 0;
  for (auto& t : list) {
    t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
}

// The tensor itself when contiguous, else a contiguous copy (written back by finish()).
at::Tensor dense(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }
void finish(at::Tensor& user, const at::Tensor& work) {
  if (!work.is_same(user)) user.copy_(work);
}

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
  startQueue();
}

ProcessGroupTutti::ProcessGroupTutti(tuttiComm_t comm, std::chrono::milliseconds timeout,
                                     c10::intrusive_ptr<c10d::Store> store)
    : c10d::Backend(rankIn(comm), sizeOf(comm)),
      store_(std::move(store)),
      comm_(comm),
      commTimeout_(timeout) {
  startQueue();
}

void ProcessGroupTutti::startQueue() {
  inlineBytes_ = inlineBytesFromEnv();
  queue_ = std::make_shared<WorkQueue>(inlineBytes_);
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
  queue_.reset();  // runs (or fails) what is queued
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
  pending_->flush();
  queue_.reset();
  if (failed_) tuttiCommAbort(comm_);
  tuttiCommDestroy(comm_);
  comm_ = nullptr;
  destroyed_ = true;
  queue_ = std::make_shared<WorkQueue>(0);  // later operations fail at the C call
}

void ProcessGroupTutti::quiesce() {
  pending_->flush();
  auto old = std::exchange(queue_, std::make_shared<WorkQueue>(inlineBytes_));
  old.reset();  // joins its worker once what is queued has run (or failed)
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

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::enqueue(OpType type, const char* title,
                                                          std::vector<at::Tensor> outputs,
                                                          size_t bytes, Body body, CallOpts call) {
  pending_->flush();  // point-to-point posted before this operation runs before it
  // A synchronous call (async_op=False) runs at submit whenever nothing is queued before it.
  if (!call.asyncOp && bytes != kNeverAtSubmit) bytes = 0;
  if (call.timeout.count() > 0) body = withCallTimeout(std::move(body), call.timeout);
  {
    std::lock_guard lock(coalesceMu_);
    if (coalescing_)
      throw std::invalid_argument(
          "tutti: only send and recv may be issued between start and end of coalescing "
          "(batch_isend_irecv)");
  }
  ++sequence_;
  auto work = c10::make_intrusive<TuttiWork>(rank_, type, title, std::move(outputs),
                                             std::move(body), bytes);
  work->defaultTimeout = timeout_;
  work->onTimeout = [comm = comm_, this] {
    failed_ = true;
    tuttiCommAbort(comm);
  };
  queue_->submit(work);
  return work;
}

ProcessGroupTutti::Body ProcessGroupTutti::withCallTimeout(Body body,
                                                           std::chrono::milliseconds timeout) {
  const int ms = static_cast<int>(std::min<int64_t>(timeout.count(), INT32_MAX));
  return [this, body = std::move(body), ms] {
    int base = 0;
    check(tuttiCommGetTimeout(comm_, &base), "get timeout");
    check(tuttiCommSetTimeout(comm_, ms), "set timeout");
    struct Restore {
      tuttiComm_t comm;
      int ms;
      ~Restore() { tuttiCommSetTimeout(comm, ms); }
    } restore{comm_, base};
    body();
  };
}

void ProcessGroupTutti::drain() { barrier(c10d::BarrierOptions())->wait(); }

// ---- reductions ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  at::Tensor t = single(tensors, "allreduce");
  Reduction red = reductionOf(opts.reduceOp, t.scalar_type());
  auto dtype = dataTypeOf(t);
  return enqueue(
      OpType::ALLREDUCE, "tutti:all_reduce", {t}, bytesOf(t),
      [this, t, red, dtype] {
        at::Tensor user = t, d = dense(t);
        if (red.premultiply) d.mul_(red.factor);  // in place: the result overwrites it anyway
        check(tuttiAllReduce(ptr(d), ptr(d), d.numel(), dtype, red.op, comm_, nullptr),
              "allreduce");
        finish(user, d);
      },
      callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  if (tensors.empty()) throw std::invalid_argument("tutti allreduce_coalesced: no tensors");
  for (const auto& t : tensors) checkSameType(tensors[0], t, "allreduce_coalesced");
  Reduction red = reductionOf(opts.reduceOp, tensors[0].scalar_type());
  auto dtype = dataTypeOf(tensors[0]);
  size_t bytes = 0;
  for (const auto& t : tensors) bytes += bytesOf(t);
  return enqueue(
      OpType::ALLREDUCE_COALESCED, "tutti:all_reduce_coalesced", tensors, bytes,
      [this, tensors, red, dtype]() mutable {
        at::Tensor flat = flatten(tensors, tensors[0]);
        if (red.premultiply) flat.mul_(red.factor);
        check(tuttiAllReduce(ptr(flat), ptr(flat), flat.numel(), dtype, red.op, comm_, nullptr),
              "allreduce_coalesced");
        unflatten(flat, tensors);
      },
      callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  checkRoot(opts.rootRank, size_, "reduce");
  Reduction red = reductionOf(opts.reduceOp, t.scalar_type());
  auto dtype = dataTypeOf(t);
  int root = opts.rootRank;
  return enqueue(
      OpType::REDUCE, "tutti:reduce", {t}, bytesOf(t),
      [this, t, red, dtype, root] {
        at::Tensor user = t, in = dense(t);
        if (red.premultiply) in = in.mul(red.factor);  // a non-root's tensor must not change
        // Only the root's tensor changes: other ranks reduce into scratch.
        at::Tensor out = rank_ == root ? in : at::empty_like(in);
        check(tuttiReduce(ptr(in), ptr(out), in.numel(), dtype, red.op, root, comm_, nullptr),
              "reduce");
        if (rank_ == root) finish(user, out);
      },
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
  auto in = inputs[0];
  return enqueue(
      OpType::REDUCE_SCATTER, "tutti:reduce_scatter", {out}, bytesOf(out) * size_,
      [this, out, in, red, dtype] {
        at::Tensor user = out, flat = flatten(in, out), d = dense(out);
        if (red.premultiply) flat.mul_(red.factor);
        check(tuttiReduceScatter(ptr(flat), ptr(d), d.numel(), dtype, red.op, comm_, nullptr),
              "reduce_scatter");
        finish(user, d);
      },
      callOpts(opts));
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
  at::Tensor out = output, in = input;
  return enqueue(
      OpType::_REDUCE_SCATTER_BASE, "tutti:reduce_scatter_base", {out}, bytesOf(in),
      [this, out, in, red, dtype] {
        at::Tensor user = out, d = dense(out), src = dense(in);
        if (red.premultiply) src = src.mul(red.factor);
        check(tuttiReduceScatter(ptr(src), ptr(d), d.numel(), dtype, red.op, comm_, nullptr),
              "reduce_scatter_tensor");
        finish(user, d);
      },
      callOpts(opts));
}

// ---- data movement ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  checkRoot(opts.rootRank, size_, "broadcast");
  if (opts.rootTensor != 0)
    throw std::invalid_argument("tutti broadcast: rootTensor must be 0 (one tensor per process)");
  auto dtype = dataTypeOf(t);
  int root = opts.rootRank;
  return enqueue(
      OpType::BROADCAST, "tutti:broadcast", {t}, bytesOf(t),
      [this, t, dtype, root] {
        at::Tensor user = t, d = dense(t);
        check(tuttiBroadcast(ptr(d), ptr(d), d.numel(), dtype, root, comm_, nullptr), "broadcast");
        finish(user, d);
      },
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
  auto outs = outputs[0];
  return enqueue(
      OpType::ALLGATHER, "tutti:all_gather", outs, total * in.element_size(),
      [this, in, outs, counts, displs, even, total, dtype]() mutable {
        at::Tensor src = dense(in), flat = at::empty({int64_t(total)}, in.options());
        if (even)
          check(tuttiAllGather(ptr(src), ptr(flat), counts[0], dtype, comm_, nullptr), "allgather");
        else
          check(tuttiAllGatherV(ptr(src), src.numel(), ptr(flat), counts.data(), displs.data(),
                                dtype, comm_, nullptr),
                "allgather");
        unflatten(flat, outs);
      },
      callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  checkCpu(output, "the output");
  checkSameType(output, input, "all_gather_into_tensor");
  if (output.numel() != input.numel() * size_)
    throw std::invalid_argument("tutti all_gather_into_tensor: output must hold world_size (" +
                                std::to_string(size_) + ") x the input's elements");
  auto dtype = dataTypeOf(input);
  at::Tensor out = output, in = input;
  return enqueue(
      OpType::_ALLGATHER_BASE, "tutti:all_gather_base", {out}, bytesOf(out),
      [this, out, in, dtype] {
        at::Tensor user = out, d = dense(out), src = dense(in);
        check(tuttiAllGather(ptr(src), ptr(d), src.numel(), dtype, comm_, nullptr),
              "all_gather_into_tensor");
        finish(user, d);
      },
      callOpts(opts));
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
  return enqueue(
      OpType::ALLGATHER_COALESCED, "tutti:all_gather_coalesced", all,
      total * inputs[0].element_size(),
      [this, inputs, all, counts, displs, total, dtype]() mutable {
        at::Tensor src = flatten(inputs, inputs[0]);
        at::Tensor flat = at::empty({int64_t(total)}, inputs[0].options());
        check(tuttiAllGatherV(ptr(src), src.numel(), ptr(flat), counts.data(), displs.data(), dtype,
                              comm_, nullptr),
              "allgather_coalesced");
        unflatten(flat, all);
      },
      callOpts(opts));
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
  int root = opts.rootRank;
  std::vector<at::Tensor> outs = rootList(outputs, in, root, "gather", "output");
  auto dtype = dataTypeOf(in);
  return enqueue(
      OpType::GATHER, "tutti:gather", outs, bytesOf(in) * size_,
      [this, in, outs, root, dtype]() mutable {
        at::Tensor src = dense(in);
        at::Tensor flat =
            rank_ == root ? at::empty({src.numel() * size_}, in.options()) : at::Tensor();
        check(tuttiGather(ptr(src), rank_ == root ? ptr(flat) : nullptr, src.numel(), dtype, root,
                          comm_, nullptr),
              "gather");
        if (rank_ == root) unflatten(flat, outs);
      },
      callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  checkRoot(opts.rootRank, size_, "scatter");
  int root = opts.rootRank;
  std::vector<at::Tensor> ins = rootList(inputs, out, root, "scatter", "input");
  auto dtype = dataTypeOf(out);
  return enqueue(
      OpType::SCATTER, "tutti:scatter", {out}, bytesOf(out) * size_,
      [this, out, ins, root, dtype] {
        at::Tensor user = out, d = dense(out);
        at::Tensor flat = rank_ == root ? flatten(ins, out) : at::Tensor();
        check(tuttiScatter(rank_ == root ? ptr(flat) : nullptr, ptr(d), d.numel(), dtype, root,
                           comm_, nullptr),
              "scatter");
        finish(user, d);
      },
      callOpts(opts));
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
  const bool even = inputSplits.empty() && outputSplits.empty();
  auto dtype = dataTypeOf(input);
  at::Tensor out = output, in = input;
  return enqueue(
      OpType::ALLTOALL_BASE, "tutti:all_to_all", {out}, bytesOf(in),
      [this, out, in, sc, sd, rc, rd, even, dtype] {
        at::Tensor user = out, d = dense(out), src = dense(in);
        if (even && src.numel() == d.numel())
          check(tuttiAllToAll(ptr(src), ptr(d), src.numel() / size_, dtype, comm_, nullptr),
                "alltoall_base");
        else
          check(tuttiAllToAllV(ptr(src), sc.data(), sd.data(), ptr(d), rc.data(), rd.data(), dtype,
                               comm_, nullptr),
                "alltoall_base");
        finish(user, d);
      },
      callOpts(opts));
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
  return enqueue(
      OpType::ALLTOALL, "tutti:all_to_all_list", outputs, sOff * inputs[0].element_size(),
      [this, outputs, inputs, sc, sd, rc, rd, rOff, dtype]() mutable {
        at::Tensor src = flatten(inputs, inputs[0]);
        at::Tensor flat = at::empty({int64_t(rOff)}, inputs[0].options());
        check(tuttiAllToAllV(ptr(src), sc.data(), sd.data(), ptr(flat), rc.data(), rd.data(), dtype,
                             comm_, nullptr),
              "alltoall");
        unflatten(flat, outputs);
      },
      callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::barrier(const c10d::BarrierOptions& opts) {
  return enqueue(
      OpType::BARRIER, "tutti:barrier", {}, 0,
      [this] { check(tuttiBarrier(comm_, nullptr), "barrier"); }, callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const size_t bytes = checkCoalesced(outputs, inputs, size_, true);
  return enqueue(
      OpType::COALESCED, "tutti:all_gather_into_tensor_coalesced", outputs, bytes,
      [this, outputs, inputs]() mutable {
        std::vector<at::Tensor> dst(outputs.size()), src(inputs.size());
        grouped("all_gather_into_tensor_coalesced", inputs.size(), [&](size_t i) {
          dst[i] = dense(outputs[i]);
          src[i] = dense(inputs[i]);
          return tuttiAllGather(ptr(src[i]), ptr(dst[i]), src[i].numel(), dataTypeOf(src[i]), comm_,
                                nullptr);
        });
        for (size_t i = 0; i < outputs.size(); ++i) finish(outputs[i], dst[i]);
      },
      callOpts(opts));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const size_t bytes = checkCoalesced(outputs, inputs, size_, false);
  std::vector<Reduction> reds;
  for (const auto& out : outputs) reds.push_back(reductionOf(opts.reduceOp, out.scalar_type()));
  return enqueue(
      OpType::COALESCED, "tutti:reduce_scatter_tensor_coalesced", outputs, bytes,
      [this, outputs, inputs, reds]() mutable {
        std::vector<at::Tensor> dst(outputs.size()), src(inputs.size());
        grouped("reduce_scatter_tensor_coalesced", inputs.size(), [&](size_t i) {
          dst[i] = dense(outputs[i]);
          src[i] = dense(inputs[i]);
          if (reds[i].premultiply) src[i] = src[i].mul(reds[i].factor);
          return tuttiReduceScatter(ptr(src[i]), ptr(dst[i]), dst[i].numel(), dataTypeOf(dst[i]),
                                    reds[i].op, comm_, nullptr);
        });
        for (size_t i = 0; i < outputs.size(); ++i) finish(outputs[i], dst[i]);
      },
      callOpts(opts));
}

void ProcessGroupTutti::monitoredBarrier(const c10d::BarrierOptions& opts, bool) {
  auto work = barrier(opts);
  work->wait(opts.timeout.count() > 0 ? opts.timeout : std::chrono::milliseconds(0));
}

// ---- point to point ----

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::send(std::vector<at::Tensor>& tensors, int dst,
                                                       int tag) {
  at::Tensor t = single(tensors, "send");
  checkRoot(dst, size_, "send");
  return postP2p(true, dst, dense(t), OpType::SEND, "tutti:send");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recv(std::vector<at::Tensor>& tensors, int src,
                                                       int tag) {
  at::Tensor t = single(tensors, "recv");
  checkRoot(src, size_, "recv");
  return postP2p(false, src, t, OpType::RECV, "tutti:recv");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::postP2p(bool isSend, int peer, at::Tensor tensor,
                                                          OpType type, const char* title) {
  auto work = c10::make_intrusive<TuttiWork>(rank_, type, title, std::vector<at::Tensor>{tensor},
                                             nullptr, bytesOf(tensor));
  {
    std::lock_guard lock(coalesceMu_);
    if (coalescing_) {  // batch_isend_irecv: runs at endCoalescing
      batch_.push_back({isSend, peer, tensor, work});
      return work;
    }
  }
  work->defaultTimeout = timeout_;
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

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::recvAnysource(std::vector<at::Tensor>&, int) {
  throw std::invalid_argument(
      "tutti: recv from any source is not supported (tutti matches messages per peer, as NCCL "
      "does); pass src");
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

c10::intrusive_ptr<c10d::Work> ProcessGroupTutti::submitBatch(std::vector<P2p> batch,
                                                              const char* title) {
  std::vector<at::Tensor> outputs;
  for (const auto& p : batch)
    if (!p.isSend) outputs.push_back(p.tensor);
  return enqueue(OpType::COALESCED, title, outputs, kNeverAtSubmit, [this, batch]() mutable {
    std::exception_ptr error;
    try {
      runBatch(batch);
    } catch (...) {
      error = std::current_exception();
    }
    for (auto& p : batch) p.work->complete(error);
    if (error) std::rethrow_exception(error);
  });
}

// call(i) for i < n inside one tutti group (they progress together); throws the first failure.
void ProcessGroupTutti::grouped(const char* what, size_t n,
                                const std::function<tuttiResult_t(size_t)>& call) {
  check(tuttiGroupStart(), what);
  tuttiResult_t r = tuttiSuccess;
  for (size_t i = 0; i < n && r == tuttiSuccess; ++i) r = call(i);
  tuttiResult_t end = tuttiGroupEnd();
  check(r != tuttiSuccess ? r : end, what);
}

// The batch's sends and receives as one tutti group (they progress together, so any order of
// posting on the ranks completes).
void ProcessGroupTutti::runBatch(std::vector<P2p>& batch) {
  if (batch.empty()) return;
  std::vector<at::Tensor> recvDense(batch.size());
  grouped("batch_isend_irecv", batch.size(), [&](size_t i) {
    auto& p = batch[i];
    auto dtype = dataTypeOf(p.tensor);
    if (p.isSend) return tuttiSend(ptr(p.tensor), p.tensor.numel(), dtype, p.peer, comm_, nullptr);
    recvDense[i] = dense(p.tensor);
    return tuttiRecv(ptr(recvDense[i]), recvDense[i].numel(), dtype, p.peer, comm_, nullptr);
  });
  for (size_t i = 0; i < batch.size(); ++i)
    if (!batch[i].isSend) finish(batch[i].tensor, recvDense[i]);
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
  return enqueue(
      OpType::ALLREDUCE, "tutti:all_reduce_compressed", {t}, bytesOf(t),
      [this, t, compressor, key, errorFeedback, dtype] {
        at::Tensor user = t, d = dense(t);
        check(tuttiAllReduceCompressed(ptr(d), ptr(d), d.numel(), dtype, compressor.c_str(), key,
                                       errorFeedback ? 1 : 0, comm_, nullptr),
              "allreduce_compressed");
        finish(user, d);
      });
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
  return enqueue(
      OpType::ALLREDUCE, "tutti:neighbor_allreduce", {t}, bytesOf(t), [this, t, graph, dtype] {
        at::Tensor user = t, d = dense(t);
        check(
            tuttiNeighborAllReduce(ptr(d), ptr(d), d.numel(), dtype, graph->graph, comm_, nullptr),
            "neighbor_allreduce");
        finish(user, d);
      });
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
