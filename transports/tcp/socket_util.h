// Small socket helpers for the tcp transport: an owning fd, socket options, addresses.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <utility>

#include "common/unique_fd.h"

namespace tutti::transport::tcp {

// An owned file descriptor (common/unique_fd.h).
using Fd = UniqueFd;

// A socket address (IPv4 or IPv6) and its text form "a.b.c.d:port" / "[v6]:port".
struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
  int port() const;
  void setPort(int port);
  std::string str() const;   // with port
  std::string host() const;  // without port
};

// Parses "a.b.c.d:port" or "[v6]:port"; throws tuttiInvalidArgument naming `what`.
SockAddr parseSockAddr(const std::string& text, const std::string& what);

// Local / remote address of a connected socket ("?" when unknown).
std::string localAddrOf(int fd);
std::string peerAddrOf(int fd);

// Non-blocking stream socket of the given family with CLOEXEC.
Fd makeStreamSocket(int family);
// TCP_NODELAY, and the buffer sizes when bytes > 0 (0: kernel autotuning).
void tuneDataSocket(int fd, int bufBytes);

}  // namespace tutti::transport::tcp
