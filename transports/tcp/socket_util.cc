#include "socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstring>

#include "common/error.h"

namespace tutti::transport::tcp {

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

void SockAddr::setPort(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
}

std::string SockAddr::host() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::string SockAddr::str() const {
  if (family() == AF_INET6) return "[" + host() + "]:" + std::to_string(port());
  return host() + ":" + std::to_string(port());
}

SockAddr parseSockAddr(const std::string& text, const std::string& what) {
  SockAddr a;
  std::string host;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find("]:");
    if (close != std::string::npos) {
      host = text.substr(1, close - 1);
      port = text.substr(close + 2);
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string::npos) {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
  }
  char* end = nullptr;
  long p = port.empty() ? -1 : std::strtol(port.c_str(), &end, 10);
  if (p < 0 || p > 65535 || (end && *end)) {
    fail(tuttiInvalidArgument, what, ": malformed address '", text, "' (want host:port)");
  }
  auto* in4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    a.len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    a.len = sizeof(sockaddr_in6);
  } else {
    fail(tuttiInvalidArgument, what, ": malformed address '", text, "' (want host:port)");
  }
  a.setPort(static_cast<int>(p));
  return a;
}

std::string localAddrOf(int fd) {
  SockAddr a;
  a.len = sizeof a.ss;
  if (getsockname(fd, a.sa(), &a.len) != 0) return "?";
  return a.str();
}

std::string peerAddrOf(int fd) {
  SockAddr a;
  a.len = sizeof a.ss;
  if (getpeername(fd, a.sa(), &a.len) != 0) return "?";
  return a.str();
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
