// The flight recorder on a signal (trace_dump_signal.h).
#include "comm/trace_dump_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/log.h"

namespace tutti {

namespace {

int gPipeWrite = -1;  // the handler's end (set once, before any signal is armed)

void onSignal(int signo) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(signo);
  [[maybe_unused]] ssize_t n = ::write(gPipeWrite, &b, 1);  // full pipe: a dump is pending
  errno = saved;
}

struct Armed {
  ProcessRegistry<TraceDumpSignal::Dump> dumps;
  std::mutex mutex;  // signals, the thread's start
  std::set<int> signals;
  bool started = false;
};

Armed& armed() {
  static Armed* const a = new Armed();  // never destroyed: the thread outlives main()
  return *a;
}

void startThread(Armed& a) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throwSystemError("TUTTI_DUMP_SIGNAL: pipe");
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  gPipeWrite = fds[1];
  std::thread([readFd = fds[0], &a] {
    for (;;) {
      unsigned char b = 0;
      const ssize_t n = ::read(readFd, &b, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n != 1) return;
      const std::string cause = "signal " + TraceDumpSignal::name(b);
      a.dumps.visit([&](const TraceDumpSignal::Dump& dump) {
        dump(cause);
        return false;  // every communicator
      });
    }
  }).detach();
  a.started = true;
}

}  // namespace

TraceDumpSignal::Registration TraceDumpSignal::add(int signo, Dump dump) {
  Armed& a = armed();
  {
    std::lock_guard<std::mutex> lock(a.mutex);
    if (!a.started) startThread(a);
    if (a.signals.insert(signo).second) {
      struct sigaction sa {};
      sa.sa_handler = onSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      if (::sigaction(signo, &sa, nullptr) != 0) {
        a.signals.erase(signo);
        throwSystemError("TUTTI_DUMP_SIGNAL: sigaction(" + name(signo) + ")");
      }
      TUTTI_INFO(kInit, "TUTTI_DUMP_SIGNAL: " << name(signo) << " dumps the flight recorders");
    }
  }
  return a.dumps.add(std::move(dump));
}

int TraceDumpSignal::parse(const std::string& value) {
  if (value.empty() || value == "off" || value == "0") return 0;
  std::string v = value.rfind("SIG", 0) == 0 ? value.substr(3) : value;
  if (v == "USR1") return SIGUSR1;
  if (v == "USR2") return SIGUSR2;
  int signo = -1;
  try {
    size_t used = 0;
    signo = std::stoi(v, &used);
    if (used != v.size()) signo = -1;
  } catch (const std::exception&) {
    signo = -1;
  }
  TUTTI_CHECK_ARG(signo == SIGUSR1 || signo == SIGUSR2 || (signo >= SIGRTMIN && signo <= SIGRTMAX),
                  "TUTTI_DUMP_SIGNAL=", value,
                  ": use off, USR1, USR2 or a real-time signal's number (", SIGRTMIN, "-", SIGRTMAX,
                  ")");
  return signo;
}

std::string TraceDumpSignal::name(int signo) {
  if (signo == SIGUSR1) return "SIGUSR1";
  if (signo == SIGUSR2) return "SIGUSR2";
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) return "SIGRTMIN+" + std::to_string(signo - SIGRTMIN);
  return "signal " + std::to_string(signo);
}

}  // namespace tutti
