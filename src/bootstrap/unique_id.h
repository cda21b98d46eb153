// The public tuttiUniqueId (128 bytes), as tutti encodes it:
//   off size  field
//     0    4  magic "TUID"
//     4    2  version (1), little-endian
//     6    1  address family: 4 or 6
//     7    1  reserved (0)
//     8    2  port, network byte order
//    10    2  reserved (0)
//    12   16  IPv4 (first 4 bytes) or IPv6 address
//    28   16  secret (random, getrandom(2))
//    44    4  IPv6 scope id, little-endian (0 for IPv4)
//    48   80  zero
// makeUniqueId() starts a TcpStoreServer in the calling process at once (on the advertised
// interface, an ephemeral port) and keeps it in a process-wide registry keyed by the secret.
// The rank that inits with rank 0 in the same process takes it over (takeServer); in any
// other case the server stays in the creating process, which must live until every rank has
// joined (as with NCCL's root thread). Every rank, rank 0 included, is a TcpStore client.
#pragma once

#include <memory>

#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "tutti/tutti.h"

namespace tutti::bootstrap {

class TcpStoreServer;

struct UniqueIdInfo {
  SockAddr addr;  // where the TcpStoreServer listens
  Secret secret;
};

tuttiUniqueId encodeUniqueId(const UniqueIdInfo& info);
// Throws tuttiInvalidArgument when the bytes are not a tutti unique id (magic/version/family).
UniqueIdInfo decodeUniqueId(const tuttiUniqueId& id);

// The address tuttiGetUniqueId advertises: TUTTI_BOOTSTRAP_IFNAME's (IPv4 first, else IPv6;
// an unknown name throws tuttiInvalidArgument listing the interfaces), else the first
// non-loopback interface that is up with an IPv4 address, else 127.0.0.1. Port 0.
SockAddr advertisedAddress();

// New secret + a TcpStoreServer listening on advertisedAddress():0, registered here.
tuttiUniqueId makeUniqueId();

// The registered server of this id when it lives in this process (removing it from the
// registry: the caller owns it now), else nullptr.
std::shared_ptr<TcpStoreServer> takeServer(const UniqueIdInfo& info);

}  // namespace tutti::bootstrap
