// The order in which one communicator's calls run: the order they were issued in, whether
// they run on the caller's thread (blocking) or on host streams. Every rank issues its calls
// in the same order, so running them in that order keeps the ranks in step however many
// streams carry them. A call takes a ticket when it is issued. A ticket of every lane (the
// default) runs when every earlier ticket has finished; a ticket of one lane (a collective
// given a lane of the communicator, comm_lanes.h) runs when the earlier tickets of its
// lane and the earlier tickets of every lane have finished, so calls on different lanes may
// run at the same time. Knows nothing of communicators or streams.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace tutti::api {

class CallOrder {
 public:
  static constexpr int kEveryLane = -1;

  // A call's place in the order. Its turn comes when the earlier tickets it waits for have
  // finished; it finishes when destroyed (after waiting for its turn, if it never ran, so that
  // a call that was dropped cannot stall the ones after it).
  class Ticket {
   public:
    Ticket(CallOrder& order, uint64_t number, int lane)
        : order_(&order), number_(number), lane_(lane) {}
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    void waitTurn() const;
    uint64_t number() const { return number_; }

   private:
    CallOrder* order_;
    uint64_t number_;
    int lane_;
  };

  // The next ticket (lane >= 0: of that lane only); the caller keeps the order alive until the
  // ticket is gone.
  std::shared_ptr<Ticket> take(int lane = kEveryLane);
  // Blocks until every ticket taken so far has finished (destroy).
  void waitIdle();

  // Whether a call ever waited in a queue (a host stream). Until then every call ran on the
  // issuing thread, one after another, and a blocking call needs no ticket: the small-call
  // path stays one atomic load longer than it was before streams.
  void markQueued() { queued_.store(true, std::memory_order_release); }
  bool everQueued() const { return queued_.load(std::memory_order_acquire); }

 private:
  // Whether ticket `number` of `lane` may run: no unfinished earlier ticket it waits for.
  bool mayRun(uint64_t number, int lane) const;

  std::atomic<bool> queued_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t taken_ = 0;
  std::map<uint64_t, int> unfinished_;  // ticket number -> its lane
};

}  // namespace tutti::api
