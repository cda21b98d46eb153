#include "launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "common/unique_fd.h"

namespace tutti::tuttirun {

namespace {

using Clock = std::chrono::steady_clock;

struct Rank {
  pid_t pid = -1;
  bool done = false;
  int status = 0;
};

struct OutPipe {
  tutti::UniqueFd fd;
  int rank = 0;
  int dest = 1;  // 1 stdout, 2 stderr
  std::string partial;
};

// Binds a TCP socket to `port` on 127.0.0.1 and releases it: the port bound (0: the one the
// kernel chose), or -1 when that port is taken.
int bindLoopback(int port) {
  const tutti::UniqueFd owned(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int fd = owned.get();
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (port != 0 && errno == EADDRINUSE) return -1;
    throw std::runtime_error(std::string("cannot pick a port on 127.0.0.1: ") +
                             std::strerror(errno));
  }
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error(std::string("getsockname: ") + std::strerror(errno));
  return ntohs(a.sin_port);
}

// A free TCP port on 127.0.0.1 (bound and released; rank 0 binds it again at once), drawn
// from 10000-19999: below the kernel's ephemeral range (32768-60999 by default) and the Slurm
// launch's ports (from 20000). A port that bind(0) hands out is one the kernel also hands to
// outgoing connections, which may take it between this probe and the rank's own bind
// (torch's store once failed with EADDRINUSE so).
int freeLoopbackPort() {
  constexpr int kFirst = 10000, kCount = 10000;
  std::random_device seed;
  std::mt19937 rng(seed());
  for (int tries = 0; tries < 64; ++tries) {
    const int port = kFirst + static_cast<int>(rng() % kCount);
    if (bindLoopback(port) == port) return port;
  }
  return bindLoopback(0);  // that range is taken: the kernel's choice
}

void writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

// Opens /var/run/netns/<name> for every host (O_CLOEXEC: the ranks do not inherit them).
std::vector<tutti::UniqueFd> openNamespaces(const std::vector<std::string>& hosts) {
  if (::geteuid() != 0)
    throw std::runtime_error(
        "--hosts needs root: entering a network namespace (setns CLONE_NEWNET) needs "
        "CAP_SYS_ADMIN; run tuttirun as root or drop --hosts");
  std::vector<tutti::UniqueFd> fds;
  for (const auto& h : hosts) {
    std::string path = "/var/run/netns/" + h;
    tutti::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      int err = errno;
      throw std::runtime_error("network namespace '" + h + "' not found (" + path + ": " +
                               std::strerror(err) + "); create it with `ip netns add " + h +
                               "` or tools/netns-cluster.sh up N");
    }
    fds.push_back(std::move(fd));
  }
  return fds;
}

// In a short-lived child that enters the namespace: its first non-loopback IPv4 address that
// is up, and a free TCP port on it. Returns "a.b.c.d:port".
std::string probeNamespaceAddr(int nsFd, const std::string& name) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  tutti::UniqueFd readEnd(p[0]), writeEnd(p[1]);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    readEnd.reset();
    auto reply = [&](const std::string& s) {
      writeAll(writeEnd.get(), s);
      ::_exit(0);
    };
    if (::setns(nsFd, CLONE_NEWNET) != 0) reply(std::string("!setns: ") + std::strerror(errno));
    ifaddrs* ifs = nullptr;
    if (::getifaddrs(&ifs) != 0) reply(std::string("!getifaddrs: ") + std::strerror(errno));
    sockaddr_in found{};
    bool have = false;
    for (ifaddrs* i = ifs; i && !have; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
      if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
      found = *reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      have = true;
    }
    ::freeifaddrs(ifs);
    if (!have) reply("!it has no non-loopback IPv4 address that is up");
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    found.sin_port = 0;
    socklen_t len = sizeof(found);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&found), sizeof(found)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&found), &len) != 0)
      reply(std::string("!cannot pick a port: ") + std::strerror(errno));
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &found.sin_addr, ip, sizeof(ip));
    reply(std::string(ip) + ":" + std::to_string(ntohs(found.sin_port)));
  }
  writeEnd.reset();
  std::string out;
  char buf[256];
  for (;;) {
    ssize_t n = ::read(readEnd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  readEnd.reset();
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (out.empty() || out[0] == '!')
    throw std::runtime_error("cannot find rank 0's address in network namespace '" + name +
                             "': " + (out.empty() ? std::string("probe failed") : out.substr(1)));
  return out;
}

// torch.distributed's launch variables (torchrun's names), so init_process_group works
// under tuttirun: MASTER_PORT is a port of its own, never TUTTI_ADDR's.
struct TorchVars {
  std::string masterAddr;
  std::string masterPort;
  std::vector<int> localWorldSize;  // per rank: ranks on its host
};

[[noreturn]] void execRank(const Options& o, int rank, int localRank, int host, int nsFd,
                           const std::string& addr, const std::string& secret,
                           const TorchVars& torch, pid_t parent, int outFd, int errFd,
                           const sigset_t& oldMask) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  if (nsFd >= 0 && ::setns(nsFd, CLONE_NEWNET) != 0) {
    writeAll(2, "tuttirun: rank " + std::to_string(rank) + ": setns into network namespace '" +
                    o.hosts[host] + "' failed: " + std::strerror(errno) + "\n");
    ::_exit(127);
  }
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);
  if (outFd >= 0) ::dup2(outFd, 1);
  if (errFd >= 0) ::dup2(errFd, 2);
  ::setenv("TUTTI_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("TUTTI_WORLD_SIZE", std::to_string(o.nranks).c_str(), 1);
  ::setenv("TUTTI_LOCAL_RANK", std::to_string(localRank).c_str(), 1);
  ::setenv("TUTTI_ADDR", addr.c_str(), 1);
  ::setenv("TUTTI_SECRET", secret.c_str(), 1);
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(o.nranks).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(localRank).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(torch.localWorldSize[rank]).c_str(), 1);
  ::setenv("MASTER_ADDR", torch.masterAddr.c_str(), 1);
  ::setenv("MASTER_PORT", torch.masterPort.c_str(), 1);
  // As torchrun does: unless set, OpenMP (torch's intra-op threads) gets the host's cores
  // shared among its ranks, not all of them in every rank (spin-waiting threads of 4 ranks
  // on 2 cores made a DDP job 60 times slower).
  if (::getenv("OMP_NUM_THREADS") == nullptr) {
    const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    const long share = std::max(1L, cores / std::max(1L, long{torch.localWorldSize[rank]}));
    ::setenv("OMP_NUM_THREADS", std::to_string(share).c_str(), 1);
  }
  for (const auto& [k, v] : o.env) ::setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::string msg = "tuttirun: rank " + std::to_string(rank) + ": cannot execute '" + o.command[0] +
                    "': " + std::strerror(errno) + "\n";
  writeAll(2, msg);
  ::_exit(127);
}

int statusToCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "ended";
}

}  // namespace

std::vector<int> placeRanks(int nranks, const std::vector<int>& slots) {
  int nh = static_cast<int>(slots.size());
  if (nh == 0) return std::vector<int>(nranks, -1);
  int perHost = (nranks + nh - 1) / nh;
  std::vector<int> out;
  for (int h = 0; h < nh && static_cast<int>(out.size()) < nranks; ++h) {
    int cap = slots[h] > 0 ? slots[h] : perHost;
    for (int k = 0; k < cap && static_cast<int>(out.size()) < nranks; ++k) out.push_back(h);
  }
  if (static_cast<int>(out.size()) < nranks)
    throw std::runtime_error("the hosts' slots hold only " + std::to_string(out.size()) +
                             " ranks, -np asks for " + std::to_string(nranks));
  return out;
}

void parseHostEntry(const std::string& entry, std::vector<std::string>* hosts,
                    std::vector<int>* slots) {
  size_t colon = entry.find(':');
  std::string name = entry.substr(0, colon);
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw std::runtime_error("bad host '" + entry + "': expected a namespace name[:slots]");
  int n = 0;
  if (colon != std::string::npos) {
    std::string v = entry.substr(colon + 1);
    char* end = nullptr;
    long s = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || s <= 0 || s > 4096)
      throw std::runtime_error("bad host '" + entry + "': slots must be 1..4096");
    n = static_cast<int>(s);
  }
  hosts->push_back(name);
  slots->push_back(n);
}

void parseHostsFile(const std::string& path, std::vector<std::string>* hosts,
                    std::vector<int>* slots) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read hosts file '" + path + "': " + std::strerror(errno));
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    size_t e = line.find_last_not_of(" \t\r");
    parseHostEntry(line.substr(b, e - b + 1), hosts, slots);
  }
  if (hosts->empty()) throw std::runtime_error("hosts file '" + path + "' lists no host");
}

namespace {

// Where the job runs: each rank's host, the namespaces, rank 0's store address, the local
// ranks, torch's variables and the job's secret.
struct JobPlan {
  std::vector<int> hostOf;
  std::vector<tutti::UniqueFd> nsFds;  // empty without --hosts
  std::string addr;
  std::vector<int> localRank;
  TorchVars torch;
  std::string secret;

  int nsFdOf(int rank) const { return nsFds.empty() ? -1 : nsFds[hostOf[rank]].get(); }
};

// A free "host:port" on rank 0's host.
std::string freeAddrOnRank0Host(const Options& o, const JobPlan& plan) {
  return o.hosts.empty() ? "127.0.0.1:" + std::to_string(freeLoopbackPort())
                         : probeNamespaceAddr(plan.nsFdOf(0), o.hosts[plan.hostOf[0]]);
}

JobPlan planJob(const Options& o) {
  JobPlan plan;
  plan.hostOf = placeRanks(o.nranks, o.slots);
  if (!o.hosts.empty()) plan.nsFds = openNamespaces(o.hosts);
  plan.addr = freeAddrOnRank0Host(o, plan);
  plan.localRank.resize(o.nranks);
  std::vector<int> seen(o.hosts.size() + 1, 0);
  for (int r = 0; r < o.nranks; ++r) plan.localRank[r] = seen[plan.hostOf[r] + 1]++;
  for (int r = 0; r < o.nranks; ++r) plan.torch.localWorldSize.push_back(seen[plan.hostOf[r] + 1]);
  // A second free port on rank 0's host for torch's own store (torch binds MASTER_PORT).
  const size_t colon = plan.addr.rfind(':');
  plan.torch.masterAddr = plan.addr.substr(0, colon);
  for (int tries = 0; tries < 8 && (plan.torch.masterPort.empty() ||
                                    plan.torch.masterPort == plan.addr.substr(colon + 1));
       ++tries) {
    const std::string probe = freeAddrOnRank0Host(o, plan);
    plan.torch.masterPort = probe.substr(probe.rfind(':') + 1);
  }
  plan.secret = bootstrap::secretToHex(bootstrap::randomSecret());
  return plan;
}

// The launcher's signals (INT, TERM, HUP, CHLD) arrive on a signalfd while it lives; the mask
// before it is restored on destruction. SIGPIPE is ignored.
class JobSignals {
 public:
  JobSignals() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&mask, sig);
    ::sigprocmask(SIG_BLOCK, &mask, &oldMask_);
    ::signal(SIGPIPE, SIG_IGN);
    fd_.reset(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_.valid()) {
      const int err = errno;
      ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
      throw std::runtime_error(std::string("signalfd: ") + std::strerror(err));
    }
  }
  JobSignals(const JobSignals&) = delete;
  JobSignals& operator=(const JobSignals&) = delete;
  ~JobSignals() { ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr); }

  int fd() const { return fd_.get(); }
  const sigset_t& oldMask() const { return oldMask_; }

 private:
  sigset_t oldMask_;
  tutti::UniqueFd fd_;
};

// Forks every rank (each its own process group); with --tag-output their stdout and stderr
// come back through pipes.
void startRanks(const Options& o, const JobPlan& plan, const sigset_t& oldMask,
                std::vector<Rank>& ranks, std::vector<OutPipe>& pipes) {
  const pid_t self = ::getpid();
  std::fflush(nullptr);
  for (int r = 0; r < o.nranks; ++r) {
    int outP[2] = {-1, -1}, errP[2] = {-1, -1};
    if (o.tagOutput && (::pipe2(outP, O_CLOEXEC) != 0 || ::pipe2(errP, O_CLOEXEC) != 0))
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    tutti::UniqueFd outRead(outP[0]), outWrite(outP[1]), errRead(errP[0]), errWrite(errP[1]);
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0)
      execRank(o, r, plan.localRank[r], plan.hostOf[r], plan.nsFdOf(r), plan.addr, plan.secret,
               plan.torch, self, outWrite.get(), errWrite.get(), oldMask);
    ::setpgid(pid, pid);  // also from the parent: no race with an early kill(-pid)
    ranks[r].pid = pid;
    if (o.tagOutput) {  // the write ends close here: only the rank writes them
      pipes.push_back({std::move(outRead), r, 1, {}});
      pipes.push_back({std::move(errRead), r, 2, {}});
    }
  }
}

// Writes the complete lines of a rank's output (all of it at eof), each tagged "[rank] ".
void flushPipe(OutPipe& p, bool eof) {
  size_t nl;
  while ((nl = p.partial.find('\n')) != std::string::npos) {
    writeAll(p.dest, "[" + std::to_string(p.rank) + "] " + p.partial.substr(0, nl + 1));
    p.partial.erase(0, nl + 1);
  }
  if (eof && !p.partial.empty()) {
    writeAll(p.dest, "[" + std::to_string(p.rank) + "] " + p.partial + "\n");
    p.partial.clear();
  }
}

// The running job: its ranks, its exit code, and the stop (SIGTERM to every rank's group, then
// SIGKILL after the grace period) that a failed rank, a signal or the timeout starts.
class JobWatch {
 public:
  JobWatch(const Options& o, std::vector<Rank>& ranks) : o_(o), ranks_(ranks), alive_(o.nranks) {}

  int alive() const { return alive_; }
  int result() const { return result_; }

  void signalAll(int sig) {
    for (auto& rk : ranks_) ::kill(-rk.pid, sig);  // the whole group: grandchildren too
  }
  void startFailing(int code) {
    if (result_ == 0) result_ = code;
    if (!failing_) {
      failing_ = true;
      termAt_ = Clock::now();
      signalAll(SIGTERM);
    }
  }
  void readSignals(int sigFd) {
    signalfd_siginfo si;
    while (::read(sigFd, &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo == SIGCHLD) continue;
      std::fprintf(stderr, "tuttirun: received signal %d (%s), stopping all ranks\n", si.ssi_signo,
                   strsignal(si.ssi_signo));
      startFailing(128 + static_cast<int>(si.ssi_signo));
    }
  }
  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (int r = 0; r < o_.nranks; ++r) {
        if (ranks_[r].pid != pid || ranks_[r].done) continue;
        ranks_[r].done = true;
        ranks_[r].status = status;
        --alive_;
        int code = statusToCode(status);
        if (code != 0 && !failing_) {
          std::fprintf(stderr, "tuttirun: rank %d (pid %d) %s; stopping the other ranks\n", r, pid,
                       describe(status).c_str());
        }
        if (code != 0) startFailing(code);
      }
    }
  }
  void checkDeadlines() {
    auto now = Clock::now();
    if (o_.timeoutSec > 0 && !failing_ &&
        std::chrono::duration<double>(now - start_).count() > o_.timeoutSec) {
      std::fprintf(stderr, "tuttirun: timeout of %.1f s reached, stopping all ranks\n",
                   o_.timeoutSec);
      startFailing(124);
    }
    if (failing_ && !killed_ && alive_ > 0 &&
        std::chrono::duration<double>(now - termAt_).count() >= o_.killGraceSec) {
      signalAll(SIGKILL);
      killed_ = true;
    }
  }

 private:
  const Options& o_;
  std::vector<Rank>& ranks_;
  int alive_;
  int result_ = 0;
  bool failing_ = false;  // SIGTERM sent
  bool killed_ = false;   // SIGKILL sent
  Clock::time_point termAt_{};
  Clock::time_point start_ = Clock::now();
};

// Reads what is ready on the pipes (fds[1..] are theirs, in order); a pipe at its end is
// flushed and closed.
void forwardOutput(const std::vector<pollfd>& fds, std::vector<OutPipe>& pipes) {
  for (size_t i = 1; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    OutPipe& p = pipes[i - 1];
    char buf[65536];
    ssize_t n = ::read(p.fd.get(), buf, sizeof(buf));
    if (n > 0) {
      p.partial.append(buf, static_cast<size_t>(n));
      flushPipe(p, false);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      flushPipe(p, true);
      p.fd.reset();
    }
  }
}

}  // namespace

int runJob(const Options& o) {
  const JobPlan plan = planJob(o);
  const JobSignals signals;
  std::vector<Rank> ranks(o.nranks);
  std::vector<OutPipe> pipes;
  startRanks(o, plan, signals.oldMask(), ranks, pipes);
  JobWatch job(o, ranks);
  Clock::time_point drainUntil{};
  bool draining = false;
  for (;;) {
    std::erase_if(pipes, [](const OutPipe& p) { return !p.fd.valid(); });
    if (job.alive() == 0) {
      if (!draining) {
        job.signalAll(SIGKILL);  // nothing of the job may outlive it
        draining = true;
        drainUntil = Clock::now() + std::chrono::seconds(1);
      }
      if (pipes.empty() || Clock::now() >= drainUntil) break;
    }
    std::vector<pollfd> fds;
    fds.push_back({signals.fd(), POLLIN, 0});
    for (auto& p : pipes) fds.push_back({p.fd.get(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    if (fds[0].revents) job.readSignals(signals.fd());
    forwardOutput(fds, pipes);
    job.reap();
    job.checkDeadlines();
  }
  for (auto& p : pipes) flushPipe(p, true);
  return job.result();
}

}  // namespace tutti::tuttirun
