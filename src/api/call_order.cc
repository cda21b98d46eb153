#include "call_order.h"

namespace tutti::api {

std::shared_ptr<CallOrder::Ticket> CallOrder::take(int lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t number = taken_++;
  unfinished_.emplace(number, lane);
  return std::make_shared<Ticket>(*this, number, lane);
}

void CallOrder::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return unfinished_.empty(); });
}

bool CallOrder::mayRun(uint64_t number, int lane) const {
  for (const auto& [earlier, itsLane] : unfinished_) {
    if (earlier >= number) return true;
    if (lane == kEveryLane || itsLane == kEveryLane || itsLane == lane) return false;
  }
  return true;
}

void CallOrder::Ticket::waitTurn() const {
  std::unique_lock<std::mutex> lock(order_->mutex_);
  order_->changed_.wait(lock, [&] { return order_->mayRun(number_, lane_); });
}

CallOrder::Ticket::~Ticket() {
  waitTurn();
  // Notified under the lock: once unfinished_ is empty, tuttiCommDestroy (waitIdle) may free
  // the order, so nothing of it may be touched after the lock is released.
  std::lock_guard<std::mutex> lock(order_->mutex_);
  order_->unfinished_.erase(number_);
  order_->changed_.notify_all();
}

}  // namespace tutti::api
