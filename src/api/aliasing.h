// Which overlaps of a call's send and receive buffers a collective accepts: none, except its
// one in-place layout (send == recv for all-reduce, broadcast, reduce and all-to-all; the own
// block, send == recv + rank * bytes, for all-gather; recv == send + rank * bytes for
// reduce-scatter). Any other overlap would let arriving data overwrite data still to be sent,
// so it is refused before anything moves.
#pragma once

#include <cstddef>

#include "memory_space.h"

namespace tutti::api {

// Throws tuttiInvalidArgument (the entry point's guard prefixes its name) when [send, send +
// sendBytes) and [recv, recv + recvBytes) overlap and send != recv + inPlaceOffset (bytes, may be
// negative).
void checkAliasing(const CallBuffers& b, std::ptrdiff_t inPlaceOffset);

}  // namespace tutti::api
