// One operation of the torch backend as a c10d::Work (wait(), is_completed(), futures): its
// steps run on the group's host stream or at submit (work_stream.h), then complete it.
#pragma once

#include <ATen/core/ivalue.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "sync_use.h"
#include "tutti/tutti.h"

namespace tutti::torch_backend {

class TuttiWork : public c10d::Work {
 public:
  TuttiWork(int rank, c10d::OpType type, const char* profilingTitle,
            std::vector<at::Tensor> outputs);
  ~TuttiWork() override;

  // Completes the work with error (none: success); once.
  void complete(std::exception_ptr error);

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
  tuttiEvent_t event_ = nullptr;
  std::weak_ptr<SyncUse> syncUse_;
  SyncUse::Submit submit_;
  void markFuture(std::exception_ptr error);
  std::mutex futureMu_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // made on first getFuture()
  bool futureMarked_ = false;
};

}  // namespace tutti::torch_backend
