// Merging the schedules of independent calls into one schedule whose rounds interleave (a
// fused group): round i of the result holds round i of every member, members in order, so the
// members' messages travel together instead of one call after another. Knows nothing of
// collectives or of the calls the schedules come from.
//
// Matching stays right when every member is round-aligned (roundsAligned): each of its messages
// is sent and received in rounds of the same index. Then the n-th message from A to B in the
// merged schedule of A is the n-th one B's merged schedule receives from A (both order them by
// round, then member, then position), and a merged round completes when the members' rounds of
// that index do. Members must not use the shared window or weighted mixes (mergeable), and the
// members that reduce must share one datatype and operation (the schedule has one of each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "exec/schedule.h"

namespace tutti::exec {

// One member: its schedule, and the buffers (and offsets in them) its kInput and kOutput
// become: user buffers (kFirstUserBuf and above) in a fused group, parts of one input and one
// output where the simulator runs the merged schedule. Its scratch moves to a part of the
// merged scratch.
struct MergeMember {
  const Schedule* schedule = nullptr;
  uint16_t input = 0;
  uint16_t output = 0;
  size_t inputOffset = 0;
  size_t outputOffset = 0;
};

// No window slices, window phases or weighted mixes.
bool mergeable(const Schedule& s);
// Whether the schedule reduces (kReduce, kRecvReduce).
bool reduces(const Schedule& s);
// schedules[r] is rank r's schedule of one call: whether every message between two ranks is
// sent and received in rounds of the same index (false also when the counts of messages
// between a pair disagree).
bool roundsAligned(std::span<const Schedule> schedules);
// The merged schedule, named `algorithm`. Throws tuttiInternalError for a member that is not
// mergeable, or reducing members whose datatypes or operations differ.
Schedule mergeSchedules(std::span<const MergeMember> members, std::string algorithm);

}  // namespace tutti::exec
