#include "work_stream.h"

#include <Python.h>

#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

#include "python_state.h"

namespace tutti::torch_backend {

namespace {

// fn's exception, if it throws (none when fn is empty).
std::exception_ptr guardedRun(const std::function<void()>& fn) {
  if (!fn) return nullptr;
  try {
    fn();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

std::string lastError(tuttiComm_t comm) { return tuttiGetLastError(comm); }

// steps.issue(stream); an exception it throws is kept in `thrown` (the calls it issued before
// stand: the peers wait for them).
tuttiResult_t issueCalls(const WorkSteps& steps, tuttiStream_t stream, std::exception_ptr& thrown) {
  try {
    return steps.issue(stream);
  } catch (...) {
    thrown = std::current_exception();
    return tuttiSuccess;
  }
}

}  // namespace

// A submitted operation, owned by its last host function (finish) once enqueued.
struct WorkStream::Pending {
  WorkStream* owner;
  c10::intrusive_ptr<TuttiWork> work;
  const char* what;
  WorkSteps steps;
  std::thread::id submitter;
  std::exception_ptr beforeError;  // written by runBefore (stream order)
  std::exception_ptr issueError;   // written at submit
};

WorkStream::WorkStream(OnFailure onFailure) : onFailure_(std::move(onFailure)) {
  if (tuttiStreamCreate(&stream_) != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: cannot create the process group's stream: ") +
                             tuttiGetLastError(nullptr));
}

WorkStream::~WorkStream() { tuttiStreamDestroy(stream_); }

std::exception_ptr WorkStream::failure(const char* what, tuttiResult_t r, const std::string& text) {
  if (onFailure_) onFailure_();
  return std::make_exception_ptr(std::runtime_error(
      std::string("tutti ") + what + " failed: " + tuttiGetErrorString(r) + ": " + text));
}

void WorkStream::count(uint64_t Stats::*where) {
  std::lock_guard lock(mu_);
  ++(stats_.*where);
}

WorkStream::Stats WorkStream::stats() {
  std::lock_guard lock(mu_);
  return stats_;
}

void WorkStream::synchronize() { tuttiStreamSynchronize(stream_); }

void WorkStream::runNow(const c10::intrusive_ptr<TuttiWork>& work, const char* what,
                        WorkSteps steps, tuttiComm_t comm) {
  if (work->wantsStart()) work->markStarted();
  // The calls run even when the local work before them failed: the peers wait for them.
  std::exception_ptr error = guardedRun(steps.before), thrown;
  const tuttiResult_t r = issueCalls(steps, nullptr, thrown);
  if (!error) error = thrown;
  if (r != tuttiSuccess && !error) error = failure(what, r, lastError(comm));
  if (!error) error = guardedRun(steps.after);
  count(&Stats::atSubmit);
  if (steps.done) steps.done(error);
  work->complete(error);
}

tuttiResult_t WorkStream::runBefore(void* arg) {
  auto* p = static_cast<Pending*>(arg);
  if (p->work->wantsStart()) p->work->markStarted();
  p->beforeError = guardedRun(p->steps.before);
  return tuttiSuccess;
}

tuttiResult_t WorkStream::finish(void* arg) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(arg));
  WorkStream& self = *p->owner;
  if (interpreterFinalizing()) {
    // The process is exiting with this operation in flight (the group destroyed at exit):
    // its work, future and tensors are left as they are, since completing or freeing them may
    // run Python code.
    self.inFlight_.fetch_sub(1, std::memory_order_release);
    (void)p.release();
    return tuttiSuccess;
  }
  // From inside its own host function: the failure of the calls since the previous
  // operation's finish (this operation's), which it clears.
  const tuttiResult_t r = tuttiStreamSynchronize(self.stream_);
  std::exception_ptr error = p->beforeError ? p->beforeError : p->issueError;
  if (r != tuttiSuccess && !error) error = self.failure(p->what, r, lastError(nullptr));
  if (!error) error = guardedRun(p->steps.after);
  self.count(std::this_thread::get_id() == p->submitter ? &Stats::byWaiter : &Stats::onWorker);
  if (p->steps.done) p->steps.done(error);
  self.inFlight_.fetch_sub(1, std::memory_order_release);  // before the waiter may go on
  p->work->complete(error);
  return tuttiSuccess;  // what the tensors held goes with p, no lock held
}

void WorkStream::submit(const c10::intrusive_ptr<TuttiWork>& work, const char* what,
                        WorkSteps steps, tuttiComm_t comm) {
  auto p = std::make_unique<Pending>(
      Pending{this, work, what, std::move(steps), std::this_thread::get_id(), nullptr, nullptr});
  tuttiEvent_t event = nullptr;
  if (tuttiEventCreate(&event) != tuttiSuccess)
    throw std::runtime_error(std::string("tutti: ") + tuttiGetLastError(nullptr));
  inFlight_.fetch_add(1, std::memory_order_relaxed);  // until finish completes the work
  auto refused = [&] {
    const std::string text = tuttiGetLastError(nullptr);
    inFlight_.fetch_sub(1, std::memory_order_relaxed);
    tuttiEventDestroy(event);
    throw std::runtime_error("tutti " + std::string(what) + ": the stream refused it: " + text);
  };
  if ((p->steps.before || work->wantsStart()) &&
      tuttiStreamLaunchHostFunc(stream_, runBefore, p.get()) != tuttiSuccess)
    refused();
  const tuttiResult_t r = issueCalls(p->steps, stream_, p->issueError);
  if (r != tuttiSuccess) p->issueError = failure(what, r, lastError(comm));
  if (tuttiStreamLaunchHostFunc(stream_, finish, p.get()) != tuttiSuccess) refused();
  p.release();  // finish owns it now
  tuttiEventRecord(event, stream_);
  work->setEvent(event);
}

}  // namespace tutti::torch_backend
