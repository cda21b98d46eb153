// Memory registration for user buffers moved zero-copy (RDMA write straight from the
// sender's buffer into the receiver's).
//
// With keep=false (TUTTI_IB_REG_CACHE=0, the default) a region is registered per message
// and deregistered when the message completes: always correct. With keep=true the
// registrations stay in a cache (page-aligned ranges, up to maxEntries, least recently used
// evicted), so a buffer used again costs no ibv_reg_mr; this is only safe when the
// application does not free a communication buffer and get new memory at the same address
// while the communicator lives (the cached registration would still point at the old pages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ib_device.h"

namespace tutti::transport::ib {

class RegCache {
 public:
  RegCache(std::shared_ptr<IbDevice> dev, bool keep, size_t maxEntries);
  ~RegCache();
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;

  struct Handle {
    ibv_mr* mr = nullptr;
    int entry = -1;  // cache entry index, -1: owned by the handle
  };
  // An MR covering [p, p + n) with local write + remote write access; throws
  // tuttiSystemError naming the range when registration fails.
  Handle acquire(const void* p, size_t n);
  void release(Handle& h);

  long registrations() const { return registrations_; }
  long hits() const { return hits_; }

 private:
  struct Entry {
    uintptr_t begin = 0, end = 0;
    ibv_mr* mr = nullptr;
    int users = 0;
    uint64_t lastUse = 0;
  };
  ibv_mr* reg(uintptr_t begin, uintptr_t end);

  std::shared_ptr<IbDevice> dev_;
  bool keep_;
  size_t maxEntries_;
  std::mutex mu_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  long registrations_ = 0;
  long hits_ = 0;
};

}  // namespace tutti::transport::ib
