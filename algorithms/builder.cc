#include "builder.h"

#include <algorithm>
#include <map>

#include "common/error.h"

namespace tutti::algo::detail {

Schedule start(const CollArgs& a, const char* name) {
  checkArgs(a);
  Schedule s;
  s.algorithm = name;
  s.dtype = a.dtype;
  s.op = a.op;
  return s;
}

void checkArgs(const CollArgs& a) {
  TUTTI_CHECK_ARG(a.nranks >= 1, collName(a.coll), ": nranks ", a.nranks, " must be >= 1");
  TUTTI_CHECK_ARG(a.rank >= 0 && a.rank < a.nranks, collName(a.coll), ": rank ", a.rank,
                  " out of range for ", a.nranks, " ranks");
  TUTTI_CHECK_ARG(dtypeValid(a.dtype) && dtypeSize(a.dtype) > 0, collName(a.coll),
                  ": invalid datatype ", static_cast<int>(a.dtype));
  TUTTI_CHECK_ARG(opValid(a.op) && a.op != tuttiAvg, collName(a.coll), ": invalid reduction op ",
                  static_cast<int>(a.op), " (avg must be lowered to sum before scheduling)");
  TUTTI_CHECK_ARG(!reduces(a.coll) || opAppliesTo(a.dtype, a.op), collName(a.coll),
                  ": reduction op ", opName(a.op), " is not defined on ", dtypeName(a.dtype),
                  " (bitwise ops take integer types only)");
  TUTTI_CHECK_ARG(a.root >= 0 && a.root < a.nranks, collName(a.coll), ": root ", a.root,
                  " out of range for ", a.nranks, " ranks");
  TUTTI_CHECK_ARG(a.hostOf.empty() || static_cast<int>(a.hostOf.size()) == a.nranks,
                  collName(a.coll), ": hostOf has ", a.hostOf.size(), " entries for ", a.nranks,
                  " ranks");
}

Round& at(Schedule& s, size_t t) {
  if (s.rounds.size() <= t) s.rounds.resize(t + 1);
  return s.rounds[t];
}

void trim(Schedule& s) {
  while (!s.rounds.empty() && s.rounds.back().ops.empty()) s.rounds.pop_back();
}

void needScratch(Schedule& s, size_t bytes) { s.scratchBytes = std::max(s.scratchBytes, bytes); }

void send(Round& rd, int peer, Slice s) {
  if (s.bytes) rd.ops.push_back(Schedule::send(peer, s));
}
void recv(Round& rd, int peer, Slice d) {
  if (d.bytes) rd.ops.push_back(Schedule::recv(peer, d));
}
void recvReduce(Round& rd, int peer, Slice src, Slice dst) {
  if (dst.bytes) rd.ops.push_back(Schedule::recvReduce(peer, src, dst));
}
void copy(Round& rd, Slice src, Slice dst) {
  bool same = src.buf == dst.buf && src.offset == dst.offset && src.bytes == dst.bytes &&
              src.rank == dst.rank;
  if (src.bytes && !same) rd.ops.push_back(Schedule::copy(src, dst));
}
void reduce(Round& rd, Slice a, Slice b, Slice dst) {
  if (dst.bytes) rd.ops.push_back(Schedule::reduce(a, b, dst));
}

void rankOrderReduce(Round& rd, std::span<const Slice> x, int self, Slice dst) {
  size_t n = x.size();
  if (n == 1) {
    copy(rd, x[0], dst);
    return;
  }
  if (self == 0) {
    reduce(rd, x[0], x[1], dst);
    for (size_t k = 2; k < n; ++k) reduce(rd, dst, x[k], dst);
    return;
  }
  Slice acc = x[0];  // scratch: may be clobbered
  for (int k = 1; k < self; ++k) reduce(rd, acc, x[k], acc);
  reduce(rd, acc, x[self], dst);
  for (size_t k = self + 1; k < n; ++k) reduce(rd, dst, x[k], dst);
}

size_t ringAllGather(Schedule& s, size_t t0, std::span<const int> group, int pos, int shift,
                     const std::function<Slice(int)>& blockSlice) {
  int g = static_cast<int>(group.size());
  int next = group[(pos + 1) % g], prev = group[(pos + g - 1) % g];
  for (int st = 0; st < g - 1; ++st) {
    Round& rd = at(s, t0 + st);
    send(rd, next, blockSlice(((pos + shift - st) % g + g) % g));
    recv(rd, prev, blockSlice(((pos + shift - st - 1) % g + 2 * g) % g));
  }
  return t0 + (g > 1 ? g - 1 : 0);
}

size_t ringReduceScatter(Schedule& s, size_t t0, const Ctx& c, std::span<const int> group, int pos,
                         size_t off, size_t cnt, Buf src) {
  int g = static_cast<int>(group.size());
  int next = group[(pos + 1) % g], prev = group[(pos + g - 1) % g];
  auto blk = [&](int k) {
    Range b = c.block(cnt, g, k);
    b.offset += off;
    return b;
  };
  for (int st = 0; st < g - 1; ++st) {
    Round& rd = at(s, t0 + st);
    Range sb = blk(((pos - st) % g + g) % g);
    send(rd, next, st == 0 ? c.sl(src, sb.offset, sb.count) : c.out(sb));
    Range rb = blk(((pos - st - 1) % g + 2 * g) % g);
    recvReduce(rd, prev, c.sl(src, rb.offset, rb.count), c.out(rb));
  }
  return t0 + (g > 1 ? g - 1 : 0);
}

size_t detReduceToOwners(Schedule& s, size_t t0, const Ctx& c,
                         const std::function<Range(int)>& blocks, Slice dst, size_t scratchOffset) {
  Range mine = blocks(c.r);
  size_t slot = mine.count * c.es;
  std::vector<Slice> x(c.n);
  Round& ex = at(s, t0);
  for (int k = 0; k < c.n; ++k) {
    if (k == c.r) {
      x[k] = c.in(mine);
      continue;
    }
    x[k] = Slice{Buf::kScratch, scratchOffset + k * slot, slot};
    send(ex, k, c.in(blocks(k)));
    recv(ex, k, x[k]);
  }
  needScratch(s, scratchOffset + c.n * slot);
  rankOrderReduce(at(s, t0 + 1), x, c.r, dst);
  return t0 + 1;
}

Schedule detAllReduce(const CollArgs& a, const char* name) {
  Schedule s = start(a, name);
  Ctx c(a);
  if (singleRankCopy(s, c, a.count)) return s;
  auto blocks = [&](int j) { return c.block(a.count, c.n, j); };
  size_t t = detReduceToOwners(s, 0, c, blocks, c.out(blocks(c.r)), 0);
  std::vector<int> ring = patterns::ringOrderOrIdentity(a.ringOrder, c.n);
  int pos = static_cast<int>(std::find(ring.begin(), ring.end(), c.r) - ring.begin());
  ringAllGather(s, t, ring, pos, 0, [&](int k) { return c.out(blocks(ring[k])); });
  trim(s);
  return s;
}

namespace {
std::vector<Range> blocksFrom(const CollArgs& a, const std::vector<size_t>& counts,
                              const std::vector<size_t>& displs, const char* what) {
  const size_t n = static_cast<size_t>(a.nranks);
  std::vector<Range> out(n);
  if (counts.empty() && displs.empty()) {
    for (size_t r = 0; r < n; ++r) out[r] = Range{r * a.count, a.count};
    return out;
  }
  TUTTI_CHECK_ARG(counts.size() == n && displs.size() == n, collName(a.coll), ": ", what, " have ",
                  counts.size(), " and ", displs.size(), " entries for ", n, " ranks");
  for (size_t r = 0; r < n; ++r) out[r] = Range{counts[r] ? displs[r] : 0, counts[r]};
  return out;
}
}  // namespace

std::vector<Range> unevenBlocks(const CollArgs& a) {
  return blocksFrom(a, a.counts, a.displs, "counts and displs");
}

std::vector<Range> unevenSendBlocks(const CollArgs& a) {
  return blocksFrom(a, a.sendCounts, a.sendDispls, "sendCounts and sendDispls");
}

bool singleRankCopy(Schedule& s, const Ctx& c, size_t count) {
  if (c.n != 1) return false;
  copy(at(s, 0), c.in(0, count), c.out(0, count));
  trim(s);
  return true;
}

Schedule detReduceScatter(const CollArgs& a, const char* name) {
  Schedule s = start(a, name);
  Ctx c(a);
  if (singleRankCopy(s, c, a.count)) return s;
  detReduceToOwners(
      s, 0, c,
      [&](int j) {
        return Range{j * a.count, a.count};
      },
      c.out(0, a.count), 0);
  trim(s);
  return s;
}

Schedule detReduce(const CollArgs& a, const char* name) {
  Schedule s = start(a, name);
  Ctx c(a);
  if (singleRankCopy(s, c, a.count)) return s;
  auto blocks = [&](int j) { return c.block(a.count, c.n, j); };
  Range mine = blocks(c.r);
  bool root = c.r == a.root;
  // Non-roots reduce into their own (unused) contribution slot of the scratch.
  Slice dst = root ? c.out(mine) : Slice{Buf::kScratch, c.r * mine.count * c.es, mine.count * c.es};
  size_t t = detReduceToOwners(s, 0, c, blocks, dst, 0);
  Round& rd = at(s, t);
  if (root) {
    for (int k = 0; k < c.n; ++k)
      if (k != c.r) recv(rd, k, c.out(blocks(k)));
  } else {
    send(rd, a.root, dst);
  }
  trim(s);
  return s;
}

std::vector<int> hostsOf(const CollArgs& a) {
  if (a.hostOf.empty()) return std::vector<int>(a.nranks, 0);
  return a.hostOf;
}

int numHosts(const CollArgs& a) {
  std::vector<int> h = hostsOf(a);
  std::sort(h.begin(), h.end());
  return static_cast<int>(std::unique(h.begin(), h.end()) - h.begin());
}

std::vector<std::vector<int>> hostGroups(const CollArgs& a) {
  std::vector<int> hostOf = hostsOf(a);
  int n = a.nranks;
  std::vector<std::vector<int>> groups;
  std::map<int, size_t> index;  // host -> its group
  auto add = [&](int r) {
    auto [it, fresh] = index.emplace(hostOf[r], groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(r);
  };
  if (a.ringOrder.empty()) {
    std::map<int, std::vector<int>> byHost;
    for (int r = 0; r < n; ++r) byHost[hostOf[r]].push_back(r);
    for (auto& [h, ranks] : byHost) groups.push_back(std::move(ranks));
    return groups;
  }
  std::vector<int> order = patterns::ringOrderOrIdentity(a.ringOrder, n);
  int first = 0;
  for (int p = 0; p < n; ++p)
    if (hostOf[order[p]] != hostOf[order[(p + n - 1) % n]]) {
      first = p;
      break;
    }
  for (int k = 0; k < n; ++k) add(order[(first + k) % n]);
  return groups;
}

std::vector<int> HostGrid::rail(int p) const {
  std::vector<int> r(hosts);
  for (int g = 0; g < hosts; ++g) r[g] = groups[g][p];
  return r;
}

std::vector<std::pair<int, int>> consecutiveRuns(std::span<const int> ranks) {
  std::vector<std::pair<int, int>> runs;
  int n = static_cast<int>(ranks.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && ranks[i] == ranks[i - 1] + 1)
      runs.back().second = i + 1;
    else
      runs.emplace_back(i, i + 1);
  }
  return runs;
}

bool gridHosts(const CollArgs& a) {
  if (static_cast<int>(a.hostOf.size()) != a.nranks || numHosts(a) < 2) return false;
  std::map<int, int> size;
  for (int h : a.hostOf) ++size[h];
  for (auto& [h, k] : size)
    if (k != size.begin()->second) return false;
  return true;
}

HostGrid hostGrid(const CollArgs& a) {
  TUTTI_CHECK_ARG(gridHosts(a), collName(a.coll),
                  ": the hierarchical algorithm needs ranks on more than one host, equally "
                  "many on each");
  HostGrid grid;
  grid.groups = hostGroups(a);
  grid.hosts = static_cast<int>(grid.groups.size());
  grid.perHost = static_cast<int>(grid.groups[0].size());
  for (int g = 0; g < grid.hosts; ++g)
    for (int p = 0; p < grid.perHost; ++p)
      if (grid.groups[g][p] == a.rank) {
        grid.host = g;
        grid.local = p;
      }
  return grid;
}

}  // namespace tutti::algo::detail
