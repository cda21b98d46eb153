// hostReadable: is a user pointer readable host memory? Asked at every collective call when
// CUDA is unavailable (a device pointer then gets a clear error instead of a crash), so it
// must cost nothing for the buffers an application passes again and again -- including
// buffers that move inside one allocation from call to call (bucketed gradients, nccl-tests'
// rotating offsets), which a cache of pages alone does not cover.
//
// Per thread: the last pages found readable (a hit costs a few compares); on a miss, one
// process_vm_readv of one byte on this process (~3 us on a VM). The readable mappings of
// /proc/self/maps are loaded at the first miss and answer from then on; an address outside
// all of them (a new mapping) is probed, and after kMissesBeforeMaps such misses the maps are
// loaded again. So buffers that move within known mappings are answered from the maps, and a
// program that keeps making new mappings pays a probe per new buffer and a reload of the maps
// every kMissesBeforeMaps of them.
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "memory_space.h"

namespace tutti::api {
namespace {

constexpr unsigned kMissesBeforeMaps = 16;

struct Range {
  uintptr_t lo, hi;  // [lo, hi)
};

struct ReadableCache {
  std::array<uintptr_t, 8> pages{};  // page number + 1 (0: empty slot)
  unsigned nextPage = 0;
  std::vector<Range> mappings;  // readable mappings, as of the last load
  // Misses since that load; the first miss of a thread loads them at once (its first
  // collective, usually), not the 16th in the middle of a run.
  unsigned misses = kMissesBeforeMaps - 1;

  bool known(uintptr_t addr) const {
    const uintptr_t page = (addr >> 12) + 1;
    for (uintptr_t k : pages)
      if (k == page) return true;
    for (const Range& r : mappings)
      if (addr >= r.lo && addr < r.hi) return true;
    return false;
  }

  void loadMappings() {
    mappings.clear();
    misses = 0;
    FILE* f = std::fopen("/proc/self/maps", "re");
    if (f == nullptr) return;
    char line[512];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      unsigned long lo = 0, hi = 0;
      char perms[5] = {};
      if (std::sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && perms[0] == 'r')
        mappings.push_back({lo, hi});
      // Lines longer than the buffer (long paths) continue on the next fgets: skip the rest.
      while (line[0] != '\0' && line[std::strlen(line) - 1] != '\n' &&
             std::fgets(line, sizeof(line), f) != nullptr) {
      }
    }
    std::fclose(f);
  }
};

// The cached checks and, on a miss, one read of one byte.
bool slowHostReadable(uintptr_t addr) {
  thread_local ReadableCache cache;
  if (cache.known(addr)) return true;
  if (++cache.misses >= kMissesBeforeMaps) {
    cache.loadMappings();
    if (cache.known(addr)) return true;
  }
  char byte;
  iovec local{&byte, 1};
  iovec remote{reinterpret_cast<void*>(addr), 1};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n == 1) {
    cache.pages[cache.nextPage++ % cache.pages.size()] = (addr >> 12) + 1;
    return true;
  }
  return !(n < 0 && errno == EFAULT);  // ENOSYS/EPERM (seccomp): cannot tell, assume host
}

// The last two pages found readable (a call's send and receive buffers): a hit is two
// compares (TLS model: see api/group.cc).
thread_local uintptr_t tlsRecentPages[2] = {0, 0};

}  // namespace

bool hostReadable(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const uintptr_t page = (addr >> 12) + 1;
  if (page == tlsRecentPages[0] || page == tlsRecentPages[1]) return true;
  if (!slowHostReadable(addr)) return false;
  tlsRecentPages[1] = tlsRecentPages[0];
  tlsRecentPages[0] = page;
  return true;
}

}  // namespace tutti::api
