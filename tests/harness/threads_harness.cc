#include "harness/threads_harness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tutti::test {

void runThreads(int nranks, std::function<void(int rank)> body) {
  // ctest's PROCESSORS, as runRanks checks it (fork_harness.cc).
  if (const char* declared = std::getenv("TUTTI_TEST_PROCESSORS");
      declared != nullptr && nranks > std::atoi(declared))
    ADD_FAILURE() << "runs " << nranks << " rank threads but declares PROCESSORS " << declared
                  << " (tutti_add_test ... PROCESSORS " << nranks << ")";
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
