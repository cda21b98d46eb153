// Slurm host lists ("node[01-04,07]", "a,b[1-2]", "rack[1-2]-n[1-3]") expanded to host names
// in order. Inside brackets: comma-separated numbers and ranges lo-hi; a bound written with
// leading zeros pads every number of its range to its width (node[08-10] -> node08, node09,
// node10). Several bracket groups in one name multiply out, leftmost varying slowest.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tutti::bootstrap {

// Throws tuttiInvalidArgument naming `what` and the problem on malformed input (empty list
// or name, unbalanced or nested brackets, a non-number, lo > hi) or when the list expands to
// more than `maxHosts` names.
std::vector<std::string> expandHostlist(std::string_view list, const std::string& what,
                                        size_t maxHosts = 1 << 20);

// The first host of the list, without expanding the rest (still checks the whole syntax).
std::string firstHost(std::string_view list, const std::string& what);

}  // namespace tutti::bootstrap
