// tutti::Error: the one exception type of tutti's C++ code. The library throws it inside
// (and turns it into a tuttiResult_t at the C API, src/api); the header-only C++ wrapper
// (tutti.hpp) throws it to the application when a C call fails. Header-only.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "tutti/tutti.h"

namespace tutti {

class Error : public std::runtime_error {
 public:
  Error(tuttiResult_t code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  tuttiResult_t code() const noexcept { return code_; }

 private:
  tuttiResult_t code_;
};

}  // namespace tutti
