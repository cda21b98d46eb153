#include "harness/threads_harness.h"

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tutti::test {

void runThreads(int nranks, std::function<void(int rank)> body) {
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  threads.reserve(nranks);
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace tutti::test
