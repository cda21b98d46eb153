#include "exec/schedule_merge.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "common/error.h"

namespace tutti::exec {

namespace {

bool isTransfer(OpType t) {
  return t == OpType::kSend || t == OpType::kRecv || t == OpType::kRecvReduce;
}

bool usesWindow(const Slice& s) { return s.buf == Buf::kWindow; }

// Slice s of a member, in the merged schedule's buffers.
Slice moved(Slice s, const MergeMember& m, size_t scratchBase) {
  switch (s.buf) {
    case Buf::kInput:
      s.buf = static_cast<Buf>(m.input);
      s.offset += m.inputOffset;
      break;
    case Buf::kOutput:
      s.buf = static_cast<Buf>(m.output);
      s.offset += m.outputOffset;
      break;
    case Buf::kScratch:
      s.offset += scratchBase;
      break;
    default:
      fail(tuttiInternalError, "mergeSchedules: a member uses buffer ", toString(s));
  }
  return s;
}

constexpr size_t kScratchAlign = 64;

size_t alignUp(size_t x) { return (x + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

}  // namespace

bool mergeable(const Schedule& s) {
  if (s.windowBytes > 0 || !s.mixes.empty()) return false;
  for (const Round& r : s.rounds)
    for (const Op& op : r.ops) {
      if (op.type == OpType::kPost || op.type == OpType::kWait || op.type == OpType::kMix)
        return false;
      if (usesWindow(op.src) || usesWindow(op.src2) || usesWindow(op.dst)) return false;
      if (static_cast<int>(op.src.buf) >= kFirstUserBuf ||
          static_cast<int>(op.dst.buf) >= kFirstUserBuf ||
          static_cast<int>(op.src2.buf) >= kFirstUserBuf)
        return false;
    }
  return true;
}

bool reduces(const Schedule& s) {
  for (const Round& r : s.rounds)
    for (const Op& op : r.ops)
      if (op.type == OpType::kReduce || op.type == OpType::kRecvReduce) return true;
  return false;
}

bool roundsAligned(std::span<const Schedule> schedules) {
  // (from, to) -> the round index of each message, in order: as sent, and as received.
  std::map<std::pair<int, int>, std::vector<size_t>> sent, received;
  for (size_t r = 0; r < schedules.size(); ++r) {
    const int self = static_cast<int>(r);
    const auto& rounds = schedules[r].rounds;
    for (size_t i = 0; i < rounds.size(); ++i)
      for (const Op& op : rounds[i].ops) {
        if (op.type == OpType::kSend) sent[{self, op.peer}].push_back(i);
        if (op.type == OpType::kRecv || op.type == OpType::kRecvReduce)
          received[{op.peer, self}].push_back(i);
      }
  }
  return sent == received;
}

Schedule mergeSchedules(std::span<const MergeMember> members, std::string algorithm) {
  Schedule out;
  out.algorithm = std::move(algorithm);
  bool haveReduction = false;
  std::vector<size_t> scratchBase(members.size());
  size_t rounds = 0;
  for (size_t j = 0; j < members.size(); ++j) {
    const Schedule& s = *members[j].schedule;
    if (!mergeable(s))
      fail(tuttiInternalError, "mergeSchedules: member ", j, " (", s.algorithm,
           ") uses the shared window or weighted mixes");
    if (reduces(s)) {
      if (haveReduction && (s.dtype != out.dtype || s.op != out.op))
        fail(tuttiInternalError, "mergeSchedules: member ", j, " (", s.algorithm,
             ") reduces with another datatype or operation than an earlier member");
      out.dtype = s.dtype;
      out.op = s.op;
      haveReduction = true;
    } else if (!haveReduction && j == 0) {
      out.dtype = s.dtype;
      out.op = s.op;
    }
    scratchBase[j] = out.scratchBytes;
    out.scratchBytes = alignUp(out.scratchBytes + s.scratchBytes);
    rounds = std::max(rounds, s.rounds.size());
  }
  out.rounds.resize(rounds);
  for (size_t i = 0; i < rounds; ++i) {
    std::vector<Op>& ops = out.rounds[i].ops;
    for (size_t j = 0; j < members.size(); ++j) {
      const Schedule& s = *members[j].schedule;
      if (i >= s.rounds.size()) continue;
      for (const Op& op : s.rounds[i].ops) {
        Op o = op;
        if (op.type != OpType::kRecv) o.src = moved(op.src, members[j], scratchBase[j]);
        if (op.type == OpType::kReduce) o.src2 = moved(op.src2, members[j], scratchBase[j]);
        if (op.type != OpType::kSend) o.dst = moved(op.dst, members[j], scratchBase[j]);
        ops.push_back(o);
      }
    }
    // Local ops run before transfers in a round anyway; keeping each member's local ops ahead
    // of everyone's transfers states it in the schedule too.
    std::stable_partition(ops.begin(), ops.end(), [](const Op& o) { return !isTransfer(o.type); });
  }
  return out;
}

}  // namespace tutti::exec
