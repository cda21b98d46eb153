// torch's c10d::Store as tutti's rendezvous store (tuttiStore_t), so the communicator meets
// through the store torch already has (env://, tcp://, file://, a PrefixStore per group)
// and tutti opens no port of its own.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "tutti/tutti.h"

namespace tutti::torch_backend {

// The callbacks use store through a raw pointer: keep it alive until tuttiCommDestroy.
tuttiStore_t storeBridge(c10d::Store* store);

}  // namespace tutti::torch_backend
