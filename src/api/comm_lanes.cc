#include "comm_lanes.h"

#include "common/error.h"

namespace tutti::api {

void CommLanes::open(Communicator& parent, int count) {
  TUTTI_ASSERT(count >= 1);  // checkCommOptions refused a count out of range
  extra_.clear();
  CommOptions options = parent.options();
  options.streamLanes = 1;
  for (int lane = 1; lane < count; ++lane) {
    // The color is the lane count: ranks set differently land in different duplicates.
    auto dup = parent.split(count, parent.rank(), options);
    if (dup->size() != parent.size())
      fail(tuttiInvalidUsage, "TUTTI_STREAM_LANES=", count, " on ", dup->size(), " of the ",
           parent.size(), " ranks: every rank of a communicator must set the same lane count");
    extra_.push_back(std::move(dup));
  }
}

Communicator& CommLanes::at(Communicator& parent, int lane) {
  if (lane == 0) return parent;
  return *extra_.at(static_cast<size_t>(lane - 1));
}

void CommLanes::setAlgorithm(const std::string& spec) {
  for (auto& c : extra_) c->setAlgorithm(spec);
}

void CommLanes::setTimeout(double seconds) {
  for (auto& c : extra_) c->setTimeout(seconds);
}

void CommLanes::abort() {
  for (auto& c : extra_) c->abort();
}

void CommLanes::revoke() {
  for (auto& c : extra_) c->revoke();
}

tuttiResult_t CommLanes::failure() const {
  for (const auto& c : extra_)
    if (c->failure() != tuttiSuccess) return c->failure();
  return tuttiSuccess;
}

void CommLanes::close(bool leave) {
  for (auto& c : extra_)
    if (leave && c->failure() == tuttiSuccess) c->leave();
  extra_.clear();
}

}  // namespace tutti::api
