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

namespace {
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
  return "?";
}
std::ostream& operator<<(std::ostream& os, const Slice& s) {
  os << bufName(s.buf);
  if (s.buf == Buf::kWindow) os << s.rank;
  return os << "[" << s.offset << "+" << s.bytes << "]";
}
}  // namespace

std::string toString(const Schedule& s) {
  std::ostringstream os;
  os << s.algorithm << " scratch=" << s.scratchBytes;
  if (s.windowBytes) os << " window=" << s.windowBytes << " phases=" << s.windowPhases;
  os << "\n";
  for (size_t i = 0; i < s.rounds.size(); ++i) {
    os << " round " << i << ":";
    for (const Op& op : s.rounds[i].ops) {
      switch (op.type) {
        case OpType::kSend:
          os << " send(" << op.peer << "," << op.src << ")";
          break;
        case OpType::kRecv:
          os << " recv(" << op.peer << "," << op.dst << ")";
          break;
        case OpType::kRecvReduce:
          os << " recvReduce(" << op.peer << "," << op.src << "->" << op.dst << ")";
          break;
        case OpType::kCopy:
          os << " copy(" << op.src << "->" << op.dst << ")";
          break;
        case OpType::kReduce:
          os << " reduce(" << op.src << "," << op.src2 << "->" << op.dst << ")";
          break;
        case OpType::kPost:
          os << " post(" << op.phase << ")";
          break;
        case OpType::kWait:
          os << " wait(" << op.peer << "," << op.phase << ")";
          break;
      }
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace tutti::exec
