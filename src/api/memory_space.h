// Memory-space routing for the collective entry points: which space a call's buffers live in
// (host or CUDA device), rejection of mixes, and the staging fallback for device buffers.
#pragma once

#include <cstddef>
#include <functional>

namespace tutti::api {

// The buffers one rank passes to one call. A buffer with bytes == 0 is not accessed (e.g. the
// sendbuff of a non-root broadcast rank) and takes no part in the classification.
struct CallBuffers {
  const void* send = nullptr;
  size_t sendBytes = 0;
  void* recv = nullptr;
  size_t recvBytes = 0;
  // The call writes only parts of [recv, recv + recvBytes) (gaps between the displacements of
  // a -V call): staging then copies the receive range to the host first too, so the bytes the
  // call does not write keep their values.
  bool recvPartial = false;
};

// True when the buffers are CUDA device (or managed) memory, false when host memory.
// Throws tuttiInvalidArgument naming `fn` when host and device buffers are mixed, or when a
// buffer is not readable host memory while CUDA is unavailable (a device pointer passed to a
// build or machine without CUDA), with the CUDA probe's reason.
bool buffersOnDevice(const char* fn, const CallBuffers& b);

// The fallback device path: copies the send bytes to pinned host memory on `stream`
// (cudaMemcpyAsync D2H), waits for the stream (this synchronises the host with the stream),
// runs body(hostSend, hostRecv) -- the host collective -- and enqueues the H2D copy of the
// result on `stream` without waiting. In-place layouts (send and recv overlapping) keep their
// overlap in the staged copy. The staging memory is per thread and reused once its last H2D
// copy has completed.
void runStaged(const char* fn, const CallBuffers& b, void* stream,
               const std::function<void(const void* send, void* recv)>& body);

// True when host memory at [p, p + 1) can be read by this process (cached per thread; on a
// miss one process_vm_readv on itself, or /proc/self/maps after repeated misses; true when
// the syscall is unavailable). Used to spot device pointers without CUDA. host_readable.cc
bool hostReadable(const void* p);

}  // namespace tutti::api
