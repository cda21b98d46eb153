// The shm transport: ranks on one host exchange messages through shared-memory FIFOs
// (memfd segments opened by the peer through /proc/<pid>/fd, else named tmpfs files unlinked
// once mapped), with single-copy process_vm_readv for large messages and pipe doorbells +
// pidfds for sleeping. See docs/transports.md.
#pragma once

#include <memory>

#include "interfaces/transport.h"

namespace tutti::transport {

std::unique_ptr<Transport> makeShmTransport();

}  // namespace tutti::transport
