#include "tuning/cost_model.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/env.h"
#include "common/error.h"

namespace tutti::tuning {

CostModel CostModel::builtin() { return CostModel(BuiltinTag{}); }

namespace {

// The model of TUTTI_TUNING_FILE, cached per path.
CostModel fromEnvironment() {
  static std::mutex mu;
  static std::string cachedPath;
  static CostModel cached = CostModel::builtin();
  std::string path = env::getString("TUTTI_TUNING_FILE");
  std::lock_guard<std::mutex> lock(mu);
  if (path != cachedPath) {
    cached = path.empty() ? CostModel::builtin() : loadTuningFile(path);
    cachedPath = path;
  }
  return cached;
}

double positive(const std::string& file, int line, const std::string& key,
                const std::string& value) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0' || !(v >= 0) || v > 1e15)
    fail(tuttiInvalidArgument, "tuning file ", file, " line ", line, ": ", key,
         " needs a non-negative number, got '", value, "'");
  return v;
}

}  // namespace

CostModel::CostModel() : CostModel(fromEnvironment()) {}

CostModel loadTuningFile(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    fail(tuttiInvalidArgument, "tuning file ", path, ": cannot open (",
         std::string(std::strerror(errno)), ")");
  CostModel m = CostModel::builtin();
  m.origin = path;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (size_t hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream f(text);
    std::string key, value, extra;
    if (!(f >> key)) continue;
    if (!(f >> value) || (f >> extra))
      fail(tuttiInvalidArgument, "tuning file ", path, " line ", line,
           ": expected 'key value', got '", text, "'");
    double v = positive(path, line, key, value);
    auto bandwidth = [&] {
      if (v <= 0)
        fail(tuttiInvalidArgument, "tuning file ", path, " line ", line, ": ", key, " must be > 0");
      return 1.0 / (v * 1e9);
    };
    if (key == "shm.alpha_us") {
      m.intraHost.alpha = v * 1e-6;
    } else if (key == "shm.gbps") {
      m.intraHost.beta = bandwidth();
    } else if (key == "tcp.alpha_us") {
      m.interHost.alpha = v * 1e-6;
    } else if (key == "tcp.gbps") {
      m.interHost.beta = bandwidth();
    } else if (key == "gamma.gbps") {
      m.gammaPerByte = bandwidth();
    } else if (key == "nics_per_host") {
      m.nicsPerHost = std::max(1, static_cast<int>(v));
    } else if (key == "cores_per_host") {
      m.coresPerHost = static_cast<int>(v);
    } else {
      fail(tuttiInvalidArgument, "tuning file ", path, " line ", line, ": unknown key '", key,
           "' (known: shm.alpha_us shm.gbps tcp.alpha_us tcp.gbps gamma.gbps nics_per_host "
           "cores_per_host)");
    }
  }
  if (in.bad())
    fail(tuttiSystemError, "tuning file ", path, ": read error (",
         std::string(std::strerror(errno)), ")");
  return m;
}

std::string tuningFileText(const CostModel& m) {
  std::ostringstream os;
  os.precision(6);
  os << "shm.alpha_us " << m.intraHost.alpha * 1e6 << "\n"
     << "shm.gbps " << 1e-9 / m.intraHost.beta << "\n"
     << "tcp.alpha_us " << m.interHost.alpha * 1e6 << "\n"
     << "tcp.gbps " << 1e-9 / m.interHost.beta << "\n"
     << "gamma.gbps " << 1e-9 / m.gammaPerByte << "\n"
     << "nics_per_host " << m.nicsPerHost << "\n"
     << "cores_per_host " << m.coresPerHost << "\n";
  return os.str();
}

void writeTuningFile(const CostModel& m, const std::string& path, const std::string& comment) {
  std::ofstream out(path);
  if (!out)
    fail(tuttiSystemError, "tuning file ", path, ": cannot write (",
         std::string(std::strerror(errno)), ")");
  std::istringstream lines(comment);
  for (std::string l; std::getline(lines, l);) out << "# " << l << "\n";
  out << tuningFileText(m);
  if (!out.flush())
    fail(tuttiSystemError, "tuning file ", path, ": write failed (",
         std::string(std::strerror(errno)), ")");
}

}  // namespace tutti::tuning
