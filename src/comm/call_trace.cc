#include "comm/call_trace.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "common/cycle_clock.h"

namespace tutti {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;

// Marks a slot as being written for the lifetime of the guard (seqlock writer side).
class SlotWrite {
 public:
  explicit SlotWrite(std::atomic<uint64_t>& seq) : seq_(seq), value_(seq.load(kRelaxed) + 1) {
    seq_.store(value_, kRelaxed);  // odd: a reader retries
    std::atomic_thread_fence(std::memory_order_release);
  }
  ~SlotWrite() { seq_.store(value_ + 1, std::memory_order_release); }
  SlotWrite(const SlotWrite&) = delete;
  SlotWrite& operator=(const SlotWrite&) = delete;

 private:
  std::atomic<uint64_t>& seq_;
  uint64_t value_;
};
}  // namespace

CallTrace::CallTrace(size_t capacity, uint64_t timeEvery)
    : capacity_(capacity),
      timeMask_(std::bit_ceil(std::max<uint64_t>(1, timeEvery)) - 1),
      mask_(capacity ? std::bit_ceil(capacity) - 1 : 0),
      slots_(capacity ? std::make_unique<Slot[]>(mask_ + 1) : nullptr) {}

void CallTrace::begin(const CallTag& tag, const char* algorithm) {
  if (capacity_ == 0) return;
  const uint64_t n = calls_.load(kRelaxed) + 1;
  const bool timed = timeAll_ || (n & timeMask_) == (1 & timeMask_);
  Slot& s = slots_[(n - 1) & mask_];
  {
    SlotWrite write(s.seq);
    s.number.store(n, kRelaxed);
    s.tag0.store(tag[0], kRelaxed);
    s.tag1.store(tag[1], kRelaxed);
    s.algorithm.store(algorithm ? algorithm : "", kRelaxed);
    s.state.store(static_cast<uint8_t>(State::kRunning), kRelaxed);
    s.start.store(timed ? CycleClock::coarseNanos() : 0, kRelaxed);
    s.end.store(0, kRelaxed);
    s.ticks.store(0, kRelaxed);
  }
  calls_.store(n, std::memory_order_release);
  timedStart_ = timed ? CycleClock::now() : 0;
}

void CallTrace::stalled(double waitedSec) {
  const uint64_t n = calls_.load(kRelaxed);
  if (capacity_ == 0 || n == 0) return;
  Slot& s = slots_[(n - 1) & mask_];
  if (s.start.load(kRelaxed) != 0 || s.state.load(kRelaxed) != uint8_t(State::kRunning)) return;
  const uint64_t now = CycleClock::coarseNanos();
  const auto waited = static_cast<uint64_t>(waitedSec * 1e9);
  SlotWrite write(s.seq);
  s.start.store(now > waited ? now - waited : 1, kRelaxed);
}

void CallTrace::end(bool ok) {
  const uint64_t n = calls_.load(kRelaxed);
  if (capacity_ == 0 || n == 0) return;
  Slot& s = slots_[(n - 1) & mask_];
  uint64_t ticks = 0, endNanos = 0;
  if (timedStart_ != 0) {
    const uint64_t now = CycleClock::now();
    ticks = now > timedStart_ ? now - timedStart_ : 1;
    timeAll_ = ticks >= kLongTicks;
  }
  // A timed call, a failed one (rare) and one that stalled (it has a start) get an end time.
  if (ticks != 0 || !ok || s.start.load(kRelaxed) != 0) endNanos = CycleClock::coarseNanos();
  {
    SlotWrite write(s.seq);
    s.state.store(static_cast<uint8_t>(ok ? State::kDone : State::kFailed), kRelaxed);
    s.end.store(endNanos, kRelaxed);
    s.ticks.store(ticks, kRelaxed);
  }
  stats_.add(tag(s), s.algorithm.load(kRelaxed), ticks);
}

bool CallTrace::latest(Record* out) const {
  const uint64_t n = calls();
  if (capacity_ == 0 || n == 0) return false;
  *out = read(slots_[(n - 1) & mask_]);
  return out->number >= n;  // a newer call may have taken the slot meanwhile
}

CallTrace::Record CallTrace::read(const Slot& s) const {
  Record r;
  for (;;) {
    uint64_t before = s.seq.load(std::memory_order_acquire);
    r.number = s.number.load(kRelaxed);
    r.tag = {s.tag0.load(kRelaxed), s.tag1.load(kRelaxed)};
    r.algorithm = s.algorithm.load(kRelaxed);
    r.state = static_cast<State>(s.state.load(kRelaxed));
    r.start = s.start.load(kRelaxed);
    r.end = s.end.load(kRelaxed);
    r.ticks = s.ticks.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before % 2 == 0 && s.seq.load(kRelaxed) == before) return r;
  }
}

std::string CallTrace::line(const Record& r, uint64_t now, double secondsPerTick,
                            const std::function<std::string(const CallTag&)>& describe) const {
  auto seconds = [](uint64_t from, uint64_t to) {  // coarse nanoseconds
    return to > from ? static_cast<double>(to - from) * 1e-9 : 0.0;
  };
  char times[96];
  const char* state = r.state == State::kDone ? "done" : "FAILED";
  char ago[40] = "";
  if (r.end != 0) std::snprintf(ago, sizeof ago, ", %.3f s ago", seconds(r.end, now));
  if (r.state == State::kRunning && r.start != 0) {
    std::snprintf(times, sizeof times, "running for %.3f s", seconds(r.start, now));
  } else if (r.state == State::kRunning) {
    std::snprintf(times, sizeof times, "running (not timed; under a second)");
  } else if (r.ticks != 0) {
    std::snprintf(times, sizeof times, "%s after %.1f us%s", state,
                  static_cast<double>(r.ticks) * secondsPerTick * 1e6, ago);
  } else if (r.start != 0 && r.end != 0) {  // not timed, but stalled: the coarse clock's figure
    std::snprintf(times, sizeof times, "%s after %.3f s%s", state, seconds(r.start, r.end), ago);
  } else {
    std::snprintf(times, sizeof times, "%s%s", state, ago);
  }
  std::string algo = *r.algorithm ? std::string(" [") + r.algorithm + "]" : "";
  return "#" + std::to_string(r.number) + " " + describe(r.tag) + algo + " " + times;
}

std::string CallTrace::text(const std::function<std::string(const CallTag&)>& describe) const {
  if (capacity_ == 0) return "";
  uint64_t calls = calls_.load(std::memory_order_acquire);
  uint64_t now = CycleClock::coarseNanos();
  // The records first, then the words: formatting takes microseconds a record, in which a
  // rank making small calls (a dump on a signal while the job goes on) would overwrite them.
  // Newest first: the oldest are the next to go.
  std::vector<Record> records;
  records.reserve(std::min<uint64_t>(calls, capacity_));
  uint64_t first = calls > capacity_ ? calls - capacity_ : 0;
  for (uint64_t i = calls; i-- > first;) {
    Record r = read(slots_[i & mask_]);
    if (r.number == i + 1) records.push_back(r);  // else overwritten meanwhile by a newer call
  }
  const bool timed =
      std::any_of(records.begin(), records.end(), [](const Record& r) { return r.ticks != 0; });
  const double spt = timed ? CycleClock::secondsPerTick() : 0.0;
  std::string out;
  for (auto r = records.rbegin(); r != records.rend(); ++r)
    out += line(*r, now, spt, describe) + "\n";
  return out;
}

size_t CallTrace::recentTags(std::span<CallTag> out) const {
  if (capacity_ == 0) return 0;
  uint64_t calls = calls_.load(std::memory_order_acquire);
  uint64_t keep = std::min<uint64_t>({calls, capacity_, out.size()});
  size_t n = 0;
  for (uint64_t i = calls - keep; i < calls; ++i) {
    Record r = read(slots_[i & mask_]);
    if (r.number == i + 1) out[n++] = r.tag;
  }
  return n;
}

std::string CallTrace::current(const std::function<std::string(const CallTag&)>& describe) const {
  uint64_t calls = calls_.load(std::memory_order_acquire);
  if (capacity_ == 0) return "call recording off (TUTTI_TRACE_CALLS=0)";
  if (calls == 0) return "no call made yet";
  Record r = read(slots_[(calls - 1) & mask_]);
  const uint64_t now = CycleClock::coarseNanos();
  auto seconds = [&](uint64_t from) {
    return now > from ? static_cast<double>(now - from) * 1e-9 : 0.0;
  };
  char secs[32] = "";
  if (r.state == State::kRunning) {
    if (r.start != 0) std::snprintf(secs, sizeof secs, " for %.1f s", seconds(r.start));
    return "in call #" + std::to_string(r.number) + " " + describe(r.tag) + secs;
  }
  if (r.end != 0) std::snprintf(secs, sizeof secs, " %.1f s", seconds(r.end));
  return std::string("between calls,") + secs + " after call #" + std::to_string(r.number) + " " +
         describe(r.tag) + (r.state == State::kDone ? " (done)" : " (failed)");
}

}  // namespace tutti
