// Fuzz target: algorithm specs (TUTTI_ALGO, the config's algo, tuttiCommSetAlgorithm).
// Input: spec '\n' then call parameters (ranks, count, root, dtype, op). The spec parser must
// find an unknown item or name an algorithm for every collective consistently; a forced
// algorithm that applies to the parameters must build schedules for every rank that the
// simulator accepts (matching sends and receives, slices in bounds, no deadlock).
// Parameters: ranks u8, count u16, root u8, dtype u8, op u8, flags u8 (hosts %4, bit 2:
// deterministic).
#include <string>
#include <vector>

#include "common/dtype.h"
#include "exec/simulator.h"
#include "fuzz_util.h"
#include "interfaces/algorithm.h"
#include "tuning/tuner.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("TUTTI_DEBUG", "ERROR", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  fuzz::Input in(data, size);
  const std::string spec(in.until('\n'));
  const std::string unknown = tuning::unknownAlgorithmItem(spec);
  if (!unknown.empty() && spec.find(unknown) == std::string::npos)
    fuzz::bug("unknownAlgorithmItem returned '" + unknown + "', not an item of the spec");

  algo::CollArgs args;
  args.nranks = 1 + in.u8() % 12;
  args.count = in.u16() % 2048;
  args.root = in.u8() % args.nranks;
  const tuttiDataType_t dtypes[] = {tuttiFloat32, tuttiInt8, tuttiFloat64, tuttiBfloat16};
  args.dtype = dtypes[in.u8() % 4];
  const tuttiRedOp_t ops[] = {tuttiSum, tuttiProd, tuttiMax, tuttiMin};
  args.op = ops[in.u8() % 4];
  const uint8_t flags = in.u8();
  args.deterministic = flags & 4;
  const int hosts = flags % 4;
  if (hosts > 1)
    for (int r = 0; r < args.nranks; ++r) args.hostOf.push_back(r % hosts);

  for (int c = 0; c < algo::kNumColls; ++c) {
    args.coll = static_cast<algo::Coll>(c);
    const auto [forced, perCollective] = tuning::forcedAlgorithm(spec, args.coll);
    if (forced.empty()) continue;
    const algo::AlgorithmInfo* info = algo::find(args.coll, forced);
    if (info == nullptr) {
      // A per-collective name no algorithm has must have been reported by the check (the
      // communicator refuses such a spec at init); a bare one leaves the choice automatic.
      if (perCollective && unknown.empty())
        fuzz::bug("spec '" + spec + "' forces unknown " + algo::collName(args.coll) + " '" +
                  forced + "' yet passed the check");
      continue;
    }
    if (!info->applicable(args)) continue;
    std::vector<exec::Schedule> schedules;
    for (int r = 0; r < args.nranks; ++r) {
      args.rank = r;
      schedules.push_back(info->build(args));
    }
    // Buffer sizes per rank (the simulator checks slices against them).
    const size_t es = dtypeSize(args.dtype), n = static_cast<size_t>(args.nranks);
    size_t inElems = args.count, outElems = args.count;
    // (the V collectives run uniform here: no counts, count elements per rank)
    const algo::Coll plain = algo::plainOf(args.coll);
    if (plain == algo::Coll::kAllGather || plain == algo::Coll::kGather)
      outElems = n * args.count;  // gather: the root's extent
    if (plain == algo::Coll::kReduceScatter || plain == algo::Coll::kScatter)
      inElems = n * args.count;
    if (plain == algo::Coll::kAllToAll) inElems = outElems = n * args.count;
    std::vector<exec::SimRankBuffers> buffers(n, {nullptr, inElems * es, nullptr, outElems * es});
    exec::SimOptions opt;
    opt.moveData = false;
    try {
      (void)exec::simulate(schedules, buffers, opt);
    } catch (const Error& e) {
      fuzz::bug(std::string(info->name) + " " + algo::collName(args.coll) + ": " + e.what());
    }
  }
  return 0;
}
