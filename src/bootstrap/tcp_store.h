// TCP store: TcpStoreServer serves one key-value map from a background thread (poll(2) on
// non-blocking sockets); TcpStore is a client and implements Store. Every connection first
// presents the 128-bit secret; a wrong secret gets the connection closed (the server logs a
// WARN and keeps serving the others). Wire format: tcp_store_protocol.h.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "bootstrap/abort_signal.h"
#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "bootstrap/store.h"
#include "common/unique_fd.h"

namespace tutti::bootstrap {

// What a server has served: requests by op (index = proto::Op, 0 unused) and the keys and
// bytes (keys + values) it holds, now and at most.
struct TcpStoreStats {
  uint64_t requests = 0;
  uint64_t byOp[8] = {};
  uint64_t keys = 0, peakKeys = 0;
  uint64_t bytes = 0, peakBytes = 0;
};

class TcpStoreServer {
 public:
  // Binds and listens on bindAddr (port 0: an ephemeral port), then starts serving.
  // A taken port throws tuttiSystemError naming the address.
  TcpStoreServer(const SockAddr& bindAddr, const Secret& secret);
  // bindHostPort: "host:port" (port may be 0).
  TcpStoreServer(const std::string& bindHostPort, const Secret& secret);
  // Serves on a socket bound and listening already (listenSocket), taking ownership of it:
  // connections the kernel queued before are served too. The fd is closed on failure.
  TcpStoreServer(int listeningFd, const Secret& secret);
  // A bound, listening, non-blocking socket (port 0: ephemeral) for the constructor above;
  // throws tuttiSystemError naming the address.
  static int listenSocket(const SockAddr& bindAddr);
  // Stops the thread and closes every socket; clients then see the connection closed.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  const SockAddr& sockAddr() const;  // the bound address, with the actual port
  std::string address() const { return sockAddr().toString(); }
  const Secret& secret() const;
  // Live authenticated connections / connections refused so far (for tests).
  size_t connectionCount() const;
  uint64_t refusedCount() const;
  TcpStoreStats stats() const;

 private:
  friend class TcpStoreServerDriver;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The server's handshake and request handling without sockets or thread (the fuzz target
// tests/fuzz/store_protocol_fuzz.cc drives it): numbered connections receive bytes as if read
// from their sockets, and what the server would send them collects until takeOutput().
// Parked GET/WAIT requests are released by later SET/ADD on any connection, as in the server.
class TcpStoreServerDriver {
 public:
  explicit TcpStoreServerDriver(const Secret& secret);
  ~TcpStoreServerDriver();
  TcpStoreServerDriver(const TcpStoreServerDriver&) = delete;
  TcpStoreServerDriver& operator=(const TcpStoreServerDriver&) = delete;

  size_t connect();  // a new connection's number
  void receive(size_t conn, std::span<const uint8_t> bytes);
  void disconnect(size_t conn);
  bool closed(size_t conn) const;  // closed by the server (bad handshake, protocol error)
  bool parked(size_t conn) const;  // a GET/WAIT waits for its keys
  std::vector<uint8_t> takeOutput(size_t conn);
  size_t keyCount() const;

 private:
  std::unique_ptr<TcpStoreServer::Impl> impl_;
};

class TcpStore : public Store {
 public:
  // Connects to the server, retrying with backoff (10 ms doubling to 1 s) until
  // connectDeadline; then tuttiTimeout naming the address. A refused secret throws
  // tuttiRemoteError. A later reconnect (after a lost connection) that is refused throws
  // tuttiRemoteError at once: the server that served this client has ended.
  TcpStore(const SockAddr& server, const Secret& secret, const Deadline& connectDeadline);
  TcpStore(const std::string& serverHostPort, const Secret& secret,
           const Deadline& connectDeadline);
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, std::span<const std::byte> value) override;
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  // Waits on the server, ended early by `also` (the connection is then dropped, a later call
  // reconnects) without aborting this store.
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline,
                             const AbortSignal& also) override;
  bool check(const std::vector<std::string>& keys) override;
  std::vector<bool> checkEach(const std::vector<std::string>& keys) override;  // one request
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;
  // A new connection to the same server (connected at its first request).
  std::shared_ptr<Store> separateClient() override;
  std::string localHost() override;
  bool onNetwork() const override { return true; }

  // Waits until every key exists (one round trip, the server answers when they do).
  void wait(const std::vector<std::string>& keys, const Deadline& deadline);
  // Seconds set/check/add may take (default: TUTTI_TIMEOUT).
  void setOpTimeout(double seconds) { opTimeout_ = seconds; }
  std::string address() const { return server_.toString(); }

 private:
  // Not connected yet (separateClient): the first request connects.
  TcpStore(const SockAddr& server, const Secret& secret, double opTimeout);
  // A connected, authenticated socket: connectSocket then handshake, again while the server
  // sheds the connection (until the deadline).
  void connect(const Deadline& deadline);
  void connectSocket(const Deadline& deadline);
  // False when the server closed the connection without answering (it was shed).
  bool handshake(const Deadline& deadline);
  void disconnect();
  // A CHECK or EACH request for keys; returns the answerBytes after its status.
  std::vector<uint8_t> askPresence(uint8_t op, const std::vector<std::string>& keys,
                                   size_t answerBytes, const char* what);
  // Whole-buffer send and receive on the connection (waiting in waitFd); they throw on
  // failure (withConnection then drops the connection).
  void sendAll(const std::vector<uint8_t>& data, const Deadline& d, const std::string& what);
  void recvAll(void* p, size_t n, const Deadline& d, const std::string& what);
  void recvStatus(const Deadline& d, const std::string& what);
  uint64_t recvU64(const Deadline& d, const std::string& what);
  // poll() on the socket, the abort eventfd and also_; throws on timeout / abort.
  void waitFd(short events, const Deadline& d, const std::string& what);
  std::vector<std::byte> getWith(const std::string& key, const Deadline& deadline,
                                 const AbortSignal* also);
  // Runs f holding mu_, connected; also (may be null) ends its waits early.
  template <typename F>
  auto withConnection(const Deadline& d, const AbortSignal* also, F&& f) -> decltype(f());

  SockAddr server_;
  Secret secret_;
  double opTimeout_;
  std::mutex mu_;  // one request at a time
  UniqueFd fd_;
  std::mutex localMu_;     // guards localHost_ (mu_ may be held by a waiting get)
  std::string localHost_;  // of the last connection
  UniqueFd abortFd_;
  std::atomic<bool> aborted_{false};
  const AbortSignal* also_ = nullptr;  // of the get in progress (under mu_)
  bool servedBefore_ = false;          // a handshake succeeded once (under mu_)
};

}  // namespace tutti::bootstrap
