// Where a rank sits on its host, as the topology sees it: its device (a GPU of the host's
// topology, else the NUMA node it runs on), that device's position in the host's best device
// ring, and how close the device is to the NIC the host's cross-host traffic leaves through.
// Every rank describes itself once at init (from hwloc, or from TUTTI_TOPO_FILE plus
// TUTTI_TOPO_DEVICE); the descriptions travel in the communicator's peer records.
#pragma once

#include <string>
#include <vector>

namespace tutti {

struct RankPlace {
  std::string device;   // "gpu:3", "numa:1"; "" unknown
  int devicePos = -1;   // position of the device in the host's device ring; -1 unknown
  int nicClass = -1;    // topo::LinkClass from the device to the host's NIC; -1 unknown/no NIC
  std::string nic;      // that NIC's first OS name ("" none)
  std::string cpus;     // the CPUs this rank may run on ("0-3,8-11"; "" unknown)
  std::string nearNic;  // the nearest NIC: "name kind speed" ("mlx5_0 InfiniBand 200000 Mb/s")
  std::string origin;   // the host topology's origin (file name or "hwloc#<hardware digest>")
  // Not a place but travels with it: the rank's soft RLIMIT_NOFILE (-1 unlimited or unknown),
  // so that every rank takes the same descriptor-bound decisions (self-tuning's exploration).
  long fdLimit = -1;
  // OS names of the NIC nearest the device (a GPU's nearest NIC, or the best NIC on the rank's
  // NUMA node, else the host's): the network transports prefer it. Local only: not encoded.
  std::vector<std::string> nearNics;
};

// This process's place, described from the topology of TUTTI_TOPO_FILE (else live hwloc,
// probed once per process) and TUTTI_TOPO_DEVICE. An unusable TUTTI_TOPO_DEVICE throws
// tuttiInvalidArgument; a topology that cannot be probed gives an unknown place (and a WARN).
RankPlace describeLocalPlace();

// What the host's tuning cache is keyed by (tuning/tuning_cache.h): the topology's origin
// (a file name, or "hwloc#<hardware digest>"), else "host:<host name>".
std::string hardwareIdentity(const RankPlace& p);

// Text form for the peer record (one line, no '\n') and back; a malformed text throws.
std::string encodePlace(const RankPlace& p);
RankPlace decodePlace(const std::string& text, int rank);

// The link class name ("NV", "PIX", "SYS", ...) between two devices of this process's host
// topology, as the hop of a ring or tree; "?" when either device is unknown.
std::string localHopClass(const std::string& deviceA, const std::string& deviceB);

}  // namespace tutti
