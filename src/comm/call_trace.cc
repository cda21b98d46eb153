#include "comm/call_trace.h"

#include <algorithm>
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

CallTrace::CallTrace(size_t capacity)
    : capacity_(capacity),
      slots_(capacity ? std::make_unique<Slot[]>(capacity) : nullptr),
      nsPerTick_(CycleClock::secondsPerTick() * 1e9) {}

void CallTrace::begin(const CallTag& tag, const char* algorithm) {
  if (capacity_ == 0) return;
  uint64_t n = calls_.load(kRelaxed) + 1;
  Slot& s = slots_[(n - 1) % capacity_];
  {
    SlotWrite write(s.seq);
    s.number.store(n, kRelaxed);
    s.tag0.store(tag[0], kRelaxed);
    s.tag1.store(tag[1], kRelaxed);
    s.algorithm.store(algorithm ? algorithm : "", kRelaxed);
    s.state.store(static_cast<uint8_t>(State::kRunning), kRelaxed);
    s.start.store(CycleClock::now(), kRelaxed);
    s.end.store(0, kRelaxed);
  }
  calls_.store(n, std::memory_order_release);
}

void CallTrace::end(bool ok) {
  uint64_t n = calls_.load(kRelaxed);
  if (capacity_ == 0 || n == 0) return;
  Slot& s = slots_[(n - 1) % capacity_];
  const uint64_t now = CycleClock::now();
  {
    SlotWrite write(s.seq);
    s.state.store(static_cast<uint8_t>(ok ? State::kDone : State::kFailed), kRelaxed);
    s.end.store(now, kRelaxed);
  }
  // This thread wrote the slot: its own relaxed reads see what it wrote.
  const uint64_t ticks = now - std::min(now, s.start.load(kRelaxed));
  stats_.add({s.tag0.load(kRelaxed), s.tag1.load(kRelaxed)}, s.algorithm.load(kRelaxed),
             static_cast<uint64_t>(static_cast<double>(ticks) * nsPerTick_));
}

bool CallTrace::latest(Record* out) const {
  const uint64_t n = calls();
  if (capacity_ == 0 || n == 0) return false;
  *out = read(slots_[(n - 1) % capacity_]);
  return out->number == n || out->number > n;
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
    std::atomic_thread_fence(std::memory_order_acquire);
    if (before % 2 == 0 && s.seq.load(kRelaxed) == before) return r;
  }
}

std::string CallTrace::line(const Record& r, uint64_t now, double secondsPerTick,
                            const std::function<std::string(const CallTag&)>& describe) const {
  auto seconds = [&](uint64_t from, uint64_t to) {
    return to > from ? static_cast<double>(to - from) * secondsPerTick : 0.0;
  };
  char times[96];
  if (r.state == State::kRunning) {
    std::snprintf(times, sizeof times, "running for %.3f s", seconds(r.start, now));
  } else {
    std::snprintf(times, sizeof times, "%s after %.1f us, %.3f s ago",
                  r.state == State::kDone ? "done" : "FAILED", seconds(r.start, r.end) * 1e6,
                  seconds(r.end, now));
  }
  std::string algo = *r.algorithm ? std::string(" [") + r.algorithm + "]" : "";
  return "#" + std::to_string(r.number) + " " + describe(r.tag) + algo + " " + times;
}

std::string CallTrace::text(const std::function<std::string(const CallTag&)>& describe) const {
  if (capacity_ == 0) return "";
  double spt = CycleClock::secondsPerTick();
  uint64_t calls = calls_.load(std::memory_order_acquire);
  uint64_t now = CycleClock::now();
  // The records first, then the words: formatting takes microseconds a record, in which a
  // rank making small calls (a dump on a signal while the job goes on) would overwrite them.
  // Newest first: the oldest are the next to go.
  std::vector<Record> records;
  records.reserve(std::min<uint64_t>(calls, capacity_));
  uint64_t first = calls > capacity_ ? calls - capacity_ : 0;
  for (uint64_t i = calls; i-- > first;) {
    Record r = read(slots_[i % capacity_]);
    if (r.number == i + 1) records.push_back(r);  // else overwritten meanwhile by a newer call
  }
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
    Record r = read(slots_[i % capacity_]);
    if (r.number == i + 1) out[n++] = r.tag;
  }
  return n;
}

std::string CallTrace::current(const std::function<std::string(const CallTag&)>& describe) const {
  uint64_t calls = calls_.load(std::memory_order_acquire);
  if (capacity_ == 0) return "call recording off (TUTTI_TRACE_CALLS=0)";
  if (calls == 0) return "no call made yet";
  double spt = CycleClock::secondsPerTick();
  Record r = read(slots_[(calls - 1) % capacity_]);
  uint64_t now = CycleClock::now();
  auto seconds = [&](uint64_t from) {
    return now > from ? static_cast<double>(now - from) * spt : 0.0;
  };
  char secs[32];
  if (r.state == State::kRunning) {
    std::snprintf(secs, sizeof secs, "%.1f s", seconds(r.start));
    return "in call #" + std::to_string(r.number) + " " + describe(r.tag) + " for " + secs;
  }
  std::snprintf(secs, sizeof secs, "%.1f s", seconds(r.end));
  return std::string("between calls, ") + secs + " after call #" + std::to_string(r.number) + " " +
         describe(r.tag) + (r.state == State::kDone ? " (done)" : " (failed)");
}

}  // namespace tutti
