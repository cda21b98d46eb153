// A communicator's lanes (TUTTI_STREAM_LANES): lane 0 is the communicator itself, lanes 1 ..
// count-1 are duplicates of it (splits with every rank, made together when the communicator
// is), each with its own connections, shared window and tuning state. Calls given different
// lanes may therefore run at the same time without their messages meeting; calls of one lane
// run one after another, as a communicator's calls do. Every rank must give every call the
// same lane (laneOf numbers the communicator's collectives, which every rank issues alike).
// Knows nothing of streams or of who orders the calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace tutti::api {

class CommLanes {
 public:
  // Makes count - 1 duplicates of `parent`: collective over its ranks, which must all pass the
  // same count (a duplicate that does not get every rank is tuttiInvalidUsage naming the
  // setting; a rank that makes none leaves the others' split to time out). count 1: none.
  void open(Communicator& parent, int count);
  int count() const { return 1 + static_cast<int>(extra_.size()); }
  // The lane of a communicator's n-th collective (n from 0).
  int laneOf(uint64_t n) const { return static_cast<int>(n % static_cast<uint64_t>(count())); }
  // Lane `lane` of `parent` (0: the parent itself).
  Communicator& at(Communicator& parent, int lane);

  // Applied to every duplicate, as the caller applies it to the parent.
  void setAlgorithm(const std::string& spec);
  void setTimeout(double seconds);
  void abort();
  void revoke();
  // The first duplicate's failure (tuttiSuccess when none failed), for the parent's checks.
  tuttiResult_t failure() const;
  // Before the parent leaves: each duplicate leaves the store (unless `leave` is false: after
  // a failure) and is destroyed.
  void close(bool leave);

 private:
  std::vector<std::unique_ptr<Communicator>> extra_;
};

}  // namespace tutti::api
