// Whether a process visible from here (same host and pid namespace) has exited: no such pid,
// or a zombie that its parent has not reaped yet; and the state letter of one that has not.
// Never throws: the process may be reaped while it is being looked at.
#pragma once

#include <sys/types.h>

namespace tutti {

bool processGone(pid_t pid);

// The process's state letter from /proc/<pid>/stat ('R', 'S', 'D', 'T', 'Z', ...): 0 when
// there is no such process, '?' when its state cannot be read.
char processState(pid_t pid);

}  // namespace tutti
