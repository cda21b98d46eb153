// Helpers shared by the Store backends: integer values of add(), standard errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tutti::bootstrap {

// add() stores its counter as decimal text, so getString() of a counter reads naturally.
int64_t parseCounter(const std::string& key, std::span<const std::byte> value);
// The counter in `value` plus delta; a sum outside int64 is tuttiInvalidUsage naming the key
// (the counter keeps its value).
int64_t addToCounter(const std::string& key, std::span<const std::byte> value, int64_t delta);
std::vector<std::byte> formatCounter(int64_t value);

[[noreturn]] void throwGetTimeout(const std::string& backend, const std::string& key,
                                  double seconds);
[[noreturn]] void throwAborted(const std::string& backend, const std::string& key);

}  // namespace tutti::bootstrap
