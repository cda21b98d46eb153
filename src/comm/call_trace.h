// The flight recorder of one communicator: its last calls (collectives, barriers and
// point-to-point batches) with their state and times, for hang and failure diagnosis
// (docs/reliability.md). The thread making the calls writes the records without locks (a few
// stores per call); any thread may print them meanwhile (a sequence number per record makes
// the reader retry a record being written). Calls are described in words only when printed.
// Clock reads would cost a call of half a microsecond several percent, so not every call is
// timed: every call while the last timed one took kLongTicks or more, else one in kTimeEvery.
// A call that is not timed gets a start when it stalls (stalled()) and an end when it fails.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "comm/call_stats.h"
#include "comm/call_tag.h"

namespace tutti {

class CallTrace {
 public:
  enum class State : uint8_t { kRunning, kDone, kFailed };
  struct Record {
    uint64_t number = 0;         // 1, 2, ... per communicator (collectives and p2p)
    CallTag tag{};               // what the call was (describeCallTag)
    const char* algorithm = "";  // static string
    State state = State::kRunning;
    uint64_t start = 0, end = 0;  // CycleClock::coarseNanos() (0: not known)
    uint64_t ticks = 0;           // its duration in cycle-counter ticks (0: not timed)
  };
  static constexpr uint64_t kTimeEvery = 16;
  static constexpr uint64_t kLongTicks = 50000;  // 17-50 us at 1-3 GHz

  // capacity 0: nothing is recorded (TUTTI_TRACE_CALLS=0), not even the counts. timeEvery:
  // one call in how many is timed while calls are short (a power of two).
  explicit CallTrace(size_t capacity, uint64_t timeEvery = kTimeEvery);

  // A call starts / ends (the last begun one; its duration goes to stats()). Only the calling
  // thread writes.
  void begin(const CallTag& tag, const char* algorithm);
  void end(bool ok);
  // The running call has made no progress for waitedSec: it gets a start if it has none. Only
  // the calling thread (a wait's stall report).
  void stalled(double waitedSec);

  // The calls begun so far; the last begun one (false: none, or recording is off).
  uint64_t calls() const { return calls_.load(std::memory_order_acquire); }
  bool latest(Record* out) const;
  // Counts and latency histograms of the ended calls.
  const CallStats& stats() const { return stats_; }

  // One line per recorded call, oldest first: "#12 allreduce(...) [ring] done after 35.2 us,
  // 0.004 s ago" (just "done" when not timed). describe turns a tag into words.
  std::string text(const std::function<std::string(const CallTag&)>& describe) const;
  // What this rank is doing now, in one phrase: "in call #5 allreduce(...) for 20.1 s" or
  // "between calls, 3.0 s after call #4 allreduce(...) (done)".
  std::string current(const std::function<std::string(const CallTag&)>& describe) const;
  // The tags of the last out.size() calls (or fewer), oldest first; returns how many.
  size_t recentTags(std::span<CallTag> out) const;

 private:
  // One record as atomics (relaxed: the sequence number orders them). seq is odd while the
  // writer changes the record.
  struct Slot {
    std::atomic<uint64_t> seq{0};
    std::atomic<uint64_t> number{0}, tag0{0}, tag1{0}, start{0}, end{0}, ticks{0};
    std::atomic<const char*> algorithm{""};
    std::atomic<uint8_t> state{0};
  };
  Record read(const Slot& s) const;
  // The writer's view of its own slot's tag.
  static CallTag tag(const Slot& s) {
    return {s.tag0.load(std::memory_order_relaxed), s.tag1.load(std::memory_order_relaxed)};
  }
  std::string line(const Record& r, uint64_t now, double secondsPerTick,
                   const std::function<std::string(const CallTag&)>& describe) const;
  size_t capacity_;
  uint64_t timeMask_;        // a call is timed when its number & timeMask_ is 1 (or all are: long)
  bool timeAll_ = false;     // the last timed call took kLongTicks or more
  uint64_t timedStart_ = 0;  // the running call's first tick (0: not timed)
  size_t mask_;  // slots: capacity_ rounded up to a power of two, indexed by call & mask_
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> calls_{0};  // records begun
  CallStats stats_;
};

}  // namespace tutti
