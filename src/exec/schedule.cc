#include "exec/schedule.h"

#include <algorithm>
#include <sstream>

namespace tutti::exec {

std::vector<int> peersOf(const Schedule& s) {
  std::vector<int> peers;
  for (const Round& r : s.rounds)
    for (const Op& op : r.ops)
      if (op.peer >= 0 && op.type != OpType::kWait) peers.push_back(op.peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

const char* bufName(Buf b) {
  switch (b) {
    case Buf::kInput:
      return "in";
    case Buf::kOutput:
      return "out";
    case Buf::kScratch:
      return "tmp";
    case Buf::kWindow:
      return "win";
  }
  return "user";  // extra user buffers of grouped point-to-point calls
}

std::string toString(const Slice& s) {
  std::ostringstream os;
  os << bufName(s.buf);
  if (s.buf == Buf::kWindow) os << s.rank;
  if (static_cast<int>(s.buf) >= kFirstUserBuf) os << static_cast<int>(s.buf) - kFirstUserBuf;
  os << "[" << s.offset << "+" << s.bytes << "]";
  return os.str();
}

std::string toString(const Op& op) {
  switch (op.type) {
    case OpType::kSend:
      return "send(to " + std::to_string(op.peer) + ", " + toString(op.src) + ")";
    case OpType::kRecv:
      return "recv(from " + std::to_string(op.peer) + ", " + toString(op.dst) + ")";
    case OpType::kRecvReduce:
      return "recvReduce(from " + std::to_string(op.peer) + ", " + toString(op.src) + " -> " +
             toString(op.dst) + ")";
    case OpType::kCopy:
      return "copy(" + toString(op.src) + " -> " + toString(op.dst) + ")";
    case OpType::kReduce:
      return "reduce(" + toString(op.src) + ", " + toString(op.src2) + " -> " + toString(op.dst) +
             ")";
    case OpType::kPost:
      return "post(" + std::to_string(op.phase) + ")";
    case OpType::kWait:
      return "wait(" + std::to_string(op.peer) + ", " + std::to_string(op.phase) + ")";
    case OpType::kMix:
      return "mix#" + std::to_string(op.mix) + "(-> " + toString(op.dst) + ")";
  }
  return "?";
}

std::string toString(const Schedule& s) {
  std::ostringstream os;
  os << s.algorithm << " scratch=" << s.scratchBytes;
  if (s.windowBytes) os << " window=" << s.windowBytes << " phases=" << s.windowPhases;
  os << "\n";
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    os << " round " << i << ":";
    for (const Op& op : s.rounds[i].ops) os << " " << toString(op);
    os << "\n";
  }
  for (size_t m = 0; m < s.mixes.size(); ++m) {
    os << " mix#" << m << " =";
    for (size_t k = 0; k < s.mixes[m].srcs.size(); ++k)
      os << (k ? " + " : " ") << s.mixes[m].weights[k] << " * " << toString(s.mixes[m].srcs[k]);
    os << "\n";
  }
  return os.str();
}

}  // namespace tutti::exec
