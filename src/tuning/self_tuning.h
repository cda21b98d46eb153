// SelfTuning: one communicator's self-tuning state (docs/tuning.md, "Self-tuning"): the
// online refinement of its automatic choices (OnlineTuner), the calibrated cost model it
// plans with, and the host's tuning cache it keeps what it learns in. Every rank of a
// communicator starts from the same cache text (rank 0's, passed through the store at init),
// so all plan, calibrate and explore alike; one rank per host writes its host's cache.
#pragma once

#include <memory>
#include <string>

#include "tuning/calibration.h"
#include "tuning/cost_model.h"
#include "tuning/online_tuner.h"
#include "tuning/tuning_cache.h"

namespace tutti::tuning {

// Where the model a communicator plans with comes from, and so what it calibrates.
enum class ModelSource {
  kCache,     // the cache's calibrated model: shm and tcp are calibrated where it lacks them
  kTopology,  // the topology's links: only the network (tcp) is calibrated, which the topology
              // knows only by its NICs' speed (not the stack, shaping or congestion); the
              // planner puts the calibrated link in place of the topology's inter-host one
  kUser,      // TUTTI_TUNING_FILE: nothing is calibrated
};

class SelfTuning {
 public:
  // agreedText: the cache text every rank uses ("" : none). source: see ModelSource. writer:
  // this rank's host cache when this rank keeps what is learned (one rank per host), else
  // null. cacheEnabled: the job has a tuning cache (without one nothing is calibrated: there
  // is nowhere to keep it).
  SelfTuning(TuneSettings settings, const std::string& agreedText, ModelSource source,
             std::unique_ptr<TuningCache> writer, bool cacheEnabled);

  OnlineTuner& tuner() { return tuner_; }
  // The model to plan with, when the cache calibrated one (else null: the planner's own).
  const CostModel* model() const;
  // ModelSource::kTopology: the calibrated network link, once there is one (else null).
  const LinkCost* calibratedNetwork() const;
  // Whether this communicator calibrates `link` at its first call (same answer on every rank).
  bool needsCalibration(FitLink link) const;
  // The model calibrated for `link` (the other link and keys kept): planned with from now on
  // and, when `keep`, kept in the cache (a calibration that failed is not: the next
  // communicator on the host tries again).
  void calibrated(FitLink link, const CostModel& m, bool keep = true);
  // A winner of online refinement, kept in the cache with the evidence of its run-offs (null:
  // none; an older line of evidence for the key goes).
  void learned(const TuneKey& key, const std::string& algo, const TuneEvidence* evidence);
  // The model calibration starts from (the cache's, else the built-in one).
  CostModel baseModel() const { return model() ? *model() : CostModel::builtin(); }

 private:
  OnlineTuner tuner_;
  TuningRecord agreed_;  // the agreed cache text, with what this communicator learned since
  ModelSource source_;
  bool cacheEnabled_;
  std::unique_ptr<TuningCache> writer_;
};

}  // namespace tutti::tuning
