// How a collective-shaped call runs once its arguments are checked: now, or recorded when a
// group is open; body(send, recv) gets the user's buffers, or host copies of them when they are
// device memory (memory_space.h). Shared by collectives.cc and rooted_and_v_collectives.cc.
#pragma once

#include <utility>

#include "group.h"
#include "memory_space.h"
#include "tutti/tutti.h"

namespace tutti::api {

template <typename F>
tuttiResult_t issue(tuttiComm_t comm, const char* fn, const CallBuffers& b, tuttiStream_t stream,
                    F&& body) {
  const bool device = buffersOnDevice(fn, b);
  auto run = [fn, b, stream, device, body = std::forward<F>(body)]() {
    if (device)
      runStaged(fn, b, stream, body);
    else
      body(b.send, b.recv);
  };
  if (groupDepth() > 0) {
    deferCollective(comm, std::move(run));
    return tuttiSuccess;
  }
  run();
  return tuttiSuccess;
}

}  // namespace tutti::api
