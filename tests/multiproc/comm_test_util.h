// Helpers for multi-process communicator tests over the public C API.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <string>

#include "tutti/tutti.h"

namespace tutti::test {

#define TUTTI_ASSERT_OK(call, comm)                                                           \
  do {                                                                                        \
    tuttiResult_t tutti_r_ = (call);                                                          \
    ASSERT_EQ(tutti_r_, tuttiSuccess)                                                         \
        << #call << ": " << tuttiGetErrorString(tutti_r_) << ": " << tuttiGetLastError(comm); \
  } while (0)

// A unique id for forked ranks. tuttiGetUniqueId starts the TCP store server thread in the
// calling process; forking a multithreaded process can leave the children with locks held
// by that thread (sanitizer allocators do not survive it), so the id is made in a helper
// process that serves the store until the test process exits, and the test process stays
// single-threaded when it forks the ranks.
inline tuttiUniqueId makeId() {
  struct Shared {
    std::atomic<int> state;  // 0 pending, 1 ok, 2 failed
    tuttiUniqueId id;
  };
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared{};
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    tuttiResult_t r = tuttiGetUniqueId(&shared->id);
    shared->state.store(r == tuttiSuccess ? 1 : 2);
    for (;;) pause();
  }
  while (shared->state.load() == 0) usleep(1000);
  EXPECT_EQ(shared->state.load(), 1) << "tuttiGetUniqueId failed in the helper process";
  tuttiUniqueId id = shared->id;
  munmap(mem, sizeof(Shared));
  return id;
}

// tuttiCommInitRankConfig with a transport (NULL: by priority) and a timeout; a failure is a
// test failure (and a null communicator).
inline tuttiComm_t initComm(int n, const tuttiUniqueId& id, int rank, const char* transport,
                            int timeoutMs = 20000) {
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.transport = transport;
  config.timeoutMs = timeoutMs;
  tuttiComm_t comm = nullptr;
  EXPECT_EQ(tuttiCommInitRankConfig(&comm, n, id, rank, &config), tuttiSuccess)
      << tuttiGetLastError(nullptr);
  return comm;
}

}  // namespace tutti::test
