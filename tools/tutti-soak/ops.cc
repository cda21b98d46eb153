#include "ops.h"

#include <sstream>

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
  return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter;
}

void fill(const Op& op, std::byte* p, int rank, int n, size_t count, uint64_t elemBase = 0) {
  tuttiRedOp_t valueOp = reducing(op.kind) ? op.op : tuttiSum;
  for (size_t e = 0; e < count; ++e)
    store(op.dtype, p, e, inputValue(op.dtype, valueOp, op.call, rank, n, elemBase + e));
}

}  // namespace

const char* kindText(Kind k) {
  static const char* names[] = {"allreduce",     "broadcast", "reduce",   "allgather",
                                "reducescatter", "alltoall",  "gather",   "scatter",
                                "allgatherv",    "alltoallv", "sendrecv", "barrier"};
  return names[static_cast<int>(k)];
}

std::string Op::describe(const std::vector<Comm>& comms) const {
  std::ostringstream os;
  os << "call #" << call << " " << kindText(kind) << "(count " << count << ", " << dtypeText(dtype);
  if (reducing(kind)) os << ", " << opText(op);
  if (kind == Kind::kBroadcast || kind == Kind::kReduce || kind == Kind::kGather ||
      kind == Kind::kScatter)
    os << ", root " << root;
  if (kind == Kind::kSendRecv) os << ", shift " << shift;
  if (inPlace) os << ", in place";
  os << ") on " << comms[comm].name;
  return os.str();
}

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
  op.op = static_cast<tuttiRedOp_t>(d[3] % tuttiNumOps);
  if (op.op == tuttiAvg && !isFloat(op.dtype)) op.op = tuttiSum;
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
  return op;
}

tuttiResult_t issueOp(Op& op, const std::vector<Comm>& comms) {
  const Comm& c = comms[op.comm];
  const int n = c.size, r = c.rank;
  const size_t es = dtypeBytes(op.dtype), cnt = op.count;
  std::byte* recv = op.recv.data();
  const std::byte* send = op.inPlace ? recv : op.send.data();
  tuttiComm_t h = c.handle;
  switch (op.kind) {
    case Kind::kAllReduce:
      return tuttiAllReduce(send, recv, cnt, op.dtype, op.op, h, nullptr);
    case Kind::kBroadcast:
      return tuttiBroadcast(send, recv, cnt, op.dtype, op.root, h, nullptr);
    case Kind::kReduce:
      return tuttiReduce(send, recv, cnt, op.dtype, op.op, op.root, h, nullptr);
    case Kind::kAllGather:
      if (op.inPlace) send = recv + r * cnt * es;
      return tuttiAllGather(send, recv, cnt, op.dtype, h, nullptr);
    case Kind::kReduceScatter:
      if (op.inPlace)
        return tuttiReduceScatter(recv, recv + r * cnt * es, cnt, op.dtype, op.op, h, nullptr);
      return tuttiReduceScatter(send, recv, cnt, op.dtype, op.op, h, nullptr);
    case Kind::kAllToAll:
      return tuttiAllToAll(op.send.data(), recv, cnt, op.dtype, h, nullptr);
    case Kind::kGather:
      if (op.inPlace && r == op.root)
        send = recv + r * cnt * es;
      else
        send = op.send.data();
      return tuttiGather(send, r == op.root ? recv : nullptr, cnt, op.dtype, op.root, h, nullptr);
    case Kind::kScatter: {
      std::byte* out = op.inPlace && r == op.root ? op.send.data() + r * cnt * es : recv;
      return tuttiScatter(r == op.root ? op.send.data() : nullptr, out, cnt, op.dtype, op.root, h,
                          nullptr);
    }
    case Kind::kAllGatherV:
      if (op.inPlace) send = recv + op.recvDispls[r] * es;
      return tuttiAllGatherV(send, op.recvCounts[r], recv, op.recvCounts.data(),
                             op.recvDispls.data(), op.dtype, h, nullptr);
    case Kind::kAllToAllV:
      return tuttiAllToAllV(op.send.data(), op.sendCounts.data(), op.sendDispls.data(), recv,
                            op.recvCounts.data(), op.recvDispls.data(), op.dtype, h, nullptr);
    case Kind::kSendRecv: {
      const int to = (r + op.shift) % n, from = (r - op.shift + n) % n;
      tuttiResult_t res = tuttiGroupStart();
      if (res != tuttiSuccess) return res;
      tuttiResult_t s = tuttiSend(op.send.data(), op.sendCounts[0], op.dtype, to, h, nullptr);
      tuttiResult_t v = tuttiRecv(recv, op.recvCounts[0], op.dtype, from, h, nullptr);
      tuttiResult_t e = tuttiGroupEnd();
      return s != tuttiSuccess ? s : v != tuttiSuccess ? v : e;
    }
    default:
      return tuttiBarrier(h, nullptr);
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
