// A Connection over two cuda_ipc FIFOs (one per direction; see fifo.h). Where the slots live
// and how bytes are copied is supplied by the caller, so the same code runs on device slots
// with CUDA copies (cuda_ipc proper), on host slots with CUDA copies (the host-staging
// fallback) and on host slots with memcpy (unit tests).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "interfaces/transport.h"
#include "transports/cuda_ipc/fifo.h"
#include "transports/cuda_ipc/shared_segment.h"

namespace tutti::transport::cudaipc {

// Asynchronous copies, one batch at a time: start() enqueues, idle() says whether every
// started copy has completed (never blocks).
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  virtual void start(void* dst, const void* src, size_t bytes) = 0;
  virtual bool idle() = 0;
};

// memcpy: host memory only, complete at once.
class HostCopyEngine final : public CopyEngine {
 public:
  void start(void* dst, const void* src, size_t bytes) override;
  bool idle() override { return true; }
};

// One direction as seen from one side.
struct FifoEnd {
  FifoControl* ctl = nullptr;
  std::byte* slots = nullptr;     // slot area (device pointer, or host memory)
  bool slotsHostVisible = false;  // the receiver may hand slot memory to consume() directly
  FifoGeometry geometry;
};

struct FifoConnectionParts {
  int peer = -1;
  std::string peerName;  // "rank 3 (host h, pid 123)" for messages
  pid_t peerPid = 0;
  std::string mode;  // "device" / "host staging" (for transportName-like messages)
  FifoEnd send;      // this rank -> peer (the peer's receive FIFO, mapped here)
  FifoEnd recv;      // peer -> this rank
  std::unique_ptr<CopyEngine> sendCopy;
  std::unique_ptr<CopyEngine> recvCopy;
  std::byte* bounce = nullptr;  // host memory of recv.geometry.slotBytes for consume() when
                                // the slots are not host visible
  std::vector<std::shared_ptr<void>> keepAlive;  // segments, mappings, buffers it uses
};

class FifoConnection final : public Connection {
 public:
  explicit FifoConnection(FifoConnectionParts parts);
  ~FifoConnection() override;

  const char* transportName() const override { return "cuda_ipc"; }
  bool sharesMemory() const override { return true; }
  int peer() const override { return p_.peer; }
  using Connection::startSend;
  void startSend(std::span<const std::byte> data, const MsgTag& tag) override;  // tag not carried
  size_t progressSend() override;
  void startRecv(RecvTarget target) override;
  size_t progressRecv() override;
  void collectWaitFds(std::vector<int>& fds) override;
  bool prepareToSleep() override { return false; }  // flags in memory: spin while active
  void afterSleep() override {}

 private:
  void checkPeer(const char* during);

  FifoConnectionParts p_;
  PeerWatch watch_;
  double lastPeerCheck_ = 0;

  // send side
  bool sendActive_ = false;
  std::span<const std::byte> sdata_;
  uint64_t sendSeq_ = 0;  // next chunk this side publishes (== tail)
  uint64_t schunk_ = 0;   // chunk index within the message
  uint64_t schunks_ = 0;
  size_t sdone_ = 0;  // bytes published
  bool scopying_ = false;
  uint64_t scopyBytes_ = 0;

  // receive side
  bool recvActive_ = false;
  RecvTarget rtarget_;
  uint64_t recvSeq_ = 0;  // next chunk to read (== head)
  size_t rdone_ = 0;      // bytes delivered
  bool rfinished_ = false;
  bool rcopying_ = false;
  uint64_t rcopyBytes_ = 0;
  bool rcopyLast_ = false;
};

}  // namespace tutti::transport::cudaipc
