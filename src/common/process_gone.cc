#include "common/process_gone.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace tutti {

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // With read(2), not a stream: the process may be reaped between kill and the read, which
  // then fails with ESRCH (libstdc++'s filebuf throws on that).
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  const int readErr = errno;
  ::close(fd);
  if (n < 0) return readErr == ESRCH;
  const std::string stat(buf, static_cast<size_t>(n));
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return n == 0;
  char state = stat[paren + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace tutti
