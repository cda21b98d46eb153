// torch's flight recorder for the process's tutti groups: the last operations (default 2000,
// TORCH_FR_BUFFER_SIZE as torch reads it; 0: off) with their group, sequence numbers, shapes,
// dtypes, state and times, in the fields of torch's own recorder, so that
// tutti.torch.dump_fr_trace() writes a dump torch's analyser (fr_trace) reads. Knows nothing
// of the process group: operations are recorded and updated by id.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tutti::torch_backend {

class FlightRecorder {
 public:
  static constexpr uint64_t kNone = UINT64_MAX;
  struct Shapes {
    std::vector<std::vector<int64_t>> sizes;
    std::vector<std::string> dtypes;
  };
  struct Entry {
    uint64_t id = 0;
    uint64_t pgId = 0;
    std::string pgName, pgDesc;
    uint64_t collectiveSeq = 0, p2pSeq = 0, opId = 0;
    std::string profilingName;
    int64_t createdNs = 0;  // system clock, ns since the epoch
    std::optional<int64_t> startedNs, completedNs;
    std::optional<double> durationMs;  // with timing enabled
    Shapes inputs, outputs;
    int64_t timeoutMs = 0;
    bool isP2P = false;
    uint64_t threadId = 0;
    std::string threadName;
  };
  struct Op {
    uint64_t pgId;
    const std::string& pgName;  // the group's, alive during record()
    const std::string& pgDesc;
    uint64_t collectiveSeq, p2pSeq, opId;
    const char* profilingName;
    const std::vector<at::Tensor>* inputs;
    const std::vector<at::Tensor>* outputs;
    int64_t timeoutMs;
    bool isP2P;
    int rank = -1, peer = -1;  // a send or receive: named "<title> rank->peer" / "rank<-peer"
  };

  // The process's recorder (capacity from TORCH_FR_BUFFER_SIZE / TORCH_NCCL_TRACE_BUFFER_SIZE).
  static FlightRecorder& get();
  explicit FlightRecorder(size_t capacity);
  bool enabled() const { return capacity_ > 0; }

  // A new operation, "scheduled"; its id (kNone when off).
  uint64_t record(const Op& op);
  void started(uint64_t id);
  void completed(uint64_t id, std::optional<double> durationMs);
  // The recorded operations, oldest first.
  std::vector<Entry> entries();

 private:
  Entry* find(uint64_t id);  // under mu_; null once overwritten
  size_t capacity_;
  std::mutex mu_;
  std::vector<Entry> ring_;
  uint64_t next_ = 0;  // id of the next record
};

}  // namespace tutti::torch_backend
