// The order in which one communicator's calls run: the order they were issued in, whether
// they run on the caller's thread (blocking) or on host streams. Every rank issues its calls
// in the same order, so running them in that order keeps the ranks in step however many
// streams carry them. A call takes a ticket when it is issued and runs when every earlier
// ticket of the communicator has finished. Knows nothing of communicators or streams.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace tutti::api {

class CallOrder {
 public:
  // A call's place in the order. Its turn comes when the earlier tickets have finished; it
  // finishes when destroyed (after waiting for its turn, if it never ran, so that a call that
  // was dropped cannot stall the ones after it).
  class Ticket {
   public:
    Ticket(CallOrder& order, uint64_t number) : order_(&order), number_(number) {}
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    void waitTurn() const;
    uint64_t number() const { return number_; }

   private:
    CallOrder* order_;
    uint64_t number_;
  };

  // The next ticket; the caller keeps the order alive until the ticket is gone.
  std::shared_ptr<Ticket> take();
  // Blocks until every ticket taken so far has finished (destroy).
  void waitIdle();

  // Whether a call ever waited in a queue (a host stream). Until then every call ran on the
  // issuing thread, one after another, and a blocking call needs no ticket: the small-call
  // path stays one atomic load longer than it was before streams.
  void markQueued() { queued_.store(true, std::memory_order_release); }
  bool everQueued() const { return queued_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> queued_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t taken_ = 0;
  uint64_t finished_ = 0;  // tickets 0 .. finished_ - 1 have finished
};

}  // namespace tutti::api
