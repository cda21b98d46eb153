// The one place where internal exceptions become tuttiResult_t codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

#include "common/dtype.h"
#include "common/error.h"
#include "common/log.h"
#include "tutti/tutti.h"

namespace tutti::api {

// The calling thread's last error (tuttiGetLastError(NULL)).
std::string& threadLastError();
// Records an error for comm (may be null) and the thread; returns code.
tuttiResult_t recordError(tuttiComm_t comm, const char* function, tuttiResult_t code,
                          const std::string& message);

// No buffer can be larger than a process's address space (47 bits of user addresses on x86-64,
// 48 on arm64): a count beyond it is a wrong argument, refused before any schedule, scratch
// or staging buffer is sized from it.
constexpr size_t kMaxBufferBytes = size_t{1} << 48;

// count elements of dtype times `times` (the ranks a buffer holds blocks for), in bytes;
// throws tuttiInvalidArgument naming `what` when the product overflows or exceeds
// kMaxBufferBytes. `what` names the count ("count", "sendcount", "recvcount").
inline size_t bufferBytes(const char* what, size_t count, tuttiDataType_t dtype, size_t times = 1) {
  size_t bytes = 0;
  const size_t es = dtypeSize(dtype);
  const bool overflow =
      __builtin_mul_overflow(count, es, &bytes) || __builtin_mul_overflow(bytes, times, &bytes);
  if (overflow || bytes > kMaxBufferBytes) {
    std::string of = times > 1 ? " x " + std::to_string(times) + " ranks" : std::string();
    fail(tuttiInvalidArgument, what, " ", count, " x ", es, " B (", dtypeName(dtype), ")", of,
         overflow ? " overflows size_t in bytes" : " is more than the 256 TiB a buffer can hold");
  }
  return bytes;
}

template <typename F>
tuttiResult_t guarded(tuttiComm_t comm, const char* function, F&& body) noexcept {
  try {
    return std::forward<F>(body)();
  } catch (const Error& e) {
    return recordError(comm, function, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return recordError(comm, function, tuttiSystemError, "out of memory");
  } catch (const std::exception& e) {
    return recordError(comm, function, tuttiInternalError, e.what());
  } catch (...) {
    return recordError(comm, function, tuttiInternalError, "unknown exception");
  }
}

}  // namespace tutti::api
