#include "socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstring>

#include "common/error.h"

namespace tutti::transport::tcp {

std::string localAddrOf(int fd) {
  SockAddr a;
  a.len = sizeof a.storage;
  if (getsockname(fd, a.sa(), &a.len) != 0) return "?";
  return a.toString();
}

std::string peerAddrOf(int fd) {
  SockAddr a;
  a.len = sizeof a.storage;
  if (getpeername(fd, a.sa(), &a.len) != 0) return "?";
  return a.toString();
}

Fd makeStreamSocket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throwSystemError("tcp: socket()");
  return Fd(fd);
}

void tuneDataSocket(int fd, int bufBytes) {
  int one = 1;
  TUTTI_SYSCHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one),
                 "tcp: setsockopt(TCP_NODELAY)");
  if (bufBytes > 0) {
    TUTTI_SYSCHECK(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufBytes, sizeof bufBytes),
                   "tcp: setsockopt(SO_SNDBUF)");
    TUTTI_SYSCHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufBytes, sizeof bufBytes),
                   "tcp: setsockopt(SO_RCVBUF)");
  }
}

}  // namespace tutti::transport::tcp
