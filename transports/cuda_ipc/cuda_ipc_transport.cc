// CUDA glue of the cuda_ipc transport (runtime API, linked statically; no device code).
#include "transports/cuda_ipc/cuda_ipc_transport.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "transports/cuda_ipc/fifo_connection.h"
#include "transports/cuda_ipc/ipc_desc.h"

namespace tutti::transport {
namespace {

using namespace cudaipc;

std::string cudaErr(cudaError_t e) {
  cudaGetLastError();
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) fail(tuttiSystemError, "cuda_ipc: ", call, " failed: ", cudaErr(e));
}

// Copies on a private non-blocking stream; idle() polls one event recorded after the last.
class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~CudaCopyEngine() override {
    cudaEventDestroy(event_);
    cudaStreamDestroy(stream_);
  }
  void start(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
    check(cudaEventRecord(event_, stream_), "cudaEventRecord");
    pending_ = true;
  }
  bool idle() override {
    if (!pending_) return true;
    cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    check(e, "cudaEventQuery");
    pending_ = false;
    return true;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t event_ = nullptr;
  bool pending_ = false;
};

// The receive half this rank owns for one sender.
struct RxSide {
  std::shared_ptr<SharedSegment> ctl;
  std::shared_ptr<void> deviceSlots;  // cudaFree on release
  RxDesc desc;
};

class CudaIpcTransport final : public Transport {
 public:
  const char* name() const override { return "cuda_ipc"; }

  void setup(const Context& ctx) override {
    ctx_ = ctx;
    enabled_ =
        env::getBool("TUTTI_CUDA_IPC_ENABLE") || env::getString("TUTTI_TRANSPORT") == "cuda_ipc";
    if (!enabled_) return;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0 && cudaGetDevice(&device_) == cudaSuccess) {
      char bus[32] = {0};
      if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_) == cudaSuccess) busId_ = bus;
    } else {
      if (e != cudaSuccess) cudaGetLastError();
      device_ = -1;
      TUTTI_INFO(kTransport, "cuda_ipc: rank " << ctx.rank << " has no usable CUDA device ("
                                               << (e == cudaSuccess ? "count 0" : cudaErr(e))
                                               << "); not used for its peers");
    }
    ctx_.store->setString(gpuKey(ctx.rank), device_ >= 0 ? "1" : "0");
    Deadline deadline = Deadline::fromEnv();
    peerGpu_.assign(ctx.nranks, false);
    for (int r = 0; r < ctx.nranks; ++r) {
      if (r == ctx.rank || ctx.peers[r].hostId != ctx.peers[ctx.rank].hostId) continue;
      peerGpu_[r] = ctx_.store->getString(gpuKey(r), deadline) == "1";
    }
  }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return enabled_ && device_ >= 0 && self.hostId == peer.hostId && peer.rank >= 0 &&
           peer.rank < static_cast<int>(peerGpu_.size()) && peerGpu_[peer.rank];
  }

  std::vector<std::unique_ptr<Connection>> connect(std::span<const int> peers,
                                                   const Deadline& deadline) override {
    check(cudaSetDevice(device_), "cudaSetDevice");
    // Phase 1: publish a receive FIFO for every peer before waiting on anything.
    std::map<int, RxSide> rx;
    for (int p : peers) rx[p] = makeRxSide(p);
    // Phase 2: map each peer's FIFO for this rank, self-test, publish the mode chosen.
    struct Tx {
      std::shared_ptr<SharedSegment> ctl;
      std::shared_ptr<void> mapped;  // cudaIpcCloseMemHandle on release
      bool device = false;
      RxDesc desc;
    };
    std::map<int, Tx> tx;
    for (int p : peers) {
      Tx t;
      t.desc = deserialize(ctx_.store->get(rxKey(p, ctx_.rank), deadline), p);
      t.ctl = std::make_shared<SharedSegment>(
          SharedSegment::openPeer(t.desc.pid, t.desc.ctlFd, t.desc.ctlBytes));
      std::string why = tryDevice(t.desc, t.mapped);
      t.device = why.empty();
      if (!t.device)
        TUTTI_WARN(kTransport, "cuda_ipc: rank " << ctx_.rank << " -> " << describe(p) << ": "
                                                 << why
                                                 << "; falling back to staging through shared "
                                                    "host memory for this pair");
      ctx_.store->setString(modeKey(ctx_.rank, p), t.device ? "device" : "host: " + why);
      tx[p] = std::move(t);
    }
    // Phase 3: learn how each peer writes into this rank's FIFO; build the connections.
    std::vector<std::unique_ptr<Connection>> out;
    for (int p : peers) {
      const bool rxDevice = ctx_.store->getString(modeKey(p, ctx_.rank), deadline) == "device";
      RxSide& r = rx[p];
      Tx& t = tx[p];
      FifoConnectionParts parts;
      parts.peer = p;
      parts.peerName = describe(p);
      parts.peerPid = ctx_.peers[p].pid;
      parts.mode = t.device ? "device" : "host staging";
      FifoGeometry g{r.desc.slots, r.desc.slotBytes};
      parts.recv.ctl = reinterpret_cast<FifoControl*>(r.ctl->data());
      parts.recv.geometry = g;
      parts.recv.slotsHostVisible = !rxDevice;
      parts.recv.slots = rxDevice ? static_cast<std::byte*>(r.deviceSlots.get())
                                  : r.ctl->data() + hostSlotsOffset();
      FifoGeometry tg{t.desc.slots, t.desc.slotBytes};
      parts.send.ctl = reinterpret_cast<FifoControl*>(t.ctl->data());
      parts.send.geometry = tg;
      parts.send.slots =
          t.device ? static_cast<std::byte*>(t.mapped.get()) : t.ctl->data() + hostSlotsOffset();
      parts.sendCopy = t.device ? std::unique_ptr<CopyEngine>(new CudaCopyEngine())
                                : std::unique_ptr<CopyEngine>(new HostCopyEngine());
      parts.recvCopy = rxDevice ? std::unique_ptr<CopyEngine>(new CudaCopyEngine())
                                : std::unique_ptr<CopyEngine>(new HostCopyEngine());
      if (rxDevice) {
        void* b = nullptr;
        check(cudaMallocHost(&b, g.slotBytes), "cudaMallocHost (bounce buffer)");
        parts.bounce = static_cast<std::byte*>(b);
        parts.keepAlive.emplace_back(b, [](void* q) { cudaFreeHost(q); });
      }
      parts.keepAlive.push_back(r.ctl);
      parts.keepAlive.push_back(r.deviceSlots);
      parts.keepAlive.push_back(t.ctl);
      parts.keepAlive.push_back(t.mapped);
      TUTTI_INFO(kTransport, "cuda_ipc: rank " << ctx_.rank << " <-> " << parts.peerName
                                               << ": send " << parts.mode << ", receive "
                                               << (rxDevice ? "device" : "host staging"));
      out.push_back(std::make_unique<FifoConnection>(std::move(parts)));
    }
    return out;
  }

 private:
  static std::string gpuKey(int r) { return "cuda_ipc/gpu/" + std::to_string(r); }

  std::string describe(int p) const {
    const PeerInfo& i = ctx_.peers[p];
    return "rank " + std::to_string(p) + " (host " + i.hostname + ", pid " + std::to_string(i.pid) +
           ")";
  }

  RxSide makeRxSide(int peer) {
    RxSide r;
    FifoGeometry g;
    g.slots = 4;
    g.slotBytes = static_cast<uint64_t>(env::getInt("TUTTI_CUDA_IPC_CHUNK_BYTES"));
    TUTTI_CHECK_ARG(g.slotBytes >= 4096 && g.slotBytes <= (uint64_t{1} << 30),
                    "TUTTI_CUDA_IPC_CHUNK_BYTES=", g.slotBytes, " out of [4096, 2^30]");
    r.ctl = std::make_shared<SharedSegment>(SharedSegment::create(
        controlSegmentBytes(g), "tutti-cuda-ipc-" + std::to_string(ctx_.rank)));
    new (r.ctl->data()) FifoControl();
    void* slots = nullptr;
    check(cudaMalloc(&slots, g.slotAreaBytes()), "cudaMalloc (receive FIFO)");
    r.deviceSlots = std::shared_ptr<void>(slots, [](void* q) { cudaFree(q); });
    cudaIpcMemHandle_t h;
    static_assert(sizeof(h) == kIpcHandleBytes);
    RxDesc& d = r.desc;
    cudaError_t e = cudaIpcGetMemHandle(&h, slots);
    if (e == cudaSuccess) {
      std::memcpy(d.ipcHandle.data(), &h, sizeof(h));
      d.hasIpcHandle = true;
    } else {
      TUTTI_WARN(kTransport, "cuda_ipc: cudaIpcGetMemHandle failed: " << cudaErr(e));
    }
    d.rank = ctx_.rank;
    d.pid = static_cast<int32_t>(getpid());
    d.device = device_;
    d.busId = busId_.substr(0, 31);
    d.slots = g.slots;
    d.slotBytes = g.slotBytes;
    d.ctlFd = r.ctl->fd();
    d.ctlBytes = r.ctl->size();
    ctx_.store->set(rxKey(ctx_.rank, peer), serialize(d));
    return r;
  }

  // Maps the peer's device slots and checks a round trip through them; "" on success, else
  // why the pair must stage through host memory.
  std::string tryDevice(const RxDesc& d, std::shared_ptr<void>& mapped) {
    if (!env::getBool("TUTTI_CUDA_IPC_P2P")) return "TUTTI_CUDA_IPC_P2P=0";
    if (!d.hasIpcHandle) return "rank " + std::to_string(d.rank) + " exported no IPC handle";
    cudaIpcMemHandle_t h;
    std::memcpy(&h, d.ipcHandle.data(), sizeof(h));
    void* p = nullptr;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess)
      return "cudaIpcOpenMemHandle of device " + d.busId + " failed: " + cudaErr(e) +
             " (peer access unavailable: PCIe ACS/IOMMU, a container without the host's IPC "
             "namespace, or MPS)";
    mapped = std::shared_ptr<void>(p, [](void* q) { cudaIpcCloseMemHandle(q); });
    unsigned char out[256], back[256];
    for (size_t i = 0; i < sizeof(out); ++i) out[i] = static_cast<unsigned char>(i * 7 + ctx_.rank);
    e = cudaMemcpy(p, out, sizeof(out), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(back, p, sizeof(back), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
      mapped.reset();
      return "P2P self-test copy through device " + d.busId + " failed: " + cudaErr(e);
    }
    if (std::memcmp(out, back, sizeof(out)) != 0) {
      mapped.reset();
      return "P2P self-test read back different bytes through device " + d.busId;
    }
    return "";
  }

  Context ctx_;
  bool enabled_ = false;
  int device_ = -1;
  std::string busId_;
  std::vector<bool> peerGpu_;
};

}  // namespace

std::unique_ptr<Transport> makeCudaIpcTransport() { return std::make_unique<CudaIpcTransport>(); }

}  // namespace tutti::transport
