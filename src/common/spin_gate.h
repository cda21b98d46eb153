// Whether a thread that waits for its peers should spin before it sleeps. A thread that
// progresses calls in the background (a host stream's worker) competes for a core with the
// caller's own work, so it spins only while some thread waits for those calls (the caller then
// has nothing better for the core); every other thread may spin. The executor asks it for
// transfers over a network only: a peer over shared memory answers within the spin, and a
// framework waiting through its own futures (torch's) is not seen waiting here. Knows nothing
// of streams.
#pragma once

#include <atomic>

namespace tutti {

class SpinGate {
 public:
  // While alive, this thread spins only while *waiters > 0 (null: always, as outside a gate).
  // Gates nest: the previous one is back when this one goes.
  explicit SpinGate(const std::atomic<int>* waiters);
  ~SpinGate();
  SpinGate(const SpinGate&) = delete;
  SpinGate& operator=(const SpinGate&) = delete;

  // Whether the calling thread may spin now.
  static bool open();

 private:
  const std::atomic<int>* outer_;
};

}  // namespace tutti
