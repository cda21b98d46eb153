// Whether a process visible from here (same host and pid namespace) has exited: no such pid,
// or a zombie that its parent has not reaped yet. Never throws: the process may be reaped
// while it is being looked at.
#pragma once

#include <sys/types.h>

namespace tutti {

bool processGone(pid_t pid);

}  // namespace tutti
