// Shared by the fuzz targets: what counts as a clean refusal, and a reader that cuts the
// fuzzer's bytes into fields. A target aborts (the fuzzer keeps the input as a crash) when the
// code under test throws anything but the documented error, or breaks an invariant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "common/error.h"

namespace tutti::fuzz {

[[noreturn]] inline void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz target: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs fn; a tutti::Error with `code` whose message contains `mustName` is a clean refusal.
// Returns true when fn returned normally.
template <class Fn>
bool refusesCleanly(Fn&& fn, tuttiResult_t code, std::string_view mustName) {
  try {
    fn();
    return true;
  } catch (const Error& e) {
    std::string_view msg = e.what();
    if (e.code() != code)
      bug("error code " + std::to_string(e.code()) + " instead of " + std::to_string(code) + ": " +
          std::string(msg));
    if (msg.find(mustName) == std::string_view::npos)
      bug("the error does not name '" + std::string(mustName) + "': " + std::string(msg));
    return false;
  } catch (const std::exception& e) {
    bug(std::string("escaped exception (not tutti::Error): ") + e.what());
  }
}

// Consumes the fuzzer's bytes front to back; reads past the end yield zeros / empty.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() { return pos_ < n_ ? p_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  // Bytes up to (not including) `stop`, or to the end.
  std::string_view until(char stop) {
    std::string_view rest = remaining();
    size_t e = rest.find(stop);
    if (e == std::string_view::npos) e = rest.size();
    pos_ += e == rest.size() ? e : e + 1;
    return rest.substr(0, e);
  }
  std::string_view take(size_t len) {
    std::string_view rest = remaining();
    if (len > rest.size()) len = rest.size();
    pos_ += len;
    return rest.substr(0, len);
  }
  std::string_view remaining() const {
    return {reinterpret_cast<const char*>(p_) + pos_, n_ - pos_};
  }
  bool empty() const { return pos_ >= n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace tutti::fuzz
