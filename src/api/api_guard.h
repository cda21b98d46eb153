// The one place where internal exceptions become tuttiResult_t codes.
#pragma once

#include <new>
#include <string>
#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "tutti/tutti.h"

namespace tutti::api {

// The calling thread's last error (tuttiGetLastError(NULL)).
std::string& threadLastError();
// Records an error for comm (may be null) and the thread; returns code.
tuttiResult_t recordError(tuttiComm_t comm, const char* function, tuttiResult_t code,
                          const std::string& message);

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
