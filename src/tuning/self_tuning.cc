#include "tuning/self_tuning.h"

#include "common/error.h"
#include "common/log.h"

namespace tutti::tuning {

namespace {
const char* linkName(FitLink link) { return link == FitLink::kShm ? "shm" : "tcp"; }
}  // namespace

SelfTuning::SelfTuning(TuneSettings settings, const std::string& agreedText, ModelSource source,
                       std::unique_ptr<TuningCache> writer, bool cacheEnabled)
    : tuner_(settings), source_(source), cacheEnabled_(cacheEnabled), writer_(std::move(writer)) {
  if (!agreedText.empty()) {
    try {
      agreed_ = parseTuningRecord(agreedText, "tuning cache");
    } catch (const Error& e) {  // rank 0 checked it; a text from an older library, say
      TUTTI_WARN(kTuning, "tuning cache text ignored: " << e.what());
      agreed_ = TuningRecord{};
    }
  }
  agreed_.model.origin = "tuning cache";
  for (const auto& [key, algo] : agreed_.choices) {
    auto ev = agreed_.evidence.find(key);
    tuner_.adopt(key, algo, ev == agreed_.evidence.end() ? nullptr : &ev->second);
  }
}

bool SelfTuning::needsCalibration(FitLink link) const {
  const bool calibrates = source_ == ModelSource::kCache ||
                          (source_ == ModelSource::kTopology && link == FitLink::kTcp);
  return calibrates && cacheEnabled_ && agreed_.calibrated.count(linkName(link)) == 0;
}

const CostModel* SelfTuning::model() const {
  return source_ == ModelSource::kCache && !agreed_.calibrated.empty() ? &agreed_.model : nullptr;
}

const LinkCost* SelfTuning::calibratedNetwork() const {
  return source_ == ModelSource::kTopology && agreed_.calibrated.count("tcp") != 0
             ? &agreed_.model.interHost
             : nullptr;
}

void SelfTuning::calibrated(FitLink link, const CostModel& m, bool keep) {
  const std::string name = linkName(link);
  setCalibrated(agreed_, name, m);
  if (writer_ && keep) writer_->update([&](TuningRecord& r) { setCalibrated(r, name, m); });
}

void SelfTuning::learned(const TuneKey& key, const std::string& algo,
                         const TuneEvidence* evidence) {
  auto keep = [&](TuningRecord& r) {
    r.choices[key] = algo;
    if (evidence != nullptr)
      r.evidence[key] = *evidence;
    else
      r.evidence.erase(key);
  };
  keep(agreed_);
  if (writer_) writer_->update(keep);
}

}  // namespace tutti::tuning
