// A collective call's tag: two words that every rank making the same call computes alike. The
// executor sends it with every message (transport::MsgTag) and writes it in the shared
// window's tag slots, so a peer in another call is caught; the flight recorder keeps it, and
// errors name calls by it.
//   word 0 = count (low 40 bits) | call number (low 24 bits) << 40
//   word 1 = collective + 1 (0xff: a barrier; 0xfe: point-to-point)
//            | dtype << 8 | the caller's op << 16 | root << 24
// Point-to-point: the messages of sends carry {0, 0xfe} (p2pMessageTag; sends and receives
// are matched per peer in order, so they carry no call number), which a receive from any
// source looks for; the flight recorder names a batch {operations, 0xfe} (p2pCallTag).
// A fused group (several collectives run as one schedule, comm/fused_plans.h):
//   word 0 = a digest of the members' shapes (low 40 bits) | call number << 40
//   word 1 = 0xfd | members << 8 | digest >> 40 << 40
// A packed all-reduce (a group's small all-reduces run as one all-reduce of their inputs
// packed together, api/group_fusion.h):
//   word 0 = the members' digest (low 40 bits) | call number << 40
//   word 1 = 0xfc | dtype << 8 | the caller's op << 16 | members << 24 | digest >> 40 << 40
// The digests cover every member's shape, so ranks whose packed or fused members differ (counts
// 16 + 32 against 32 + 16) send different tags and fail with a mismatch before any data is
// combined.
// {0, 0}: no call (internal exchanges).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "interfaces/algorithm.h"
#include "interfaces/transport.h"

namespace tutti {

using CallTag = transport::MsgTag;
static_assert(std::is_same_v<CallTag, transport::Window::Tag>,
              "call tags travel in messages and in window tag slots alike");

CallTag collectiveCallTag(const algo::CollArgs& args, tuttiRedOp_t userOp, bool barrier,
                          uint64_t callNumber);
CallTag p2pCallTag(size_t operations);
CallTag p2pMessageTag();
CallTag fusedCallTag(size_t members, uint64_t digest, uint64_t callNumber);
CallTag packedCallTag(tuttiDataType_t dtype, tuttiRedOp_t userOp, size_t members, uint64_t digest,
                      uint64_t callNumber);

// A 64-bit digest of a sequence of words (FNV-1a over their bytes): the shape of a fused or
// packed call's members, which every rank making the same calls computes alike.
class ShapeDigest {
 public:
  ShapeDigest& add(uint64_t word) {
    for (int b = 0; b < 8; ++b) addByte(static_cast<unsigned char>(word >> (8 * b)));
    return *this;
  }
  ShapeDigest& addBytes(std::string_view text) {
    for (unsigned char c : text) addByte(c);
    return *this;
  }
  uint64_t value() const { return value_; }

 private:
  void addByte(unsigned char b) { value_ = (value_ ^ b) * 1099511628211ull; }
  uint64_t value_ = 14695981039346656037ull;
};
// The collective call number a tag carries (0 for point-to-point batches and {0, 0}).
uint64_t collectiveCallNumber(const CallTag& tag);
// Word 0's low bits below the call number (the layout above).
constexpr uint64_t kTagCountBits = 40;
// A tag's count bits: a plain call's count (a fused or packed call's digest).
inline uint64_t callCount(const CallTag& tag) {
  return tag[0] & ((uint64_t{1} << kTagCountBits) - 1);
}
// The bytes a rank contributes to a plain collective call (count x its type's size); 0 for
// barriers, point-to-point batches, fused and packed groups.
uint64_t callBytes(const CallTag& tag);
// What kind of call: "allreduce", "barrier", "point-to-point", "fused group", "packed
// all-reduce".
std::string callKind(const CallTag& tag);
// "allreduce(count 1023, float32, sum)", with withNumber " as its collective call #7".
std::string describeCallTag(const CallTag& tag, bool withNumber = true);

}  // namespace tutti
