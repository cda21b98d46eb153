// A communicator belongs to the process that made it. After fork() the child holds a copy of
// its memory (connections, shared segments, store sockets) but none of its threads; using it
// there would move the parent's data or break its state. The library counts forks (a
// pthread_atfork child handler) and every handle records the count it was made at: in a child
// the counts differ and the handle refuses every call with tuttiInvalidUsage.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace tutti::api {

// How many times this process (or its ancestors, up to the exec) forked since the library
// was loaded: each fork() increments it in the child.
uint64_t forkGeneration();

// "" when a handle made at `generation` by process `creator` may be used here; else why not.
std::string forkedAway(uint64_t generation, pid_t creator);

}  // namespace tutti::api
