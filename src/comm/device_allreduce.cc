// The direct device all-reduce (see device_allreduce.h). Without CUDA, setup declines.
#include "comm/device_allreduce.h"

#include "tutti/config.h"

#if TUTTI_HAVE_CUDA
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string_view>
#include <thread>

#include "common/dtype.h"
#include "common/error.h"
#include "common/process_gone.h"
#include "reduce/cuda/cuda_memory.h"
#include "reduce/cuda/cuda_reduce.h"
#include "reduce/cuda/cuda_shared.h"
#include "transports/cuda_ipc/shared_segment.h"
#endif

namespace tutti {

#if !TUTTI_HAVE_CUDA

struct DeviceAllReduce::State {};
DeviceAllReduce::DeviceAllReduce(std::unique_ptr<State> s) : s_(std::move(s)) {}
DeviceAllReduce::~DeviceAllReduce() = default;
std::unique_ptr<DeviceAllReduce> DeviceAllReduce::setup(const Peers& peers, const void*, bool,
                                                        const DeviceAllReduceSettings&,
                                                        const AllGather&, OnFailure,
                                                        const std::atomic<bool>*,
                                                        std::string* why) {
  // Every rank of a CUDA-less build declines alike, without an exchange (device pointers
  // never reach here: the C API refuses them without CUDA).
  (void)peers;
  *why = "this libtutti was built without CUDA";
  return nullptr;
}
int DeviceAllReduce::device() const { return -1; }
size_t DeviceAllReduce::minBytes() const { return 0; }
const char* DeviceAllReduce::algorithmFor(size_t) const { return "none"; }
void DeviceAllReduce::run(const void*, void*, size_t, tuttiDataType_t, tuttiRedOp_t, void*) {}
std::string DeviceAllReduce::describe() const { return ""; }

#else

namespace {

constexpr size_t kLine = 64;
enum Counter { kReady = 0, kReduced = 1, kDone = 2 };
// Line 0: the abort word; then three counters per rank, one per line.
size_t counterOffset(int rank, Counter c) {
  return kLine * (1 + 3 * static_cast<size_t>(rank) + c);
}
size_t segmentBytes(int nranks) {
  const size_t page = 4096;
  return (counterOffset(nranks, kReady) + page - 1) / page * page;
}
// Lifts every counter this far past the highest sequence a wait may hold.
constexpr uint32_t kPoisonLead = 1u << 30;

// What each rank publishes at setup (trivially copyable; the same size on every rank).
struct Desc {
  int32_t ok = 0;
  int32_t pid = 0;
  int32_t segFd = -1;
  int32_t pad = 0;
  uint64_t segBytes = 0;
  cuda::IpcHandle scratch{};
  char busId[32] = {};
  char why[160] = {};
};

uint32_t load(const uint32_t* p) {
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(p)).load(std::memory_order_acquire);
}
void store(uint32_t* p, uint32_t v) {
  std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release);
}
std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

}  // namespace

struct DeviceAllReduce::State {
  Peers peers;
  DeviceAllReduceSettings settings;
  int device = -1;
  cuda::DeviceBuffer scratch;
  cuda::DeviceBuffer abortDevice;          // the kernels' abort word, raised on poisoning
  std::unique_ptr<cuda::SideStream> side;  // raises it without waiting for the user's stream
  transport::cudaipc::SharedSegment segment;
  std::unique_ptr<cuda::HostRegistration> registration;
  std::vector<std::unique_ptr<cuda::IpcMapping> > mappings;  // null at this rank
  std::vector<const std::byte*> scratchOf;                   // each rank's scratch, mapped here
  std::unique_ptr<cuda::StreamSignals> signals;
  bool shared = false;              // every rank drives the same GPU
  std::atomic<uint32_t> issued{0};  // the last piece enqueued
  std::atomic<bool> poisoned{false};
  OnFailure onFailure;
  const std::atomic<bool>* abortFlag = nullptr;
  std::thread watchdog;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;

  uint32_t* host(int rank, Counter c) {
    return reinterpret_cast<uint32_t*>(segment.data() + counterOffset(rank, c));
  }
  uint32_t* dev(int rank, Counter c) {
    return static_cast<uint32_t*>(registration->device(host(rank, c)));
  }
  uint32_t* abortWord() { return reinterpret_cast<uint32_t*>(segment.data()); }
  // The kernels' abort word (device memory: each block reads it once as it starts; a read of
  // mapped host memory costs microseconds per block).
  const uint32_t* devAbortWord() { return reinterpret_cast<const uint32_t*>(abortDevice.data()); }
  std::byte* myScratch() { return scratch.data(); }

  // Whether a call of `bytes` goes two-shot (the same on every rank).
  bool twoShot(size_t bytes) const;
  void poison();
  void failWith(tuttiResult_t code, const std::string& text, int rank);
  void watch();
  uint32_t minDone(int* lagging);
  int laggingRank();
  void waitAll(void* stream, Counter c, uint32_t s, bool self = false);
  void piece(const std::byte* in, std::byte* out, size_t elems, tuttiDataType_t dtype,
             tuttiRedOp_t op, int64_t divisor, bool twoShot, void* stream);
};

void DeviceAllReduce::State::poison() {
  // The host stores come first and need no CUDA call (this runs on the watchdog thread, maybe
  // while the driver cleans up after a dead peer, or while another thread holds the device in
  // a synchronisation that only these stores can end).
  poisoned = true;
  if (load(abortWord()) == 0) store(abortWord(), static_cast<uint32_t>(peers.rank) + 1);
  const uint32_t lift = issued.load() + kPoisonLead;
  for (int r = 0; r < peers.nranks; ++r)
    for (Counter c : {kReady, kReduced, kDone}) store(host(r, c), lift);
  // Then the kernels' abort word, on a stream of its own, not waited for: blocks that start
  // after it lands read nothing of the peers. Written at every lift, not only the first, so
  // every lift is followed by a submission of this process: a guess from the H200 runs
  // (docs/cuda.md, the killed-peer test) is that a stream waiting on host memory is looked at
  // again only when its context submits work.
  try {
    side->setAsync(abortDevice.data(), 1, sizeof(uint32_t));
  } catch (const Error&) {
  }
}

uint32_t DeviceAllReduce::State::minDone(int* lagging) {
  const uint32_t mine = issued.load();
  uint32_t lowest = mine;
  *lagging = -1;
  for (int r = 0; r < peers.nranks; ++r) {
    const uint32_t d = load(host(r, kDone));
    if (!reached(d, lowest)) {
      lowest = d;
      *lagging = r;
    }
  }
  return lowest;
}

// The rank furthest behind: the lowest of each rank's furthest counter (a rank that has not
// made the call has not raised its `ready`), preferring a peer over this rank on a tie.
int DeviceAllReduce::State::laggingRank() {
  int worst = -1;
  uint32_t worstAt = 0;
  for (int k = 0; k < peers.nranks; ++k) {
    const int r = (peers.rank + 1 + k) % peers.nranks;  // peers first, this rank last
    uint32_t at = load(host(r, kReady));
    for (Counter c : {kReduced, kDone})
      if (const uint32_t v = load(host(r, c)); !reached(at, v)) at = v;
    if (worst < 0 || !reached(at, worstAt)) {
      worst = r;
      worstAt = at;
    }
  }
  return worst;
}

// Every 50 ms: an abort, a dead peer while work is pending, or no progress for the timeout
// fail the communicator and unblock the streams; once poisoned, the counters are lifted again
// at every tick (a stream may still write a lower value after the first lift).
void DeviceAllReduce::State::watch() {
  using Clock = std::chrono::steady_clock;
  uint32_t lastLow = 0;
  auto lastProgress = Clock::now();
  std::unique_lock<std::mutex> lock(mu);
  while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return stop; })) {
    if (poisoned || (abortFlag != nullptr && abortFlag->load())) {
      poison();
      continue;
    }
    // Another rank lifted the shared counters (it aborted or found a failure): this rank's
    // streams ran on with garbage, so its communicator fails too.
    if (const uint32_t by = load(abortWord()); by != 0) {
      const int r = static_cast<int>(by) - 1;
      failWith(
          tuttiRemoteError,
          peers.describe(r) + " aborted the direct device all-reduce (it failed or was aborted)",
          r);
      continue;
    }
    int lagging = -1;
    const uint32_t low = minDone(&lagging);
    if (lagging < 0 || low != lastLow) {
      lastLow = low;
      lastProgress = Clock::now();
      continue;
    }
    for (int r = 0; r < peers.nranks; ++r) {
      if (r == peers.rank || peers.pids[r] == 0 || !processGone(peers.pids[r])) continue;
      failWith(tuttiRemoteError,
               peers.describe(r) + " died while a direct device all-reduce waited for it", r);
      break;
    }
    if (poisoned) continue;
    const double stalled = std::chrono::duration<double>(Clock::now() - lastProgress).count();
    if (stalled > settings.timeoutSec) {
      const int late = laggingRank();
      failWith(tuttiTimeout,
               "direct device all-reduce: " + peers.describe(late) + " did not reach piece " +
                   std::to_string(issued.load()) + " of this rank within " +
                   seconds(settings.timeoutSec),
               late);
    }
  }
}

// Releases the streams first, then reports (the report may block on the store).
void DeviceAllReduce::State::failWith(tuttiResult_t code, const std::string& text, int rank) {
  poison();
  onFailure(code, text, rank);
}

// Waits for every rank's counter; this rank's own too when the caller asks (its earlier
// pieces may have run on another stream).
void DeviceAllReduce::State::waitAll(void* stream, Counter c, uint32_t s, bool self) {
  for (int r = 0; r < peers.nranks; ++r)
    if (self || r != peers.rank) signals->waitGeq(stream, dev(r, c), s);
}

void DeviceAllReduce::State::piece(const std::byte* in, std::byte* out, size_t elems,
                                   tuttiDataType_t dtype, tuttiRedOp_t op, int64_t divisor,
                                   bool twoShot, void* stream) {
  const int n = peers.nranks, me = peers.rank;
  const size_t es = dtypeSize(dtype);
  const uint32_t s = issued.load() + 1;
  // Every rank has finished reading my scratch (and my own last piece is done, whatever
  // stream it ran on).
  if (s > 1) waitAll(stream, kDone, s - 1, true);
  cuda::copyAsync(myScratch(), in, elems * es, stream, "direct device all-reduce");
  signals->write(stream, dev(me, kReady), s);
  waitAll(stream, kReady, s);
  std::array<const void*, reduce::kMaxReduceSources> src{};
  if (!twoShot) {
    for (int r = 0; r < n; ++r) src[r] = scratchOf[r];
    reduce::reduceManyCuda(out, std::span(src.data(), n), elems, dtype, op, divisor, devAbortWord(),
                           stream);
  } else {
    // Parts of a multiple of 16 bytes, so every part starts aligned in every scratch.
    const size_t per = 16 / std::min<size_t>(es, 16);
    const size_t part = ((elems + n - 1) / n + per - 1) / per * per;
    auto begin = [&](int r) { return std::min(elems, part * r); };
    const size_t mine = begin(me + 1) - begin(me);
    for (int r = 0; r < n; ++r) src[r] = scratchOf[r] + begin(me) * es;
    reduce::reduceManyCuda(myScratch() + begin(me) * es, std::span(src.data(), n), mine, dtype, op,
                           divisor, devAbortWord(), stream);
    signals->write(stream, dev(me, kReduced), s);
    waitAll(stream, kReduced, s);
    for (int r = 0; r < n; ++r) {
      const void* from = scratchOf[r] + begin(r) * es;
      const size_t bytes = (begin(r + 1) - begin(r)) * es;
      reduce::reduceManyCuda(out + begin(r) * es, std::span(&from, 1), bytes, tuttiUint8, tuttiSum,
                             1, devAbortWord(), stream);
    }
  }
  signals->write(stream, dev(me, kDone), s);
  issued.store(s);
}

DeviceAllReduce::DeviceAllReduce(std::unique_ptr<State> s) : s_(std::move(s)) {
  s_->watchdog = std::thread([st = s_.get()] { st->watch(); });
}

DeviceAllReduce::~DeviceAllReduce() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stop = true;
  }
  s_->cv.notify_all();
  s_->watchdog.join();
  // Peers may still read this rank's scratch: wait until every rank's last piece is done.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(s_->settings.timeoutSec);
  int lagging = -1;
  while (!s_->poisoned) {
    s_->minDone(&lagging);
    if (lagging < 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      s_->poison();
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // The released streams run out before the memory goes.
  if (s_->poisoned) cuda::synchronizeDeviceQuietly(s_->device);
}

int DeviceAllReduce::device() const { return s_->device; }
size_t DeviceAllReduce::minBytes() const { return static_cast<size_t>(s_->settings.minBytes); }

bool DeviceAllReduce::State::twoShot(size_t bytes) const {
  const auto piece =
      static_cast<int64_t>(std::min(bytes, static_cast<size_t>(settings.scratchBytes)));
  return peers.nranks > 1 && piece >= settings.twoShotBytes;
}

const char* DeviceAllReduce::algorithmFor(size_t bytes) const {
  return s_->twoShot(bytes) ? "cuda_twoshot" : "cuda_oneshot";
}

std::string DeviceAllReduce::describe() const {
  const int64_t two = s_->settings.twoShotBytes;
  return "direct device all-reduce on device " + std::to_string(s_->device) +
         (s_->shared ? " (every rank on this GPU)" : "") + ", " +
         std::to_string(s_->settings.scratchBytes) + " B scratch per rank, calls from " +
         std::to_string(s_->settings.minBytes) + " B, two-shot " +
         (two == std::numeric_limits<int64_t>::max() ? std::string("never")
                                                     : "from " + std::to_string(two) + " B") +
         ", ordered by " + s_->signals->how();
}

void DeviceAllReduce::run(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                          tuttiRedOp_t op, void* stream) {
  State& st = *s_;
  if (count == 0) return;
  const int bufDevice = cuda::deviceOf(recv);
  if (bufDevice != st.device)
    fail(tuttiInvalidUsage, "tuttiAllReduce: the buffers are on CUDA device ", bufDevice,
         " but this communicator's device all-reduce was set up on device ", st.device,
         " (its first device call); use one device per communicator");
  cuda::DeviceGuard guard(st.device);
  const size_t es = dtypeSize(dtype);
  const int64_t divisor = op == tuttiAvg ? st.peers.nranks : 1;
  const tuttiRedOp_t base = op == tuttiAvg ? tuttiSum : op;
  if (st.peers.nranks == 1) {
    if (send != recv) cuda::copyAsync(recv, send, count * es, stream, "tuttiAllReduce");
    return;
  }
  const bool twoShot = st.twoShot(count * es);
  const size_t pieceElems = static_cast<size_t>(st.settings.scratchBytes) / es;
  const auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  for (size_t done = 0; done < count; done += pieceElems) {
    const size_t elems = std::min(pieceElems, count - done);
    st.piece(in + done * es, out + done * es, elems, dtype, base, divisor, twoShot, stream);
  }
}

namespace {

// This rank's half of setup before the exchange: scratch, its IPC handle, and on rank 0 the
// shared counters.
void prepareLocal(DeviceAllReduce::State& st, Desc* d) {
  cuda::DeviceGuard guard(st.device);
  st.scratch = cuda::DeviceBuffer(static_cast<size_t>(st.settings.scratchBytes));
  d->scratch = cuda::exportIpc(st.scratch.data());
  st.abortDevice = cuda::DeviceBuffer(256);
  st.side = std::make_unique<cuda::SideStream>();
  st.side->setAsync(st.abortDevice.data(), 0, 256);
  st.side->synchronize();
  if (st.peers.rank == 0) {
    st.segment = transport::cudaipc::SharedSegment::create(segmentBytes(st.peers.nranks),
                                                           "tutti-device-allreduce");
    d->segFd = st.segment.fd();
    d->segBytes = st.segment.size();
  }
  std::snprintf(d->busId, sizeof(d->busId), "%s", cuda::pciBusId(st.device).c_str());
  d->pid = static_cast<int32_t>(getpid());
  d->ok = 1;
}

// After the exchange: rank 0's counters and every peer's scratch mapped here.
void mapPeers(DeviceAllReduce::State& st, const std::vector<Desc>& all) {
  cuda::DeviceGuard guard(st.device);
  const int n = st.peers.nranks;
  if (st.peers.rank != 0)
    st.segment =
        transport::cudaipc::SharedSegment::openPeer(all[0].pid, all[0].segFd, all[0].segBytes);
  st.registration = std::make_unique<cuda::HostRegistration>(st.segment.data(), st.segment.size());
  st.mappings.resize(n);
  st.scratchOf.resize(n);
  for (int r = 0; r < n; ++r) {
    if (r == st.peers.rank) {
      st.scratchOf[r] = st.scratch.data();
      continue;
    }
    st.mappings[r] = std::make_unique<cuda::IpcMapping>(all[r].scratch);
    st.scratchOf[r] = st.mappings[r]->data();
  }
  st.signals = std::make_unique<cuda::StreamSignals>(st.settings.memOps);
}

// The automatic (-1) settings, from whether every rank drives one GPU.
void resolveAutomatic(DeviceAllReduce::State& st) {
  const auto n = static_cast<int64_t>(st.peers.nranks);
  if (st.settings.minBytes < 0) st.settings.minBytes = st.shared ? n * (512 << 10) : 0;
  if (st.settings.twoShotBytes < 0)
    st.settings.twoShotBytes = st.shared ? std::numeric_limits<int64_t>::max() : 256 << 10;
}

void copyWhy(Desc* d, const std::string& why) {
  std::snprintf(d->why, sizeof(d->why), "%s", why.c_str());
  d->ok = 0;
}

// The first rank that declined, with its reason; "" when all took part.
std::string firstRefusal(const std::vector<Desc>& all, const DeviceAllReduce::Peers& peers) {
  for (int r = 0; r < peers.nranks; ++r) {
    if (all[r].ok != 1) return peers.describe(r) + ": " + all[r].why;
    if (peers.pids[r] == 0)
      return peers.describe(r) + " is not on this host (or not in its pid namespace)";
  }
  return "";
}

}  // namespace

std::unique_ptr<DeviceAllReduce> DeviceAllReduce::setup(
    const Peers& peers, const void* buffer, bool enabled, const DeviceAllReduceSettings& settings,
    const AllGather& allGather, OnFailure onFailure, const std::atomic<bool>* abortFlag,
    std::string* why) {
  auto st = std::make_unique<State>();
  st->peers = peers;
  st->settings = settings;
  st->settings.scratchBytes = settings.scratchBytes / 256 * 256;
  st->onFailure = std::move(onFailure);
  st->abortFlag = abortFlag;
  Desc mine;
  if (!enabled) {
    copyWhy(&mine, "TUTTI_CUDA_DIRECT=0");
  } else if (peers.nranks > reduce::kMaxReduceSources) {
    copyWhy(&mine, std::to_string(peers.nranks) + " ranks (at most " +
                       std::to_string(reduce::kMaxReduceSources) + ")");
  } else {
    try {
      st->device = cuda::deviceOf(buffer);
      if (st->device < 0) fail(tuttiInvalidArgument, "the buffer is not device memory");
      prepareLocal(*st, &mine);
    } catch (const Error& e) {
      copyWhy(&mine, e.what());
    }
  }
  std::vector<Desc> all(peers.nranks);
  allGather(&mine, all.data(), sizeof(Desc));
  *why = firstRefusal(all, peers);
  // Second round: whether every rank mapped every peer.
  Desc mapped;
  if (why->empty()) {
    try {
      mapPeers(*st, all);
      mapped.ok = 1;
    } catch (const Error& e) {
      copyWhy(&mapped, e.what());
    }
  } else {
    copyWhy(&mapped, *why);
  }
  allGather(&mapped, all.data(), sizeof(Desc));
  if (why->empty()) *why = firstRefusal(all, peers);
  if (!why->empty()) return nullptr;
  st->shared = peers.nranks > 1;
  for (int r = 1; r < peers.nranks; ++r)
    st->shared = st->shared && std::string_view(all[r].busId) == std::string_view(all[0].busId);
  resolveAutomatic(*st);
  return std::unique_ptr<DeviceAllReduce>(new DeviceAllReduce(std::move(st)));
}

#endif  // TUTTI_HAVE_CUDA

}  // namespace tutti
