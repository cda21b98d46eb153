// Where a host's live topology probe is kept for the next process on that host, and what a
// kept probe must match to be used. hwloc's live discovery reads every PCI device's config
// space, which in a VM costs milliseconds per device: with hundreds of ranks on a host it was
// half of the job's init CPU. The first process probes and writes hwloc's XML (aside, then
// renamed); the others import it (hwloc_loader.cc).
#pragma once

#include <string>

namespace tutti::topo {

// The cache file of this host ("" = no cache): TUTTI_TOPO_CACHE names the directory ("auto":
// $XDG_CACHE_HOME/tutti, else $HOME/.cache/tutti; "0" or "off": none), the file is
// topology-<host name>.xml in it.
std::string probeCacheFile();

// One line a cached probe must carry to be used: this boot (/proc/sys/kernel/random/boot_id,
// so hardware changed across a reboot is probed again), this process's cgroup (/proc/self/cgroup:
// the CPUs and memory hwloc reports as allowed depend on it) and the hwloc and format
// versions.
std::string probeStamp();

// Writes content to path through a temporary file renamed over it, making the directory
// (mode 0700) if needed; false on any failure (the cache is an optimisation).
bool writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace tutti::topo
