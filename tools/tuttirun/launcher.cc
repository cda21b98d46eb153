#include "launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"

namespace tutti::tuttirun {

namespace {

using Clock = std::chrono::steady_clock;

struct Rank {
  pid_t pid = -1;
  bool done = false;
  int status = 0;
};

struct OutPipe {
  int fd = -1;
  int rank = 0;
  int dest = 1;  // 1 stdout, 2 stderr
  std::string partial;
};

// A free TCP port on 127.0.0.1 (bound and released; rank 0 binds it again at once).
int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string("cannot pick a port on 127.0.0.1: ") + std::strerror(err));
  }
  ::close(fd);
  return ntohs(a.sin_port);
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

[[noreturn]] void execRank(const Options& o, int rank, const std::string& addr,
                           const std::string& secret, pid_t parent, int outFd, int errFd,
                           const sigset_t& oldMask) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);
  if (outFd >= 0) ::dup2(outFd, 1);
  if (errFd >= 0) ::dup2(errFd, 2);
  ::setenv("TUTTI_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("TUTTI_WORLD_SIZE", std::to_string(o.nranks).c_str(), 1);
  ::setenv("TUTTI_LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("TUTTI_ADDR", addr.c_str(), 1);
  ::setenv("TUTTI_SECRET", secret.c_str(), 1);
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

int runJob(const Options& o) {
  std::string addr = "127.0.0.1:" + std::to_string(freeLoopbackPort());
  std::string secret = bootstrap::secretToHex(bootstrap::randomSecret());

  sigset_t mask, oldMask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &mask, &oldMask);
  ::signal(SIGPIPE, SIG_IGN);
  int sigFd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigFd < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

  std::vector<Rank> ranks(o.nranks);
  std::vector<OutPipe> pipes;
  pid_t self = ::getpid();
  std::fflush(nullptr);
  for (int r = 0; r < o.nranks; ++r) {
    int outP[2] = {-1, -1}, errP[2] = {-1, -1};
    if (o.tagOutput && (::pipe2(outP, O_CLOEXEC) != 0 || ::pipe2(errP, O_CLOEXEC) != 0))
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) execRank(o, r, addr, secret, self, outP[1], errP[1], oldMask);
    ::setpgid(pid, pid);  // also from the parent: no race with an early kill(-pid)
    ranks[r].pid = pid;
    if (o.tagOutput) {
      ::close(outP[1]);
      ::close(errP[1]);
      pipes.push_back({outP[0], r, 1, {}});
      pipes.push_back({errP[0], r, 2, {}});
    }
  }

  int result = 0;
  bool failing = false;  // SIGTERM sent
  bool killed = false;   // SIGKILL sent
  Clock::time_point termAt{};
  Clock::time_point start = Clock::now();
  int alive = o.nranks;
  auto signalAll = [&](int sig) {
    for (auto& rk : ranks) ::kill(-rk.pid, sig);  // the whole group: grandchildren too
  };
  auto startFailing = [&](int code) {
    if (result == 0) result = code;
    if (!failing) {
      failing = true;
      termAt = Clock::now();
      signalAll(SIGTERM);
    }
  };
  auto flushPipe = [&](OutPipe& p, bool eof) {
    size_t nl;
    while ((nl = p.partial.find('\n')) != std::string::npos) {
      writeAll(p.dest, "[" + std::to_string(p.rank) + "] " + p.partial.substr(0, nl + 1));
      p.partial.erase(0, nl + 1);
    }
    if (eof && !p.partial.empty()) {
      writeAll(p.dest, "[" + std::to_string(p.rank) + "] " + p.partial + "\n");
      p.partial.clear();
    }
  };
  Clock::time_point drainUntil{};
  bool draining = false;

  for (;;) {
    std::erase_if(pipes, [](const OutPipe& p) { return p.fd < 0; });
    if (alive == 0) {
      if (!draining) {
        signalAll(SIGKILL);  // nothing of the job may outlive it
        draining = true;
        drainUntil = Clock::now() + std::chrono::seconds(1);
      }
      if (pipes.empty() || Clock::now() >= drainUntil) break;
    }
    std::vector<pollfd> fds;
    fds.push_back({sigFd, POLLIN, 0});
    for (auto& p : pipes) fds.push_back({p.fd, POLLIN, 0});
    int timeoutMs = 200;
    ::poll(fds.data(), fds.size(), timeoutMs);

    if (fds[0].revents) {
      signalfd_siginfo si;
      while (::read(sigFd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) continue;
        std::fprintf(stderr, "tuttirun: received signal %d (%s), stopping all ranks\n",
                     si.ssi_signo, strsignal(si.ssi_signo));
        startFailing(128 + static_cast<int>(si.ssi_signo));
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      OutPipe& p = pipes[i - 1];
      char buf[65536];
      ssize_t n = ::read(p.fd, buf, sizeof(buf));
      if (n > 0) {
        p.partial.append(buf, static_cast<size_t>(n));
        flushPipe(p, false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        flushPipe(p, true);
        ::close(p.fd);
        p.fd = -1;
      }
    }
    // Reap.
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (int r = 0; r < o.nranks; ++r) {
        if (ranks[r].pid != pid || ranks[r].done) continue;
        ranks[r].done = true;
        ranks[r].status = status;
        --alive;
        int code = statusToCode(status);
        if (code != 0 && !failing) {
          std::fprintf(stderr, "tuttirun: rank %d (pid %d) %s; stopping the other ranks\n", r, pid,
                       describe(status).c_str());
        }
        if (code != 0) startFailing(code);
      }
    }
    auto now = Clock::now();
    if (o.timeoutSec > 0 && !failing &&
        std::chrono::duration<double>(now - start).count() > o.timeoutSec) {
      std::fprintf(stderr, "tuttirun: timeout of %.1f s reached, stopping all ranks\n",
                   o.timeoutSec);
      startFailing(124);
    }
    if (failing && !killed && alive > 0 &&
        std::chrono::duration<double>(now - termAt).count() >= o.killGraceSec) {
      signalAll(SIGKILL);
      killed = true;
    }
  }
  for (auto& p : pipes) {
    flushPipe(p, true);
    ::close(p.fd);
  }
  ::close(sigFd);
  ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);
  return result;
}

}  // namespace tutti::tuttirun
