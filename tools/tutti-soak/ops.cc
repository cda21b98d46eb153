#include "ops.h"

#include <sstream>

#include "tutti/datatype.hpp"
#include "values.h"

namespace tutti::soak {

namespace {

constexpr std::byte kUntouched{0x5A};  // fills receive bytes no call may write

size_t vCount(uint64_t call, int64_t who, uint64_t salt, size_t limit) {
  return static_cast<size_t>(hash3(call, who, salt) % (limit + 1));
}

// Elements rank `from` sends to rank `to` in an all-to-all-v.
size_t pairCount(const Op& op, int from, int to) {
  return vCount(op.call, int64_t{from} * 4096 + to, 99, op.count);
}

uint64_t pairElem(int to, size_t e) { return (static_cast<uint64_t>(to) << 32) + e; }

bool reducing(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter ||
         k == Kind::kReduceScatterV;
}

bool rooted(Kind k) {
  return k == Kind::kBroadcast || k == Kind::kReduce || k == Kind::kGather || k == Kind::kScatter ||
         k == Kind::kGatherV || k == Kind::kScatterV;
}

// Blocks of vCount(call, q, countSalt, limit) elements for q < n, each after a gap of 0-2
// elements (vCount(call, q, gapSalt, 2)), and a gap of 0-2 after the last: the counts and
// displacements, and the elements the layout spans.
size_t layout(uint64_t call, int n, size_t limit, uint64_t countSalt, uint64_t gapSalt,
              std::vector<size_t>* counts, std::vector<size_t>* displs) {
  size_t at = 0;
  for (int q = 0; q < n; ++q) {
    counts->push_back(vCount(call, q, countSalt, limit));
    at += vCount(call, q, gapSalt, 2);
    displs->push_back(at);
    at += counts->back();
  }
  return at + vCount(call, n, gapSalt, 2);
}

void fill(const Op& op, std::byte* p, int rank, int n, size_t count, uint64_t elemBase = 0) {
  tuttiRedOp_t valueOp = reducing(op.kind) ? op.op : tuttiSum;
  for (size_t e = 0; e < count; ++e)
    store(op.dtype, p, e, inputValue(op.dtype, valueOp, op.call, rank, n, elemBase + e));
}

}  // namespace

const char* kindText(Kind k) {
  static const char* names[] = {"allreduce",     "broadcast", "reduce",         "allgather",
                                "reducescatter", "alltoall",  "gather",         "scatter",
                                "allgatherv",    "alltoallv", "reducescatterv", "gatherv",
                                "scatterv",      "sendrecv",  "barrier"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Kind::kCount));
  return names[static_cast<int>(k)];
}

bool isV(Kind k) {
  return k == Kind::kAllGatherV || k == Kind::kAllToAllV || k == Kind::kReduceScatterV ||
         k == Kind::kGatherV || k == Kind::kScatterV;
}

std::string Op::describe(const std::vector<Comm>& comms) const {
  std::ostringstream os;
  os << "call #" << call << " " << kindText(kind) << "(count " << count << ", " << dtypeText(dtype);
  if (reducing(kind)) os << ", " << opText(op);
  if (rooted(kind)) os << ", root " << root;
  if (kind == Kind::kSendRecv) os << ", shift " << shift;
  if (inPlace) os << ", in place";
  if (rootOnlyBuffer) os << ", a receive buffer off the root";
  os << ") on " << comms[comm].name;
  if (fusedMember >= 0)
    os << ", member " << fusedMember + 1 << " of " << fusedSize << " of a fused group";
  if (onStream) os << ", on its host stream";
  return os.str();
}

namespace {

// Fills op's buffers for this rank from its drawn fields.
void prepare(Op& op, const std::vector<Comm>& comms) {
  const Comm& c = comms[op.comm];
  const int n = c.size, r = c.rank;
  const size_t es = dtypeBytes(op.dtype);
  const size_t cnt = op.count;
  switch (op.kind) {
    case Kind::kAllReduce:
    case Kind::kReduce:
      op.recv.assign(cnt * es, kUntouched);
      if (op.inPlace) {
        fill(op, op.recv.data(), r, n, cnt);
      } else {
        op.send.resize(cnt * es);
        fill(op, op.send.data(), r, n, cnt);
      }
      break;
    case Kind::kBroadcast:
      op.recv.assign(cnt * es, kUntouched);
      if (op.inPlace) {
        if (r == op.root) fill(op, op.recv.data(), r, n, cnt);
      } else {
        op.send.resize(cnt * es);
        fill(op, op.send.data(), r, n, cnt);
      }
      break;
    case Kind::kAllGather:
      op.recv.assign(n * cnt * es, kUntouched);
      if (op.inPlace) {
        fill(op, op.recv.data() + r * cnt * es, r, n, cnt);
      } else {
        op.send.resize(cnt * es);
        fill(op, op.send.data(), r, n, cnt);
      }
      break;
    case Kind::kReduceScatter:
      if (op.inPlace) {
        op.recv.resize(n * cnt * es);
        fill(op, op.recv.data(), r, n, n * cnt);
      } else {
        op.send.resize(n * cnt * es);
        fill(op, op.send.data(), r, n, n * cnt);
        op.recv.assign(cnt * es, kUntouched);
      }
      break;
    case Kind::kAllToAll:
      op.send.resize(n * cnt * es);
      fill(op, op.send.data(), r, n, n * cnt);
      op.recv.assign(n * cnt * es, kUntouched);
      break;
    case Kind::kGather:
      op.send.resize(cnt * es);
      fill(op, op.send.data(), r, n, cnt);
      if (r == op.root) {
        op.recv.assign(n * cnt * es, kUntouched);
        if (op.inPlace) fill(op, op.recv.data() + r * cnt * es, r, n, cnt);
      }
      break;
    case Kind::kScatter:
      if (r == op.root) {
        op.send.resize(n * cnt * es);
        fill(op, op.send.data(), r, n, n * cnt);
      }
      if (!(op.inPlace && r == op.root)) op.recv.assign(cnt * es, kUntouched);
      break;
    case Kind::kAllGatherV: {
      size_t at = 0;
      for (int q = 0; q < n; ++q) {
        op.recvCounts.push_back(vCount(op.call, q, 77, cnt));
        at += vCount(op.call, q, 78, 2);  // a gap nobody may write
        op.recvDispls.push_back(at);
        at += op.recvCounts.back();
      }
      op.recv.assign(at * es, kUntouched);
      const size_t mine = op.recvCounts[r];
      if (op.inPlace) {
        fill(op, op.recv.data() + op.recvDispls[r] * es, r, n, mine);
      } else {
        op.send.resize(mine * es);
        fill(op, op.send.data(), r, n, mine);
      }
      break;
    }
    case Kind::kAllToAllV: {
      size_t sAt = 0, rAt = 0;
      for (int j = 0; j < n; ++j) {
        op.sendCounts.push_back(pairCount(op, r, j));
        op.sendDispls.push_back(sAt);
        sAt += op.sendCounts.back();
        op.recvCounts.push_back(pairCount(op, j, r));
        rAt += vCount(op.call, j, 79, 2);
        op.recvDispls.push_back(rAt);
        rAt += op.recvCounts.back();
      }
      op.send.resize(sAt * es);
      for (int j = 0; j < n; ++j)
        fill(op, op.send.data() + op.sendDispls[j] * es, r, n, op.sendCounts[j], pairElem(j, 0));
      op.recv.assign(rAt * es, kUntouched);
      break;
    }
    case Kind::kReduceScatterV: {
      // Every rank's input holds every block (block q at recvDispls[q]: element pairElem(q, e)),
      // the gaps left untouched. In place the output is the rank's own block of it.
      const size_t span = layout(op.call, n, cnt, 80, 81, &op.recvCounts, &op.recvDispls);
      op.send.assign(span * es, kUntouched);
      for (int q = 0; q < n; ++q)
        fill(op, op.send.data() + op.recvDispls[q] * es, r, n, op.recvCounts[q], pairElem(q, 0));
      if (!op.inPlace) {
        op.recvAt = vCount(op.call, r, 84, 2);
        op.recv.assign((op.recvAt + op.recvCounts[r] + 1) * es, kUntouched);
      }
      break;
    }
    case Kind::kGatherV: {
      const size_t span = layout(op.call, n, cnt, 82, 85, &op.recvCounts, &op.recvDispls);
      const size_t mine = op.recvCounts[r];
      if (r == op.root || op.rootOnlyBuffer) op.recv.assign(span * es, kUntouched);
      if (op.inPlace && r == op.root) {
        fill(op, op.recv.data() + op.recvDispls[r] * es, r, n, mine);
      } else {
        op.send.resize(mine * es);
        fill(op, op.send.data(), r, n, mine);
      }
      break;
    }
    case Kind::kScatterV: {
      // The root's block q (at sendDispls[q]) holds elements pairElem(q, e).
      const size_t span = layout(op.call, n, cnt, 83, 86, &op.sendCounts, &op.sendDispls);
      if (r == op.root) {
        op.send.assign(span * es, kUntouched);
        for (int q = 0; q < n; ++q)
          fill(op, op.send.data() + op.sendDispls[q] * es, r, n, op.sendCounts[q], pairElem(q, 0));
      }
      if (!(op.inPlace && r == op.root)) {
        op.recvAt = vCount(op.call, r, 87, 2);
        op.recv.assign((op.recvAt + op.sendCounts[r] + 1) * es, kUntouched);
      }
      break;
    }
    case Kind::kSendRecv: {
      const int to = (r + op.shift) % n, from = (r - op.shift + n) % n;
      op.sendCounts = {vCount(op.call, r, 55, cnt)};
      op.recvCounts = {vCount(op.call, from, 55, cnt)};
      (void)to;
      op.send.resize(op.sendCounts[0] * es);
      fill(op, op.send.data(), r, n, op.sendCounts[0]);
      op.recv.assign(op.recvCounts[0] * es, kUntouched);
      break;
    }
    default:
      break;
  }
}

// A drawn op that applies to dtype: avg on an integer type (whose inputs are not exact there)
// and a bitwise op on a floating type become sum.
tuttiRedOp_t usableOp(tuttiDataType_t dtype, tuttiRedOp_t op) {
  if (op == tuttiAvg && !isFloat(dtype)) return tuttiSum;
  if (!redOpAppliesTo(dtype, op)) return tuttiSum;
  return op;
}

}  // namespace

Op drawOp(std::mt19937_64& rng, uint64_t call, const std::vector<Comm>& comms, size_t maxBytes,
          bool allowP2p) {
  // A fixed number of draws per op, whatever the communicator's size: every rank stays on
  // the same stream.
  uint64_t d[9];
  for (auto& x : d) x = rng();
  Op op;
  op.call = call;
  op.kind = static_cast<Kind>(d[0] % static_cast<uint64_t>(Kind::kCount));
  op.comm = static_cast<int>(d[1] % comms.size());
  op.dtype = static_cast<tuttiDataType_t>(d[2] % tuttiNumTypes);
  op.op = usableOp(op.dtype, static_cast<tuttiRedOp_t>(d[3] % tuttiNumOps));
  const Comm& c = comms[op.comm];
  const int n = c.size, r = c.rank;
  if (op.kind == Kind::kSendRecv && (n == 1 || !allowP2p)) op.kind = Kind::kAllReduce;
  const size_t es = dtypeBytes(op.dtype);
  const bool blocks = op.kind != Kind::kAllReduce && op.kind != Kind::kBroadcast &&
                      op.kind != Kind::kReduce && op.kind != Kind::kSendRecv;
  const size_t maxCount = std::max<size_t>(1, maxBytes / es / (blocks ? n : 1));
  const uint64_t sizeClass = d[4] % 100;
  op.count = sizeClass < 25 ? d[5] % 9 : sizeClass < 65 ? d[5] % 4097 : d[5] % (maxCount + 1);
  op.count = std::min(op.count, maxCount);
  op.root = static_cast<int>(d[6] % static_cast<uint64_t>(n));
  const bool inPlaceKind = op.kind != Kind::kAllToAll && op.kind != Kind::kAllToAllV &&
                           op.kind != Kind::kSendRecv && op.kind != Kind::kBarrier;
  op.inPlace = inPlaceKind && (d[7] & 1);
  op.shift = n > 1 ? 1 + static_cast<int>(d[8] % static_cast<uint64_t>(n - 1)) : 0;
  op.rootOnlyBuffer = op.kind == Kind::kGatherV && r != op.root && (d[7] & 2);
  prepare(op, comms);
  return op;
}

std::vector<Op> drawFusedGroup(std::mt19937_64& rng, uint64_t& call,
                               const std::vector<Comm>& comms) {
  // A fixed number of draws per group; the members' own choices come from hashes of their
  // call numbers.
  uint64_t d[4];
  for (auto& x : d) x = rng();
  const int comm = static_cast<int>(d[0] % comms.size());
  const int members = 2 + static_cast<int>(d[1] % 5);
  const bool mixed = d[2] % 100 < 35;               // datatypes (and ops) per member
  const bool withGather = (d[2] / 100) % 100 < 35;  // one all-gather among them
  const int gatherAt = withGather ? static_cast<int>(d[3] % members) : -1;
  const auto dtype = static_cast<tuttiDataType_t>((d[3] >> 8) % tuttiNumTypes);
  const auto redOp = static_cast<tuttiRedOp_t>((d[3] >> 16) % tuttiNumOps);
  const int n = comms[comm].size;
  std::vector<Op> ops;
  for (int k = 0; k < members; ++k) {
    Op op;
    op.call = call++;
    op.comm = comm;
    op.kind = k == gatherAt ? Kind::kAllGather : Kind::kAllReduce;
    op.fusedMember = k;
    op.fusedSize = members;
    const uint64_t h = hash3(op.call, -3, static_cast<uint64_t>(k));
    op.dtype = mixed ? static_cast<tuttiDataType_t>(h % tuttiNumTypes) : dtype;
    op.op = usableOp(op.dtype, mixed ? static_cast<tuttiRedOp_t>((h >> 8) % tuttiNumOps) : redOp);
    const size_t es = dtypeBytes(op.dtype);
    // Most within what fuses (an all-reduce's 8 KiB, an all-gather's 16 KiB of output), a few
    // beyond it (up to 4096 elements), which then run on their own.
    const size_t fits =
        op.kind == Kind::kAllGather ? (16u << 10) / es / static_cast<size_t>(n) : (8u << 10) / es;
    const uint64_t sizeClass = (h >> 16) % 100, v = h >> 24;
    op.count = sizeClass < 40 ? v % 17 : sizeClass < 90 ? v % (fits + 1) : v % 4097;
    op.inPlace = ((h >> 12) & 3) == 0;
    prepare(op, comms);
    ops.push_back(std::move(op));
  }
  return ops;
}

tuttiResult_t issueOp(Op& op, const std::vector<Comm>& comms, tuttiStream_t stream) {
  const Comm& c = comms[op.comm];
  const int n = c.size, r = c.rank;
  const size_t es = dtypeBytes(op.dtype), cnt = op.count;
  std::byte* recv = op.recv.data();
  const std::byte* send = op.inPlace ? recv : op.send.data();
  tuttiComm_t h = c.handle;
  switch (op.kind) {
    case Kind::kAllReduce:
      return tuttiAllReduce(send, recv, cnt, op.dtype, op.op, h, stream);
    case Kind::kBroadcast:
      return tuttiBroadcast(send, recv, cnt, op.dtype, op.root, h, stream);
    case Kind::kReduce:
      return tuttiReduce(send, recv, cnt, op.dtype, op.op, op.root, h, stream);
    case Kind::kAllGather:
      if (op.inPlace) send = recv + r * cnt * es;
      return tuttiAllGather(send, recv, cnt, op.dtype, h, stream);
    case Kind::kReduceScatter:
      if (op.inPlace)
        return tuttiReduceScatter(recv, recv + r * cnt * es, cnt, op.dtype, op.op, h, stream);
      return tuttiReduceScatter(send, recv, cnt, op.dtype, op.op, h, stream);
    case Kind::kAllToAll:
      return tuttiAllToAll(op.send.data(), recv, cnt, op.dtype, h, stream);
    case Kind::kGather:
      if (op.inPlace && r == op.root)
        send = recv + r * cnt * es;
      else
        send = op.send.data();
      return tuttiGather(send, r == op.root ? recv : nullptr, cnt, op.dtype, op.root, h, stream);
    case Kind::kScatter: {
      std::byte* out = op.inPlace && r == op.root ? op.send.data() + r * cnt * es : recv;
      return tuttiScatter(r == op.root ? op.send.data() : nullptr, out, cnt, op.dtype, op.root, h,
                          stream);
    }
    case Kind::kAllGatherV:
      if (op.inPlace) send = recv + op.recvDispls[r] * es;
      return tuttiAllGatherV(send, op.recvCounts[r], recv, op.recvCounts.data(),
                             op.recvDispls.data(), op.dtype, h, stream);
    case Kind::kAllToAllV:
      return tuttiAllToAllV(op.send.data(), op.sendCounts.data(), op.sendDispls.data(), recv,
                            op.recvCounts.data(), op.recvDispls.data(), op.dtype, h, stream);
    case Kind::kReduceScatterV: {
      std::byte* out = op.inPlace ? op.send.data() + op.recvDispls[r] * es : recv + op.recvAt * es;
      return tuttiReduceScatterV(op.send.data(), out, op.recvCounts.data(), op.recvDispls.data(),
                                 op.dtype, op.op, h, stream);
    }
    case Kind::kGatherV:
      send = op.inPlace && r == op.root ? recv + op.recvDispls[r] * es : op.send.data();
      return tuttiGatherV(send, op.recvCounts[r], op.recv.empty() ? nullptr : recv,
                          op.recvCounts.data(), op.recvDispls.data(), op.dtype, op.root, h, stream);
    case Kind::kScatterV: {
      std::byte* out = op.inPlace && r == op.root ? op.send.data() + op.sendDispls[r] * es
                                                  : recv + op.recvAt * es;
      return tuttiScatterV(r == op.root ? op.send.data() : nullptr, op.sendCounts.data(),
                           op.sendDispls.data(), out, op.sendCounts[r], op.dtype, op.root, h,
                           stream);
    }
    case Kind::kSendRecv: {
      const int to = (r + op.shift) % n, from = (r - op.shift + n) % n;
      tuttiResult_t res = tuttiGroupStart();
      if (res != tuttiSuccess) return res;
      tuttiResult_t s = tuttiSend(op.send.data(), op.sendCounts[0], op.dtype, to, h, stream);
      tuttiResult_t v = tuttiRecv(recv, op.recvCounts[0], op.dtype, from, h, stream);
      tuttiResult_t e = tuttiGroupEnd();
      return s != tuttiSuccess ? s : v != tuttiSuccess ? v : e;
    }
    default:
      return tuttiBarrier(h, stream);
  }
}

namespace {

// Compares count elements at p with expect(e); "" or the first difference.
template <typename F>
std::string check(const Op& op, const std::byte* p, size_t count, const char* where, F&& expect) {
  for (size_t e = 0; e < count; ++e) {
    double want = expect(e), got = load(op.dtype, p, e);
    if (got != want) {
      std::ostringstream os;
      os << where << " element " << e << ": got " << got << ", expected " << want;
      return os.str();
    }
  }
  return "";
}

std::string untouched(const std::byte* p, size_t bytes, const char* where) {
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != kUntouched) return std::string(where) + ": a byte outside every block was written";
  return "";
}

// A buffer laid out in blocks (counts, displs) over `span` elements: its gaps must hold
// kUntouched, and each block q other than `skip` what blockValue(q, e) says; "" or the first
// difference.
template <typename F>
std::string blocksAndGaps(const Op& op, const std::byte* p, size_t span,
                          const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                          int skip, const char* what, F&& blockValue) {
  const size_t es = dtypeBytes(op.dtype);
  size_t at = 0;
  for (size_t q = 0; q < counts.size(); ++q) {
    std::string s =
        untouched(p + at * es, (displs[q] - at) * es, (std::string(what) + " gap").c_str());
    if (s.empty() && static_cast<int>(q) != skip)
      s = check(op, p + displs[q] * es, counts[q], (std::string(what) + " block").c_str(),
                [&](size_t e) { return blockValue(static_cast<int>(q), e); });
    if (!s.empty()) return "block " + std::to_string(q) + ": " + s;
    at = displs[q] + counts[q];
  }
  return untouched(p + at * es, (span - at) * es, (std::string(what) + " tail gap").c_str());
}

// An output of `count` elements at element recvAt of recv: the elements around it untouched.
std::string guards(const Op& op, size_t count) {
  const size_t es = dtypeBytes(op.dtype);
  std::string s = untouched(op.recv.data(), op.recvAt * es, "recvbuff before the output");
  if (s.empty())
    s = untouched(op.recv.data() + (op.recvAt + count) * es,
                  op.recv.size() - (op.recvAt + count) * es, "recvbuff after the output");
  return s;
}

}  // namespace

std::string verifyOp(const Op& op, const std::vector<Comm>& comms) {
  const Comm& c = comms[op.comm];
  const int n = c.size, r = c.rank;
  const size_t es = dtypeBytes(op.dtype), cnt = op.count;
  const std::byte* recv = op.recv.data();
  auto input = [&](int rank, uint64_t elem) {
    return inputValue(op.dtype, tuttiSum, op.call, rank, n, elem);
  };
  auto reduced = [&](uint64_t elem) { return reducedValue(op.dtype, op.op, op.call, n, elem); };
  switch (op.kind) {
    case Kind::kAllReduce:
      return check(op, recv, cnt, "recvbuff", reduced);
    case Kind::kReduce:
      return r == op.root ? check(op, recv, cnt, "root's recvbuff", reduced) : "";
    case Kind::kBroadcast:
      return check(op, recv, cnt, "recvbuff", [&](size_t e) { return input(op.root, e); });
    case Kind::kAllGather:
      for (int q = 0; q < n; ++q) {
        std::string s = check(op, recv + q * cnt * es, cnt, "recvbuff block",
                              [&](size_t e) { return input(q, e); });
        if (!s.empty()) return "rank " + std::to_string(q) + "'s " + s;
      }
      return "";
    case Kind::kReduceScatter: {
      const std::byte* out = op.inPlace ? recv + r * cnt * es : recv;
      return check(op, out, cnt, "recvbuff", [&](size_t e) { return reduced(r * cnt + e); });
    }
    case Kind::kAllToAll:
      for (int q = 0; q < n; ++q) {
        std::string s = check(op, recv + q * cnt * es, cnt, "recvbuff block",
                              [&](size_t e) { return input(q, r * cnt + e); });
        if (!s.empty()) return "from rank " + std::to_string(q) + ": " + s;
      }
      return "";
    case Kind::kGather:
      if (r != op.root) return "";
      for (int q = 0; q < n; ++q) {
        std::string s = check(op, recv + q * cnt * es, cnt, "root's recvbuff block",
                              [&](size_t e) { return input(q, e); });
        if (!s.empty()) return "rank " + std::to_string(q) + "'s " + s;
      }
      return "";
    case Kind::kScatter: {
      const std::byte* out = op.inPlace && r == op.root ? op.send.data() + r * cnt * es : recv;
      return check(op, out, cnt, "recvbuff", [&](size_t e) { return input(op.root, r * cnt + e); });
    }
    case Kind::kAllGatherV: {
      size_t at = 0;
      for (int q = 0; q < n; ++q) {
        std::string s = untouched(recv + at * es, (op.recvDispls[q] - at) * es, "recvbuff gap");
        if (s.empty())
          s = check(op, recv + op.recvDispls[q] * es, op.recvCounts[q], "recvbuff block",
                    [&](size_t e) { return input(q, e); });
        if (!s.empty()) return "rank " + std::to_string(q) + "'s " + s;
        at = op.recvDispls[q] + op.recvCounts[q];
      }
      return "";
    }
    case Kind::kAllToAllV: {
      size_t at = 0;
      for (int q = 0; q < n; ++q) {
        std::string s = untouched(recv + at * es, (op.recvDispls[q] - at) * es, "recvbuff gap");
        if (s.empty())
          s = check(op, recv + op.recvDispls[q] * es, op.recvCounts[q], "recvbuff block",
                    [&](size_t e) { return input(q, pairElem(r, e)); });
        if (!s.empty()) return "from rank " + std::to_string(q) + ": " + s;
        at = op.recvDispls[q] + op.recvCounts[q];
      }
      return "";
    }
    case Kind::kReduceScatterV: {
      // The input (const, or in place everything but the rank's own block) keeps its values
      // and gaps; the output is the reduction of block r.
      auto mine = [&](int q, size_t e) {
        return inputValue(op.dtype, op.op, op.call, r, n, pairElem(q, e));
      };
      const size_t span = op.send.size() / es;
      std::string s = blocksAndGaps(op, op.send.data(), span, op.recvCounts, op.recvDispls,
                                    op.inPlace ? r : -1, "sendbuff", mine);
      if (!s.empty()) return s;
      const std::byte* out =
          op.inPlace ? op.send.data() + op.recvDispls[r] * es : recv + op.recvAt * es;
      if (!op.inPlace && !(s = guards(op, op.recvCounts[r])).empty()) return s;
      return check(op, out, op.recvCounts[r], "recvbuff",
                   [&](size_t e) { return reduced(pairElem(r, e)); });
    }
    case Kind::kGatherV: {
      const size_t span = op.recv.size() / es;
      if (r != op.root)  // a receive buffer off the root is ignored: all of it untouched
        return untouched(recv, op.recv.size(), "a non-root's recvbuff");
      return blocksAndGaps(op, recv, span, op.recvCounts, op.recvDispls, -1, "root's recvbuff",
                           [&](int q, size_t e) { return input(q, e); });
    }
    case Kind::kScatterV: {
      auto block = [&](int q, size_t e) { return input(op.root, pairElem(q, e)); };
      if (r == op.root) {  // the root's input keeps its values and gaps (in place too)
        std::string s = blocksAndGaps(op, op.send.data(), op.send.size() / es, op.sendCounts,
                                      op.sendDispls, -1, "root's sendbuff", block);
        if (!s.empty() || op.inPlace) return s;
      }
      std::string s = guards(op, op.sendCounts[r]);
      if (!s.empty()) return s;
      return check(op, recv + op.recvAt * es, op.sendCounts[r], "recvbuff",
                   [&](size_t e) { return block(r, e); });
    }
    case Kind::kSendRecv: {
      const int from = (r - op.shift + n) % n;
      return check(op, recv, op.recvCounts[0], "recvbuff",
                   [&](size_t e) { return input(from, e); });
    }
    default:
      return "";
  }
}

size_t outputBytes(const Op& op, const std::vector<Comm>& comms) {
  const Comm& c = comms[op.comm];
  const size_t es = dtypeBytes(op.dtype), cnt = op.count;
  switch (op.kind) {
    case Kind::kReduce:
    case Kind::kGather:
      return c.rank == op.root ? op.recv.size() : 0;
    case Kind::kReduceScatter:
    case Kind::kScatter:
      return cnt * es;
    case Kind::kReduceScatterV:
      return op.recvCounts[c.rank] * es;
    case Kind::kScatterV:
      return op.sendCounts[c.rank] * es;
    case Kind::kGatherV: {
      if (c.rank != op.root) return 0;
      size_t total = 0;
      for (size_t x : op.recvCounts) total += x;
      return total * es;
    }
    case Kind::kAllGatherV:
    case Kind::kAllToAllV:
    case Kind::kSendRecv: {
      size_t total = 0;
      for (size_t x : op.recvCounts) total += x;
      return total * es;
    }
    default:
      return op.recv.size();
  }
}

}  // namespace tutti::soak
