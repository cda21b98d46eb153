// Errors inside the library. Code throws tutti::Error (include/tutti/error.hpp, the same type
// the C++ wrapper throws) on failure; the C API (src/api) is the single place where an Error
// becomes a tuttiResult_t.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tutti/error.hpp"
#include "tutti/tutti.h"

namespace tutti {

// "<what>: <strerror(errno)>" as a tuttiSystemError.
[[noreturn]] void throwSystemError(const std::string& what, int err = errno);

// Builds a message from pieces: fail(tuttiInvalidArgument, "count ", n, " too large").
template <typename... Args>
[[noreturn]] void fail(tuttiResult_t code, const Args&... args);

namespace detail {
inline void appendTo(std::string& s, const std::string& v) { s += v; }
inline void appendTo(std::string& s, const char* v) { s += v; }
inline void appendTo(std::string& s, std::string_view v) { s += v; }
inline void appendTo(std::string& s, char v) { s += v; }
template <typename T>
inline void appendTo(std::string& s, const T& v) {
  s += std::to_string(v);
}
}  // namespace detail

template <typename... Args>
[[noreturn]] void fail(tuttiResult_t code, const Args&... args) {
  std::string msg;
  (detail::appendTo(msg, args), ...);
  throw Error(code, std::move(msg));
}

#define TUTTI_CHECK_ARG(cond, ...)                                 \
  do {                                                             \
    if (!(cond)) ::tutti::fail(tuttiInvalidArgument, __VA_ARGS__); \
  } while (0)

#define TUTTI_ASSERT(cond)                                                                     \
  do {                                                                                         \
    if (!(cond))                                                                               \
      ::tutti::fail(tuttiInternalError, "internal check failed: " #cond " at ", __FILE__, ":", \
                    __LINE__);                                                                 \
  } while (0)

// Calls a POSIX function returning -1 on error and throws a system error naming it.
#define TUTTI_SYSCHECK(call, what)                         \
  ({                                                       \
    auto tutti_ret_ = (call);                              \
    if (tutti_ret_ == -1) ::tutti::throwSystemError(what); \
    tutti_ret_;                                            \
  })

}  // namespace tutti
