// What each rank of a soak run reports to the launching process, in shared memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "ops.h"

namespace tutti::soak {

struct RankReport {
  std::atomic<uint64_t> ops{0};     // calls verified (a group counts each of its calls)
  std::atomic<uint64_t> bytes{0};   // bytes of verified output
  std::atomic<uint64_t> wrong{0};   // calls with a wrong result
  std::atomic<uint64_t> errors{0};  // calls that returned an error
  std::atomic<uint64_t> groups{0};  // groups issued
  std::atomic<uint64_t> byKind[static_cast<int>(Kind::kCount)];
  std::atomic<int> finished{0};            // the rank's workers are done and its comms destroyed
  std::atomic<int> errorsNamingVictim{0};  // kill runs: errors naming the killed rank
  std::atomic<int> textLock{0};
  char firstError[768];
  char firstWrong[512];

  void note(char* field, size_t size, const std::string& text) {
    while (textLock.exchange(1)) {
    }
    if (field[0] == '\0') std::snprintf(field, size, "%s", text.c_str());
    textLock.store(0);
  }
};

}  // namespace tutti::soak
