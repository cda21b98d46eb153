// TraceDumpSignal (comm/trace_dump_signal.h) in one process (ThreadSanitizer runs it; the
// multi-process case is trace_test): a raised signal reaches every registered dump on the dump
// thread, also while another thread records calls into the flight recorder the dump prints;
// a retired registration is not called; TUTTI_DUMP_SIGNAL's values.
#include "comm/trace_dump_signal.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "comm/call_trace.h"
#include "common/error.h"

namespace tutti {
namespace {

bool waitFor(const std::atomic<int>& v, int atLeast) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (v.load() < atLeast && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return v.load() >= atLeast;
}

TEST(TraceDumpSignal, EveryRegisteredDumpRunsOnTheSignalWhileCallsAreRecorded) {
  CallTrace trace(64);
  std::atomic<bool> stop{false};
  std::thread caller([&] {
    for (uint64_t i = 1; !stop; ++i) {  // a call every microsecond or so, as small calls
      trace.begin(CallTag{i, 1}, "ring");
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(1);
      while (std::chrono::steady_clock::now() < until) {
      }
      trace.end(true);
    }
  });
  std::atomic<int> first{0}, second{0};
  std::mutex m;
  std::string cause, printed;
  auto a = TraceDumpSignal::add(SIGUSR2, [&](const std::string& c) {
    std::string text = trace.text([](const CallTag& t) { return std::to_string(t[0]); });
    std::lock_guard<std::mutex> lock(m);
    cause = c, printed = text;
    ++first;
  });
  {
    auto b = TraceDumpSignal::add(SIGUSR2, [&](const std::string&) { ++second; });
    ASSERT_EQ(::raise(SIGUSR2), 0);
    EXPECT_TRUE(waitFor(first, 1));
    EXPECT_TRUE(waitFor(second, 1));
  }
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_TRUE(waitFor(first, 2));
  stop = true;
  caller.join();
  EXPECT_EQ(second.load(), 1) << "a retired registration was called";
  std::lock_guard<std::mutex> lock(m);
  EXPECT_EQ(cause, "signal SIGUSR2");
  EXPECT_NE(printed.find(" done after "), std::string::npos) << "[" << printed << "]";
}

TEST(TraceDumpSignal, ValuesAreParsedOrRefused) {
  EXPECT_EQ(TraceDumpSignal::parse(""), 0);
  EXPECT_EQ(TraceDumpSignal::parse("off"), 0);
  EXPECT_EQ(TraceDumpSignal::parse("0"), 0);
  EXPECT_EQ(TraceDumpSignal::parse("USR1"), SIGUSR1);
  EXPECT_EQ(TraceDumpSignal::parse("SIGUSR2"), SIGUSR2);
  EXPECT_EQ(TraceDumpSignal::parse(std::to_string(SIGRTMIN + 2)), SIGRTMIN + 2);
  EXPECT_EQ(TraceDumpSignal::name(SIGRTMIN + 2), "SIGRTMIN+2");
  for (const char* bad : {"TERM", "9", "SIGINT", "USR3", "10x", "-1"})
    EXPECT_THROW(TraceDumpSignal::parse(bad), Error) << bad;
}

}  // namespace
}  // namespace tutti
