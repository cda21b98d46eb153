// Asks every rank at once (query.h).
#include "query.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "bootstrap/sock_addr.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/host_name.h"
#include "common/process_gone.h"
#include "common/unique_fd.h"
#include "inspect/responder.h"

namespace tutti::inspect {

namespace {

struct Pending {
  UniqueFd fd;
  std::string request, reply;
  size_t sent = 0;
  bool connected = false, done = false, refused = false;
  std::chrono::steady_clock::time_point start;
};

// Starts a non-blocking connect to "host:port|token"; false (with why) when it cannot.
bool startQuery(const std::string& address, Pending& p, std::string* why) {
  const size_t bar = address.rfind('|');
  if (bar == std::string::npos) {
    *why = "its address '" + address + "' is malformed";
    return false;
  }
  try {
    const auto addr = bootstrap::SockAddr::parse(address.substr(0, bar), "responder address");
    p.fd.reset(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!p.fd.valid()) throwSystemError("socket");
    p.request = std::string(Responder::kHello) + " " + address.substr(bar + 1) + "\n";
    p.start = std::chrono::steady_clock::now();
    if (::connect(p.fd.get(), addr.sa(), addr.len) == 0) {
      p.connected = true;
    } else if (errno != EINPROGRESS) {
      p.refused = true;
      p.done = true;
    }
  } catch (const Error& e) {
    *why = e.what();
    return false;
  }
  return true;
}

// One step on a readable/writable socket.
void advance(Pending& p, short revents) {
  if (!p.connected) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(p.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      p.refused = err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH;
      p.done = true;
      return;
    }
    p.connected = true;
  }
  if (p.sent < p.request.size()) {
    const ssize_t n =
        ::send(p.fd.get(), p.request.data() + p.sent, p.request.size() - p.sent, MSG_NOSIGNAL);
    if (n > 0) p.sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN && errno != EINTR) p.done = true;
    return;
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
  char buf[16384];
  const ssize_t n = ::recv(p.fd.get(), buf, sizeof buf, 0);
  if (n > 0) p.reply.append(buf, static_cast<size_t>(n));
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) p.done = true;
}

void pollAll(std::vector<Pending>& pending, double timeoutSec) {
  Deadline deadline(timeoutSec);
  std::vector<pollfd> fds;
  std::vector<size_t> which;
  for (;;) {
    fds.clear();
    which.clear();
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (p.done || !p.fd.valid()) continue;
      const bool writing = !p.connected || p.sent < p.request.size();
      fds.push_back({p.fd.get(), static_cast<short>(writing ? POLLOUT : POLLIN), 0});
      which.push_back(i);
    }
    const int left = deadline.msLeft();
    if (fds.empty() || left <= 0) return;
    const int n = ::poll(fds.data(), fds.size(), left);
    if (n < 0 && errno != EINTR) return;
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents != 0) advance(pending[which[k]], fds[k].revents);
  }
}

// The answer of one rank from its finished (or not) query.
RankAnswer answerOf(const JobRank& r, Pending& p, double timeoutSec) {
  RankAnswer a;
  a.rank = r.rank;
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start).count();
  const std::string ok = std::string(Responder::kHello) + " ok\n";
  if (p.done && p.reply.compare(0, ok.size(), ok) == 0) {
    try {
      a.report = decode(p.reply.substr(ok.size()));
      a.answered = true;
      return a;
    } catch (const Error& e) {
      a.why = std::string("its answer is malformed: ") + e.what();
      return a;
    }
  }
  if (p.done && p.reply.rfind(std::string(Responder::kHello) + " denied", 0) == 0) {
    a.why = "it refused the job file's token (another job now listens at that address)";
    return a;
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g s", timeoutSec);
  a.why = p.refused ? "refused: nothing listens at its address any more"
          : p.done  ? "it closed the connection without an answer"
                    : std::string("no answer within ") + secs;
  a.gone = p.refused;
  return a;
}

}  // namespace

std::string processState(const std::string& host, long pid) {
  if (host != hostName() || pid <= 0) return "";
  switch (tutti::processState(static_cast<pid_t>(pid))) {
    case 0:
      return "gone";
    case 'T':
    case 't':
      return "stopped";
    case 'Z':
    case 'X':
      return "zombie";
    case 'D':
      return "in uninterruptible sleep";
    case 'R':
      return "running";
    case '?':
      return "of a state that cannot be read";
    default:
      return "sleeping";
  }
}

std::vector<RankAnswer> queryJob(const JobFile& job, double timeoutSec) {
  std::vector<Pending> pending(job.ranks.size());
  std::vector<std::string> early(job.ranks.size());
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    if (job.ranks[i].address.empty())
      early[i] = "it has no responder (TUTTI_INSPECT=0, or it could not listen)";
    else
      startQuery(job.ranks[i].address, pending[i], &early[i]);
  }
  pollAll(pending, timeoutSec);
  std::vector<RankAnswer> out;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const JobRank& r = job.ranks[i];
    RankAnswer a;
    if (!early[i].empty()) {
      a.rank = r.rank;
      a.why = early[i];
    } else {
      a = answerOf(r, pending[i], timeoutSec);
    }
    if (!a.answered) {
      const std::string state = processState(r.host, r.pid);
      if (state == "gone" || state == "zombie") a.gone = true;
      if (!state.empty())
        a.why += "; its process (pid " + std::to_string(r.pid) + ") is " +
                 (state == "stopped" ? "stopped (SIGSTOP or a debugger)" : state);
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace tutti::inspect
