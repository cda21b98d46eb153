#include "fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace tutti::api {
namespace {

std::atomic<uint64_t> generation{0};

void childAfterFork() { generation.fetch_add(1, std::memory_order_relaxed); }

// Registered when the library loads, before any handle exists.
[[maybe_unused]] const int kRegistered = pthread_atfork(nullptr, nullptr, childAfterFork);

}  // namespace

uint64_t forkGeneration() { return generation.load(std::memory_order_relaxed); }

std::string forkedAway(uint64_t madeAt, pid_t creator) {
  if (madeAt == forkGeneration()) return "";
  return "this communicator was made by process " + std::to_string(creator) + "; process " +
         std::to_string(::getpid()) +
         " is a child made by fork() and cannot use it (its connections and shared memory "
         "belong to the parent): create a communicator in the child";
}

}  // namespace tutti::api
