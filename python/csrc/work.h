// One operation of the torch backend as a c10d::Work (wait(), is_completed(), futures): its
// steps run on the group's host stream or at submit (work_stream.h), then complete it.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "completion_hooks.h"
#include "flight_recorder.h"
#include "sync_use.h"
#include "tutti/tutti.h"

namespace tutti::torch_backend {

class TuttiWork : public c10d::Work {
 public:
  // profilingTitle: the profiler's event (none when null), with inputs' shapes.
  TuttiWork(int rank, c10d::OpType type, const char* profilingTitle,
            std::vector<at::Tensor> outputs,
            const std::optional<std::vector<at::Tensor>>& inputs = std::nullopt);
  ~TuttiWork() override;

  // Completes the work with error (none: success); once. Posts its WorkInfo to hooks (if set).
  void complete(std::exception_ptr error);

  // The group's sequence number of the operation (ProcessGroup's getSequencenumber).
  void setSequenceNumber(uint64_t seq) { seq_ = seq; }
  uint64_t getSequencenumber() const override { return seq_; }
  // Timing (enableCollectivesTiming): markStarted() when the operation starts to run (its
  // turn on the stream, or at once when it runs at submit); getDuration() is then the time
  // from there to completion, in milliseconds.
  void enableTiming() { timing_ = true; }
  bool timingEnabled() const { return timing_; }
  void markStarted();
  float getDuration() const override;
  // A receive from any source: the slot its sender's rank is written to before it completes
  // (-1 until then); sourceRank() reads it.
  void setSourceSlot(std::shared_ptr<const int> slot) { source_ = std::move(slot); }
  int sourceRank() const override;
  // The group's on-completion hooks (completion_hooks.h), told of this work's completion.
  void reportTo(std::shared_ptr<CompletionHooks> hooks) { hooks_ = std::move(hooks); }
  // Its entry in the flight recorder (flight_recorder.h), told of its start and completion.
  void setRecord(uint64_t id) { record_ = id; }
  // Whether the work wants markStarted() (timing, hooks or the flight recorder).
  bool wantsStart() const {
    return timing_ || hooks_ != nullptr || record_ != FlightRecorder::kNone;
  }

  // Waits for completion. Through the work's event (tuttiEventSynchronize: a thread that
  // waits while the stream's worker sleeps runs the operation itself) unless the wait is
  // bounded more tightly than the calls are (helpBound, the communicator's timeout: they fail
  // by themselves within it); then on completion alone, and a wait that times out aborts the
  // communicator (onTimeout) and throws.
  bool wait(std::chrono::milliseconds timeout) override;
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // The work's position in the group's stream (recorded after its last step); owned.
  void setEvent(tuttiEvent_t event) { event_ = event; }
  // The group's detector of synchronous use (sync_use.h), told of this work's first wait and
  // of asynchronous use; set for operations above the inline size, with the submit marked.
  void watchSyncUse(std::weak_ptr<SyncUse> syncUse) { syncUse_ = std::move(syncUse); }
  void markSubmitted() { submit_.mark(); }
  // Called first by wait(), isCompleted() and getFuture() (pending point-to-point work is
  // flushed into a group there).
  std::function<void()> beforeUse;
  // Called when wait() times out (the backend aborts its communicator).
  std::function<void()> onTimeout;
  // wait() without a timeout waits this long (the group's setTimeout; 0: for ever).
  std::chrono::milliseconds defaultTimeout{0};
  // Waits at least this long (or unbounded) go through the event (0: only unbounded ones).
  std::chrono::milliseconds helpBound{0};

 private:
  std::vector<at::Tensor> outputs_;
  uint64_t seq_ = 0;
  bool timing_ = false;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point created_ = Clock::now();
  std::atomic<int64_t> startedNs_{-1};   // since created_; -1: not started
  std::atomic<int64_t> finishedNs_{-1};  // since created_; -1: not completed
  std::shared_ptr<CompletionHooks> hooks_;
  std::shared_ptr<const int> source_;
  uint64_t record_ = FlightRecorder::kNone;
  tuttiEvent_t event_ = nullptr;
  std::weak_ptr<SyncUse> syncUse_;
  SyncUse::Submit submit_;
  void markFuture(std::exception_ptr error);
  std::mutex futureMu_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // made on first getFuture()
  bool futureMarked_ = false;
};

}  // namespace tutti::torch_backend
