// TuneEvidence: what the run-offs of one call shape measured, job after job (the tuning
// cache's "evidence" lines). A run-off compares a few finalists over some hundred milliseconds
// of one job, and on a machine whose speed drifts by more than they differ one job's verdict is
// a sample, not the answer. Each job that runs the shape's run-off adds its finalists' times
// relative to its fastest (jobs run at different speeds of the machine: the ratios between
// candidates measured side by side carry over, their seconds do not), and the lowest median
// ratio over the jobs is the shape's choice: a job that explored in a slow state of the machine
// (with more ranks than cores, stretches where one algorithm takes 3-5x its loop's time) is
// outvoted by two that did not, however far off it was. It holds no tuner state and no file:
// OnlineTuner decides with it, TuningRecord keeps it. docs/tuning.md, "Confirmation in later
// jobs".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tutti::tuning {

class TuneEvidence {
 public:
  struct Entry {
    std::string algo;
    std::vector<double> ratios;  // each job's time over its fastest finalist's, oldest first
    double seconds = 0;          // the last job's time per call
    double median() const;       // of the ratios
  };

  // Adds one job's time per call of each finalist (every one > 0; at least two). A job whose
  // finalists are not the ones recorded (another set of algorithms) starts the evidence over.
  void addJob(const std::vector<std::pair<std::string, double>>& seconds);
  int jobs() const { return jobs_; }
  const std::vector<Entry>& entries() const { return entries_; }
  bool has(const std::string& algo) const;
  // The entry of the lowest median ratio (of equals, the lowest mean; then the first); -1 when
  // there are none.
  int best() const;
  // Every job measured the same entry fastest.
  bool unanimous() const;
  // How much slower the runner-up is than the best, by their median ratios (0.08: 8% slower);
  // a large value with fewer than two entries.
  double gap() const;
  // "<jobs> <algo>:<ratio>,<ratio>...:<seconds> ..." (the words after the key in a cache line;
  // a ratio per job, oldest first).
  std::string text() const;
  // Parses text(); false when the words are not evidence (fewer than two entries, a count below
  // 1 or other than an entry's ratios, a ratio below 1, a duplicate algorithm).
  static bool parse(const std::string& words, TuneEvidence* out);

 private:
  int jobs_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace tutti::tuning
