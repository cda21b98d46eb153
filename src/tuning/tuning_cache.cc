#include "tuning/tuning_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "common/unique_fd.h"

namespace tutti::tuning {

namespace {

// A cache file holds a few hundred lines; one larger than this is not one.
constexpr size_t kMaxCacheBytes = 1 << 20;
// The most a job waits for the cache's lock before it keeps nothing.
constexpr int kLockWaitSec = 2;

double nonNegative(const std::string& file, int line, const std::string& key,
                   const std::string& value) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0' || !(v >= 0) || v > 1e15)
    fail(tuttiInvalidArgument, "tuning file ", file, " line ", line, ": ", key,
         " needs a non-negative number, got '", value, "'");
  return v;
}

// The values a key may hold: a model built from them stays finite, and the file written from
// it reads back (a cache must never write what it then rejects).
struct KeyRange {
  const char* key;
  double lo, hi;
};
constexpr KeyRange kKeyRanges[] = {
    {"shm.alpha_us", 0, 1e7},
    {"tcp.alpha_us", 0, 1e7},  // up to 10 s
    {"shm.gbps", 1e-6, 1e6},
    {"tcp.gbps", 1e-6, 1e6},  // 1 kB/s to 1 PB/s
    {"gamma.gbps", 1e-6, 1e6},
    {"window.read_gbps", 1e-6, 1e6},
    {"window.read_small_gbps", 1e-6, 1e6},
    {"nics_per_host", 0, 1024},
    {"cores_per_host", 0, 1e6},
};

void applyModelKey(CostModel& m, const std::string& file, int line, const std::string& key,
                   const std::string& value) {
  double v = nonNegative(file, line, key, value);
  for (const KeyRange& r : kKeyRanges)
    if (key == r.key && (v < r.lo || v > r.hi))
      fail(tuttiInvalidArgument, "tuning file ", file, " line ", line, ": ", key, " ", value,
           " is out of range (", r.lo, " to ", r.hi, ")");
  auto bandwidth = [&] { return 1.0 / (v * 1e9); };
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
  } else if (key == "window.read_gbps") {
    m.windowReadBeta = bandwidth();
  } else if (key == "window.read_small_gbps") {
    m.windowReadBetaSmall = bandwidth();
  } else if (key == "nics_per_host") {
    m.nicsPerHost = std::max(1, static_cast<int>(v));
  } else if (key == "cores_per_host") {
    m.coresPerHost = static_cast<int>(v);
  } else {
    fail(tuttiInvalidArgument, "tuning file ", file, " line ", line, ": unknown key '", key,
         "' (known: shm.alpha_us shm.gbps tcp.alpha_us tcp.gbps gamma.gbps window.read_gbps "
         "window.read_small_gbps nics_per_host cores_per_host calibrated choice evidence)");
  }
}

// FNV-1a, as hex: the cache file's name for a hardware digest of any length.
std::string hashText(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool makeDirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') {
      std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  return true;
}

// The file's text, read without blocking: "" and *exists false where there is none; a path
// that is not a regular file (a FIFO, a device such as /dev/zero) or holds more than
// kMaxCacheBytes is ignored with a warning instead of blocking or filling memory.
std::string readWhole(const std::string& path, bool* exists) {
  *exists = false;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno != ENOENT)
      TUTTI_WARN(kTuning, "tuning cache " << path << " ignored: cannot open ("
                                          << std::strerror(errno) << ")");
    return "";
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    TUTTI_WARN(kTuning, "tuning cache " << path << " ignored: not a regular file");
    return "";
  }
  if (st.st_size > static_cast<off_t>(kMaxCacheBytes)) {
    TUTTI_WARN(kTuning, "tuning cache " << path << " ignored: " << st.st_size
                                        << " bytes, more than a cache holds (" << kMaxCacheBytes
                                        << ")");
    return "";
  }
  std::string text;  // read in chunks, at most kMaxCacheBytes + 1 bytes (a file still growing)
  char chunk[16384];
  while (text.size() <= kMaxCacheBytes) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  if (text.size() > kMaxCacheBytes) {
    TUTTI_WARN(kTuning, "tuning cache " << path << " ignored: it grew past " << kMaxCacheBytes
                                        << " bytes while read");
    return "";
  }
  *exists = true;
  return text;
}

// An exclusive lock on the cache's lock file within kLockWaitSec, or an invalid fd (warned):
// a lock held by a stuck process must not hold up a job.
UniqueFd lockCache(const std::string& lockPath) {
  UniqueFd lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0600));
  struct stat st {};
  if (!lock.valid() || ::fstat(lock.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    TUTTI_WARN(kTuning, "tuning cache "
                            << lockPath << ": cannot lock ("
                            << (lock.valid() ? "not a regular file" : std::strerror(errno))
                            << "); nothing kept");
    return UniqueFd();
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kLockWaitSec);
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
      TUTTI_WARN(kTuning, "tuning cache "
                              << lockPath << ": "
                              << (errno == EWOULDBLOCK
                                      ? "held by another process for " +
                                            std::to_string(kLockWaitSec) + " s"
                                      : std::string("cannot lock: ") + std::strerror(errno))
                              << "; nothing kept");
      return UniqueFd();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return lock;
}

}  // namespace

TuningRecord parseTuningRecord(const std::string& text, const std::string& name) {
  TuningRecord r;
  std::istringstream in(text);
  std::string lineText;
  int line = 0;
  while (std::getline(in, lineText)) {
    ++line;
    if (size_t hash = lineText.find('#'); hash != std::string::npos) lineText.resize(hash);
    std::istringstream f(lineText);
    std::string key, value, extra;
    if (!(f >> key)) continue;
    if (key == "choice") {
      std::string rest;
      std::getline(f, rest);
      size_t last = rest.find_last_not_of(" \t");
      size_t split = last == std::string::npos ? std::string::npos : rest.rfind(' ', last);
      TuneKey k;
      std::string algo = split == std::string::npos ? "" : rest.substr(split + 1, last - split);
      if (algo.empty() || !TuneKey::parse(rest.substr(0, split), &k) ||
          algo::find(k.coll, algo) == nullptr)
        fail(tuttiInvalidArgument, "tuning file ", name, " line ", line,
             ": expected 'choice <collective> n<ranks> h<hosts> b<log2 bytes> w<0|1> "
             "<algorithm>', got '",
             lineText, "'");
      r.choices[k] = algo;
      continue;
    }
    if (key == "evidence") {
      std::string rest, keyWords, word;
      std::getline(f, rest);
      std::istringstream words(rest);
      for (int i = 0; i < 5 && words >> word; ++i) keyWords += (i ? " " : "") + word;
      std::getline(words, rest);
      TuneKey k;
      TuneEvidence ev;
      if (!TuneKey::parse(keyWords, &k) || !TuneEvidence::parse(rest, &ev))
        fail(tuttiInvalidArgument, "tuning file ", name, " line ", line,
             ": expected 'evidence <collective> n<ranks> h<hosts> b<log2 bytes> w<0|1> <jobs> "
             "<algorithm>:<ratio>,<ratio>...:<seconds> <algorithm>:...', got '",
             lineText, "'");
      for (const TuneEvidence::Entry& e : ev.entries())
        if (algo::find(k.coll, e.algo) == nullptr)
          fail(tuttiInvalidArgument, "tuning file ", name, " line ", line, ": no ",
               algo::collName(k.coll), " algorithm '", e.algo, "'");
      r.evidence[k] = ev;
      continue;
    }
    if (!(f >> value) || (f >> extra))
      fail(tuttiInvalidArgument, "tuning file ", name, " line ", line,
           ": expected 'key value', got '", lineText, "'");
    if (key == "calibrated") {
      if (value != "shm" && value != "tcp")
        fail(tuttiInvalidArgument, "tuning file ", name, " line ", line,
             ": calibrated needs shm or tcp, got '", value, "'");
      r.calibrated.insert(value);
      continue;
    }
    applyModelKey(r.model, name, line, key, value);
  }
  return r;
}

void setCalibrated(TuningRecord& r, const std::string& link, const CostModel& m) {
  TUTTI_ASSERT(link == "shm" || link == "tcp");
  (link == "shm" ? r.model.intraHost : r.model.interHost) =
      link == "shm" ? m.intraHost : m.interHost;
  r.model.gammaPerByte = m.gammaPerByte;
  if (link == "shm") {  // measured with shm
    r.model.windowReadBeta = m.windowReadBeta;
    r.model.windowReadBetaSmall = m.windowReadBetaSmall;
  }
  r.calibrated.insert(link);
}

std::string tuningRecordText(const TuningRecord& r) {
  std::string text = tuningFileText(r.model);
  for (const std::string& c : r.calibrated) text += "calibrated " + c + "\n";
  for (const auto& [k, a] : r.choices) text += "choice " + k.text() + " " + a + "\n";
  for (const auto& [k, e] : r.evidence) text += "evidence " + k.text() + " " + e.text() + "\n";
  return text;
}

std::string tuningCacheDir() {
  std::string setting = env::getString("TUTTI_TUNING_CACHE");
  if (setting == "off" || setting == "0" || setting == "none") return "";
  if (!setting.empty()) return setting;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/tutti";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
    return std::string(home) + "/.cache/tutti";
  return "";
}

TuningCache::TuningCache(const std::string& dir, const std::string& hardware)
    : dir_(dir), path_(dir + "/host-" + hashText(hardware) + ".tuning") {}

std::string TuningCache::read() const {
  bool exists = false;
  std::string text = readWhole(path_, &exists);
  if (!exists) return "";
  try {
    parseTuningRecord(text, path_);
  } catch (const Error& e) {
    TUTTI_WARN(kTuning, "tuning cache ignored: " << e.what());
    return "";
  }
  return text;
}

void TuningCache::update(const std::function<void(TuningRecord&)>& change) const {
  if (!makeDirs(dir_)) {
    TUTTI_WARN(kTuning, "tuning cache " << dir_ << ": cannot create (" << std::strerror(errno)
                                        << "); nothing kept");
    return;
  }
  const UniqueFd lock = lockCache(path_ + ".lock");
  if (!lock.valid()) return;
  TuningRecord r;
  std::string current = read();  // "" when missing or corrupt (warned)
  if (!current.empty()) r = parseTuningRecord(current, path_);
  change(r);
  const std::string text = tuningRecordText(r);
  try {  // never write what a later read would reject: the file as it was stays
    parseTuningRecord(text, path_ + " (as it would be written)");
  } catch (const Error& e) {
    TUTTI_WARN(kTuning, "tuning cache " << path_ << " left as it was: " << e.what());
    return;
  }
  std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << "# tutti tuning cache (docs/tuning.md): this host's calibration and learned choices\n"
        << text;
    if (!out.flush()) {
      TUTTI_WARN(kTuning, "tuning cache " << tmp << ": write failed; nothing kept");
      ::unlink(tmp.c_str());
      return;
    }
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    TUTTI_WARN(kTuning, "tuning cache " << path_ << ": rename failed (" << std::strerror(errno)
                                        << "); nothing kept");
    ::unlink(tmp.c_str());
  }
}

}  // namespace tutti::tuning
