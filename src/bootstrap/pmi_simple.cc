#include "bootstrap/pmi_simple.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "common/error.h"

namespace tutti::bootstrap {
namespace {

const char* var(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The connection to the proxy, opened once per process (the fd Hydra handed over).
struct Connection {
  std::mutex mu;
  int fd = -1;
  std::string kvsName;
  std::string pending;  // bytes read past the last line
};

Connection& connection() {
  static Connection c;
  return c;
}

[[noreturn]] void pmiFail(const std::string& what) {
  fail(tuttiSystemError, "PMI launch (PMI_FD): ", what);
}

void sendLine(int fd, const std::string& line) {
  std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) pmiFail("writing '" + line + "' to the launcher: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

// One line from the proxy (without its newline), waiting until the deadline.
std::string readLine(Connection& c, const Deadline& deadline, const std::string& waitingFor) {
  for (;;) {
    if (size_t nl = c.pending.find('\n'); nl != std::string::npos) {
      std::string line = c.pending.substr(0, nl);
      c.pending.erase(0, nl + 1);
      return line;
    }
    pollfd p{c.fd, POLLIN, 0};
    int ms = deadline.msLeft();
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0)
      fail(tuttiTimeout, "PMI launch: no answer to ", waitingFor, " from the launcher within ",
           deadline.totalSeconds(), " s (did every rank of the job call the same init?)");
    char buf[1024];
    ssize_t n = ::read(c.fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      pmiFail("the launcher closed the connection while waiting for " + waitingFor +
              (n < 0 ? std::string(": ") + std::strerror(errno) : std::string()));
    c.pending.append(buf, static_cast<size_t>(n));
  }
}

// "cmd=x a=1 b=2" -> {cmd: x, a: 1, b: 2}.
std::map<std::string, std::string> parse(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    size_t eq = word.find('=');
    if (eq != std::string::npos) fields[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return fields;
}

// Sends `request` and reads the answer, which must be `cmd=<expected>` with rc 0 (when it
// carries an rc).
std::map<std::string, std::string> call(Connection& c, const std::string& request,
                                        const std::string& expected, const Deadline& deadline) {
  sendLine(c.fd, request);
  std::string line = readLine(c, deadline, "'" + request + "'");
  auto fields = parse(line);
  if (fields["cmd"] != expected || (fields.count("rc") && fields["rc"] != "0"))
    pmiFail("'" + request + "' was answered '" + line + "'");
  return fields;
}

void finalizeAtExit() {
  Connection& c = connection();
  std::lock_guard lock(c.mu);
  if (c.fd < 0) return;
  try {
    call(c, "cmd=finalize", "finalize_ack", Deadline(5));
  } catch (...) {  // the launcher is gone: nothing left to tell it
  }
  c.fd = -1;
}

// Opens the connection: cmd=init (PMI 1.1) and the job's key-value space name.
void connect(Connection& c, const Deadline& deadline) {
  const char* fdText = var("PMI_FD");
  if (fdText == nullptr)
    fail(tuttiUnsupported,
         "PMI launch: PMI_FD is not set (Hydra's -pmi-port mode, PMI_PORT, is not supported): "
         "set TUTTI_ADDR=host:port or launch without -pmi-port");
  char* end = nullptr;
  long fd = std::strtol(fdText, &end, 10);
  if (*end != '\0' || fd < 0 || fd > 1 << 20)
    fail(tuttiInvalidArgument, "PMI_FD='", fdText, "' is not a file descriptor");
  c.fd = static_cast<int>(fd);
  call(c, "cmd=init pmi_version=1 pmi_subversion=1", "response_to_init", deadline);
  c.kvsName = call(c, "cmd=get_my_kvsname", "my_kvsname", deadline)["kvsname"];
  if (c.kvsName.empty()) pmiFail("the launcher named no key-value space");
  std::atexit(finalizeAtExit);
}

}  // namespace

bool underPmiSimple() { return var("PMI_RANK") && var("PMI_SIZE") && var("PMI_FD"); }

std::string pmiSimpleBroadcastFromRank0(int rank, const std::string& key, const std::string& value,
                                        const Deadline& deadline) {
  Connection& c = connection();
  std::lock_guard lock(c.mu);
  if (c.fd < 0) connect(c, deadline);
  const std::string fullKey = "tutti." + key;
  if (rank == 0) {
    if (value.empty() || value.find_first_of(" \n=") != std::string::npos)
      fail(tuttiInternalError, "PMI launch: value '", value, "' cannot travel in PMI-1");
    call(c, "cmd=put kvsname=" + c.kvsName + " key=" + fullKey + " value=" + value, "put_result",
         deadline);
  }
  call(c, "cmd=barrier_in", "barrier_out", deadline);
  auto got = call(c, "cmd=get kvsname=" + c.kvsName + " key=" + fullKey, "get_result", deadline);
  if (got["value"].empty()) pmiFail("rank 0 put no " + fullKey);
  return got["value"];
}

}  // namespace tutti::bootstrap
