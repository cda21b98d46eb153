// An IPv4/IPv6 socket address with parsing ("host:port", "[v6]:port") and printing.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace tutti::bootstrap {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void setPort(uint16_t port);
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&storage); }
  // "10.0.0.1:29500" or "[fe80::1]:29500".
  std::string toString() const;
  // The address without the port ("10.0.0.1", "fe80::1").
  std::string host() const;

  // Resolves host (numeric or a name, via getaddrinfo; IPv4 preferred) and port.
  // Throws tuttiInvalidArgument naming `what` when it cannot.
  static SockAddr resolve(const std::string& host, uint16_t port, const std::string& what);
  // "host:port", "[v6]:port"; `what` names the source in errors (e.g. "TUTTI_ADDR").
  static SockAddr parse(const std::string& hostPort, const std::string& what,
                        bool allowZeroPort = false);
  // The address of a socket (getsockname) / its peer (getpeername).
  static SockAddr local(int fd);
  static SockAddr peer(int fd);
};

// Parses a decimal port 1..65535 (0 too when allowZero); throws tuttiInvalidArgument.
uint16_t parsePort(const std::string& text, const std::string& what, bool allowZero = false);

}  // namespace tutti::bootstrap
