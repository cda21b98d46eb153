// Small socket helpers for the tcp transport: an owning fd, socket options, addresses.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <utility>

#include "bootstrap/sock_addr.h"
#include "common/unique_fd.h"

namespace tutti::transport::tcp {

// An owned file descriptor (common/unique_fd.h).
using Fd = UniqueFd;

// A socket address (IPv4 or IPv6) with parsing and printing (bootstrap/sock_addr.h).
using SockAddr = bootstrap::SockAddr;

// Local / remote address of a connected socket ("?" when unknown).
std::string localAddrOf(int fd);
std::string peerAddrOf(int fd);

// Non-blocking stream socket of the given family with CLOEXEC.
Fd makeStreamSocket(int family);
// TCP_NODELAY, and the buffer sizes when bytes > 0 (0: kernel autotuning).
void tuneDataSocket(int fd, int bufBytes);

}  // namespace tutti::transport::tcp
