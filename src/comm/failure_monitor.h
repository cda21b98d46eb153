// FailureMonitor: what one communicator knows about failures. Its abort flag and the eventfd
// that wakes its waits (the executor and the transports watch both), the failure that ended it
// (code and text: every later call fails with it), the flight recorder of its calls and the
// dump of it (TUTTI_TRACE_FILE), and the failure records ranks leave in the communicator's
// store ("fail/<rank>" = "<first failed rank>\n<text>") for their peers to read after a
// connection breaks. It knows nothing of connections, schedules or collectives: after record()
// the communicator closes its connections.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "bootstrap/store.h"
#include "comm/call_trace.h"
#include "common/unique_fd.h"
#include "tutti/tutti.h"

namespace tutti {

class FailureMonitor {
 public:
  // store: the communicator's (prefixed); traceCalls: the flight recorder's size; traceFile:
  // TUTTI_TRACE_FILE (%r rank, %p pid; empty: no dump); name: the communicator's, for the dump.
  FailureMonitor(std::shared_ptr<bootstrap::Store> store, int rank, int nranks, size_t traceCalls,
                 std::string traceFile, std::string name);
  FailureMonitor(const FailureMonitor&) = delete;
  FailureMonitor& operator=(const FailureMonitor&) = delete;

  // Abort: sets the flag and wakes the waits (once; any thread, non-blocking).
  void revoke();
  bool aborted() const { return aborted_.load(); }
  const std::atomic<bool>* abortFlag() const { return &aborted_; }
  int abortFd() const { return abortFd_.get(); }

  // The failure that ended the communicator: tuttiSuccess / "" while none.
  tuttiResult_t failure() const { return code_.load(); }
  std::string failureText() const;
  // Throws the earlier failure ("the communicator failed earlier: ..."), or tuttiInvalidUsage
  // when aborted; returns when neither.
  void throwIfFailed() const;
  // Records the first failure: later calls fail with it, the flight recorder is dumped, and
  // the record is published for the peers. Returns false (and does nothing) when a failure
  // was recorded already.
  bool record(tuttiResult_t code, const std::string& text, int firstFailed);

  // A rank's failure record: `by` wrote it, holding `first` responsible (-1: unknown).
  struct Record {
    int by;
    int first;
    std::string text;
  };
  // Rank r's record (best effort: none when the store is gone with the failed rank).
  std::optional<Record> recordOf(int r);
  // The first record, naming a rank, of a rank other than this one and `peer`.
  std::optional<Record> anyOtherRecord(int peer);

  // After a timeout: every rank's current call, from the ranks that report within waitSec
  // through the store ("state/<rank>"); ranks that do not report are named as such, and
  // *firstSilent is the lowest of them (-1: all reported).
  std::string gatherCallStates(int* firstSilent, double waitSec = 1.0);

  // The flight recorder (the calling thread writes it; any thread may print it).
  CallTrace& trace() { return trace_; }
  const CallTrace& trace() const { return trace_; }
  std::string traceText() const;
  // What a dump writes: the flight recorder, then the counts and latency histograms by
  // collective, size and algorithm (CallStats).
  std::string dumpText() const;
  // The flight recorder on demand (TraceDumpSignal): to the trace file, else stderr; the job
  // goes on. Any thread.
  void dumpTrace(const std::string& cause) const;

 private:
  // "tutti flight recorder: communicator <name> rank <r>/<n>", a dump's first words.
  std::string traceHeader() const;
  // Appends "<header>\n<the flight recorder>" to the trace file (false: none set).
  bool writeTraceFile(const std::string& header) const;

  std::shared_ptr<bootstrap::Store> store_;
  int rank_, nranks_;
  std::string traceFile_, name_;
  std::atomic<bool> aborted_{false};
  UniqueFd abortFd_;
  std::atomic<tuttiResult_t> code_{tuttiSuccess};
  mutable std::mutex mutex_;  // text_
  std::string text_;
  CallTrace trace_;
};

}  // namespace tutti
