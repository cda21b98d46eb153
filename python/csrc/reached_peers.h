// The peers a process group's sends and receives have reached: an operation with the peer
// completed, so the library holds a connection to it. A send or receive with such a peer can
// be issued at once, on its own: it progresses independently of the group's other sends and
// receives (the library's point-to-point rounds), and no first contact -- which may wait for
// the peer to connect back, and over ibverbs could stall a cycle of ranks each contacting the
// next -- is left.
// Knows nothing of process groups.
#pragma once

#include <atomic>
#include <memory>

namespace tutti::torch_backend {

class ReachedPeers {
 public:
  explicit ReachedPeers(int size)
      : size_(size), reached_(std::make_unique<std::atomic<bool>[]>(size)) {}
  void mark(int peer) {
    if (peer >= 0 && peer < size_) reached_[peer].store(true, std::memory_order_release);
  }
  bool has(int peer) const {
    return peer >= 0 && peer < size_ && reached_[peer].load(std::memory_order_acquire);
  }

 private:
  int size_;
  std::unique_ptr<std::atomic<bool>[]> reached_;
};

}  // namespace tutti::torch_backend
