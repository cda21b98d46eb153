// bootstrap-scale: what communicator init costs at the bootstrap's store as the job grows.
//
//   bootstrap-scale [--ranks 8,32,64,128,256] [--modes store,ring,ring+split] [--reps 1]
//
// For each rank count and mode (TUTTI_BOOTSTRAP_RING=1 / 0) it starts a TcpStoreServer in
// this process, forks that many processes on this machine, each of which calls
// tuttiCommInitRank with a unique id naming that server and then tuttiCommDestroy (with
// "+split": between the two, a tuttiCommSplit into two colors by rank parity and a 256-int32
// all-reduce on the child, checked, then the child's destroy), and
// prints one line: the job's init time (first fork to the last rank's init returning), the
// median rank's init call, the requests the store served (total, per rank, GETs), the most
// keys and bytes it held, the keys left after every rank destroyed its communicator, and for
// rank 0 and the median rank: peak resident memory (VmHWM) and the file descriptors its init
// opened (here the store server lives in this process, not in rank 0's as in a real job).
// The server stands in for rank 0's: tuttiCommInitRank puts it in rank 0's process.
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "tutti/tutti.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int> parseList(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    const char* c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return out;
}

constexpr int kMaxRanks = 2048;

struct Shared {
  double start[kMaxRanks];
  double done[kMaxRanks];
  long hwmKiB[kMaxRanks];  // VmHWM after init
  int fds[kMaxRanks];      // descriptors opened by init
  int status[kMaxRanks];   // 0 ok, else the tuttiResult_t of the failed call
};

struct Row {
  double initS, medianRankS;
  tutti::bootstrap::TcpStoreStats stats;
  int failed;
  long hwmKiB0, hwmKiBMedian;
  int fds0, fdsMedian;
};

int openFds() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    --n;  // the directory's own descriptor
  }
  return n;
}

long peakResidentKiB() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

template <typename T>
T medianOf(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The child's all-reduce: rank r contributes r * 1000 + i at element i, in int32 (exact at
// any order up to 2048 ranks; float32 sums pass 2^24 from 512 ranks and round).
tuttiResult_t splitAndReduce(tuttiComm_t comm, int rank) {
  tuttiComm_t child = nullptr;
  tuttiResult_t res = tuttiCommSplit(comm, rank % 2, rank, &child, nullptr);
  if (res != tuttiSuccess) return res;
  int size = 0;
  tuttiCommCount(child, &size);
  std::vector<int32_t> v(256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(rank * 1000 + i);
  res = tuttiAllReduce(v.data(), v.data(), v.size(), tuttiInt32, tuttiSum, child, nullptr);
  // Members: ranks of this parity, r = rank % 2 + 2k for k < size.
  int64_t rankSum = 0;
  for (int k = 0; k < size; ++k) rankSum += rank % 2 + 2 * k;
  for (size_t i = 0; res == tuttiSuccess && i < v.size(); ++i)
    if (v[i] != rankSum * 1000 + size * static_cast<int64_t>(i)) {
      std::fprintf(stderr, "rank %d: child all-reduce element %zu is %d\n", rank, i, v[i]);
      res = tuttiInternalError;
    }
  tuttiResult_t d = tuttiCommDestroy(child);
  return res != tuttiSuccess ? res : d;
}

Row runJob(int n, bool ring, bool split) {
  using namespace tutti::bootstrap;
  Secret secret = randomSecret();
  TcpStoreServer server("127.0.0.1:0", secret);
  tuttiUniqueId id = encodeUniqueId({server.sockAddr(), secret});
  auto* sh = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (sh == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  std::memset(sh, 0, sizeof(Shared));
  ::setenv("TUTTI_BOOTSTRAP_RING", ring ? "1" : "0", 1);
  double t0 = now();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      std::exit(1);
    }
    if (pid == 0) {
      // Not the server's descriptors (its listener, the connections of the ranks forked
      // before): a connection the server closes would otherwise stay open here, and its
      // rank would wait for an answer instead of seeing the close (no real rank is forked
      // from the store's process).
      ::close_range(3, ~0U, 0);
      const int fdsBefore = openFds();
      sh->start[r] = now();
      tuttiComm_t comm = nullptr;
      tuttiResult_t res = tuttiCommInitRank(&comm, n, id, r);
      sh->done[r] = now();
      sh->fds[r] = openFds() - fdsBefore;
      sh->hwmKiB[r] = peakResidentKiB();
      if (res == tuttiSuccess && split) res = splitAndReduce(comm, r);
      if (res == tuttiSuccess) res = tuttiCommDestroy(comm);
      if (res != tuttiSuccess)
        std::fprintf(
            stderr, "rank %d: %s\n", r,
            *tuttiGetLastError(comm) ? tuttiGetLastError(comm) : tuttiGetLastError(nullptr));
      sh->status[r] = res;
      std::fflush(stderr);
      ::_exit(res == tuttiSuccess ? 0 : 1);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  Row row{};
  row.failed = failed;
  double last = 0;
  std::vector<double> per;
  for (int r = 0; r < n; ++r) {
    last = std::max(last, sh->done[r]);
    per.push_back(sh->done[r] - sh->start[r]);
  }
  row.initS = last - t0;
  row.medianRankS = medianOf(per);
  row.hwmKiB0 = sh->hwmKiB[0];
  row.hwmKiBMedian = medianOf(std::vector<long>(sh->hwmKiB, sh->hwmKiB + n));
  row.fds0 = sh->fds[0];
  row.fdsMedian = medianOf(std::vector<int>(sh->fds, sh->fds + n));
  row.stats = server.stats();
  munmap(sh, sizeof(Shared));
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks = {8, 32, 64, 128, 256};
  std::vector<std::string> modes = {"store", "ring"};
  int reps = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) {
      ranks = parseList(argv[++i]);
    } else if (a == "--modes" && i + 1 < argc) {
      modes.clear();
      std::string m = argv[++i];
      for (size_t p = 0; p <= m.size();) {
        size_t c = m.find(',', p);
        if (c == std::string::npos) c = m.size();
        modes.push_back(m.substr(p, c - p));
        p = c + 1;
      }
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: bootstrap-scale [--ranks 8,32,..] [--modes store,ring,ring+split] "
                   "[--reps N]\n");
      return 2;
    }
  }
  for (int n : ranks) {
    if (n < 1 || n > kMaxRanks) {
      std::fprintf(stderr, "bootstrap-scale: rank counts 1..%d\n", kMaxRanks);
      return 2;
    }
  }
  std::printf(
      "| mode | ranks | init s | median rank s | requests | per rank | GETs | peak keys "
      "| peak KiB | keys left | rank 0 MiB | median MiB | rank 0 fds | median fds |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  int bad = 0;
  for (int n : ranks) {
    for (const auto& m : modes) {
      for (int rep = 0; rep < reps; ++rep) {
        if (m != "store" && m != "ring" && m != "store+split" && m != "ring+split") {
          std::fprintf(stderr, "bootstrap-scale: unknown mode %s\n", m.c_str());
          return 2;
        }
        Row r = runJob(n, m.rfind("ring", 0) == 0, m.find("+split") != std::string::npos);
        const auto& s = r.stats;
        std::printf(
            "| %s | %d | %.2f | %.2f | %llu | %.1f | %llu | %llu | %.1f | %llu | %.1f | %.1f | %d "
            "| %d |%s\n",
            m.c_str(), n, r.initS, r.medianRankS, (unsigned long long)s.requests,
            double(s.requests) / n, (unsigned long long)s.byOp[2], (unsigned long long)s.peakKeys,
            s.peakBytes / 1024.0, (unsigned long long)s.keys, r.hwmKiB0 / 1024.0,
            r.hwmKiBMedian / 1024.0, r.fds0, r.fdsMedian,
            r.failed ? (" " + std::to_string(r.failed) + " rank(s) FAILED").c_str() : "");
        std::fflush(stdout);
        bad += r.failed;
      }
    }
  }
  return bad ? 1 : 0;
}
