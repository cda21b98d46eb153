// One verbs Connection: nqp RC queue pairs to a peer sharing one CQ and completion channel.
//
// Eager path (every message below TUTTI_IB_RNDV_BYTES, and receives into consume()):
// the sender copies chunks of at most slotBytes into its send ring and RDMA-writes each, with
// immediate, into the same slot of the receiver's ring; chunk k uses slot k % nslots and
// QP k % nqp. imm = {type DATA, last-chunk flag, slot, length}. The sender holds one credit
// per free remote slot; the receiver returns credits (imm type CREDIT) as it consumes slots.
// Rendezvous (zero-copy, direct receives of >= TUTTI_IB_RNDV_BYTES): the sender SENDs an RTS
// {size}; the receiver registers its buffer and SENDs an RTR {addr, rkey} (or addr 0: "use
// the eager path", for consume() receives); the sender RDMA-writes the message from its own
// registered buffer, striped over the QPs, and after all writes completed sends FIN (imm).
// Peer death: failed completions (retry exceeded) name the peer; an idle connection with an
// active operation probes the peer with a zero-byte RDMA write after 0.5 s without any
// completion, and fails naming the peer when the probe and everything else stays unanswered
// for max(5 s, 4 x the QP's retry time).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ib_device.h"
#include "ib_regcache.h"
#include "interfaces/transport.h"
#include "tutti/tutti.h"

namespace tutti::transport::ib {

constexpr int kMaxQps = 16;

struct IbOptions {
  int nqp = 2;
  uint32_t slotBytes = 128 * 1024;
  uint32_t nslots = 16;
  uint64_t rndvBytes = 256 * 1024;  // 0: never zero-copy
  int timeout = 14;                 // local ACK timeout: 4.096 us * 2^timeout
  int retryCnt = 7;
};

// What each side publishes in the store for one connection.
struct WireParams {
  uint64_t magic;
  int32_t rank;
  int32_t nqp;
  uint32_t slotBytes;
  uint32_t nslots;
  uint64_t rndvBytes;
  uint64_t ringAddr;
  uint32_t ringRkey;
  uint32_t mtu;  // ibv_mtu
  uint32_t lid;
  uint32_t ethernet;
  uint8_t gid[16];
  uint32_t psn;
  uint32_t qpn[kMaxQps];
};

class IbConnection : public Connection {
 public:
  IbConnection(std::shared_ptr<IbDevice> dev, std::shared_ptr<RegCache> reg, int self, int peer,
               std::string peerHost, const IbOptions& opts);
  ~IbConnection() override;

  WireParams localParams() const;
  // Brings the QPs to RTS against the peer's parameters (throws on mismatch).
  void connectTo(const WireParams& remote);

  const char* transportName() const override { return "ibverbs"; }
  int peer() const override { return peer_; }
  using Connection::startSend;
  void startSend(std::span<const std::byte> data, const MsgTag& tag) override;  // tag not carried
  size_t progressSend() override;
  void startRecv(RecvTarget target) override;
  size_t progressRecv() override;
  void collectWaitFds(std::vector<int>& fds) override;
  bool prepareToSleep() override;
  void afterSleep() override;

  // For tests: rendezvous messages sent / received so far.
  long zeroCopySends() const { return zcSends_; }
  long zeroCopyRecvs() const { return zcRecvs_; }

 private:
  struct Ctrl {     // payload of a SEND
    uint32_t type;  // kRts / kRtr
    uint32_t rkey;
    uint64_t size;
    uint64_t addr;  // RTR: 0 = use the eager path
    uint64_t pad;   // RTS: eager chunks the sender posted before it
  };
  static_assert(sizeof(Ctrl) == 32);

  enum class SendState { kIdle, kEager, kNeedRts, kWaitRtr, kWriting, kDone };
  enum class RecvState { kIdle, kWaitFirst, kEager, kWaitFin, kDone };

  void pollCq();
  void handleRecvCompletion(const ibv_wc& wc);
  void handleSendCompletion(const ibv_wc& wc);
  [[noreturn]] void failCompletion(const ibv_wc& wc, const char* what);
  [[noreturn]] void failMismatch(uint64_t got, uint64_t expected);
  void rethrowBroken() const;
  std::string who() const;

  void postRecv(int qp, uint32_t slot);
  bool postWrite(int qp, uint64_t wrId, const void* local, uint32_t len, uint32_t lkey,
                 uint64_t remote, uint32_t rkey, bool withImm, uint32_t imm);
  bool postCtrl(const Ctrl& c);
  void advanceSend();
  void advanceRecv();
  void returnCredits(bool force);
  void maybeKeepalive();
  bool canProgress() const;
  void release();

  std::shared_ptr<IbDevice> dev_;
  std::shared_ptr<RegCache> reg_;
  const IbvApi& api_;
  int self_, peer_;
  std::string peerHost_;
  IbOptions opts_;
  int sqDepth_ = 0, rqDepth_ = 0;

  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  unsigned unackedEvents_ = 0;
  bool armed_ = false;
  std::vector<ibv_qp*> qps_;
  std::vector<int> sqUsed_;
  uint32_t psn_ = 0;

  // Registered memory: send ring, receive ring, control buffers (recv: rqDepth per QP;
  // send: a small ring).
  struct Region {
    std::byte* p = nullptr;
    size_t n = 0;
    ibv_mr* mr = nullptr;
  };
  Region sendRing_, recvRing_, ctrlRecv_, ctrlSend_;
  uint32_t ctrlSendNext_ = 0;
  static constexpr uint32_t kCtrlSendSlots = 64;
  Region alloc(size_t bytes, int access, const char* what);
  void freeRegion(Region& r);

  uint64_t remoteRing_ = 0;
  uint32_t remoteRkey_ = 0;
  std::string qpDesc_;

  // Send side.
  std::span<const std::byte> sendData_;
  SendState sendState_ = SendState::kIdle;
  size_t sendPos_ = 0;  // eager: bytes copied and posted
  uint32_t credits_ = 0;
  uint64_t chunkSeq_ = 0;  // next eager chunk number (slot = seq % nslots)
  bool rtr_ = false;
  Ctrl rtrMsg_{};
  RegCache::Handle sendMr_;
  size_t wrPosted_ = 0, wrDoneBytes_ = 0;
  uint64_t wrChunk_ = 1 << 20;
  bool finPending_ = false;
  long zcSends_ = 0, zcRecvs_ = 0;
  int owedZeroSends_ = 0;  // empty messages reported sent, not posted yet
  int owedZeroRecvs_ = 0;  // empty messages reported received, not consumed yet

  // Receive side.
  RecvTarget target_;
  RecvState recvState_ = RecvState::kIdle;
  size_t delivered_ = 0;
  struct SlotState {
    bool full = false;
    bool last = false;
    uint32_t len = 0;
  };
  std::vector<SlotState> slots_;
  uint64_t consumeSeq_ = 0;  // next chunk to consume
  uint32_t unreturned_ = 0;
  bool rts_ = false;
  uint64_t rtsSize_ = 0;
  uint64_t rtsSeq_ = 0;
  bool fin_ = false;
  RegCache::Handle recvMr_;
  bool rtrOwed_ = false;
  Ctrl rtrOut_{};

  // Liveness.
  double lastEvent_ = 0;
  bool probeOutstanding_ = false;
  double probeSentAt_ = 0;
  double lastCompletion_ = 0;

  tuttiResult_t brokenCode_ = tuttiSuccess;
  std::string broken_;
};

}  // namespace tutti::transport::ib
