#include "common/process_gone.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/unique_fd.h"

namespace tutti {

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  const char state = processState(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

char processState(pid_t pid) {
  // With read(2), not a stream: the process may be reaped before or during the read, which
  // then fails with ESRCH (libstdc++'s filebuf throws on that).
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT || errno == ESRCH ? 0 : '?';
  char buf[1024];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  const int readErr = errno;
  fd.reset();
  if (n < 0) return readErr == ESRCH ? 0 : '?';
  const std::string stat(buf, static_cast<size_t>(n));
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return n == 0 ? 0 : '?';
  return stat[paren + 2];
}

}  // namespace tutti
