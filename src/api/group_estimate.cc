// The cost model's time of a group's recorded calls (tuttiGroupSimulateEnd): each collective
// as the plain collective the model prices, the V-collectives as their uniform counterparts
// (the average block), a communicator's sends and receives as one batch.
#include <optional>
#include <string_view>

#include "group.h"

namespace tutti::api {

namespace {

struct Priced {
  algo::Coll coll;
  bool uneven = false;  // a V-collective: priced with its average block
};

std::optional<Priced> pricedAs(std::string_view fn) {
  using algo::Coll;
  static constexpr std::pair<std::string_view, Priced> kPriced[] = {
      {"tuttiAllReduce", {Coll::kAllReduce}},
      {"tuttiBroadcast", {Coll::kBroadcast}},
      {"tuttiReduce", {Coll::kReduce}},
      {"tuttiAllGather", {Coll::kAllGather}},
      {"tuttiReduceScatter", {Coll::kReduceScatter}},
      {"tuttiAllToAll", {Coll::kAllToAll}},
      {"tuttiGather", {Coll::kGather}},
      {"tuttiScatter", {Coll::kScatter}},
      {"tuttiBarrier", {Coll::kAllReduce}},
      {"tuttiAllGatherV", {Coll::kAllGather, true}},
      {"tuttiReduceScatterV", {Coll::kReduceScatter, true}},
      {"tuttiGatherV", {Coll::kGather, true}},
      {"tuttiScatterV", {Coll::kScatter, true}},
      {"tuttiAllToAllV", {Coll::kAllToAll, true}},
  };
  for (const auto& [name, priced] : kPriced)
    if (fn == name) return priced;
  return std::nullopt;
}

}  // namespace

std::function<double(Communicator&)> estimateOf(std::string_view fn, const CallInfo& info) {
  const std::optional<Priced> priced = pricedAs(fn);
  if (!priced) return nullptr;
  const bool barrier = !info.hasData;
  return [p = *priced, info, barrier](Communicator& c) {
    const size_t n = static_cast<size_t>(c.size());
    size_t count = barrier ? 1 : info.count;
    if (p.uneven) {
      // The average block: of the receive extent (all-gather-v) or the send extent
      // (reduce-scatter-v, all-to-all-v), which hold every rank's; a gather-v's own send
      // block and a scatter-v's own receive block (the root's extents are the only full ones).
      switch (p.coll) {
        case algo::Coll::kAllGather:
          count = info.recvCount / n;
          break;
        case algo::Coll::kGather:
          count = info.count;
          break;
        case algo::Coll::kScatter:
          count = info.recvCount;
          break;
        default:
          count = info.count / n;
          break;
      }
    }
    const tuttiDataType_t dtype = barrier ? tuttiUint8 : info.dtype;
    const tuttiRedOp_t op = info.op == tuttiNumOps ? tuttiSum : info.op;
    return c.estimateCollective(p.coll, count, dtype, op, info.root < 0 ? 0 : info.root);
  };
}

}  // namespace tutti::api
