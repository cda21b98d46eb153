// TuneEvidence: what the run-offs of one call shape measured, job after job (the tuning
// cache's "evidence" lines). A run-off compares a few finalists over some hundred milliseconds
// of one job, and on a machine whose speed drifts by more than the finalists differ one job's
// verdict is a sample, not the answer. Each job that runs the shape's run-off adds its
// finalists' times relative to its fastest (jobs run at different speeds of the machine: the
// ratios between candidates measured side by side carry over, their seconds do not), and the
// lowest mean ratio is the shape's choice. It holds no tuner state and no file: OnlineTuner
// decides with it, TuningRecord keeps it. docs/tuning.md, "Confirmation in later jobs".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tutti::tuning {

class TuneEvidence {
 public:
  struct Entry {
    std::string algo;
    double ratioSum = 0;  // the jobs' times over their fastest finalist's, summed
    double seconds = 0;   // the last job's time per call
  };

  // Adds one job's time per call of each finalist (every one > 0; at least two). A job whose
  // finalists are not the ones recorded (another set of algorithms) starts the evidence over.
  void addJob(const std::vector<std::pair<std::string, double>>& seconds);
  int jobs() const { return jobs_; }
  const std::vector<Entry>& entries() const { return entries_; }
  bool has(const std::string& algo) const;
  // The entry of the lowest mean ratio (the first of equals); -1 when there are none.
  int best() const;
  // How much slower the runner-up is than the best, as a fraction of the best's mean ratio (0.08:
  // 8% slower); a large value with fewer than two entries.
  double gap() const;
  // "<jobs> <algo>:<ratio sum>:<seconds> ..." (the words after the key in a cache line).
  std::string text() const;
  // Parses text(); false when the words are not evidence (fewer than two entries, a ratio below
  // the jobs' count, a count below 1, a duplicate algorithm).
  static bool parse(const std::string& words, TuneEvidence* out);

 private:
  int jobs_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace tutti::tuning
