#include "bootstrap/standby.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/tcp_store.h"
#include "common/clock.h"
#include "common/error.h"

namespace tutti::bootstrap {

std::string StandbyAddress::encode() const {
  if (!valid()) return "";
  return addr.toString() + "|" + secretToHex(secret);
}

StandbyAddress StandbyAddress::parse(const std::string& text) {
  StandbyAddress a;
  if (text.empty()) return a;
  size_t bar = text.rfind('|');
  TUTTI_CHECK_ARG(bar != std::string::npos, "standby address '", text, "' is not <addr>|<secret>");
  a.addr = SockAddr::parse(text.substr(0, bar), "standby address");
  a.secret = secretFromHex(text.substr(bar + 1), "standby secret");
  return a;
}

StandbyStore::StandbyStore(const std::string& bindHost) {
  SockAddr bind = SockAddr::resolve(bindHost, 0, "standby store address");
  listenFd_.reset(TcpStoreServer::listenSocket(bind));
  address_.addr = SockAddr::local(listenFd_.get());
  address_.secret = randomSecret();
}

StandbyStore::~StandbyStore() = default;

std::shared_ptr<TcpStoreServer> StandbyStore::serve() {
  std::lock_guard lock(mu_);
  if (!server_) {
    const int fd = listenFd_.release();  // the server owns it now (and closes it on failure)
    server_ = std::make_shared<TcpStoreServer>(fd, address_.secret);
  }
  return server_;
}

Liveness probe(const SockAddr& addr, double timeoutSec) {
  const UniqueFd owned(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int fd = owned.get();
  if (fd < 0) throwSystemError("liveness probe: socket");
  if (::connect(fd, addr.sa(), addr.len) == 0) return Liveness::kAlive;
  if (errno != EINPROGRESS && errno != EINTR) return Liveness::kRefused;
  Deadline deadline(timeoutSec);
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    int left = deadline.msLeft();
    if (left <= 0) return Liveness::kNoAnswer;
    int n = ::poll(&p, 1, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwSystemError("liveness probe: poll");
    if (n == 0) return Liveness::kNoAnswer;
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0 ? Liveness::kAlive : Liveness::kRefused;
  }
}

const char* livenessName(Liveness l) {
  switch (l) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kRefused:
      return "connection refused";
    case Liveness::kNoAnswer:
      return "no answer";
  }
  return "?";
}

}  // namespace tutti::bootstrap
