// The cuda_ipc transport: ranks on one host that both have a CUDA device move bytes through a
// per-peer FIFO of device slots owned by the receiver and mapped into the sender with CUDA IPC
// memory handles, with flow-control flags in shared host memory (fifo.h). A P2P self-test at
// connect time falls back, per pair and with a warning naming the cause, to slots in shared
// host memory. Off unless TUTTI_CUDA_IPC_ENABLE=1 or TUTTI_TRANSPORT=cuda_ipc: the executor
// still hands transports host buffers (device buffers are staged by the C API), for which shm
// is faster; see docs/cuda.md.
#pragma once

#include <memory>

#include "interfaces/transport.h"

namespace tutti::transport {

std::unique_ptr<Transport> makeCudaIpcTransport();

}  // namespace tutti::transport
