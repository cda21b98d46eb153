#include "bootstrap/env_init.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "bootstrap/hostlist.h"
#include "bootstrap/pmi_simple.h"
#include "bootstrap/pmix_launch.h"
#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "common/env.h"
#include "common/error.h"

namespace tutti::bootstrap {

namespace {

std::optional<std::string> foreign(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<std::string> anyVar(const std::string& name) {
  if (name.rfind("TUTTI_", 0) == 0) return env::raw(name);
  return foreign(name.c_str());
}

int parseInt(const std::string& name, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < INT32_MIN || v > INT32_MAX)
    fail(tuttiInvalidArgument, name, "='", text, "' is not an integer");
  return static_cast<int>(v);
}

uint64_t parseUnsigned(const std::string& name, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || errno != 0 || *end != '\0')
    fail(tuttiInvalidArgument, name, "='", text, "' is not a non-negative integer");
  return v;
}

int required(const std::string& name, const std::string& launcher) {
  auto v = anyVar(name);
  if (!v) fail(tuttiInvalidArgument, launcher, " launch: ", name, " is not set");
  return parseInt(name, *v);
}

// Validates "host:port" / "[v6]:port" without resolving the host.
void checkHostPort(const std::string& name, const std::string& text) {
  size_t colon = text.rfind(':');
  bool v6 = !text.empty() && text[0] == '[';
  if (colon == std::string::npos || colon == 0 || (v6 && text[colon - 1] != ']') ||
      (!v6 && text.find(':') != colon))
    fail(tuttiInvalidArgument, name, "='", text,
         "' is not host:port (write IPv6 addresses as [addr]:port)");
  parsePort(text.substr(colon + 1), name);
}

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string derivedSecret(const LaunchInfo& info) {
  std::string job;
  for (const char* n :
       {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID"}) {
    if (auto v = foreign(n)) job += std::string(n) + "=" + *v + ";";
  }
  std::string text =
      "tutti|" + info.source + "|" + info.addr + "|" + std::to_string(info.nranks) + "|" + job;
  Secret s{};
  uint64_t a = fnv1a(text, 1469598103934665603ull), b = fnv1a(text, 0x9e3779b97f4a7c15ull);
  for (int i = 0; i < 8; ++i) {
    s[i] = static_cast<uint8_t>(a >> (8 * i));
    s[8 + i] = static_cast<uint8_t>(b >> (8 * i));
  }
  return secretToHex(s);
}

// A Slurm step without an address: rank 0 runs on the first node of the step (Slurm places
// task 0 there under every built-in distribution), and the port comes from the step's
// reserved ports or from the job and step ids (docs/launching.md).
void slurmAddress(LaunchInfo& info) {
  std::string host;
  for (const char* n : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (auto v = foreign(n)) {
      host = firstHost(*v, n);
      break;
    }
  }
  if (host.empty()) {
    if (auto ip = foreign("SLURM_LAUNCH_NODE_IPADDR")) host = *ip;
  }
  if (host.empty())
    fail(tuttiInvalidArgument,
         "slurm launch: no rendezvous address: none of SLURM_STEP_NODELIST, "
         "SLURM_JOB_NODELIST, SLURM_NODELIST, SLURM_LAUNCH_NODE_IPADDR is set; set "
         "TUTTI_ADDR=host:port");
  int port = 0;
  if (auto p = env::raw("TUTTI_PORT")) {
    port = parsePort(*p, "TUTTI_PORT");
  } else if (auto resv = foreign("SLURM_STEP_RESV_PORTS")) {
    // "12000-12003" or "12000,12005": the first port is this step's alone.
    size_t end = resv->find_first_of("-,");
    port = parsePort(resv->substr(0, end), "SLURM_STEP_RESV_PORTS");
  } else {
    auto job = foreign("SLURM_JOB_ID");
    if (!job) job = foreign("SLURM_JOBID");
    if (!job)
      fail(tuttiInvalidArgument,
           "slurm launch: SLURM_JOB_ID is not set (it picks the rendezvous port); set TUTTI_PORT "
           "or TUTTI_ADDR");
    auto step = foreign("SLURM_STEP_ID");
    if (!step) step = foreign("SLURM_STEPID");
    port = slurmPort(parseUnsigned("SLURM_JOB_ID", *job),
                     step ? parseUnsigned("SLURM_STEP_ID", *step) : 0);
  }
  bool v6 = host.find(':') != std::string::npos && host[0] != '[';
  info.addr = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  info.bindAddr = (v6 ? std::string("[::]") : std::string("0.0.0.0")) + ":" + std::to_string(port);
}

}  // namespace

int slurmPort(uint64_t jobId, uint64_t stepId) {
  return static_cast<int>(kSlurmPortBase + (jobId * 16 + stepId) % kSlurmPortRange);
}

namespace {

struct Launcher {
  const char* source;
  const char* rank;
  const char* size;
  const char* local;
};
constexpr Launcher kLaunchers[] = {
    {"tuttirun", "TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"hydra", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

// The first launcher whose rank variable is set; null when none is.
const Launcher* launcherInEnv() {
  for (const auto& cand : kLaunchers)
    if (anyVar(cand.rank)) return &cand;
  return nullptr;
}

LaunchInfo pmixLaunchInfo() {
  PmixJob job = pmixJob();
  LaunchInfo info;
  info.source = "pmix";
  info.rank = job.rank;
  info.nranks = job.nranks;
  info.localRank = job.localRank;
  info.viaLauncher = true;
  return info;
}

// The launcher's rank, rank count and local rank, checked.
LaunchInfo ranksOf(const Launcher& l) {
  LaunchInfo info;
  info.source = l.source;
  info.rank = required(l.rank, l.source);
  info.nranks = required(l.size, l.source);
  if (info.nranks <= 0)
    fail(tuttiInvalidArgument, l.size, "=", info.nranks, " must be a positive rank count");
  if (info.rank < 0 || info.rank >= info.nranks)
    fail(tuttiInvalidArgument, l.rank, "=", info.rank, " is out of range for ", l.size, "=",
         info.nranks, " (0..", info.nranks - 1, ")");
  if (auto v = anyVar(l.local)) {
    info.localRank = parseInt(l.local, *v);
    if (info.localRank < 0 || info.localRank >= info.nranks)
      fail(tuttiInvalidArgument, l.local, "=", info.localRank, " is out of range (0..",
           info.nranks - 1, ")");
  }
  return info;
}

// MASTER_ADDR's host with tutti's port: TUTTI_PORT, else MASTER_PORT + 1 (torch's own store
// listens on MASTER_PORT; docs/bootstrap.md).
std::string masterAddress(const LaunchInfo& info, const std::string& host) {
  auto port = foreign("MASTER_PORT");
  if (!port)
    fail(tuttiInvalidArgument, info.source, " launch: MASTER_ADDR is set but MASTER_PORT is not");
  int masterPort = parsePort(*port, "MASTER_PORT");
  int tuttiPort = masterPort + 1;
  if (auto p = env::raw("TUTTI_PORT")) {
    tuttiPort = parsePort(*p, "TUTTI_PORT");
  } else if (tuttiPort > 65535) {
    fail(tuttiInvalidArgument, info.source, " launch: MASTER_PORT=", masterPort,
         " leaves no MASTER_PORT + 1 for tutti's rendezvous: set TUTTI_PORT");
  }
  bool v6 = host.find(':') != std::string::npos && host[0] != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(tuttiPort);
}

// Where the rendezvous is: info.addr, or a store file (TUTTI_STORE_FILE, read later). False
// when the launcher gives it instead (hydra's PMI-1: rank 0's address and secret, rendezvous.cc).
bool findRendezvous(LaunchInfo& info, const Launcher& l) {
  const bool storeFile = env::isSet("TUTTI_STORE_FILE");
  if (auto a = env::raw("TUTTI_ADDR")) {
    checkHostPort("TUTTI_ADDR", *a);
    info.addr = *a;
  } else if (auto host = foreign("MASTER_ADDR")) {
    info.addr = masterAddress(info, *host);
  } else if (!storeFile && info.source == "slurm") {
    slurmAddress(info);
  } else if (!storeFile && info.source == "hydra" && underPmiSimple()) {
    info.viaLauncher = true;
    return false;
  } else if (!storeFile) {
    fail(tuttiInvalidArgument, info.source, " launch: no rendezvous address for ", l.rank, "=",
         info.rank,
         underPmixServer() && !pmixAvailable()
             ? " (a PMIx server would give it, but tutti was built without PMIx: install "
               "libpmix-dev and rebuild)"
             : "",
         ": set TUTTI_ADDR=host:port, or MASTER_ADDR and MASTER_PORT, or "
         "TUTTI_STORE_FILE=<shared directory>");
  }
  return true;
}

}  // namespace

LaunchInfo launchInfoFromEnv() {
  const Launcher* l = launcherInEnv();
  bool explicitAddr =
      env::isSet("TUTTI_ADDR") || foreign("MASTER_ADDR") || env::isSet("TUTTI_STORE_FILE");
  bool byTutti = l != nullptr && (l == &kLaunchers[0] || l == &kLaunchers[1]);
  if (!byTutti && !explicitAddr && underPmixServer() && pmixAvailable()) return pmixLaunchInfo();
  if (!l)
    fail(tuttiInvalidArgument,
         "init from environment: no launcher variables found (set TUTTI_RANK/TUTTI_WORLD_SIZE/"
         "TUTTI_ADDR, launch with tuttirun, torchrun, mpirun or srun)");
  LaunchInfo info = ranksOf(*l);
  if (!findRendezvous(info, *l)) return info;
  if (auto s = env::raw("TUTTI_SECRET")) {
    secretFromHex(*s, "TUTTI_SECRET");
    info.secretHex = *s;
  } else {
    info.secretHex = derivedSecret(info);
  }
  return info;
}

}  // namespace tutti::bootstrap
