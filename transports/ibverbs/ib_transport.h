// The ibverbs transport: RC queue pairs over InfiniBand or RoCE (libibverbs, loaded with
// dlopen). See docs/transport-ibverbs.md.
#pragma once

#include <memory>
#include <string>

#include "interfaces/transport.h"

namespace tutti::transport {

std::unique_ptr<Transport> makeIbTransport();

// After setup(): "" when a device is in use, else why the transport cannot be used here
// ("libibverbs.so.1: cannot open shared object file", "no RDMA device", ...).
std::string ibUnavailableReason(const Transport& t);
// After setup(): the chosen port ("rxe0:1 RoCE GID 1 ::ffff:10.77.0.1 (RoCE v2) MTU 1024 ...").
std::string ibDeviceDescription(const Transport& t);
// Zero-copy (rendezvous) messages sent and received on a connection of this transport, and
// the registration cache's counters (registrations made, cache hits).
struct IbCounters {
  long zeroCopySends = 0, zeroCopyRecvs = 0, registrations = 0, cacheHits = 0;
};
IbCounters ibCounters(const Transport& t, const Connection& c);

// Probes this machine once (no communicator needed): "" if an active RDMA port exists.
std::string ibProbe();

}  // namespace tutti::transport
