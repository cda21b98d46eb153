#include "tuning/self_tuning.h"

#include "common/error.h"
#include "common/log.h"

namespace tutti::tuning {

namespace {
const char* linkName(FitLink link) { return link == FitLink::kShm ? "shm" : "tcp"; }
}  // namespace

SelfTuning::SelfTuning(TuneSettings settings, const std::string& agreedText, bool useCacheModel,
                       std::unique_ptr<TuningCache> writer, bool cacheEnabled)
    : tuner_(settings),
      useCacheModel_(useCacheModel),
      cacheEnabled_(cacheEnabled),
      writer_(std::move(writer)) {
  if (!agreedText.empty()) {
    try {
      agreed_ = parseTuningRecord(agreedText, "tuning cache");
    } catch (const Error& e) {  // rank 0 checked it; a text from an older library, say
      TUTTI_WARN(kTuning, "tuning cache text ignored: " << e.what());
      agreed_ = TuningRecord{};
    }
  }
  agreed_.model.origin = "tuning cache";
  for (const auto& [key, algo] : agreed_.choices) tuner_.adopt(key, algo);
}

bool SelfTuning::needsCalibration(FitLink link) const {
  return useCacheModel_ && cacheEnabled_ && agreed_.calibrated.count(linkName(link)) == 0;
}

const CostModel* SelfTuning::model() const {
  return useCacheModel_ && !agreed_.calibrated.empty() ? &agreed_.model : nullptr;
}

void SelfTuning::calibrated(FitLink link, const CostModel& m) {
  const std::string name = linkName(link);
  setCalibrated(agreed_, name, m);
  if (writer_) writer_->update([&](TuningRecord& r) { setCalibrated(r, name, m); });
}

void SelfTuning::learned(const TuneKey& key, const std::string& algo) {
  agreed_.choices[key] = algo;
  if (writer_) writer_->update([&](TuningRecord& r) { r.choices[key] = algo; });
}

}  // namespace tutti::tuning
