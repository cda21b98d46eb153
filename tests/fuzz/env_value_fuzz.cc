// Fuzz target: environment variable values. The input is one of
//   NAME=VALUE   a registered TUTTI_* variable gets VALUE (to the first NUL); its typed
//                accessor and the parser that reads it (timeout, log level and subsystems, bind
//                mode, secret, port, interface filter, compressor) must accept it or refuse it
//                with an error naming the variable (unregistered names are skipped);
//   @launch\n... a launcher environment: the rest, split at '\n', sets TUTTI_RANK,
//                TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_ADDR, TUTTI_SECRET, RANK,
//                WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TUTTI_PORT in that order
//                (empty: unset); launchInfoFromEnv() must return a consistent rank, size and
//                secret or refuse with tuttiInvalidArgument.
#include <cstdlib>
#include <string>
#include <vector>

#include "bootstrap/env_init.h"
#include "bootstrap/secret.h"
#include "bootstrap/sock_addr.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/log.h"
#include "compress/codec.h"
#include "fuzz_util.h"
#include "topology/binding.h"
#include "transports/tcp/interfaces.h"

namespace {

using namespace tutti;

constexpr const char* kLaunchVars[] = {
    "TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_ADDR",  "TUTTI_SECRET", "RANK",
    "WORLD_SIZE", "LOCAL_RANK",       "MASTER_ADDR",      "MASTER_PORT", "TUTTI_PORT"};

// Every variable the target may set, unset before each input (the process starts clean).
void clearEnvironment() {
  for (const env::Var& v : env::all()) unsetenv(v.name);
  for (const char* n : kLaunchVars) unsetenv(n);
}

std::vector<transport::tcp::Interface> fakeInterfaces() {
  std::vector<transport::tcp::Interface> all(3);
  all[0].name = "lo";
  all[0].loopback = true;
  all[1].name = "eth0";
  all[2].name = "ib0";
  return all;
}

void typedValue(const env::Var& v) {
  const std::string name = v.name;
  fuzz::refusesCleanly(
      [&] {
        switch (v.type) {
          case env::Type::kInt:
            (void)env::getInt(name);
            break;
          case env::Type::kBool:
            (void)env::getBool(name);
            break;
          case env::Type::kDouble:
            (void)env::getDouble(name);
            break;
          case env::Type::kString:
            (void)env::getString(name);
            break;
        }
      },
      tuttiInvalidArgument, name);
}

// The parser that consumes the variable, where one exists apart from a communicator.
void specificParser(const std::string& name) {
  auto clean = [&](auto&& fn) { return fuzz::refusesCleanly(fn, tuttiInvalidArgument, name); };
  const std::string value = env::getString(name);
  if (name == "TUTTI_TIMEOUT") {
    clean([&] {
      Deadline d = Deadline::fromEnv();
      if (d.msLeft() < 0) fuzz::bug("TUTTI_TIMEOUT: negative msLeft");
      if (d.expired() && d.totalSeconds() > 1) fuzz::bug("TUTTI_TIMEOUT: expired at once");
    });
  } else if (name == "TUTTI_DEBUG" || name == "TUTTI_DEBUG_SUBSYS") {
    log::reconfigure();  // unknown values are warned about, never fatal
  } else if (name == "TUTTI_BIND") {
    clean([&] { (void)topo::parseBindMode(value); });
  } else if (name == "TUTTI_SECRET") {
    clean([&] { (void)bootstrap::secretFromHex(value, name); });
  } else if (name == "TUTTI_PORT") {
    clean([&] { (void)bootstrap::parsePort(value, name); });
  } else if (name == "TUTTI_SOCKET_IFNAME") {
    // No interface matching the filter is a tuttiSystemError listing what exists.
    fuzz::refusesCleanly(
        [&] { (void)transport::tcp::selectInterfaces(fakeInterfaces(), value, false); },
        tuttiSystemError, "TUTTI_SOCKET_IFNAME");
  } else if (name == "TUTTI_COMPRESS") {
    fuzz::refusesCleanly([&] { (void)compress::makeCodec(value); }, tuttiInvalidArgument,
                         "compression spec");
  }
}

void launcher(fuzz::Input& in) {
  for (const char* n : kLaunchVars) {
    std::string v(in.until('\n'));
    if (v.find('\0') != std::string::npos) v.resize(v.find('\0'));
    if (!v.empty()) setenv(n, v.c_str(), 1);
  }
  bootstrap::LaunchInfo info;
  if (!fuzz::refusesCleanly([&] { info = bootstrap::launchInfoFromEnv(); }, tuttiInvalidArgument,
                            ""))
    return;
  if (info.nranks <= 0 || info.rank < 0 || info.rank >= info.nranks)
    fuzz::bug("launchInfoFromEnv accepted rank " + std::to_string(info.rank) + " of " +
              std::to_string(info.nranks));
  if (info.localRank < -1 || info.localRank >= info.nranks)
    fuzz::bug("launchInfoFromEnv accepted local rank " + std::to_string(info.localRank));
  if (info.secretHex.size() != 32) fuzz::bug("launch secret is not 32 hex digits");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  clearEnvironment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  clearEnvironment();
  fuzz::Input in(data, size);
  if (in.remaining().substr(0, 8) == "@launch\n") {
    in.take(8);
    launcher(in);
  } else {
    const std::string name(in.until('='));
    for (const env::Var& v : env::all()) {
      if (name != v.name) continue;
      const std::string value(in.until('\0'));
      // Log lines (a bad TUTTI_DEBUG value is a warning) go nowhere.
      if (name != "TUTTI_DEBUG_FILE") setenv("TUTTI_DEBUG_FILE", "/dev/null", 1);
      setenv(v.name, value.c_str(), 1);
      typedValue(v);
      specificParser(v.name);
    }
  }
  clearEnvironment();
  log::reconfigure();
  return 0;
}
