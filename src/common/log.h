// Logging by level and subsystem: TUTTI_DEBUG, TUTTI_DEBUG_SUBSYS, TUTTI_DEBUG_FILE.
// Each line: "host:pid:rank LEVEL SUBSYS message".
#pragma once

#include <sstream>
#include <string>

namespace tutti::log {

enum class Level { kNone = 0, kError = 1, kWarn = 2, kInfo = 3, kTrace = 4 };
enum class Subsys : unsigned {
  kInit = 1u << 0,
  kBootstrap = 1u << 1,
  kTopo = 1u << 2,
  kTransport = 1u << 3,
  kAlgo = 1u << 4,
  kTuning = 1u << 5,
  kColl = 1u << 6,
  kP2p = 1u << 7,
  kCompress = 1u << 8,
  kExec = 1u << 9,
  kPerf = 1u << 10,
};

bool enabled(Level level, Subsys subsys);
// True when any subsystem of `mask` (bits(...) of Subsys values) logs at `level`: one check on
// a hot path whose slow path serves several subsystems (the API layer: COLL or P2P, and PERF).
bool enabledAny(Level level, unsigned mask);
constexpr unsigned bits(Subsys s) { return static_cast<unsigned>(s); }
void write(Level level, Subsys subsys, const std::string& message);

// The rank shown in this thread's log lines (-1: none). Set by communicator calls.
void setThreadRank(int rank);
int threadRank();

// Re-reads the environment (tests change it between cases).
void reconfigure();

// A file name pattern with %h (the host name) and %p (the pid) expanded; any other %c is c
// (%% a percent sign). TUTTI_DEBUG_FILE and TUTTI_TOPO_DUMP_FILE use it.
std::string expandPath(const std::string& pattern, const std::string& host);
std::string expandPath(const std::string& pattern);

}  // namespace tutti::log

#define TUTTI_LOG(level, subsys, expr)                                                     \
  do {                                                                                     \
    if (::tutti::log::enabled(::tutti::log::Level::level, ::tutti::log::Subsys::subsys)) { \
      std::ostringstream tutti_log_os_;                                                    \
      tutti_log_os_ << expr;                                                               \
      ::tutti::log::write(::tutti::log::Level::level, ::tutti::log::Subsys::subsys,        \
                          tutti_log_os_.str());                                            \
    }                                                                                      \
  } while (0)

#define TUTTI_WARN(subsys, expr) TUTTI_LOG(kWarn, subsys, expr)
#define TUTTI_INFO(subsys, expr) TUTTI_LOG(kInfo, subsys, expr)
#define TUTTI_TRACE(subsys, expr) TUTTI_LOG(kTrace, subsys, expr)
