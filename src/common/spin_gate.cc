#include "spin_gate.h"

#include <utility>

namespace tutti {

namespace {
thread_local const std::atomic<int>* tlsWaiters = nullptr;
}  // namespace

SpinGate::SpinGate(const std::atomic<int>* waiters) : outer_(std::exchange(tlsWaiters, waiters)) {}

SpinGate::~SpinGate() { tlsWaiters = outer_; }

bool SpinGate::open() {
  return tlsWaiters == nullptr || tlsWaiters->load(std::memory_order_relaxed) > 0;
}

}  // namespace tutti
