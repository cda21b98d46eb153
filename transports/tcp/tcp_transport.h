// The tcp transport: any two hosts, non-blocking sockets, TUTTI_NSOCKS streams per peer with
// large messages striped across them in TUTTI_TCP_CHUNK_BYTES units. See docs/transport-tcp.md.
#pragma once

#include <memory>

#include "interfaces/transport.h"

namespace tutti::transport {

struct TcpOptions {
  int port = 0;         // listening port; 0: any free port
  int nsocks = 0;       // sockets per peer; 0: TUTTI_NSOCKS
  long chunkBytes = 0;  // stripe unit; 0: TUTTI_TCP_CHUNK_BYTES
  int bufBytes = 0;     // SO_SNDBUF/SO_RCVBUF; 0: kernel autotuning
};

std::unique_ptr<Transport> makeTcpTransport(TcpOptions options = {});

// Diagnostics for tests and tools (valid after setup()): the address published in the store
// ("a.b.c.d:port") and the interface it belongs to.
std::string tcpListenAddress(const Transport& tcp);
std::string tcpListenInterface(const Transport& tcp);

}  // namespace tutti::transport
