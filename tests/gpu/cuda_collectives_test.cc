// Collectives on CUDA device buffers over real processes sharing one GPU (label gpu):
// every collective x dtype x op x count x in/out of place, on host and then on device buffers,
// gives the reference loop's result on verifiable data (guard bytes around the device buffer);
// the direct device all-reduce in pieces, one- and two-shot, with calls enqueued back to back;
// host/device mixes are rejected; a rank killed mid-collective, or a peer that never calls,
// turns into an error on the others (the direct path's streams are released, not hung).
// Skips, naming the reason, without a GPU. The parent never initialises CUDA (the ranks are
// forked); it probes in a child process. NoCuda.* runs where CUDA is *not* usable: a device-looking
// pointer gets a clear error.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "common/dtype.h"
#include "harness/fork_harness.h"
#include "harness/scoped_env.h"
#include "support/verifiable.h"
#include "tutti/tutti.h"

namespace tutti::test {
namespace {

// "" when a CUDA device is usable, else why not (probed in a child process).
std::string gpuMissingReason() {
  static std::string reason = [] {
    int fds[2];
    if (pipe(fds) != 0) return std::string("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      int n = 0;
      cudaError_t e = cudaGetDeviceCount(&n);
      std::string why = e != cudaSuccess
                            ? std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" +
                                  cudaGetErrorString(e) + ")"
                        : n == 0 ? std::string("no CUDA device visible")
                                 : std::string();
      if (!why.empty() && write(fds[1], why.data(), why.size()) < 0) _exit(3);
      _exit(0);
    }
    close(fds[1]);
    std::string why;
    char buf[256];
    for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) why.append(buf, n);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status)) return std::string("CUDA probe process crashed");
    return why;
  }();
  return reason;
}

#define SKIP_WITHOUT_GPU()                                                  \
  do {                                                                      \
    std::string why_ = gpuMissingReason();                                  \
    if (!why_.empty()) GTEST_SKIP() << "no usable GPU, skipping: " << why_; \
  } while (0)

#define CUDA_OK(call)                                                    \
  do {                                                                   \
    cudaError_t e_ = (call);                                             \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorName(e_); \
  } while (0)

enum class C { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll };
struct Coll {
  C c;
  const char* name;
  bool hasOp;
};
const Coll kColls[] = {{C::kAllReduce, "allreduce", true},
                       {C::kBroadcast, "broadcast", false},
                       {C::kReduce, "reduce", true},
                       {C::kAllGather, "allgather", false},
                       {C::kReduceScatter, "reducescatter", true},
                       {C::kAllToAll, "alltoall", false}};
const tuttiDataType_t kTypes[] = {tuttiInt8,    tuttiUint8,    tuttiInt16,   tuttiUint16,
                                  tuttiInt32,   tuttiUint32,   tuttiInt64,   tuttiUint64,
                                  tuttiFloat16, tuttiBfloat16, tuttiFloat32, tuttiFloat64};
// The arithmetic ops on every type; of the bitwise ops (integer types only) one per type,
// rotated with the type and the rank count (rotatedBitwise).
const tuttiRedOp_t kOps[] = {tuttiSum, tuttiProd, tuttiMin, tuttiMax,
                             tuttiAvg, tuttiBand, tuttiBor, tuttiBxor};

bool runsOp(tuttiDataType_t t, tuttiRedOp_t op, int n) {
  if (op != tuttiBand && op != tuttiBor && op != tuttiBxor) return true;
  return !tutti::dtypeIsFloat(t) && (static_cast<int>(t) + static_cast<int>(op)) % 3 == n % 3;
}

size_t dsize(tuttiDataType_t t) { return tutti::dtypeSize(t); }

tuttiResult_t call(const Coll& c, const void* in, void* out, size_t count, tuttiDataType_t t,
                   tuttiRedOp_t op, int root, tuttiComm_t comm, cudaStream_t s) {
  switch (c.c) {
    case C::kAllReduce:
      return tuttiAllReduce(in, out, count, t, op, comm, s);
    case C::kBroadcast:
      return tuttiBroadcast(in, out, count, t, root, comm, s);
    case C::kReduce:
      return tuttiReduce(in, out, count, t, op, root, comm, s);
    case C::kAllGather:
      return tuttiAllGather(in, out, count, t, comm, s);
    case C::kReduceScatter:
      return tuttiReduceScatter(in, out, count, t, op, comm, s);
    case C::kAllToAll:
      return tuttiAllToAll(in, out, count, t, comm, s);
  }
  return tuttiInternalError;
}

bool reduces(C c) { return c == C::kAllReduce || c == C::kReduce || c == C::kReduceScatter; }

// This rank's expected output, by a plain loop over the ranks' values.
void expectedOutput(const Coll& c, const verifiable::Spec& s, size_t count, int root, int rank,
                    int n, std::byte* out) {
  const size_t es = verifiable::elementSize(s.dtype);
  switch (c.c) {
    case C::kAllReduce:
    case C::kReduce:
      verifiable::fillReduced(s, out, count);
      break;
    case C::kReduceScatter:
      verifiable::fillReduced(s, out, count, rank * count);
      break;
    case C::kBroadcast:
      verifiable::fill(s, root, out, count);
      break;
    case C::kAllGather:
      for (int src = 0; src < n; ++src) verifiable::fill(s, src, out + src * count * es, count);
      break;
    case C::kAllToAll:
      for (int src = 0; src < n; ++src)
        verifiable::fill(s, src, out + src * count * es, count, rank * count);
      break;
  }
}

// One case on this rank: host run then device run, each checked against the reference loop
// (verifiable data: new values on every call) with guard bytes around the device buffers.
std::string runCase(tuttiComm_t comm, cudaStream_t s, const Coll& c, tuttiDataType_t t,
                    tuttiRedOp_t op, size_t count, bool inPlace, int rank, int n) {
  static uint64_t calls = 0;  // the same sequence on every rank
  const verifiable::Spec spec{t, verifiable::kindOf(reduces(c.c), op), n,
                              verifiable::seedOf({calls++})};
  const size_t es = dsize(t);
  size_t inElems = count, outElems = count;
  if (c.c == C::kAllGather) outElems = count * n;
  if (c.c == C::kReduceScatter) inElems = count * n;
  if (c.c == C::kAllToAll) inElems = outElems = count * n;
  // One allocation holds both buffers; in place, input and output share it as NCCL expects.
  const size_t inBytes = inElems * es, outBytes = outElems * es;
  const size_t total = inPlace ? std::max(inBytes, outBytes) : inBytes + outBytes;
  size_t inOff = 0, outOff = inPlace ? 0 : inBytes;
  if (inPlace && c.c == C::kAllGather) inOff = rank * count * es;
  if (inPlace && c.c == C::kReduceScatter) outOff = rank * count * es;
  const int root = n - 1;
  const size_t checkBytes = (c.c == C::kReduceScatter ? count : outElems) * es;
  std::vector<std::byte> host(total, std::byte{0x5a});
  std::vector<std::byte> input(inBytes), want(outBytes);
  verifiable::fill(spec, rank, input.data(), inElems);
  expectedOutput(c, spec, count, root, rank, n, want.data());
  std::memcpy(host.data() + inOff, input.data(), inBytes);
  std::vector<std::byte> dev0 = host;  // what the device buffer starts with
  tuttiResult_t r =
      call(c, host.data() + inOff, host.data() + outOff, count, t, op, root, comm, nullptr);
  if (r != tuttiSuccess) return std::string("host call: ") + tuttiGetLastError(comm);
  const bool checked = !(c.c == C::kReduce && rank != root);  // output undefined off the root
  if (checked)
    if (std::string e =
            verifiable::firstMismatch(spec, host.data() + outOff, want.data(), checkBytes / es);
        !e.empty())
      return "host run: " + e;
  // The device buffer with kGuardBytes of guard before and after.
  const size_t g = verifiable::kGuardBytes;
  std::vector<std::byte> guarded(total + 2 * g, verifiable::kGuardByte);
  std::memcpy(guarded.data() + g, dev0.data(), total);
  void* d = nullptr;
  if (cudaMalloc(&d, total + 2 * g) != cudaSuccess) return "cudaMalloc failed";
  // On the call's stream: a cudaMemcpy from pageable memory may return before its DMA has
  // landed, and a non-blocking stream is not ordered after the legacy default stream.
  cudaMemcpyAsync(d, guarded.data(), total + 2 * g, cudaMemcpyHostToDevice, s);
  if (cudaStreamSynchronize(s) != cudaSuccess) return "H2D copy of the input failed";
  auto* db = static_cast<std::byte*>(d) + g;
  r = call(c, db + inOff, db + outOff, count, t, op, root, comm, s);
  cudaStreamSynchronize(s);
  cudaMemcpyAsync(guarded.data(), d, total + 2 * g, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  cudaFree(d);
  if (r != tuttiSuccess) return std::string("device call: ") + tuttiGetLastError(comm);
  for (size_t k = 0; k < g; ++k)
    if (guarded[k] != verifiable::kGuardByte || guarded[g + total + k] != verifiable::kGuardByte)
      return "a guard byte around the device buffer was overwritten";
  const std::byte* got = guarded.data() + g;
  if (!inPlace && std::memcmp(got + inOff, input.data(), inBytes) != 0)
    return "the device input was modified (out of place)";
  if (!checked) return "";
  if (std::string e = verifiable::firstMismatch(spec, got + outOff, want.data(), checkBytes / es);
      !e.empty())
    return "device run: " + e;
  return "";
}

class DeviceCollectives : public ::testing::TestWithParam<int> {};

TEST_P(DeviceCollectives, EveryCollectiveDtypeOpMatchesHostRun) {
  SKIP_WITHOUT_GPU();
  const int n = GetParam();
  // All-reduce takes the direct device path at every size (automatic: staged below n x 512 KiB
  // on one shared GPU); the staged all-reduce is the path of the other collectives.
  ScopedEnv env{{"TUTTI_CUDA_DIRECT", "1"}, {"TUTTI_CUDA_DIRECT_MIN_BYTES", "0"}};
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        CUDA_OK(cudaSetDevice(0));
        cudaStream_t s;
        CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        tuttiComm_t comm;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        int cases = 0;
        for (const Coll& c : kColls)
          for (tuttiDataType_t t : kTypes)
            for (tuttiRedOp_t op : kOps) {
              if (!c.hasOp && op != tuttiSum) continue;
              if (c.hasOp && !runsOp(t, op, n)) continue;
              for (size_t count : {size_t{1}, size_t{1031}, size_t{65543}})
                for (bool inPlace : {false, true}) {
                  std::string err = runCase(comm, s, c, t, op, count, inPlace, rank, n);
                  ASSERT_EQ(err, "") << c.name << " n=" << n << " dtype " << t << " op " << op
                                     << " count " << count << (inPlace ? " in place" : "");
                  ++cases;
                }
            }
        // Reducing: 12 types x 5 ops + one bitwise op on each of the 8 integer types.
        EXPECT_EQ(cases, 3 * (3 * (12 * 5 + 8) + 3 * 12) * 2);
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        cudaStreamDestroy(s);
      },
      600);
  EXPECT_RANKS_OK(result);
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceCollectives, ::testing::Values(1, 2, 4, 8));

// The direct device all-reduce (src/comm/device_allreduce.h) with small pieces: calls larger
// than the scratch go in pieces, one-shot and two-shot both run, and several calls enqueued
// back to back (no synchronisation between them, each on its own buffers) all come out right.
// Parameter: ranks, and whether the streams are ordered by memory operations or kernels.
struct DirectCase {
  int ranks;
  bool memOps;
};
class DeviceAllReduceDirect : public ::testing::TestWithParam<DirectCase> {};

TEST_P(DeviceAllReduceDirect, PiecesAndBackToBackCallsMatchReference) {
  SKIP_WITHOUT_GPU();
  const DirectCase pc = GetParam();
  ScopedEnv env{{"TUTTI_CUDA_DIRECT_BYTES", "65536"},
                {"TUTTI_CUDA_TWO_SHOT_BYTES", "16384"},
                {"TUTTI_CUDA_STREAM_MEMOPS", pc.memOps ? "1" : "0"},
                {"TUTTI_CUDA_DIRECT", "1"},
                {"TUTTI_CUDA_DIRECT_MIN_BYTES", "0"}};
  struct Shape {
    tuttiDataType_t t;
    tuttiRedOp_t op;
    size_t count;
    const char* algo;
  };
  // 1.2 MB in 19 pieces (two-shot), 12 KB one-shot, bf16 average in 4 pieces, 1 element,
  // the 16-bit types with bitwise ops in pieces (two-shot) and one-shot.
  const Shape shapes[] = {{tuttiFloat32, tuttiSum, 300001, "cuda_twoshot"},
                          {tuttiInt32, tuttiMax, 3001, "cuda_oneshot"},
                          {tuttiBfloat16, tuttiAvg, 100003, "cuda_twoshot"},
                          {tuttiInt64, tuttiProd, 1, "cuda_oneshot"},
                          {tuttiUint16, tuttiBxor, 70001, "cuda_twoshot"},
                          {tuttiInt16, tuttiBand, 3001, "cuda_oneshot"}};
  const int n = pc.ranks;
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      n,
      [&](int rank) {
        CUDA_OK(cudaSetDevice(0));
        cudaStream_t s;
        CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        tuttiComm_t comm;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, n, id, rank), nullptr);
        uint64_t call = 0;
        for (const Shape& sh : shapes) {
          constexpr int kCalls = 3;  // enqueued back to back, then one synchronisation
          const size_t es = dsize(sh.t), bytes = sh.count * es, g = verifiable::kGuardBytes;
          std::vector<verifiable::Spec> specs;
          std::vector<void*> dev(kCalls);
          for (int k = 0; k < kCalls; ++k) {
            specs.push_back(
                {sh.t, verifiable::kindOf(true, sh.op), n, verifiable::seedOf({call++})});
            std::vector<std::byte> in(bytes + 2 * g, verifiable::kGuardByte);
            verifiable::fill(specs[k], rank, in.data() + g, sh.count);
            CUDA_OK(cudaMalloc(&dev[k], bytes + 2 * g));
            CUDA_OK(cudaMemcpyAsync(dev[k], in.data(), in.size(), cudaMemcpyHostToDevice, s));
            CUDA_OK(cudaStreamSynchronize(s));
          }
          for (int k = 0; k < kCalls; ++k) {
            auto* b = static_cast<std::byte*>(dev[k]) + g;  // in place
            TUTTI_ASSERT_OK(tuttiAllReduce(b, b, sh.count, sh.t, sh.op, comm, s), comm);
            EXPECT_STREQ(tuttiCommLastAlgorithm(comm), sh.algo) << "count " << sh.count;
          }
          CUDA_OK(cudaStreamSynchronize(s));
          for (int k = 0; k < kCalls; ++k) {
            std::vector<std::byte> got(bytes + 2 * g), want(bytes);
            CUDA_OK(cudaMemcpy(got.data(), dev[k], got.size(), cudaMemcpyDeviceToHost));
            verifiable::fillReduced(specs[k], want.data(), sh.count);
            EXPECT_EQ(verifiable::firstMismatch(specs[k], got.data() + g, want.data(), sh.count),
                      "")
                << "dtype " << sh.t << " op " << sh.op << " count " << sh.count << " call " << k;
            for (size_t i = 0; i < g; ++i)
              ASSERT_TRUE(got[i] == verifiable::kGuardByte &&
                          got[g + bytes + i] == verifiable::kGuardByte)
                  << "guard byte overwritten, count " << sh.count;
            CUDA_OK(cudaFree(dev[k]));
          }
        }
        TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
        cudaStreamDestroy(s);
      },
      180);
  EXPECT_RANKS_OK(result);
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceAllReduceDirect,
                         ::testing::Values(DirectCase{2, true}, DirectCase{4, true},
                                           DirectCase{3, false}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) +
                                  (info.param.memOps ? "_memops" : "_kernels");
                         });

// A peer that never makes the call: the direct path's call returns at once (it is enqueued),
// then the watchdog fails the communicator within the timeout naming that rank, and the
// stream that waited for it completes instead of hanging.
TEST(DeviceAllReduceDirectFailure, StalledPeerBecomesAsyncErrorAndStreamEnds) {
  SKIP_WITHOUT_GPU();
  ScopedEnv env{
      {"TUTTI_TIMEOUT", "4"}, {"TUTTI_CUDA_DIRECT", "1"}, {"TUTTI_CUDA_DIRECT_MIN_BYTES", "0"}};
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      2,
      [&](int rank) {
        CUDA_OK(cudaSetDevice(0));
        tuttiComm_t comm;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 2, id, rank), nullptr);
        void* d = nullptr;
        CUDA_OK(cudaMalloc(&d, 1 << 20));
        CUDA_OK(cudaMemset(d, 0, 1 << 20));
        TUTTI_ASSERT_OK(tuttiAllReduce(d, d, 1024, tuttiFloat32, tuttiSum, comm, nullptr), comm);
        CUDA_OK(cudaDeviceSynchronize());
        if (rank == 1) {  // does not make the second call
          sleep(8);
          tuttiCommAbort(comm);
          tuttiCommDestroy(comm);
          _exit(0);
        }
        EXPECT_STREQ(tuttiCommLastAlgorithm(comm), "cuda_oneshot");
        TUTTI_ASSERT_OK(tuttiAllReduce(d, d, 1024, tuttiFloat32, tuttiSum, comm, nullptr), comm);
        tuttiResult_t async = tuttiSuccess;
        for (int i = 0; i < 200 && async == tuttiSuccess; ++i) {
          usleep(50 * 1000);
          tuttiCommGetAsyncError(comm, &async);
        }
        EXPECT_EQ(async, tuttiTimeout);
        EXPECT_NE(tuttiAllReduce(d, d, 1024, tuttiFloat32, tuttiSum, comm, nullptr), tuttiSuccess);
        EXPECT_NE(std::string(tuttiGetLastError(comm)).find("rank 1"), std::string::npos)
            << tuttiGetLastError(comm);
        // The waiting stream was released at once, not only when rank 1 wakes up (8 s in) and
        // submits work of its own.
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  1.5);
        tuttiCommAbort(comm);
        tuttiCommDestroy(comm);
        cudaFree(d);
        _exit(::testing::Test::HasFailure() ? kExitGtestFailure : 0);
      },
      60);
  EXPECT_RANKS_OK(result);
  EXPECT_LT(result.seconds, 30);
}

TEST(DeviceBuffers, HostDeviceMixIsRejected) {
  SKIP_WITHOUT_GPU();
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int rank) {
    tuttiComm_t comm;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 1, id, rank), nullptr);
    void* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 4096));
    std::vector<float> h(1024);
    EXPECT_EQ(tuttiAllReduce(h.data(), d, 1024, tuttiFloat32, tuttiSum, comm, nullptr),
              tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(comm)).find("same memory space"), std::string::npos)
        << tuttiGetLastError(comm);
    EXPECT_EQ(tuttiAllGather(d, h.data(), 1024, tuttiFloat32, comm, nullptr), tuttiInvalidArgument);
    // Send/receive have no device path: refused, naming it.
    EXPECT_EQ(tuttiSend(d, 1024, tuttiFloat32, 0, comm, nullptr), tuttiInvalidArgument);
    EXPECT_NE(std::string(tuttiGetLastError(comm)).find("host memory only"), std::string::npos)
        << tuttiGetLastError(comm);
    cudaFree(d);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

// Rank 2 of 3 dies while the others run a 64 MiB all-reduce on device buffers (direct: the
// automatic settings stage the first, small call and take the direct path for this one): they must
// get an error (naming a rank), not hang, well within the harness timeout. Staged (parameter false)
// the call itself fails; direct, the call returns once enqueued, the communicator's asynchronous
// error turns non-success, the next call fails naming the rank, and the stream that waited for the
// dead rank completes.
class DeviceBuffersKilled : public ::testing::TestWithParam<bool> {};

TEST_P(DeviceBuffersKilled, KilledRankTurnsIntoError) {
  SKIP_WITHOUT_GPU();
  const bool direct = GetParam();
  ScopedEnv env{{"TUTTI_TIMEOUT", "20"}, {"TUTTI_CUDA_DIRECT", direct ? "1" : "0"}};
  tuttiUniqueId id = makeId();
  auto result = runRanks(
      3,
      [&](int rank) {
        CUDA_OK(cudaSetDevice(0));
        tuttiComm_t comm;
        TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 3, id, rank), nullptr);
        const size_t count = 16 << 20;
        void* d = nullptr;
        CUDA_OK(cudaMalloc(&d, count * 4));
        CUDA_OK(cudaMemset(d, 0, count * 4));
        TUTTI_ASSERT_OK(tuttiAllReduce(d, d, 1024, tuttiFloat32, tuttiSum, comm, nullptr), comm);
        CUDA_OK(cudaDeviceSynchronize());
        if (rank == 2) {
          usleep(50 * 1000);  // let the others start the big one
          raise(SIGKILL);
        }
        tuttiResult_t r = tuttiAllReduce(d, d, count, tuttiFloat32, tuttiSum, comm, nullptr);
        if (direct) {
          EXPECT_EQ(r, tuttiSuccess) << tuttiGetLastError(comm);
          tuttiResult_t async = tuttiSuccess;
          for (int i = 0; i < 400 && async == tuttiSuccess; ++i) {
            usleep(50 * 1000);
            tuttiCommGetAsyncError(comm, &async);
          }
          EXPECT_NE(async, tuttiSuccess);
          r = tuttiAllReduce(d, d, 1024, tuttiFloat32, tuttiSum, comm, nullptr);
          EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // released, not hung
        }
        EXPECT_NE(r, tuttiSuccess);
        EXPECT_NE(std::string(tuttiGetLastError(comm)).find("rank"), std::string::npos)
            << tuttiGetLastError(comm);
        tuttiCommAbort(comm);
        _exit(::testing::Test::HasFailure() ? kExitGtestFailure : 0);
      },
      90);
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_TRUE(result.ranks[0].ok()) << result.describe();
  EXPECT_TRUE(result.ranks[1].ok()) << result.describe();
  EXPECT_EQ(result.ranks[2].signal, SIGKILL) << result.describe();
  EXPECT_LT(result.seconds, 60);
}

INSTANTIATE_TEST_SUITE_P(Path, DeviceBuffersKilled, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "direct" : "staged"; });

// Where CUDA is not usable, memory the process cannot read (as a device pointer would be)
// is reported as such instead of crashing the host path.
TEST(NoCuda, UnreadablePointerGetsClearError) {
  if (gpuMissingReason().empty()) GTEST_SKIP() << "CUDA is usable here; covered by the GPU tests";
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int rank) {
    tuttiComm_t comm;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 1, id, rank), nullptr);
    void* p = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    std::vector<float> h(1024, 1.0f);
    EXPECT_EQ(tuttiAllReduce(p, p, 1024, tuttiFloat32, tuttiSum, comm, nullptr),
              tuttiInvalidArgument);
    std::string msg = tuttiGetLastError(comm);
    EXPECT_NE(msg.find("not readable host memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDA is not available"), std::string::npos) << msg;
    EXPECT_EQ(tuttiBroadcast(h.data(), p, 1024, tuttiFloat32, 0, comm, nullptr),
              tuttiInvalidArgument);
    // Send/receive refuse it too, before touching it (also inside a group).
    EXPECT_EQ(tuttiSend(p, 1024, tuttiFloat32, 0, comm, nullptr), tuttiInvalidArgument);
    msg = tuttiGetLastError(comm);
    EXPECT_NE(msg.find("not readable host memory"), std::string::npos) << msg;
    EXPECT_EQ(tuttiRecv(p, 1024, tuttiFloat32, 0, comm, nullptr), tuttiInvalidArgument);
    EXPECT_EQ(tuttiGroupStart(), tuttiSuccess);
    EXPECT_EQ(tuttiRecv(p, 16, tuttiFloat32, 0, comm, nullptr), tuttiInvalidArgument);
    EXPECT_EQ(tuttiGroupEnd(), tuttiInvalidArgument);  // the group held a refused call
    // Host buffers still work.
    EXPECT_EQ(tuttiAllReduce(h.data(), h.data(), 1024, tuttiFloat32, tuttiSum, comm, nullptr),
              tuttiSuccess);
    EXPECT_EQ(h[5], 1.0f);
    munmap(p, 1 << 16);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

// The readability check caches what it learnt (/proc/self/maps at the first miss, pages, and
// the maps again once misses pile up, as with buffers moving through a big allocation):
// mappings made after that are still classified right, readable or not.
TEST(NoCuda, ReadabilityCacheSeesMappingsMadeLater) {
  if (gpuMissingReason().empty()) GTEST_SKIP() << "CUDA is usable here; covered by the GPU tests";
  tuttiUniqueId id = makeId();
  auto result = runRanks(1, [&](int rank) {
    tuttiComm_t comm;
    TUTTI_ASSERT_OK(tuttiCommInitRank(&comm, 1, id, rank), nullptr);
    std::vector<float> big((4 << 20) / sizeof(float), 1.0f);
    for (size_t page = 0; page < 256; ++page) {  // 256 distinct pages: the maps get loaded
      float* b = big.data() + page * 1024;
      TUTTI_ASSERT_OK(tuttiAllReduce(b, b, 16, tuttiFloat32, tuttiSum, comm, nullptr), comm);
    }
    void* bad = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(bad, MAP_FAILED);
    EXPECT_EQ(tuttiAllReduce(bad, bad, 16, tuttiFloat32, tuttiSum, comm, nullptr),
              tuttiInvalidArgument);
    void* good = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(good, MAP_FAILED);
    for (int i = 0; i < 20; ++i) {  // repeated: past the miss count that reloads the maps
      float* g = static_cast<float*>(good) + (i % 16) * 1024;
      TUTTI_ASSERT_OK(tuttiAllReduce(g, g, 16, tuttiFloat32, tuttiSum, comm, nullptr), comm);
      EXPECT_EQ(tuttiAllReduce(bad, bad, 16, tuttiFloat32, tuttiSum, comm, nullptr),
                tuttiInvalidArgument);
    }
    munmap(bad, 1 << 16);
    munmap(good, 1 << 16);
    TUTTI_ASSERT_OK(tuttiCommDestroy(comm), nullptr);
  });
  EXPECT_RANKS_OK(result);
}

}  // namespace
}  // namespace tutti::test
