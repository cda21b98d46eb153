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

  class Registration;
  // Registers a communicator's lookup until the registration is destroyed (which waits for a
  // lookup in progress; a lookup is bounded by its store's timeouts).
  Registration add(RecordLookup lookup);

  // The record of `peer` in another communicator than `asking`'s (any order; none found: no
  // Finding). Lookups read stores: call it only after a failure.
  std::optional<Finding> recordBy(const Process& peer, const Registration& asking) const;

  // A communicator of this process found that `first` failed first.
  void noteVerdict(const Process& first, const std::string& text);
  // The verdicts so far, oldest first (at most kMaxVerdicts: the first ones are kept).
  std::vector<Finding> verdicts() const;
  static constexpr size_t kMaxVerdicts = 16;

 private:
  struct Entry {
    std::mutex mutex;  // held while the lookup runs, and to retire the entry
    bool live = true;
    RecordLookup lookup;
    pid_t pid = 0;  // the registering process: a forked child skips its parent's entries
  };
  void remove(const std::shared_ptr<Entry>& entry);

  mutable std::mutex mutex_;  // entries_, verdicts_
  std::vector<std::shared_ptr<Entry>> entries_;
  std::vector<Finding> verdicts_;
  pid_t verdictsPid_ = 0;  // whose verdicts_ (a forked child starts with none)
};

class ProcessFailures::Registration {
 public:
  Registration() = default;
  Registration(Registration&& other) noexcept = default;
  Registration& operator=(Registration&& other) noexcept;
  ~Registration();

 private:
  friend class ProcessFailures;
  Registration(ProcessFailures* owner, std::shared_ptr<Entry> entry)
      : owner_(owner), entry_(std::move(entry)) {}
  void release();
  ProcessFailures* owner_ = nullptr;
  std::shared_ptr<Entry> entry_;
};

}  // namespace tutti
