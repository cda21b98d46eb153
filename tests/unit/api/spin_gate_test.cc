// Who may spin while waiting for peers (common/spin_gate.h) and how a host stream sets it
// (src/api/host_stream.h): a call on the stream's worker spins only while a thread waits for
// the stream, so a caller that computes meanwhile keeps its core.
#include "common/spin_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "host_stream.h"

namespace tutti::api {
// The library keeps a failed task's text here (errors.cc); this test links HostStream alone.
std::string& threadLastError() {
  thread_local std::string text;
  return text;
}

namespace {

using namespace std::chrono_literals;

TEST(SpinGate, OpenOutsideAGateAndWhileWaitersCount) {
  EXPECT_TRUE(SpinGate::open());
  std::atomic<int> waiters{0};
  {
    SpinGate gate(&waiters);
    EXPECT_FALSE(SpinGate::open());
    waiters = 2;
    EXPECT_TRUE(SpinGate::open());
    waiters = 0;
    {
      SpinGate inner(nullptr);  // a waiter running the call itself
      EXPECT_TRUE(SpinGate::open());
    }
    EXPECT_FALSE(SpinGate::open());  // the outer gate is back
  }
  EXPECT_TRUE(SpinGate::open());
}

// The gate a task on the worker sees, once nobody waits for the stream and then while a thread
// waits for it.
TEST(SpinGate, AStreamsWorkerSpinsOnlyWhileSomeoneWaits) {
  HostStream stream;
  std::atomic<int> seen{-1};
  const uint64_t first = stream.enqueue([&] {
    seen = SpinGate::open() ? 1 : 0;
    return tuttiSuccess;
  });
  // Not waitFor: nobody waits while the worker runs it.
  while (!stream.finished(first)) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(seen.load(), 0) << "the worker spun with nobody waiting";

  std::atomic<bool> opened{false};
  const uint64_t second = stream.enqueue([&] {
    // Until the main thread waits for this task: the gate opens then.
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (!SpinGate::open() && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(1ms);
    opened = SpinGate::open();
    return tuttiSuccess;
  });
  stream.waitFor(second);
  EXPECT_TRUE(opened.load()) << "the gate stayed shut while a thread waited";
  EXPECT_TRUE(SpinGate::open()) << "the waiting thread itself is outside any gate";
}

}  // namespace
}  // namespace tutti::api
