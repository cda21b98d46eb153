#include "bootstrap/secret.h"

#include <sys/random.h>

#include <cerrno>

#include "common/error.h"

namespace tutti::bootstrap {

Secret randomSecret() {
  Secret s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t r = ::getrandom(s.data() + got, s.size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throwSystemError("getrandom");
    }
    got += static_cast<size_t>(r);
  }
  return s;
}

std::string secretToHex(const Secret& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : s) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Secret secretFromHex(const std::string& text, const std::string& what) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Secret s{};
  if (text.size() != 2 * s.size())
    fail(tuttiInvalidArgument, what, ": expected ", 2 * s.size(), " hex digits, got ", text.size(),
         " characters");
  for (size_t i = 0; i < s.size(); ++i) {
    int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) fail(tuttiInvalidArgument, what, ": '", text, "' is not hexadecimal");
    s[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return s;
}

bool secretEqual(const Secret& a, const Secret& b) {
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = diff | (a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace tutti::bootstrap
