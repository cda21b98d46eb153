// One tcp Connection: nsocks stream sockets to a peer, message framing, striping of large
// messages across the sockets, and an epoll fd for sleeping.
//
// Wire format (per direction): every message starts with a 32-byte header on socket 0
// {magic, sequence number, size, tag}. A message of n bytes is "striped" when nsocks > 1 and
// n > chunk: chunk i (bytes [i*chunk, min(n, (i+1)*chunk))) travels on socket i % nsocks.
// Otherwise the payload follows the header on socket 0. Both sides derive the same layout
// from n, so each socket's byte stream is a deterministic interleaving of messages.
//
// Not thread-safe: one thread at a time drives a connection (send and receive share the
// queued-header outbox and the epoll set).
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <string>
#include <vector>

#include "interfaces/transport.h"
#include "socket_util.h"
#include "tutti/tutti.h"

namespace tutti::transport::tcp {

// Bytes of a socket's current segment [pos, end) of an n-byte message; pos == n: done.
struct Layout {
  size_t n = 0;
  size_t chunk = 0;
  int nsocks = 1;
  bool striped = false;
  Layout() = default;
  Layout(size_t n, size_t chunk, int nsocks)
      : n(n), chunk(chunk), nsocks(nsocks), striped(nsocks > 1 && n > chunk) {}
  void first(int s, size_t& pos, size_t& end) const;
  void next(size_t& pos, size_t& end) const;  // after pos reached end
};

class TcpConnection : public Connection {
 public:
  // socks[i] is socket i of the pair (both sides agree on the index through the hello).
  TcpConnection(int selfRank, int peer, std::string peerHost, std::vector<Fd> socks,
                size_t chunkBytes);
  ~TcpConnection() override;

  const char* transportName() const override { return "tcp"; }
  int peer() const override { return peer_; }
  using Connection::startSend;
  void startSend(std::span<const std::byte> data, const MsgTag& tag) override;
  size_t progressSend() override;
  void startRecv(RecvTarget target) override;
  size_t progressRecv() override;
  bool peekMessage(MsgTag& tag, size_t& bytes) override;
  void collectWaitFds(std::vector<int>& fds) override;
  bool prepareToSleep() override;
  void afterSleep() override;

  int numSockets() const { return static_cast<int>(socks_.size()); }

 private:
  struct Header {
    uint32_t magic;
    uint32_t seq;
    uint64_t size;
    MsgTag tag;
  };
  static_assert(sizeof(Header) == 32);

  struct Sock {
    Fd fd;
    uint32_t armed = 0;   // current epoll interest
    bool inEpoll = true;  // false once removed after an idle hang-up / error
    size_t sendPos = 0, sendEnd = 0;
    size_t recvPos = 0, recvEnd = 0;
    std::vector<std::byte> stage;  // consume mode: bytes [stageBase, stageBase + stageLen)
    size_t stageBase = 0, stageLen = 0;
  };

  // Send side.
  bool pushSocket(int s);  // false when the socket would block
  void flushOutbox();
  size_t sendCompleted() const;
  // Receive side.
  bool readOwedHeaders();
  bool readHeader(uint64_t expected, bool withPayload);
  // Throws (the stream is then broken) unless h is the next message's header.
  void checkInSync(const Header& h);
  bool pullSocket(int s);  // true if it made progress
  bool deliverStaged();
  size_t recvCompleted() const;
  bool wantsRead(int s) const;
  bool wantsWrite(int s) const;

  // Errors.
  ssize_t checkIo(ssize_t n, int s, const char* op);  // -1: would block
  [[noreturn]] void failRemote(int s, const char* what, const char* op);
  void rethrowBroken() const;  // throws the stored error, if any
  std::string describePeer() const;

  int self_;
  int peer_;
  std::string peerHost_;
  std::string peerAddr_;
  size_t chunk_;
  size_t stageCap_;
  std::vector<Sock> socks_;
  Fd epfd_;
  tuttiResult_t brokenCode_ = tuttiSuccess;
  std::string broken_;

  // Send state.
  std::vector<std::byte> outbox_;  // queued header bytes for socket 0
  size_t outboxSent_ = 0;
  std::span<const std::byte> sendData_;
  Layout sendLayout_;
  bool sendActive_ = false;
  uint32_t sendSeq_ = 0;

  // Receive state.
  RecvTarget target_;
  Layout recvLayout_;
  bool recvActive_ = false;
  bool headerDone_ = false;
  int owedZero_ = 0;  // zero-byte receives reported complete whose header is still unread
  Header hdr_{};
  size_t hdrGot_ = 0;
  size_t delivered_ = 0;  // consume mode: bytes handed to consume()
  uint32_t recvSeq_ = 0;
};

}  // namespace tutti::transport::tcp
