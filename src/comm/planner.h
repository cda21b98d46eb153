// Planner: what a communicator's collective call runs. It chooses the algorithm (the one the
// communicator's spec forces, else online refinement's winner where self-tuning has one, else
// the cheapest applicable under the cost model: the topology's model when the communicator
// made one (with the calibrated network link in place of its inter-host one, once self-tuning
// measured it), else the calibrated model of the tuning cache, else the fitted shm/tcp model),
// builds its schedule and, for window-only schedules, compiles it into an exec::WindowProgram.
// Choices and schedules are cached; a stream of identical calls reuses the last plan without
// building any cache key. Every rank plans alike from the same arguments, so all choose the same
// algorithm. It knows nothing of connections or transports beyond the shared window the programs
// are compiled against.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/schedule.h"
#include "exec/window_program.h"
#include "interfaces/algorithm.h"
#include "interfaces/window.h"
#include "tuning/online_tuner.h"
#include "tuning/tuner.h"

namespace tutti {
namespace tuning {
struct CostModel;
class SelfTuning;
}  // namespace tuning

class Planner {
 public:
  // What a call runs: its schedule and the peers the schedule talks to. Window-only
  // schedules (direct) also come compiled against the window (exec/window_program.h).
  struct Planned {
    exec::Schedule schedule;
    std::vector<int> peers;
    std::unique_ptr<exec::WindowProgram> program;
  };
  struct CallPlan {
    const algo::AlgorithmInfo* info = nullptr;
    const Planned* planned = nullptr;
    // Online refinement (tuning/online_tuner.h) has not settled this call's key: after the call
    // the caller records its time (sample >= 0) and, when the tuner is ready, concludes.
    bool refining = false;
    int sample = -1;
    tuning::TuneKey key;
  };

  // topologyModel: the cost model on the communicator's links (null: the fitted model). hosts:
  // how many hosts the communicator's ranks are on (part of online refinement's keys).
  Planner(std::unique_ptr<tuning::CostModel> topologyModel, int hosts);
  ~Planner();
  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  // Once, when the communicator has made its shared window (window-only schedules are then
  // compiled against it). Before the first plan.
  void setWindow(transport::Window* window) { window_ = window; }
  // Self-tuning (null: the cost model alone): its calibrated model and online refinement
  // take part in every automatic choice from now on.
  void setSelfTuning(std::unique_ptr<tuning::SelfTuning> selfTuning);
  tuning::SelfTuning* selfTuning() const { return selfTuning_.get(); }
  bool usesTopologyModel() const { return topologyModel_ != nullptr; }
  // The model changed (calibrated): automatic choices are made again.
  void forgetChoices() {
    choices_.clear();
    last_.valid = false;
  }
  // The model automatic choices are ranked with (the topology's, the calibrated one, or the
  // fitted / built-in one).
  tuning::CostModel model(const algo::CollArgs& args) const;
  // The plan for args under spec (TUTTI_ALGO syntax; "" = automatic). Throws
  // tuttiInvalidArgument for a forced algorithm that does not exist or apply. The reference
  // stays valid until the next call.
  const CallPlan& plan(const algo::CollArgs& args, std::string_view spec);
  // What a call of args would run by the cost model and the model's time for it: the algorithm
  // spec forces (tuttiInvalidArgument where it does not apply, as plan()), else the model's
  // choice. Asks no online refinement (counts no call, changes no choice) and builds no plan.
  tuning::Candidate estimate(const algo::CollArgs& args, std::string_view spec);
  // An all-to-all-v whose algorithm (the forced or automatic one) needs the send counts of
  // its host's members (CollArgs::hostSendCounts): that algorithm, else null. The caller runs
  // the exchange (algo::hostSendCountsExchange) inside the call, then plan().
  const algo::AlgorithmInfo* needsHostSendCounts(const algo::CollArgs& args, std::string_view spec);
  // The all-to-all-v's automatic choice is made for this many bytes per rank: its sizes differ
  // between ranks, so this is the one size every rank knows alike (docs/algorithms.md).
  static constexpr size_t kAllToAllVNominalBytes = size_t{64} << 10;
  // The algorithms a fused group may run args with (comm/fused_plans.h), best first: the one
  // spec forces when it applies (none when it does not), else every applicable one as the
  // model ranks them. Never online refinement's choice (a fused call times no single member).
  std::vector<const algo::AlgorithmInfo*> fusionCandidates(const algo::CollArgs& args,
                                                           std::string_view spec) const;
  // info's schedule for args (compiled against the window where it is window-only), built once
  // per algorithm and sizes. The reference stays valid until 256 schedules are cached (then
  // the cache starts afresh).
  const Planned& build(const algo::AlgorithmInfo& info, const algo::CollArgs& args);
  // A neighbour all-reduce's plan (args.graph, args.graphStep set), cached per graph id,
  // step and size.
  const Planned& neighborPlan(const algo::AlgorithmInfo& info, const algo::CollArgs& args,
                              uint64_t graphId);

 private:
  struct Choice {
    const algo::AlgorithmInfo* info = nullptr;
    bool final = true;  // the same for every later call of these arguments (cacheable)
    bool refining = false;
    int sample = -1;
    tuning::TuneKey key;
    int sameNext = 0;  // the tuner's Pick::sameNext
  };
  Choice choose(const algo::CollArgs& args, const std::string& spec);
  // The model's choice (cached per call shape).
  const algo::AlgorithmInfo& chooseByModel(const algo::CollArgs& args, const std::string& spec);
  // The model's ranking of the applicable algorithms, cheapest first (cached per call shape:
  // timing every candidate's schedules costs far more than a small call).
  const std::vector<tuning::Candidate>& rankingFor(const algo::CollArgs& args,
                                                   const std::string& spec);
  // Online refinement's choice for args, or info null where it has none (the model's then).
  Choice chooseByRefinement(const algo::CollArgs& args, const std::string& spec);
  // A V-collective with its own blocks: built for the call (its blocks differ from call to
  // call), kept until the next plan.
  const CallPlan& planUneven(const algo::CollArgs& args, std::string_view spec);

  std::unique_ptr<tuning::CostModel> topologyModel_;
  int hosts_;
  std::unique_ptr<tuning::SelfTuning> selfTuning_;
  // The last V-collective's plan and what it was made for (a loop that repeats one call with
  // the same counts reuses it).
  Planned uneven_;
  CallPlan unevenPlan_;
  algo::CollArgs unevenArgs_;
  std::string unevenSpec_;
  bool unevenValid_ = false;
  transport::Window* window_ = nullptr;
  // The model's rankings by (collective, count, dtype, op, root, spec).
  std::map<std::string, std::vector<tuning::Candidate>> choices_;
  // Built schedules by (algorithm, collective, sizes): rebuilding costs more than a small call.
  std::map<std::string, Planned> schedules_;
  // Neighbour all-reduce schedules by (algorithm, graph id, step, count, dtype).
  std::map<std::string, Planned> neighborSchedules_;
  // The last plan, with what it was made for.
  struct LastPlan {
    bool valid = false;
    algo::Coll coll{};
    size_t count = 0;
    tuttiDataType_t dtype{};
    tuttiRedOp_t op{};
    int root = 0;
    size_t windowBytes = 0;
    bool inPlace = false;
    std::string spec;
    CallPlan plan;
    // A refining plan the tuner gave for its next calls too (Pick::sameNext): reused that many
    // times, untimed (plan.refining cleared), without asking it; the calls made so are
    // reported (skip) before it is next asked.
    int reuse = 0;
    int reused = 0;
  };
  // Forgets the last plan, reporting the calls that reused it to the tuner.
  void dropLastPlan();
  LastPlan last_;
};

}  // namespace tutti
