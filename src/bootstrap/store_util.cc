#include "bootstrap/store_util.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/error.h"

namespace tutti::bootstrap {

int64_t parseCounter(const std::string& key, std::span<const std::byte> value) {
  if (value.empty()) return 0;
  std::string text(reinterpret_cast<const char*>(value.data()), value.size());
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0')
    fail(tuttiInvalidUsage, "store add(\"", key, "\"): the key holds a non-integer value");
  return v;
}

int64_t addToCounter(const std::string& key, std::span<const std::byte> value, int64_t delta) {
  int64_t current = parseCounter(key, value), sum = 0;
  if (__builtin_add_overflow(current, delta, &sum))
    fail(tuttiInvalidUsage, "store add(\"", key, "\", ", delta, "): the counter (", current,
         ") would overflow int64");
  return sum;
}

std::vector<std::byte> formatCounter(int64_t value) {
  std::string text = std::to_string(value);
  auto bytes = std::as_bytes(std::span<const char>(text.data(), text.size()));
  return {bytes.begin(), bytes.end()};
}

void throwGetTimeout(const std::string& backend, const std::string& key, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", seconds);
  fail(tuttiTimeout, backend, " get(\"", key, "\"): key did not appear within ", buf, " s");
}

void throwAborted(const std::string& backend, const std::string& key) {
  fail(tuttiRemoteError, backend, " get(\"", key, "\"): store aborted");
}

}  // namespace tutti::bootstrap
