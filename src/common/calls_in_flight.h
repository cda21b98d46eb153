// How many calls this process is executing now (every communicator, lane and thread). A
// thread waiting for its peers yields its core between polls once the calls in flight
// outnumber the cores each rank of its host has (TUTTI_SPIN_YIELD=auto): two calls at once on
// a rank with one core each would otherwise pause-spin on both cores while the call they wait
// for gets none. Knows nothing of calls beyond their count.
#pragma once

#include <atomic>

namespace tutti {

class CallsInFlight {
 public:
  // Counts one call while alive.
  CallsInFlight() { counter().fetch_add(1, std::memory_order_relaxed); }
  ~CallsInFlight() { counter().fetch_sub(1, std::memory_order_relaxed); }
  CallsInFlight(const CallsInFlight&) = delete;
  CallsInFlight& operator=(const CallsInFlight&) = delete;

  // Whether a waiter should yield: forced, or more calls in flight than `callsPerRank`
  // (0: never).
  static bool shouldYield(bool forced, int callsPerRank) {
    return forced || (callsPerRank > 0 && counter().load(std::memory_order_relaxed) > callsPerRank);
  }

 private:
  static std::atomic<int>& counter() {
    static std::atomic<int> calls{0};
    return calls;
  }
};

}  // namespace tutti
