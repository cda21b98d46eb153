// The 128-bit secret every TcpStore client presents (random, from getrandom(2)).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tutti::bootstrap {

using Secret = std::array<uint8_t, 16>;

Secret randomSecret();
std::string secretToHex(const Secret& s);  // 32 lower-case hex digits
// Throws tuttiInvalidArgument naming `what` (e.g. "TUTTI_SECRET") unless text is 32 hex digits.
Secret secretFromHex(const std::string& text, const std::string& what = "secret");
// Constant-time comparison (no early exit on the first differing byte).
bool secretEqual(const Secret& a, const Secret& b);

}  // namespace tutti::bootstrap
