// Host identity: ranks with equal ids share a host (shm, CMA, cuda_ipc are possible).
#pragma once

#include <string>

namespace tutti::bootstrap {

// TUTTI_HOSTID if set; else "<boot_id>:<netns inode>" (/proc/sys/kernel/random/boot_id and
// the inode of /proc/self/ns/net), so processes in different network namespaces of one
// machine count as different hosts. Falls back to the host name when /proc is unreadable.
std::string localHostId();

}  // namespace tutti::bootstrap
