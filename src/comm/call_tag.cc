#include "comm/call_tag.h"

#include <iterator>
#include <sstream>

#include "common/dtype.h"

namespace tutti {

namespace {
constexpr uint64_t kBarrierCode = 0xff;
constexpr uint64_t kP2pCode = 0xfe;
constexpr uint64_t kFusedCode = 0xfd;
constexpr uint64_t kPackedCode = 0xfc;
constexpr uint64_t kCountBits = kTagCountBits;
constexpr uint64_t kLow40 = (uint64_t{1} << kCountBits) - 1;
constexpr uint64_t kMembers16 = 0xffff;

}  // namespace

CallTag collectiveCallTag(const algo::CollArgs& a, tuttiRedOp_t userOp, bool barrier,
                          uint64_t callNumber) {
  uint64_t coll = barrier ? kBarrierCode : static_cast<uint64_t>(a.coll) + 1;
  return {(static_cast<uint64_t>(a.count) & kLow40) | (callNumber << kCountBits),
          coll | (static_cast<uint64_t>(a.dtype) << 8) | (static_cast<uint64_t>(userOp) << 16) |
              (static_cast<uint64_t>(a.root) << 24)};
}

CallTag p2pCallTag(size_t operations) { return {operations, kP2pCode}; }

CallTag p2pMessageTag() { return {0, kP2pCode}; }

CallTag fusedCallTag(size_t members, uint64_t digest, uint64_t callNumber) {
  return {(digest & kLow40) | (callNumber << kCountBits),
          kFusedCode | ((static_cast<uint64_t>(members) & kMembers16) << 8) |
              ((digest >> kCountBits) << kCountBits)};
}

CallTag packedCallTag(tuttiDataType_t dtype, tuttiRedOp_t userOp, size_t members, uint64_t digest,
                      uint64_t callNumber) {
  return {(digest & kLow40) | (callNumber << kCountBits),
          kPackedCode | (static_cast<uint64_t>(dtype) << 8) |
              (static_cast<uint64_t>(userOp) << 16) |
              ((static_cast<uint64_t>(members) & kMembers16) << 24) |
              ((digest >> kCountBits) << kCountBits)};
}

uint64_t collectiveCallNumber(const CallTag& t) {
  if (t[1] == 0 || (t[1] & 0xff) == kP2pCode) return 0;
  return t[0] >> kCountBits;
}

uint64_t callBytes(const CallTag& t) {
  const uint64_t code = t[1] & 0xff;
  if (t[1] == 0 || code >= kPackedCode) return 0;
  return callCount(t) * dtypeSize(static_cast<tuttiDataType_t>((t[1] >> 8) & 0xff));
}

std::string callKind(const CallTag& t) {
  const uint64_t code = t[1] & 0xff;
  if (t[1] == 0) return "internal";
  if (code == kP2pCode) return "point-to-point";
  if (code == kBarrierCode) return "barrier";
  if (code == kFusedCode) return "fused group";
  if (code == kPackedCode) return "packed all-reduce";
  const int coll = static_cast<int>(code) - 1;
  const bool known = coll >= 0 && coll <= static_cast<int>(algo::Coll::kNeighborAllReduce);
  return known ? algo::collName(static_cast<algo::Coll>(coll)) : "?";
}

std::string describeCallTag(const CallTag& t, bool withNumber) {
  if (t[1] == 0) return "no collective (a point-to-point or internal exchange)";
  if ((t[1] & 0xff) == kP2pCode)
    return "point-to-point batch of " + std::to_string(t[0]) + " operation(s)";
  uint64_t code = t[1] & 0xff;
  uint64_t callNumber = t[0] >> kCountBits;
  std::ostringstream os;
  if (code == kBarrierCode) {
    os << "barrier";
  } else if (code == kPackedCode) {
    os << "packed all-reduce of " << ((t[1] >> 24) & kMembers16) << " calls ("
       << dtypeName(static_cast<tuttiDataType_t>((t[1] >> 8) & 0xff)) << ", "
       << opName(static_cast<tuttiRedOp_t>((t[1] >> 16) & 0xff)) << "; counts digest 0x" << std::hex
       << (((t[1] >> kCountBits) << kCountBits) | callCount(t)) << std::dec << ")";
  } else if (code == kFusedCode) {
    os << "fused group of " << ((t[1] >> 8) & kMembers16) << " collectives (shapes digest 0x"
       << std::hex << (((t[1] >> kCountBits) << kCountBits) | callCount(t)) << std::dec << ")";
  } else {
    int coll = static_cast<int>(code) - 1;
    auto c = static_cast<algo::Coll>(coll);
    auto dtype = static_cast<tuttiDataType_t>((t[1] >> 8) & 0xff);
    auto op = static_cast<tuttiRedOp_t>((t[1] >> 16) & 0xff);
    const bool reducing = algo::reduces(c);
    bool rooted = c == algo::Coll::kBroadcast || c == algo::Coll::kReduce ||
                  c == algo::Coll::kGather || c == algo::Coll::kScatter ||
                  c == algo::Coll::kGatherV || c == algo::Coll::kScatterV;
    const bool known = coll >= 0 && coll <= static_cast<int>(algo::Coll::kNeighborAllReduce);
    os << (known ? algo::collName(c) : "?") << "(count " << callCount(t) << ", "
       << dtypeName(dtype);
    if (reducing) os << ", " << opName(op);
    if (rooted) os << ", root " << (t[1] >> 24);
    os << ")";
  }
  if (withNumber) os << " as its collective call #" << callNumber;
  return os.str();
}

}  // namespace tutti
