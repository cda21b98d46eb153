#include "call_order.h"

namespace tutti::api {

std::shared_ptr<CallOrder::Ticket> CallOrder::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::make_shared<Ticket>(*this, taken_++);
}

void CallOrder::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return finished_ >= taken_; });
}

void CallOrder::Ticket::waitTurn() const {
  std::unique_lock<std::mutex> lock(order_->mutex_);
  order_->changed_.wait(lock, [&] { return order_->finished_ >= number_; });
}

CallOrder::Ticket::~Ticket() {
  waitTurn();
  // Notified under the lock: once finished_ says so, tuttiCommDestroy (waitIdle) may free the
  // order, so nothing of it may be touched after the lock is released.
  std::lock_guard<std::mutex> lock(order_->mutex_);
  order_->finished_ = number_ + 1;
  order_->changed_.notify_all();
}

}  // namespace tutti::api
