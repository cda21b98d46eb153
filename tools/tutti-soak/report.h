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
  std::atomic<uint64_t> byKind[static_cast<int>(Kind::kCount)];  // calls outside fused groups
  std::atomic<uint64_t> streamOps{0};    // calls verified that ran on a host stream
  std::atomic<uint64_t> streamSteps{0};  // steps enqueued on host streams
  std::atomic<uint64_t> streamSyncs{0};  // synchronisations that ended a batch of stream steps
  std::atomic<uint64_t> fusedGroups{0};  // fused groups issued
  std::atomic<uint64_t> fusedAllReduce{0}, fusedAllGather{0};  // their members verified
  std::atomic<uint64_t> fusedBlocking{0};   // fused groups issued blocking (not on a stream)
  std::atomic<uint64_t> fusedSaidFused{0};  // of those, tuttiCommLastAlgorithm said "fused" after
  std::atomic<uint64_t> syncErrors{0};      // errors tuttiStreamSynchronize returned
  std::atomic<int> syncErrorsNamingVictim{0};
  std::atomic<int> stopChecksEnded{0};  // workers that ended at a stop check (run over)
  std::atomic<int> phase{0};            // what the rank's first worker is inside (kPhase* bits)
  std::atomic<int> killPhase{-1};       // the victim: what its first thread was inside when killed
  std::atomic<int64_t> killMs{-1};      // the victim: when it was killed (ms after the start)
  std::atomic<int> finished{0};         // the rank's workers are done and its comms destroyed
  std::atomic<int> errorsNamingVictim{0};  // kill runs: errors naming the killed rank
  std::atomic<int> textLock{0};
  char firstError[768];
  char firstUnnamed[768];  // kill runs: the first error that does not name the killed rank
  char firstWrong[512];

  void note(char* field, size_t size, const std::string& text) {
    while (textLock.exchange(1)) {
    }
    if (field[0] == '\0') std::snprintf(field, size, "%s", text.c_str());
    textLock.store(0);
  }
};

}  // namespace tutti::soak
