#include "bootstrap/env_init.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

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

}  // namespace

LaunchInfo launchInfoFromEnv() {
  struct Launcher {
    const char* source;
    const char* rank;
    const char* size;
    const char* local;
  };
  static const Launcher kLaunchers[] = {
      {"tuttirun", "TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK"},
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
  };
  const Launcher* l = nullptr;
  for (const auto& cand : kLaunchers) {
    if (anyVar(cand.rank)) {
      l = &cand;
      break;
    }
  }
  if (!l)
    fail(tuttiInvalidArgument,
         "init from environment: no launcher variables found (set TUTTI_RANK/TUTTI_WORLD_SIZE/"
         "TUTTI_ADDR, launch with tuttirun, torchrun, mpirun or srun)");
  LaunchInfo info;
  info.source = l->source;
  info.rank = required(l->rank, l->source);
  info.nranks = required(l->size, l->source);
  if (info.nranks <= 0)
    fail(tuttiInvalidArgument, l->size, "=", info.nranks, " must be a positive rank count");
  if (info.rank < 0 || info.rank >= info.nranks)
    fail(tuttiInvalidArgument, l->rank, "=", info.rank, " is out of range for ", l->size, "=",
         info.nranks, " (0..", info.nranks - 1, ")");
  if (auto v = anyVar(l->local)) {
    info.localRank = parseInt(l->local, *v);
    if (info.localRank < 0 || info.localRank >= info.nranks)
      fail(tuttiInvalidArgument, l->local, "=", info.localRank, " is out of range (0..",
           info.nranks - 1, ")");
  }

  if (auto a = env::raw("TUTTI_ADDR")) {
    checkHostPort("TUTTI_ADDR", *a);
    info.addr = *a;
  } else if (auto host = foreign("MASTER_ADDR")) {
    auto port = foreign("MASTER_PORT");
    if (!port)
      fail(tuttiInvalidArgument, info.source, " launch: MASTER_ADDR is set but MASTER_PORT is not");
    // torch's own store listens on MASTER_PORT: tutti's rendezvous takes TUTTI_PORT, else
    // MASTER_PORT + 1 (docs/bootstrap.md).
    int masterPort = parsePort(*port, "MASTER_PORT");
    int tuttiPort = masterPort + 1;
    if (auto p = env::raw("TUTTI_PORT")) {
      tuttiPort = parsePort(*p, "TUTTI_PORT");
    } else if (tuttiPort > 65535) {
      fail(tuttiInvalidArgument, info.source, " launch: MASTER_PORT=", masterPort,
           " leaves no MASTER_PORT + 1 for tutti's rendezvous: set TUTTI_PORT");
    }
    bool v6 = host->find(':') != std::string::npos && (*host)[0] != '[';
    info.addr = (v6 ? "[" + *host + "]" : *host) + ":" + std::to_string(tuttiPort);
  } else if (!env::isSet("TUTTI_STORE_FILE")) {
    fail(tuttiInvalidArgument, info.source, " launch: no rendezvous address for ", l->rank, "=",
         info.rank,
         ": set TUTTI_ADDR=host:port, or MASTER_ADDR and MASTER_PORT, or "
         "TUTTI_STORE_FILE=<shared directory>");
  }

  if (auto s = env::raw("TUTTI_SECRET")) {
    secretFromHex(*s, "TUTTI_SECRET");
    info.secretHex = *s;
  } else {
    info.secretHex = derivedSecret(info);
  }
  return info;
}

}  // namespace tutti::bootstrap
