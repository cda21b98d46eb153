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
std::vector<std::byte> formatCounter(int64_t value);

[[noreturn]] void throwGetTimeout(const std::string& backend, const std::string& key,
                                  double seconds);
[[noreturn]] void throwAborted(const std::string& backend, const std::string& key);

}  // namespace tutti::bootstrap
