// The transports compiled in, in priority order (cuda_ipc -> shm -> ibverbs -> tcp), minus
// those disabled by TUTTI_*_DISABLE, or only the one named by TUTTI_TRANSPORT.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interfaces/transport.h"

namespace tutti {

std::vector<std::unique_ptr<transport::Transport>> makeTransports(const std::string& forced);
// Names of every transport compiled into this build.
std::vector<std::string> compiledTransports();

}  // namespace tutti
