// Builder entry points, one per registry entry (internal; use registry()/find()).
#pragma once

#include "exec/schedule.h"
#include "interfaces/algorithm.h"

namespace tutti::algo::detail {

exec::Schedule allReduceNaive(const CollArgs& a);
exec::Schedule allReducePs(const CollArgs& a);
exec::Schedule allReduceRing(const CollArgs& a);
exec::Schedule allReduceTree(const CollArgs& a);
exec::Schedule allReduceDbtree(const CollArgs& a);
exec::Schedule allReduceButterfly(const CollArgs& a);
exec::Schedule allReduceRabenseifner(const CollArgs& a);
exec::Schedule allReduceHier(const CollArgs& a);
exec::Schedule allReduceDirect(const CollArgs& a);
exec::Schedule allReduceLine(const CollArgs& a);

exec::Schedule allGatherRing(const CollArgs& a);
exec::Schedule allGatherRd(const CollArgs& a);
exec::Schedule allGatherBruck(const CollArgs& a);
exec::Schedule allGatherDirect(const CollArgs& a);
exec::Schedule allGatherHier(const CollArgs& a);

exec::Schedule reduceScatterRing(const CollArgs& a);
exec::Schedule reduceScatterRhalving(const CollArgs& a);
exec::Schedule reduceScatterDirect(const CollArgs& a);
exec::Schedule reduceScatterHier(const CollArgs& a);

exec::Schedule broadcastChain(const CollArgs& a);
exec::Schedule broadcastBinomial(const CollArgs& a);

exec::Schedule reduceChain(const CollArgs& a);
exec::Schedule reduceBinomial(const CollArgs& a);

exec::Schedule allToAllPairwise(const CollArgs& a);
exec::Schedule allToAllLinear(const CollArgs& a);
exec::Schedule allToAllHier(const CollArgs& a);

exec::Schedule gatherLinear(const CollArgs& a);
exec::Schedule gatherBinomial(const CollArgs& a);

exec::Schedule scatterLinear(const CollArgs& a);
exec::Schedule scatterBinomial(const CollArgs& a);

exec::Schedule allGatherVLinear(const CollArgs& a);
exec::Schedule reduceScatterVLinear(const CollArgs& a);
exec::Schedule gatherVLinear(const CollArgs& a);
exec::Schedule scatterVLinear(const CollArgs& a);
exec::Schedule allToAllVLinear(const CollArgs& a);
exec::Schedule allToAllVHier(const CollArgs& a);
exec::Schedule hostSendCountsExchange(const CollArgs& a);

exec::Schedule neighborAllReduceFlat(const CollArgs& a);
exec::Schedule neighborAllReduceHier(const CollArgs& a);

}  // namespace tutti::algo::detail
