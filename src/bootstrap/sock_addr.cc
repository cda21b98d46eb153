#include "bootstrap/sock_addr.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace tutti::bootstrap {

uint16_t SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SockAddr::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SockAddr::host() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf, sizeof(buf));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, buf,
              sizeof(buf));
  }
  return buf;
}

std::string SockAddr::toString() const {
  if (family() == AF_INET6) return "[" + host() + "]:" + std::to_string(port());
  return host() + ":" + std::to_string(port());
}

uint16_t parsePort(const std::string& text, const std::string& what, bool allowZero) {
  char* end = nullptr;
  errno = 0;
  long v = text.empty() ? -1 : std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < (allowZero ? 0 : 1) || v > 65535)
    fail(tuttiInvalidArgument, what, ": '", text, "' is not a valid port (1..65535)");
  return static_cast<uint16_t>(v);
}

SockAddr SockAddr::resolve(const std::string& host, uint16_t port, const std::string& what) {
  TUTTI_CHECK_ARG(!host.empty(), what, ": empty host name");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    fail(tuttiInvalidArgument, what, ": cannot resolve host '", host, "': ", gai_strerror(rc));
  const addrinfo* pick = res;
  for (const addrinfo* ai = res; ai; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  }
  SockAddr a;
  std::memcpy(&a.storage, pick->ai_addr, pick->ai_addrlen);
  a.len = pick->ai_addrlen;
  ::freeaddrinfo(res);
  a.setPort(port);
  return a;
}

SockAddr SockAddr::parse(const std::string& hostPort, const std::string& what, bool allowZeroPort) {
  std::string host, port;
  if (!hostPort.empty() && hostPort[0] == '[') {
    size_t close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':')
      fail(tuttiInvalidArgument, what, ": '", hostPort, "' is not [ipv6]:port");
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    size_t colon = hostPort.rfind(':');
    if (colon == std::string::npos || hostPort.find(':') != colon)
      fail(tuttiInvalidArgument, what, ": '", hostPort,
           "' is not host:port (write IPv6 addresses as [addr]:port)");
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  return resolve(host, parsePort(port, what, allowZeroPort), what);
}

SockAddr SockAddr::local(int fd) {
  SockAddr a;
  a.len = sizeof(a.storage);
  if (::getsockname(fd, a.sa(), &a.len) != 0) throwSystemError("getsockname");
  return a;
}

SockAddr SockAddr::peer(int fd) {
  SockAddr a;
  a.len = sizeof(a.storage);
  if (::getpeername(fd, a.sa(), &a.len) != 0) a.len = 0;
  return a;
}

}  // namespace tutti::bootstrap
