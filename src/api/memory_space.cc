// Memory-space routing (see memory_space.h). Device buffers take the staging fallback: it
// synchronises the host with the user's stream once per call, which the direct device path
// (cuda_ipc + reduction kernels on the stream) is meant to replace.
#include "memory_space.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>

#include "common/error.h"
#include "tutti/config.h"

#if TUTTI_HAVE_CUDA
#include "reduce/cuda/cuda_memory.h"
#include "reduce/cuda/cuda_probe.h"
#endif

namespace tutti::api {
namespace {

std::string hexPtr(const void* p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

// why may be null: the reason is only copied out when an error is reported (a per-call copy
// of a long string is a malloc on every collective of a CUDA-less host).
bool cudaUsable(std::string* why) {
#if TUTTI_HAVE_CUDA
  return tutti::cudaAvailable(why);
#else
  if (why) *why = "this libtutti was built without CUDA (TUTTI_WITH_CUDA=OFF or no toolkit)";
  return false;
#endif
}

bool isDevice(const void* p) {
#if TUTTI_HAVE_CUDA
  return tutti::isDevicePointer(p);
#else
  (void)p;
  return false;
#endif
}

}  // namespace

bool buffersOnDevice(const char* fn, const CallBuffers& b) {
  const bool useSend = b.sendBytes > 0 && b.send != nullptr;
  const bool useRecv = b.recvBytes > 0 && b.recv != nullptr;
  if (!useSend && !useRecv) return false;
  if (!cudaUsable(nullptr)) {
    for (auto [name, p, use] :
         {std::tuple{"sendbuff", b.send, useSend},
          std::tuple{"recvbuff", static_cast<const void*>(b.recv), useRecv}}) {
      if (use && !hostReadable(p)) {
        std::string why;
        cudaUsable(&why);
        fail(tuttiInvalidArgument, fn, ": ", name, " ", hexPtr(p),
             " is not readable host memory; if it is a CUDA device pointer, CUDA is not "
             "available here: ",
             why);
      }
    }
    return false;
  }
  const bool sendDev = useSend && isDevice(b.send);
  const bool recvDev = useRecv && isDevice(b.recv);
  if (useSend && useRecv && sendDev != recvDev)
    fail(tuttiInvalidArgument, fn, ": sendbuff ", hexPtr(b.send), " is ",
         sendDev ? "device" : "host", " memory but recvbuff ", hexPtr(b.recv), " is ",
         recvDev ? "device" : "host",
         " memory; both buffers of one call must be in the same memory space");
  return sendDev || recvDev;
}

#if TUTTI_HAVE_CUDA
namespace {

// Per-thread staging memory; `done` marks the last H2D copy out of it.
struct Staging {
  cuda::PinnedBuffer pinned;
  std::unique_ptr<cuda::Event> done;
};

Staging& staging() {
  thread_local Staging s;
  return s;
}

constexpr size_t kAlign = 256;
size_t alignUp(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

}  // namespace

void runStaged(const char* fn, const CallBuffers& b, void* stream,
               const std::function<void(const void*, void*)>& body) {
  const bool useSend = b.sendBytes > 0 && b.send != nullptr;
  const bool useRecv = b.recvBytes > 0 && b.recv != nullptr;
  const auto s0 = reinterpret_cast<uintptr_t>(b.send);
  const auto r0 = reinterpret_cast<uintptr_t>(b.recv);
  // Layout: one region when the ranges overlap (in-place), else send then recv.
  const bool overlap = useSend && useRecv && s0 < r0 + b.recvBytes && r0 < s0 + b.sendBytes;
  size_t sendOff = 0, recvOff = 0, total = 0;
  if (overlap) {
    const uintptr_t lo = std::min(s0, r0);
    sendOff = s0 - lo;
    recvOff = r0 - lo;
    total = std::max(s0 + b.sendBytes, r0 + b.recvBytes) - lo;
  } else {
    recvOff = useSend ? alignUp(b.sendBytes) : 0;
    total = recvOff + (useRecv ? b.recvBytes : 0);
  }
  Staging& st = staging();
  if (!st.done) st.done = std::make_unique<cuda::Event>();
  st.done->wait();  // the previous call's H2D copy may still read the pinned memory
  std::byte* base = st.pinned.reserve(total);
  const void* hostSend = useSend ? base + sendOff : b.send;
  void* hostRecv = useRecv ? base + recvOff : b.recv;
  std::string what = std::string(fn) + " staging";
  if (useRecv && b.recvPartial)
    cuda::copyAsync(base + recvOff, b.recv, b.recvBytes, stream, what.c_str());
  if (useSend) cuda::copyAsync(base + sendOff, b.send, b.sendBytes, stream, what.c_str());
  cuda::streamSynchronize(stream, what.c_str());
  body(hostSend, hostRecv);
  if (useRecv) {
    cuda::copyAsync(b.recv, base + recvOff, b.recvBytes, stream, what.c_str());
    st.done->record(stream);
  }
}
#else
void runStaged(const char* fn, const CallBuffers&, void*,
               const std::function<void(const void*, void*)>&) {
  fail(tuttiUnsupported, fn, ": device buffers need a libtutti built with CUDA");
}
#endif

}  // namespace tutti::api
