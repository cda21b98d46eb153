#include "ib_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "common/clock.h"
#include "common/copy_bytes.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::transport::ib {

namespace {

constexpr uint64_t kWireMagic = 0x7475747469696276ULL;  // "tuttiibv"
constexpr double kProbeSec = 0.5;

// imm layout: type:2 | last:1 | slot:9 | len:20
enum ImmType : uint32_t { kImmData = 0, kImmCredit = 1, kImmFin = 2 };
uint32_t makeImm(uint32_t type, bool last, uint32_t slot, uint32_t len) {
  return (type << 30) | (uint32_t(last) << 29) | ((slot & 0x1ff) << 20) | (len & 0xfffff);
}
enum CtrlType : uint32_t { kRts = 1, kRtr = 2 };

// wr_id: kind in the top byte.
enum Kind : uint64_t {
  kWrData = 1,
  kWrCtrl = 2,
  kWrRndv = 3,
  kWrImm = 4,
  kWrProbe = 5,
  kWrRecv = 8
};
uint64_t wrId(Kind k, uint64_t low) { return (uint64_t(k) << 56) | low; }
Kind wrKind(uint64_t id) { return static_cast<Kind>(id >> 56); }
uint64_t wrLow(uint64_t id) { return id & ((uint64_t{1} << 56) - 1); }

const char* likelyCause(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
      return "the peer did not acknowledge: its process died or closed the connection, or the "
             "path is broken (GID/routing/VLAN); see TUTTI_IB_TIMEOUT and TUTTI_IB_RETRY_CNT";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "the peer posted no receive buffer in time (it is stuck or gone)";
    case IBV_WC_REM_ACCESS_ERR:
      return "the peer rejected the RDMA access (memory key or range invalid: it freed its "
             "buffer or restarted)";
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
      return "the peer's QP failed the request (it hit an error of its own)";
    case IBV_WC_WR_FLUSH_ERR:
      return "the queue pair was already in error after an earlier failure";
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
      return "local memory registration does not cover the buffer";
    case IBV_WC_LOC_LEN_ERR:
      return "message longer than the posted receive buffer";
    default:
      return "see ibv_wc_status_str";
  }
}

}  // namespace

IbConnection::Region IbConnection::alloc(size_t bytes, int access, const char* what) {
  Region r;
  r.n = bytes;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  r.p = static_cast<std::byte*>(std::aligned_alloc(page, (bytes + page - 1) / page * page));
  if (!r.p) fail(tuttiSystemError, "ibverbs: out of memory for ", bytes, "-byte ", what);
  std::memset(r.p, 0, bytes);
  r.mr = api_.regMr(dev_->pd, r.p, bytes, access);
  if (!r.mr) {
    int err = errno;
    std::free(r.p);
    throwSystemError("ibverbs: ibv_reg_mr of the " + std::to_string(bytes) + "-byte " + what +
                         " for " + who() + " (locked-memory limit? ulimit -l)",
                     err);
  }
  return r;
}

void IbConnection::freeRegion(Region& r) {
  if (r.mr) api_.deregMr(r.mr);
  std::free(r.p);
  r = Region{};
}

std::string IbConnection::who() const {
  return "rank " + std::to_string(peer_) + " (host " + peerHost_ + ")";
}

IbConnection::IbConnection(std::shared_ptr<IbDevice> dev, std::shared_ptr<RegCache> reg, int self,
                           int peer, std::string peerHost, const IbOptions& opts)
    : dev_(std::move(dev)),
      reg_(std::move(reg)),
      api_(*dev_->api),
      self_(self),
      peer_(peer),
      peerHost_(std::move(peerHost)),
      opts_(opts) {
  int maxWr = dev_->devAttr.max_qp_wr > 0 ? dev_->devAttr.max_qp_wr : 1024;
  sqDepth_ = std::min<int>(maxWr, static_cast<int>(opts_.nslots) + 64);
  rqDepth_ = std::min<int>(maxWr, 2 * static_cast<int>(opts_.nslots) + 32);
  try {
    channel_ = api_.createCompChannel(dev_->ctx);
    if (!channel_) throwSystemError("ibverbs: ibv_create_comp_channel for " + who());
    int fl = fcntl(channel_->fd, F_GETFL);
    fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK);
    int cqe = opts_.nqp * (sqDepth_ + rqDepth_);
    if (dev_->devAttr.max_cqe > 0) cqe = std::min(cqe, dev_->devAttr.max_cqe);
    cq_ = api_.createCq(dev_->ctx, cqe, nullptr, channel_, 0);
    if (!cq_) throwSystemError("ibverbs: ibv_create_cq(" + std::to_string(cqe) + ") for " + who());

    int local = IBV_ACCESS_LOCAL_WRITE;
    sendRing_ = alloc(size_t{opts_.slotBytes} * opts_.nslots, local, "send ring");
    recvRing_ = alloc(size_t{opts_.slotBytes} * opts_.nslots, local | IBV_ACCESS_REMOTE_WRITE,
                      "receive ring");
    ctrlRecv_ = alloc(sizeof(Ctrl) * rqDepth_ * opts_.nqp, local, "control receive buffers");
    ctrlSend_ = alloc(sizeof(Ctrl) * kCtrlSendSlots, local, "control send buffers");
    slots_.resize(opts_.nslots);

    std::random_device rd;
    psn_ = rd() & 0xffffff;
    for (int q = 0; q < opts_.nqp; ++q) {
      ibv_qp_init_attr ia{};
      ia.send_cq = cq_;
      ia.recv_cq = cq_;
      ia.cap.max_send_wr = sqDepth_;
      ia.cap.max_recv_wr = rqDepth_;
      ia.cap.max_send_sge = 1;
      ia.cap.max_recv_sge = 1;
      ia.qp_type = IBV_QPT_RC;
      ibv_qp* qp = api_.createQp(dev_->pd, &ia);
      if (!qp)
        throwSystemError("ibverbs: ibv_create_qp (RC, " + std::to_string(sqDepth_) + "/" +
                         std::to_string(rqDepth_) + " WRs) for " + who());
      qps_.push_back(qp);
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = 0;
      a.port_num = static_cast<uint8_t>(dev_->port);
      a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
      int rc = api_.modifyQp(qp, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      if (rc) throwSystemError("ibverbs: modify QP to INIT for " + who(), rc);
      for (int s = 0; s < rqDepth_; ++s) postRecv(q, static_cast<uint32_t>(s));
    }
    sqUsed_.assign(opts_.nqp, 0);
  } catch (...) {
    release();
    throw;
  }
}

IbConnection::~IbConnection() { release(); }

void IbConnection::release() {
  reg_->release(sendMr_);
  reg_->release(recvMr_);
  for (ibv_qp* qp : qps_) api_.destroyQp(qp);
  qps_.clear();
  if (cq_) {
    if (unackedEvents_) api_.ackCqEvents(cq_, unackedEvents_);
    unackedEvents_ = 0;
    api_.destroyCq(cq_);
    cq_ = nullptr;
  }
  if (channel_) api_.destroyCompChannel(channel_);
  channel_ = nullptr;
  freeRegion(sendRing_);
  freeRegion(recvRing_);
  freeRegion(ctrlRecv_);
  freeRegion(ctrlSend_);
}

WireParams IbConnection::localParams() const {
  WireParams w{};
  w.magic = kWireMagic;
  w.rank = self_;
  w.nqp = opts_.nqp;
  w.slotBytes = opts_.slotBytes;
  w.nslots = opts_.nslots;
  w.rndvBytes = opts_.rndvBytes;
  w.ringAddr = reinterpret_cast<uint64_t>(recvRing_.p);
  w.ringRkey = recvRing_.mr->rkey;
  w.mtu = dev_->portAttr.active_mtu;
  w.lid = dev_->portAttr.lid;
  w.ethernet = dev_->ethernet;
  std::memcpy(w.gid, dev_->gid.raw, 16);
  w.psn = psn_;
  for (int q = 0; q < opts_.nqp; ++q) w.qpn[q] = qps_[q]->qp_num;
  return w;
}

void IbConnection::connectTo(const WireParams& r) {
  if (r.magic != kWireMagic || r.rank != peer_)
    fail(tuttiInternalError, "ibverbs: rank ", self_, " read garbage connection data for ", who());
  if (r.nqp != opts_.nqp || r.slotBytes != opts_.slotBytes || r.nslots != opts_.nslots ||
      r.rndvBytes != opts_.rndvBytes)
    fail(tuttiInvalidUsage, "ibverbs: ", who(), " uses TUTTI_IB_QPS_PER_PEER=", r.nqp,
         ", TUTTI_IB_CHUNK_BYTES=", r.slotBytes, ", TUTTI_IB_SLOTS=", r.nslots,
         ", TUTTI_IB_RNDV_BYTES=", r.rndvBytes, " but rank ", self_, " uses ", opts_.nqp, ", ",
         opts_.slotBytes, ", ", opts_.nslots, ", ", opts_.rndvBytes,
         "; set them to the same values on every rank");
  if (r.ethernet != static_cast<uint32_t>(dev_->ethernet))
    fail(tuttiInvalidUsage, "ibverbs: rank ", self_, " is on ",
         dev_->ethernet ? "RoCE" : "InfiniBand", " but ", who(),
         " is not; pick ports of one "
         "fabric with TUTTI_IB_HCA");
  remoteRing_ = r.ringAddr;
  remoteRkey_ = r.ringRkey;
  ibv_mtu mtu = static_cast<ibv_mtu>(std::min<uint32_t>(r.mtu, dev_->portAttr.active_mtu));
  ibv_gid rgid;
  std::memcpy(rgid.raw, r.gid, 16);
  std::ostringstream desc;
  desc << dev_->name << ":" << dev_->port << " QPs";
  for (int q = 0; q < opts_.nqp; ++q) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = r.qpn[q];
    a.rq_psn = r.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = static_cast<uint8_t>(dev_->port);
    a.ah_attr.dlid = static_cast<uint16_t>(r.lid);
    if (dev_->ethernet) {
      a.ah_attr.is_global = 1;
      a.ah_attr.grh.dgid = rgid;
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev_->gidIndex);
      a.ah_attr.grh.hop_limit = 64;
    }
    int rc = api_.modifyQp(qps_[q], &a,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc)
      throwSystemError("ibverbs: rank " + std::to_string(self_) + " modify QP to RTR towards " +
                           who() + " (GID " + gidToString(rgid) + ", local GID index " +
                           std::to_string(dev_->gidIndex) +
                           "; a wrong TUTTI_IB_GID_INDEX or unreachable GID?)",
                       rc);
    ibv_qp_attr b{};
    b.qp_state = IBV_QPS_RTS;
    b.timeout = static_cast<uint8_t>(opts_.timeout);
    b.retry_cnt = static_cast<uint8_t>(opts_.retryCnt);
    b.rnr_retry = 7;  // infinite: flow control, not an error
    b.sq_psn = psn_;
    b.max_rd_atomic = 1;
    rc = api_.modifyQp(qps_[q], &b,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc) throwSystemError("ibverbs: modify QP to RTS towards " + who(), rc);
    desc << " " << qps_[q]->qp_num << "->" << r.qpn[q];
  }
  qpDesc_ = desc.str();
  credits_ = opts_.nslots;
  lastEvent_ = lastCompletion_ = nowSeconds();
}

// ---------------------------------------------------------------- posting

void IbConnection::postRecv(int qp, uint32_t slot) {
  ibv_sge sge{};
  sge.addr =
      reinterpret_cast<uint64_t>(ctrlRecv_.p) + (uint64_t(qp) * rqDepth_ + slot) * sizeof(Ctrl);
  sge.length = sizeof(Ctrl);
  sge.lkey = ctrlRecv_.mr->lkey;
  ibv_recv_wr wr{};
  wr.wr_id = wrId(kWrRecv, (uint64_t(qp) << 32) | slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(qps_[qp], &wr, &bad);
  if (rc) throwSystemError("ibverbs: ibv_post_recv towards " + who(), rc);
}

bool IbConnection::postWrite(int qp, uint64_t id, const void* local, uint32_t len, uint32_t lkey,
                             uint64_t remote, uint32_t rkey, bool withImm, uint32_t imm) {
  if (sqUsed_[qp] >= sqDepth_) return false;
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(local);
  sge.length = len;
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.sg_list = len ? &sge : nullptr;
  wr.num_sge = len ? 1 : 0;
  wr.opcode = withImm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qps_[qp], &wr, &bad);
  if (rc) throwSystemError("ibverbs: ibv_post_send (RDMA write) to " + who(), rc);
  ++sqUsed_[qp];
  return true;
}

bool IbConnection::postCtrl(const Ctrl& c) {
  if (sqUsed_[0] >= sqDepth_) return false;
  uint32_t i = ctrlSendNext_++ % kCtrlSendSlots;
  auto* buf = ctrlSend_.p + i * sizeof(Ctrl);
  std::memcpy(buf, &c, sizeof c);
  ibv_sge sge{reinterpret_cast<uint64_t>(buf), sizeof(Ctrl), ctrlSend_.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId(kWrCtrl, i);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qps_[0], &wr, &bad);
  if (rc) throwSystemError("ibverbs: ibv_post_send (control) to " + who(), rc);
  ++sqUsed_[0];
  return true;
}

// ---------------------------------------------------------------- completions

void IbConnection::rethrowBroken() const {
  if (brokenCode_ != tuttiSuccess) throw Error(brokenCode_, broken_);
}

void IbConnection::failCompletion(const ibv_wc& wc, const char* what) {
  std::ostringstream os;
  os << "ibverbs: rank " << self_ << ": " << what << " with " << who()
     << " failed: " << api_.wcStatusStr(wc.status) << " (status " << int(wc.status)
     << ", vendor error 0x" << std::hex << wc.vendor_err << std::dec
     << "): " << likelyCause(wc.status) << " [" << qpDesc_ << ", QP " << wc.qp_num << "]";
  brokenCode_ = (wc.status == IBV_WC_LOC_PROT_ERR || wc.status == IBV_WC_LOC_ACCESS_ERR ||
                 wc.status == IBV_WC_LOC_LEN_ERR)
                    ? tuttiSystemError
                    : tuttiRemoteError;
  broken_ = os.str();
  throw Error(brokenCode_, broken_);
}

void IbConnection::failMismatch(uint64_t got, uint64_t expected) {
  brokenCode_ = tuttiInvalidUsage;
  broken_ = "ibverbs: rank " + std::to_string(self_) + " received a message of " +
            (got == UINT64_MAX ? "more than " + std::to_string(expected) : std::to_string(got)) +
            " bytes from " + who() + " but posted a receive of " + std::to_string(expected) +
            " bytes (the ranks disagree on the message size)";
  throw Error(brokenCode_, broken_);
}

void IbConnection::pollCq() {
  rethrowBroken();
  ibv_wc wcs[32];
  for (;;) {
    int n = ibv_poll_cq(cq_, 32, wcs);
    if (n < 0) fail(tuttiSystemError, "ibverbs: ibv_poll_cq failed for ", who());
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[i];
      lastEvent_ = lastCompletion_ = nowSeconds();
      if (wrKind(wc.wr_id) == kWrRecv)
        handleRecvCompletion(wc);
      else
        handleSendCompletion(wc);
    }
    if (n < 32) break;
  }
}

void IbConnection::handleRecvCompletion(const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) failCompletion(wc, "receiving");
  uint64_t low = wrLow(wc.wr_id);
  int qp = static_cast<int>(low >> 32);
  uint32_t slot = static_cast<uint32_t>(low & 0xffffffff);
  if (wc.opcode == IBV_WC_RECV) {
    Ctrl c;
    std::memcpy(&c, ctrlRecv_.p + (uint64_t(qp) * rqDepth_ + slot) * sizeof(Ctrl), sizeof c);
    if (c.type == kRts) {
      rts_ = true;
      rtsSize_ = c.size;
      rtsSeq_ = c.pad;
    } else if (c.type == kRtr) {
      rtr_ = true;
      rtrMsg_ = c;
    } else {
      fail(tuttiInternalError, "ibverbs: bad control message type ", c.type, " from ", who());
    }
  } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    uint32_t imm = ntohl(wc.imm_data);
    uint32_t type = imm >> 30;
    if (type == kImmData) {
      uint32_t s = (imm >> 20) & 0x1ff;
      slots_[s] = {true, ((imm >> 29) & 1) != 0, imm & 0xfffff};
    } else if (type == kImmCredit) {
      credits_ += imm & 0xfffff;
    } else if (type == kImmFin) {
      fin_ = true;
    }
  }
  postRecv(qp, slot);
}

void IbConnection::handleSendCompletion(const ibv_wc& wc) {
  int qp = 0;
  for (int q = 0; q < opts_.nqp; ++q)
    if (qps_[q]->qp_num == wc.qp_num) qp = q;
  --sqUsed_[qp];
  Kind k = wrKind(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    const char* what = k == kWrProbe  ? "probing the connection"
                       : k == kWrRndv ? "zero-copy RDMA write"
                       : k == kWrCtrl ? "control message"
                                      : "RDMA write";
    failCompletion(wc, what);
  }
  if (k == kWrRndv) wrDoneBytes_ += wrLow(wc.wr_id);
  if (k == kWrProbe) probeOutstanding_ = false;
}

// ---------------------------------------------------------------- send

void IbConnection::startSend(std::span<const std::byte> data, const MsgTag& /*tag*/) {
  rethrowBroken();
  TUTTI_ASSERT(sendState_ == SendState::kIdle || sendState_ == SendState::kDone);
  if (data.empty()) {
    // Reported complete at once (progressSend() == 0 == size); its zero-length chunk is
    // owed and goes out, in order, as soon as a credit allows.
    ++owedZeroSends_;
    sendData_ = data;
    sendState_ = SendState::kDone;
    advanceSend();
    return;
  }
  sendData_ = data;
  sendPos_ = 0;
  wrPosted_ = wrDoneBytes_ = 0;
  finPending_ = false;
  rtr_ = false;
  if (opts_.rndvBytes > 0 && data.size() >= opts_.rndvBytes) {
    sendState_ = SendState::kNeedRts;
  } else {
    sendState_ = SendState::kEager;
  }
  lastEvent_ = nowSeconds();
  advanceSend();
}

void IbConnection::advanceSend() {
  while (owedZeroSends_ > 0 && credits_ > 0) {
    int qp = static_cast<int>(chunkSeq_ % opts_.nqp);
    uint32_t slot = static_cast<uint32_t>(chunkSeq_ % opts_.nslots);
    if (!postWrite(qp, wrId(kWrData, slot), nullptr, 0, 0,
                   remoteRing_ + uint64_t{slot} * opts_.slotBytes, remoteRkey_, true,
                   makeImm(kImmData, true, slot, 0)))
      return;
    --credits_;
    ++chunkSeq_;
    --owedZeroSends_;
  }
  if (owedZeroSends_ > 0) return;  // earlier (empty) messages first
  if (sendState_ == SendState::kNeedRts) {
    Ctrl c{kRts, 0, sendData_.size(), 0, chunkSeq_};  // pad: chunks sent before it
    if (!postCtrl(c)) return;
    sendState_ = SendState::kWaitRtr;
  }
  if (sendState_ == SendState::kWaitRtr && rtr_) {
    rtr_ = false;
    if (rtrMsg_.size != sendData_.size()) failMismatch(sendData_.size(), rtrMsg_.size);
    if (rtrMsg_.addr == 0) {
      sendState_ = SendState::kEager;
    } else {
      sendState_ = SendState::kWriting;
      sendMr_ = reg_->acquire(sendData_.data(), sendData_.size());
      ++zcSends_;
    }
  }
  if (sendState_ == SendState::kEager) {
    size_t n = sendData_.size();
    while (credits_ > 0) {
      bool first = sendPos_ == 0 && n == 0;
      if (sendPos_ >= n && !first) break;
      uint32_t len = static_cast<uint32_t>(std::min<size_t>(opts_.slotBytes, n - sendPos_));
      uint32_t slot = static_cast<uint32_t>(chunkSeq_ % opts_.nslots);
      int qp = static_cast<int>(chunkSeq_ % opts_.nqp);
      if (sqUsed_[qp] >= sqDepth_) break;
      std::byte* local = sendRing_.p + size_t{slot} * opts_.slotBytes;
      copyBytes(local, sendData_.data() + sendPos_, len);
      bool last = sendPos_ + len == n;
      postWrite(qp, wrId(kWrData, slot), local, len, sendRing_.mr->lkey,
                remoteRing_ + uint64_t{slot} * opts_.slotBytes, remoteRkey_, true,
                makeImm(kImmData, last, slot, len));
      --credits_;
      ++chunkSeq_;
      sendPos_ += len;
      if (last) {
        sendState_ = SendState::kDone;
        break;
      }
    }
  }
  if (sendState_ == SendState::kWriting) {
    size_t n = sendData_.size();
    while (wrPosted_ < n) {
      uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(wrChunk_, n - wrPosted_));
      int qp = static_cast<int>((wrPosted_ / wrChunk_) % opts_.nqp);
      // Leave room on each send queue for credits, control and FIN.
      if (sqUsed_[qp] >= sqDepth_ - 8) break;
      postWrite(qp, wrId(kWrRndv, len), sendData_.data() + wrPosted_, len, sendMr_.mr->lkey,
                rtrMsg_.addr + wrPosted_, rtrMsg_.rkey, false, 0);
      wrPosted_ += len;
    }
    if (wrDoneBytes_ == n) {
      if (postWrite(0, wrId(kWrImm, 0), nullptr, 0, 0, remoteRing_, remoteRkey_, true,
                    makeImm(kImmFin, true, 0, 0))) {
        reg_->release(sendMr_);
        sendState_ = SendState::kDone;
      }
    }
  }
}

size_t IbConnection::progressSend() {
  pollCq();
  advanceSend();
  returnCredits(false);
  maybeKeepalive();
  switch (sendState_) {
    case SendState::kDone:
      return sendData_.size();
    case SendState::kEager:
      return sendPos_;
    case SendState::kWriting:
      return std::min(wrDoneBytes_, sendData_.size() ? sendData_.size() - 1 : 0);
    default:
      return 0;
  }
}

// ---------------------------------------------------------------- receive

void IbConnection::startRecv(RecvTarget target) {
  rethrowBroken();
  TUTTI_ASSERT(recvState_ == RecvState::kIdle || recvState_ == RecvState::kDone);
  if (target.bytes == 0) {
    // Complete at once (progressRecv() == 0 == size); the empty message is consumed later,
    // in order, before the next receive.
    ++owedZeroRecvs_;
    recvState_ = RecvState::kDone;
    delivered_ = 0;
    advanceRecv();
    return;
  }
  target_ = std::move(target);
  delivered_ = 0;
  recvState_ = RecvState::kWaitFirst;
  lastEvent_ = nowSeconds();
  advanceRecv();
}

void IbConnection::advanceRecv() {
  while (owedZeroRecvs_ > 0) {
    SlotState& st = slots_[consumeSeq_ % opts_.nslots];
    if (!st.full) {
      if (rts_ && rtsSeq_ == consumeSeq_) failMismatch(rtsSize_, 0);
      return;
    }
    if (st.len != 0 || !st.last) failMismatch(st.last ? st.len : UINT64_MAX, 0);
    st = SlotState{};
    ++consumeSeq_;
    ++unreturned_;
    --owedZeroRecvs_;
  }
  if (recvState_ == RecvState::kWaitFirst) {
    // An RTS counts only once every eager chunk sent before it was consumed (it travels on
    // QP 0 and may overtake chunks of the previous message on other QPs).
    if (rts_ && rtsSeq_ == consumeSeq_) {
      rts_ = false;
      if (rtsSize_ != target_.bytes) failMismatch(rtsSize_, target_.bytes);
      rtrOut_ = Ctrl{kRtr, 0, rtsSize_, 0, 0};
      if (target_.direct) {
        recvMr_ = reg_->acquire(target_.direct, target_.bytes);
        rtrOut_.addr = reinterpret_cast<uint64_t>(target_.direct);
        rtrOut_.rkey = recvMr_.mr->rkey;
        recvState_ = RecvState::kWaitFin;
        ++zcRecvs_;
      } else {
        recvState_ = RecvState::kEager;
      }
      rtrOwed_ = true;
    } else if (slots_[consumeSeq_ % opts_.nslots].full) {
      recvState_ = RecvState::kEager;
    }
  }
  if (rtrOwed_ && postCtrl(rtrOut_)) rtrOwed_ = false;
  if (recvState_ == RecvState::kEager) {
    for (;;) {
      uint32_t s = static_cast<uint32_t>(consumeSeq_ % opts_.nslots);
      SlotState& st = slots_[s];
      if (!st.full) break;
      if (delivered_ + st.len > target_.bytes) failMismatch(UINT64_MAX, target_.bytes);
      if (st.last && delivered_ + st.len != target_.bytes)
        failMismatch(delivered_ + st.len, target_.bytes);
      const std::byte* src = recvRing_.p + size_t{s} * opts_.slotBytes;
      if (st.len) {
        if (target_.direct)
          copyBytes(target_.direct + delivered_, src, st.len);
        else
          target_.consume(delivered_, std::span<const std::byte>(src, st.len));
      }
      delivered_ += st.len;
      bool last = st.last;
      st = SlotState{};
      ++consumeSeq_;
      ++unreturned_;
      if (last) {
        recvState_ = RecvState::kDone;
        break;
      }
    }
  }
  if (recvState_ == RecvState::kWaitFin && fin_ && !rtrOwed_) {
    fin_ = false;
    reg_->release(recvMr_);
    delivered_ = target_.bytes;
    recvState_ = RecvState::kDone;
  }
}

void IbConnection::returnCredits(bool force) {
  if (unreturned_ == 0) return;
  bool ringEmpty = !slots_[consumeSeq_ % opts_.nslots].full;
  if (!force && !ringEmpty && unreturned_ < opts_.nslots / 2) return;
  if (postWrite(0, wrId(kWrImm, 0), nullptr, 0, 0, remoteRing_, remoteRkey_, true,
                makeImm(kImmCredit, false, 0, unreturned_)))
    unreturned_ = 0;
}

size_t IbConnection::progressRecv() {
  pollCq();
  advanceRecv();
  returnCredits(false);
  advanceSend();  // credits or an RTR may have arrived for the send side
  maybeKeepalive();
  return recvState_ == RecvState::kIdle ? 0 : delivered_;
}

// ---------------------------------------------------------------- liveness and sleeping

void IbConnection::maybeKeepalive() {
  bool active = (sendState_ != SendState::kIdle && sendState_ != SendState::kDone) ||
                (recvState_ != RecvState::kIdle && recvState_ != RecvState::kDone) ||
                owedZeroSends_ > 0 || owedZeroRecvs_ > 0;
  if (!active) return;
  double now = nowSeconds();
  if (probeOutstanding_) {
    // Not every provider fails a write to a vanished QP (Soft-RoCE on Linux 6.1 retries
    // forever), so an unanswered probe with no completion at all also means the peer is gone.
    double limit =
        std::max(5.0, 4 * 4.096e-6 * double(uint64_t{1} << opts_.timeout) * (opts_.retryCnt + 1));
    if (now - probeSentAt_ > limit && now - lastCompletion_ > limit) {
      std::ostringstream os;
      os << "ibverbs: rank " << self_ << ": " << who() << " acknowledged nothing for "
         << int(now - lastCompletion_) << " s (a zero-byte RDMA write probe is unanswered): "
         << "its process died or the path is broken; see TUTTI_IB_TIMEOUT and "
         << "TUTTI_IB_RETRY_CNT [" << qpDesc_ << "]";
      brokenCode_ = tuttiRemoteError;
      broken_ = os.str();
      throw Error(brokenCode_, broken_);
    }
    return;
  }
  if (now - lastEvent_ < kProbeSec) return;
  // A zero-byte RDMA write must be acknowledged by the peer's QP: if the peer is gone it
  // completes with "retry exceeded", which names the peer.
  if (postWrite(0, wrId(kWrProbe, 0), nullptr, 0, 0, remoteRing_, remoteRkey_, false, 0)) {
    TUTTI_TRACE(kTransport, "ibverbs: rank " << self_ << " probing " << who());
    probeOutstanding_ = true;
    probeSentAt_ = now;
    lastEvent_ = now;
  }
}

bool IbConnection::canProgress() const {
  if (owedZeroRecvs_ > 0 && slots_[consumeSeq_ % opts_.nslots].full) return true;
  if (owedZeroSends_ > 0 && credits_ > 0) return true;
  if (sendState_ == SendState::kNeedRts) return true;
  if (recvState_ == RecvState::kWaitFirst &&
      ((rts_ && rtsSeq_ == consumeSeq_) || slots_[consumeSeq_ % opts_.nslots].full))
    return true;
  if (recvState_ == RecvState::kEager && slots_[consumeSeq_ % opts_.nslots].full) return true;
  if (recvState_ == RecvState::kWaitFin && fin_) return true;
  if (sendState_ == SendState::kWaitRtr && rtr_) return true;
  if (sendState_ == SendState::kEager && credits_ > 0) return true;
  if (sendState_ == SendState::kWriting && wrDoneBytes_ == sendData_.size()) return true;
  return false;
}

void IbConnection::collectWaitFds(std::vector<int>& fds) { fds.push_back(channel_->fd); }

bool IbConnection::prepareToSleep() {
  rethrowBroken();
  if (canProgress()) return false;
  returnCredits(true);  // never sleep on credits the peer may be waiting for
  if (!armed_) {
    if (ibv_req_notify_cq(cq_, 0) != 0) fail(tuttiSystemError, "ibverbs: ibv_req_notify_cq");
    armed_ = true;
  }
  // A completion may have arrived before arming: look once more.
  pollCq();
  return !canProgress();
}

void IbConnection::afterSleep() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (api_.getCqEvent(channel_, &cq, &ctx) == 0) {
    ++unackedEvents_;
    armed_ = false;
  }
  if (unackedEvents_ >= 64) {
    api_.ackCqEvents(cq_, unackedEvents_);
    unackedEvents_ = 0;
  }
}

}  // namespace tutti::transport::ib
