// The tuning cache: what self-tuning learned on a host, kept between jobs in one file per
// hardware digest under the user's cache directory ($XDG_CACHE_HOME/tutti, else
// ~/.cache/tutti; TUTTI_TUNING_CACHE moves it or turns it off). Its text is the tuning-file
// format (cost_model.h: the model's keys) plus "calibrated <shm|tcp>" lines (which of the
// model's links were measured on this host) and "choice <key> <algorithm>" lines (the winners
// of online refinement, online_tuner.h) with "evidence <key> <jobs> <algo>:<ratio>,...:<seconds>
// ..." lines (the run-offs that chose them, tune_evidence.h). Writers merge under a lock and
// replace the file by a rename, so concurrent jobs on one host lose no line and readers never see
// half a file; a file that does not parse is ignored with a warning (and replaced by the next
// write). docs/tuning.md, "Self-tuning".
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "tuning/cost_model.h"
#include "tuning/online_tuner.h"

namespace tutti::tuning {

struct TuningRecord {
  CostModel model = CostModel::builtin();
  std::set<std::string> calibrated;  // "shm", "tcp"
  std::map<TuneKey, std::string> choices;
  std::map<TuneKey, TuneEvidence> evidence;  // of choices that a run-off decided
};

// Records link `shm` (m's intra-host link and its window reads) or `tcp` (its inter-host
// link), and m's gamma, as calibrated in r (the other link and the choices kept).
void setCalibrated(TuningRecord& r, const std::string& link, const CostModel& m);

// Parses a cache's (or tuning file's) text; throws tutti::Error naming `name`, the line and
// the problem.
TuningRecord parseTuningRecord(const std::string& text, const std::string& name);
std::string tuningRecordText(const TuningRecord& r);

// The cache directory: TUTTI_TUNING_CACHE (a directory; "off", "0" or "none": no cache), else
// $XDG_CACHE_HOME/tutti, else $HOME/.cache/tutti; "" when there is none.
std::string tuningCacheDir();

class TuningCache {
 public:
  // hardware: the host's hardware digest (its topology origin); the file is
  // dir/host-<hash of hardware>.tuning.
  TuningCache(const std::string& dir, const std::string& hardware);
  const std::string& path() const { return path_; }
  // The file's text; "" when there is none, or when it does not parse (warns, naming the
  // file and the problem).
  std::string read() const;
  // Applies change() to the file's record under an exclusive lock (re-read first: another
  // job's lines stay) and replaces the file. Failures (read-only directory...) warn and are
  // otherwise ignored: the cache is an optimisation.
  void update(const std::function<void(TuningRecord&)>& change) const;

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace tutti::tuning
