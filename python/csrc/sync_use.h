// Learns synchronous use of asynchronous operations: when the last kStreak operations above
// the backend's inline size were each waited for right after their submit returned (the same
// thread, having spent under kCpuGap of its CPU time and under kWallGap of wall time in
// between: pg.allreduce([t]).wait(), or a framework that waits at once), the next such
// operation that finds nothing in flight runs at submit on the caller's thread, with blocking
// calls. Any sign of asynchronous use -- a future asked for (DDP's hooks), completion polled, a
// wait that comes later, an operation submitted while another is in flight or never waited
// for -- ends it; the price of a wrong guess is one operation that does not overlap.
// Running such calls on the group's stream instead would leave the stream's worker waking
// every 200 us meanwhile (its own learnt mode, tutti.h), which on a machine whose cores the
// ranks fill costs them more than the hand-off it saves.
#pragma once

#include <chrono>
#include <mutex>
#include <thread>

namespace tutti::torch_backend {

class SyncUse {
 public:
  static constexpr int kStreak = 2;
  static constexpr std::chrono::microseconds kCpuGap{200};
  static constexpr std::chrono::microseconds kWallGap{20000};

  // When an operation above the inline size is submitted (idle: nothing in flight): whether
  // it runs now.
  bool submitted(const void* op, bool idle);
  // The first wait for op; early: right after its submit returned (Submit::waitedRightAway).
  void waited(const void* op, bool early);
  // Completion polled or a future asked for.
  void async();

  // When and by whom an operation's submit returned, to tell a wait right after it.
  class Submit {
   public:
    void mark();  // by the submitting thread when submit returns
    bool waitedRightAway() const;

   private:
    std::chrono::steady_clock::time_point at_{};
    std::chrono::nanoseconds cpu_{0};
    std::thread::id thread_;
  };

 private:
  std::mutex mu_;
  int streak_ = 0;
  const void* last_ = nullptr;  // the last operation submitted above the inline size
  bool lastWaited_ = true;
};

}  // namespace tutti::torch_backend
