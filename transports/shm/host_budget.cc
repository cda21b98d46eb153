#include "host_budget.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace tutti::transport::shm {

HostBudget::HostBudget(bootstrap::Store* store, std::string hostId, MemoryRoom room)
    : store_(store), key_("shm/budget/" + std::move(hostId)), room_(std::move(room)) {}

void HostBudget::reserve(size_t bytes, const std::string& what, const char* variable) {
  if (store_ == nullptr || (!room_.memAvailable && !room_.cgroupRoom)) return;
  const int64_t total = store_->add(key_, static_cast<int64_t>(bytes));
  const auto need = static_cast<uint64_t>(std::max<int64_t>(total, 0));
  std::string shortfall = roomShortfall(need, room_, "were");
  if (shortfall.empty()) return;
  store_->add(key_, -static_cast<int64_t>(bytes));
  std::ostringstream os;
  os << "shm: the ranks on this host would need " << need << " bytes (" << (need >> 20)
     << " MiB) of shared memory segments for this communicator with " << what << " (" << bytes
     << " bytes), but only " << shortfall
     << " when it was set up (every rank of a host takes one FIFO segment per peer it talks "
        "to, and one window); set "
     << variable << " smaller, or use fewer ranks per host";
  fail(tuttiSystemError, os.str());
}

}  // namespace tutti::transport::shm
