// The process's responder to tutti-inspect (responder.h).
#include "inspect/responder.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "bootstrap/tcp_store.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/host_name.h"
#include "common/unique_fd.h"

namespace tutti::inspect {

namespace {

constexpr double kReadSec = 0.5;   // for the client's request line
constexpr double kWriteSec = 1.0;  // for the report to leave
constexpr size_t kMaxRequest = 256;

struct State {
  std::mutex mu;  // everything below; held while the statuses are taken
  pid_t pid = 0;  // the process that started the thread (0: none running)
  std::unique_ptr<std::thread> thread;
  UniqueFd listenFd;  // shut down to end the thread (one descriptor a process, no wake-up fd)
  bootstrap::Secret token{};
  std::string address;
  std::map<uint64_t, Responder::Status> entries;
  uint64_t nextId = 1;
};

State& state();

// A forked child has the parent's memory but not its thread: it forgets both (closing its
// copies of the fds) and starts its own at its first registration.
void atforkPrepare() { state().mu.lock(); }
void atforkParent() { state().mu.unlock(); }
void atforkChild() {
  State& s = state();
  if (s.pid != 0) {
    (void)s.thread.release();  // the parent's thread: nothing of it runs here
    s.listenFd.reset();        // this process's copy: the parent's socket stays
    s.pid = 0;
    s.address.clear();
  }
  s.entries.clear();
  s.mu.unlock();
}

State& state() {
  static State* const s = [] {
    auto* st = new State();  // never destroyed: a communicator may outlive static destructors
    ::pthread_atfork(atforkPrepare, atforkParent, atforkChild);
    return st;
  }();
  return *s;
}

// Reads the request line ("TUTTI-INSPECT 1 <token>") within kReadSec: whether it carries the
// token.
bool readRequest(int fd, const bootstrap::Secret& token) {
  std::string line;
  Deadline deadline(kReadSec);
  while (line.find('\n') == std::string::npos && line.size() < kMaxRequest) {
    pollfd p{fd, POLLIN, 0};
    const int left = deadline.msLeft();
    if (left <= 0 || ::poll(&p, 1, left) <= 0) return false;
    char buf[kMaxRequest];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    line.append(buf, static_cast<size_t>(n));
  }
  const std::string hello = std::string(Responder::kHello) + " ";
  const size_t nl = line.find('\n');
  if (nl == std::string::npos || line.compare(0, hello.size(), hello) != 0) return false;
  try {
    return bootstrap::secretEqual(
        bootstrap::secretFromHex(line.substr(hello.size(), nl - hello.size())), token);
  } catch (const Error&) {
    return false;
  }
}

void writeAll(int fd, const std::string& text) {
  size_t done = 0;
  Deadline deadline(kWriteSec);
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return;
    pollfd p{fd, POLLOUT, 0};
    const int left = deadline.msLeft();
    if (left <= 0 || ::poll(&p, 1, left) < 0) return;
  }
}

std::string report(State& s) {
  ProcessReport r{hostName(), static_cast<long>(::getpid()), {}};
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [id, status] : s.entries) {
    try {
      r.comms.push_back(status());
    } catch (const std::exception&) {
      // a communicator that cannot say: the others still answer
    }
  }
  return encode(r);
}

// Serves until the listening socket is shut down (it then polls as hung up and accept fails
// with EINVAL).
void serve(int listenFd, bootstrap::Secret token) {
  ::pthread_setname_np(::pthread_self(), "tutti-inspect");
  State& s = state();
  for (;;) {
    pollfd p{listenFd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return;
    UniqueFd conn(::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn.valid()) {
      if (errno == EINVAL || errno == EBADF) return;
      continue;
    }
    if (!readRequest(conn.get(), token)) {
      writeAll(conn.get(), std::string(Responder::kHello) + " denied\n");
      continue;
    }
    writeAll(conn.get(), std::string(Responder::kHello) + " ok\n" + report(s));
  }
}

void start(State& s, const std::string& bindHost) {
  const auto bind = bootstrap::SockAddr::resolve(bindHost, 0, "tutti-inspect responder address");
  UniqueFd listenFd(bootstrap::TcpStoreServer::listenSocket(bind));
  s.token = bootstrap::randomSecret();
  s.address =
      bootstrap::SockAddr::local(listenFd.get()).toString() + "|" + bootstrap::secretToHex(s.token);
  s.listenFd = std::move(listenFd);
  s.thread = std::make_unique<std::thread>(serve, s.listenFd.get(), s.token);
  s.pid = ::getpid();
}

}  // namespace

Responder::Registration Responder::add(const std::string& bindHost, Status status) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.pid == 0) start(s, bindHost);
  Registration r;
  r.id_ = s.nextId++;
  r.address_ = s.address;
  s.entries.emplace(r.id_, std::move(status));
  return r;
}

Responder::Registration& Responder::Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    release();
    id_ = o.id_;
    address_ = std::move(o.address_);
    o.id_ = 0;
  }
  return *this;
}

void Responder::Registration::release() {
  if (id_ == 0) return;
  State& s = state();
  std::unique_ptr<std::thread> thread;
  UniqueFd listenFd;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.entries.erase(id_) == 0 || !s.entries.empty() || s.pid != ::getpid()) {
      id_ = 0;
      return;
    }
    thread = std::move(s.thread);
    listenFd = std::move(s.listenFd);
    s.pid = 0;
    s.address.clear();
  }
  id_ = 0;
  ::shutdown(listenFd.get(), SHUT_RDWR);  // wakes the thread's poll
  if (thread) thread->join();
}  // closes listenFd after the thread stopped using it

}  // namespace tutti::inspect
