#include "flight_recorder.h"

#include <pthread.h>

#include <cstdlib>
#include <functional>
#include <thread>

namespace tutti::torch_backend {

namespace {

// torch's rule: TORCH_FR_BUFFER_SIZE, else TORCH_NCCL_TRACE_BUFFER_SIZE, else 2000.
size_t capacityFromEnv() {
  for (const char* name : {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      char* end = nullptr;
      const long long n = std::strtoll(v, &end, 10);
      return end != v && n > 0 ? static_cast<size_t>(n) : 0;
    }
  }
  return 2000;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Fills s with the tensors' sizes and dtypes, reusing its buffers (a ring entry's, from the
// operation recorded there before).
void fillShapes(const std::vector<at::Tensor>* tensors, FlightRecorder::Shapes& s) {
  const size_t n = tensors ? tensors->size() : 0;
  s.sizes.resize(n);
  s.dtypes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor& t = (*tensors)[i];
    s.sizes[i].assign(t.sizes().begin(), t.sizes().end());
    s.dtypes[i].assign(c10::toString(t.scalar_type()));
  }
}

// The calling thread's name, read once per thread (reading it is a system call).
const std::string& threadName() {
  thread_local const std::string name = [] {
    char buf[32] = {0};
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    return std::string(buf);
  }();
  return name;
}

}  // namespace

FlightRecorder& FlightRecorder::get() {
  static FlightRecorder* recorder = new FlightRecorder(capacityFromEnv());  // outlives exit
  return *recorder;
}

FlightRecorder::FlightRecorder(size_t capacity) : capacity_(capacity) {}

uint64_t FlightRecorder::record(const Op& op) {
  if (!enabled()) return kNone;
  const int64_t created = nowNs();
  const uint64_t threadId = std::hash<std::thread::id>{}(std::this_thread::get_id());
  std::lock_guard lock(mu_);
  // Written in place: the entry it replaces lends its strings' and vectors' buffers, so a
  // full ring records without allocating.
  const uint64_t id = next_++;
  if (ring_.size() < capacity_) ring_.emplace_back();  // filling: id == ring_.size() - 1
  Entry& e = ring_[id % capacity_];
  e.id = id;
  e.pgId = op.pgId;
  e.pgName.assign(op.pgName);
  e.pgDesc.assign(op.pgDesc);
  e.collectiveSeq = op.collectiveSeq;
  e.p2pSeq = op.p2pSeq;
  e.opId = op.opId;
  e.profilingName.assign(op.profilingName ? op.profilingName : "");
  if (op.isP2P && op.peer >= 0) {  // torch's form: "nccl:send 0->1", "nccl:recv 1<-0"
    const std::string& n = e.profilingName;
    const bool send = n.size() >= 4 && n.compare(n.size() - 4, 4, "send") == 0;
    e.profilingName +=
        " " + std::to_string(op.rank) + (send ? "->" : "<-") + std::to_string(op.peer);
  }
  e.createdNs = created;
  e.startedNs.reset();
  e.completedNs.reset();
  e.durationMs.reset();
  fillShapes(op.inputs, e.inputs);
  fillShapes(op.outputs, e.outputs);
  e.timeoutMs = op.timeoutMs;
  e.isP2P = op.isP2P;
  e.threadId = threadId;
  e.threadName.assign(threadName());
  return id;
}

FlightRecorder::Entry* FlightRecorder::find(uint64_t id) {
  if (id == kNone) return nullptr;
  const size_t i = id % capacity_;
  return i < ring_.size() && ring_[i].id == id ? &ring_[i] : nullptr;
}

void FlightRecorder::started(uint64_t id) {
  if (id == kNone) return;
  const int64_t t = nowNs();
  std::lock_guard lock(mu_);
  if (Entry* e = find(id); e && !e->startedNs) e->startedNs = t;
}

void FlightRecorder::completed(uint64_t id, std::optional<double> durationMs) {
  if (id == kNone) return;
  const int64_t t = nowNs();
  std::lock_guard lock(mu_);
  if (Entry* e = find(id)) {
    if (!e->startedNs) e->startedNs = t;
    e->completedNs = t;
    e->durationMs = durationMs;
  }
}

std::vector<FlightRecorder::Entry> FlightRecorder::entries() {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  out.reserve(ring_.size());
  const size_t n = ring_.size();
  const size_t first = n < capacity_ ? 0 : next_ % capacity_;
  for (size_t i = 0; i < n; ++i) out.push_back(ring_[(first + i) % n]);
  return out;
}

}  // namespace tutti::torch_backend
