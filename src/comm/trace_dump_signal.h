// TraceDumpSignal: the flight recorder on demand by a signal (TUTTI_DUMP_SIGNAL): every live
// communicator of the process that asked for the signal writes its recent calls where a
// failure would (TUTTI_TRACE_FILE, else stderr), while the job goes on. The handler only
// writes the signal's number into a pipe; one thread of the process (started with the first
// armed signal, blocked on the pipe until the process ends) runs the dumps. A forked child
// inherits the handler but not the thread: its signals are not answered. It knows nothing of
// communicators: each registers its dump.
#pragma once

#include <functional>
#include <string>

#include "common/process_registry.h"

namespace tutti {

class TraceDumpSignal {
 public:
  using Dump = std::function<void(const std::string& cause)>;
  using Registration = ProcessRegistry<Dump>::Registration;

  // Arms `signo` (once per process and signal) and registers `dump`, called with "signal
  // SIGUSR1" (...) on every delivery until the registration is destroyed.
  static Registration add(int signo, Dump dump);

  // TUTTI_DUMP_SIGNAL's value: "off", "0" or "" -> 0; USR1, SIGUSR1, USR2, SIGUSR2 or a number
  // of one of them or of a real-time signal -> its number. Throws tuttiInvalidArgument
  // otherwise (a signal that ends or stops processes, or one the runtime uses, is refused).
  static int parse(const std::string& value);
  // "SIGUSR1", "SIGRTMIN+3", ...
  static std::string name(int signo);
};

}  // namespace tutti
