#include "common/log.h"

#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include "common/env.h"
#include "common/host_name.h"

namespace tutti::log {

namespace {

struct SubsysName {
  const char* name;
  Subsys bit;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", Subsys::kInit},         {"BOOTSTRAP", Subsys::kBootstrap},
    {"TOPO", Subsys::kTopo},         {"TRANSPORT", Subsys::kTransport},
    {"ALGO", Subsys::kAlgo},         {"TUNING", Subsys::kTuning},
    {"COLL", Subsys::kColl},         {"P2P", Subsys::kP2p},
    {"COMPRESS", Subsys::kCompress}, {"EXEC", Subsys::kExec},
    {"PERF", Subsys::kPerf},         {"TUNE", Subsys::kTuning},  // TUNE: TUNING's short name
};

const char* subsysName(Subsys s) {
  for (const auto& n : kSubsysNames)
    if (n.bit == s) return n.name;
  return "?";
}

const char* levelName(Level l) {
  switch (l) {
    case Level::kError:
      return "ERROR";
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

struct Config {
  Level level = Level::kWarn;
  unsigned mask = ~0u;
  FILE* out = stderr;
  std::string host;
};

// Unknown values keep the default (WARN, all subsystems) and leave a warning in *problems:
// logging must not stop a job, but a misspelt setting must not pass silently either.
Level parseLevel(const std::string& s, std::string* problems) {
  if (s.empty() || strcasecmp(s.c_str(), "WARN") == 0) return Level::kWarn;
  if (strcasecmp(s.c_str(), "NONE") == 0) return Level::kNone;
  if (strcasecmp(s.c_str(), "ERROR") == 0) return Level::kError;
  if (strcasecmp(s.c_str(), "INFO") == 0) return Level::kInfo;
  if (strcasecmp(s.c_str(), "TRACE") == 0) return Level::kTrace;
  *problems += "TUTTI_DEBUG=" + s +
               " is not a log level (NONE, ERROR, WARN, INFO, TRACE); logging at WARN\n";
  return Level::kWarn;
}

unsigned parseMask(const std::string& s, std::string* problems) {
  std::string_view text = s;
  bool negate = !text.empty() && text[0] == '^';
  if (negate) text.remove_prefix(1);
  unsigned mask = 0;
  std::string unknown;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string name(text.substr(0, comma));
    bool known = strcasecmp(name.c_str(), "ALL") == 0;
    if (known) mask = ~0u;
    for (const auto& n : kSubsysNames) {
      if (strcasecmp(name.c_str(), n.name) == 0) {
        mask |= static_cast<unsigned>(n.bit);
        known = true;
      }
    }
    if (!known && !name.empty()) unknown += (unknown.empty() ? "" : ", ") + name;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (!unknown.empty()) {
    if (!negate && mask == 0) mask = ~0u;  // nothing known named: the default, ALL
    std::string names;
    for (const auto& n : kSubsysNames) names += std::string(n.name) + ", ";
    *problems += "TUTTI_DEBUG_SUBSYS=" + s + ": unknown subsystem(s) " + unknown +
                 " ignored (known: " + names + "ALL)\n";
  }
  return negate ? ~mask : mask;
}

std::mutex& mutex() {
  static std::mutex m;
  return m;
}

Config& config() {
  static Config c;
  return c;
}

bool& configured() {
  static bool b = false;
  return b;
}

void configureLocked() {
  Config& c = config();
  c.host = hostName();
  std::string problems;
  try {
    c.level = parseLevel(env::getString("TUTTI_DEBUG"), &problems);
    c.mask = parseMask(env::getString("TUTTI_DEBUG_SUBSYS"), &problems);
    std::string file = env::getString("TUTTI_DEBUG_FILE");
    if (c.out != stderr) fclose(c.out);
    c.out = stderr;
    if (!file.empty()) {
      const std::string path = expandPath(file, c.host);
      FILE* f = fopen(path.c_str(), "a");
      if (f != nullptr) {
        c.out = f;
      } else {
        problems += "TUTTI_DEBUG_FILE=" + file + ": cannot open " + path + " (" +
                    std::strerror(errno) + "); logging to stderr\n";
      }
    }
  } catch (...) {
  }
  configured() = true;
  // Whatever the subsystem mask, unless logging is off.
  if (c.level == Level::kNone) return;
  for (size_t at = 0; at < problems.size();) {
    size_t nl = problems.find('\n', at);
    fprintf(c.out, "%s:%d:%d tutti WARN INIT %s\n", c.host.c_str(), static_cast<int>(getpid()), -1,
            problems.substr(at, nl - at).c_str());
    at = nl + 1;
  }
  fflush(c.out);
}

// Set at every collective call: one store (TLS model: see api/group.cc).
thread_local int tlsRank = -1;

}  // namespace

void reconfigure() {
  std::lock_guard<std::mutex> lock(mutex());
  configureLocked();
}

bool enabledAny(Level level, unsigned mask) {
  // Asked on hot paths (every collective call): one acquire load once configured.
  static std::atomic<bool> ready{false};
  if (!ready.load(std::memory_order_acquire)) [[unlikely]] {
    std::lock_guard<std::mutex> lock(mutex());
    if (!configured()) configureLocked();
    ready.store(true, std::memory_order_release);
  }
  const Config& c = config();
  return level != Level::kNone && level <= c.level && (c.mask & mask) != 0;
}

bool enabled(Level level, Subsys subsys) { return enabledAny(level, bits(subsys)); }

void write(Level level, Subsys subsys, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex());
  Config& c = config();
  fprintf(c.out, "%s:%d:%d tutti %s %s %s\n", c.host.c_str(), static_cast<int>(getpid()), tlsRank,
          levelName(level), subsysName(subsys), message.c_str());
  fflush(c.out);
}

void setThreadRank(int rank) { tlsRank = rank; }
int threadRank() { return tlsRank; }

std::string expandPath(const std::string& pattern, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h')
        out += host;
      else if (c == 'p')
        out += std::to_string(getpid());
      else
        out += c;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::string expandPath(const std::string& pattern) { return expandPath(pattern, hostName()); }

}  // namespace tutti::log
