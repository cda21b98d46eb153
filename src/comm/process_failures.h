// ProcessFailures: what the communicators of this process know about failures, for each other.
// A peer that gave up and left no record in one communicator's store (the store's host died,
// or it gave up after a failure on another communicator and exited before anyone read why)
// may have left one in another communicator the two processes share: there it names the
// process that failed first. And the verdicts this process reached itself name processes that
// may be the cause. Processes are named by host id and pid, since ranks differ between
// communicators. It knows nothing of communicators: each registers a lookup of the records in
// its own store while it lives.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/process_registry.h"

namespace tutti {

class ProcessFailures {
 public:
  struct Process {
    std::string hostId;
    pid_t pid = 0;
    bool operator==(const Process&) const = default;
  };
  // `first` failed first, as `text` explains.
  struct Finding {
    Process first;
    std::string text;
  };
  // A communicator's record left by process `by` (none: not a member, or no record).
  using RecordLookup = std::function<std::optional<Finding>(const Process& by)>;

  // The lookups of every live communicator of this process share one instance.
  static ProcessFailures& instance();

  using Registration = ProcessRegistry<RecordLookup>::Registration;
  // Registers a communicator's lookup until the registration is destroyed (which waits for a
  // lookup in progress; a lookup is bounded by its store's timeouts).
  Registration add(RecordLookup lookup) { return lookups_.add(std::move(lookup)); }

  // The record of `peer` in another communicator than `asking`'s (any order; none found: no
  // Finding). Lookups read stores: call it only after a failure.
  std::optional<Finding> recordBy(const Process& peer, const Registration& asking) const;

  // A communicator of this process found that `first` failed first.
  void noteVerdict(const Process& first, const std::string& text);
  // The verdicts so far, oldest first (at most kMaxVerdicts: the first ones are kept).
  std::vector<Finding> verdicts() const;
  static constexpr size_t kMaxVerdicts = 16;

 private:
  ProcessRegistry<RecordLookup> lookups_;
  mutable std::mutex mutex_;  // verdicts_
  std::vector<Finding> verdicts_;
  pid_t verdictsPid_ = 0;  // whose verdicts_ (a forked child starts with none)
};

}  // namespace tutti
