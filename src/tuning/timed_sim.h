// Timing of a collective's schedules under the cost model (cost_model.h): the one timing
// used by the tuner's automatic choice and by tutti-sim.
//
// For round k of rank r (transfers of a round run concurrently):
//   intra = alpha_i + max(sum_sends bytes*beta_pair, sum_recvs bytes*beta_pair) * oversub
//   inter = alpha_n + beta_n * max(sent_n(r), recv_n(r), sent_n(host)/nics, recv_n(host)/nics)
//   t(r, k) = max(intra, inter) + gamma * (reduced bytes + copied bytes / 2)
// (a term only when the round has transfers of that class; sent_n(host) sums the inter-host
// bytes of all ranks of r's host in round k: ranks sharing NICs contend). The collective takes
//   T = sum_k max_r t(r, k).
// Exact mode builds every rank's schedule. Symmetric mode (large jobs) builds the schedules
// of the ranks of a few representative hosts only (first, second, quarter, middle,
// three-quarter, last), and of a host with more than 64 ranks only 4 sample ranks (its
// inter-host bytes scaled up); the max over ranks is then a max over these.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/schedule.h"
#include "interfaces/algorithm.h"
#include "tuning/cost_model.h"

namespace tutti::tuning {

struct TimedOptions {
  int exactUpTo = 256;  // exact (every rank) when nranks <= this, else symmetric
};

struct TimedResult {
  double seconds = 0;
  size_t rounds = 0;
  bool exact = true;
  int ranksBuilt = 0;          // schedules built
  size_t maxBytesSent = 0;     // over the ranks built
  size_t totalBytesSent = 0;   // over the ranks built (all ranks in exact mode)
  size_t maxMessagesSent = 0;  // over the ranks built
};

// Times `build(args)` for every rank (args.rank is ignored). args.hostOf empty: one host.
TimedResult timeCollective(const algo::AlgorithmInfo& info, const algo::CollArgs& args,
                           const CostModel& m, const TimedOptions& options = {});

// One rank's schedule alone (no other rank's contention): sum over rounds of t(rank, k).
double predictRank(const exec::Schedule& schedule, const algo::CollArgs& args, const CostModel& m);

}  // namespace tutti::tuning
