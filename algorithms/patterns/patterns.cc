#include "algorithms/patterns/patterns.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"

namespace tutti::algo::patterns {

std::vector<int> ringOrderOrIdentity(std::span<const int> order, int n) {
  TUTTI_CHECK_ARG(n >= 1, "ring order: nranks ", n, " must be >= 1");
  std::vector<int> out(order.begin(), order.end());
  if (out.empty()) {
    out.resize(n);
    for (int i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  TUTTI_CHECK_ARG(static_cast<int>(out.size()) == n, "ring order has ", out.size(), " entries for ",
                  n, " ranks");
  std::vector<char> seen(n, 0);
  for (int r : out) {
    TUTTI_CHECK_ARG(r >= 0 && r < n && !seen[r], "ring order is not a permutation of 0..", n - 1,
                    " (bad or repeated entry ", r, ")");
    seen[r] = 1;
  }
  return out;
}

RingPos ringNeighbors(std::span<const int> order, int n, int rank) {
  TUTTI_CHECK_ARG(rank >= 0 && rank < n, "ring: rank ", rank, " out of range for ", n, " ranks");
  std::vector<int> o = ringOrderOrIdentity(order, n);
  int idx = static_cast<int>(std::find(o.begin(), o.end(), rank) - o.begin());
  return RingPos{idx, o[(idx + n - 1) % n], o[(idx + 1) % n]};
}

int Tree::depthOf(int rank) const {
  int d = 0;
  for (int r = rank; nodes[r].parent >= 0; r = nodes[r].parent) ++d;
  return d;
}

int Tree::maxDepth() const {
  int d = 0;
  for (int r = 0; r < static_cast<int>(nodes.size()); ++r) d = std::max(d, depthOf(r));
  return d;
}

namespace {
Tree fromParents(const std::vector<int>& parent) {
  Tree t;
  int n = static_cast<int>(parent.size());
  t.nodes.resize(n);
  for (int r = 0; r < n; ++r) {
    t.nodes[r].parent = parent[r];
    if (parent[r] < 0) t.root = r;
  }
  for (int r = 0; r < n; ++r)
    if (parent[r] >= 0) t.nodes[parent[r]].children.push_back(r);
  return t;
}

// The position in [lo, hi) (1 <= lo < hi) with the most trailing zero bits (unique).
int mostAligned(int lo, int hi) {
  for (int k = 30; k > 0; --k) {
    long long step = 1LL << k;
    long long m = (lo + step - 1) / step * step;
    if (m < hi) return static_cast<int>(m);
  }
  return lo;
}

// Parent of rank r in NCCL's in-order binary tree over n ranks (root 0).
int inorderParent(int n, int r) {
  if (r == 0) return -1;
  int bit = r & -r;
  int up = (r ^ bit) | (bit << 1);
  if (up >= n) up = r ^ bit;
  return up;
}
}  // namespace

Tree binaryTree(int n) {
  TUTTI_CHECK_ARG(n >= 1, "binary tree: nranks ", n, " must be >= 1");
  std::vector<int> parent(n, -1);
  // Segments still to split: node x owns [x, e).
  std::vector<std::pair<int, int>> todo = {{0, n}};
  while (!todo.empty()) {
    auto [x, e] = todo.back();
    todo.pop_back();
    int lo = x + 1;
    if (lo >= e) continue;
    int s = mostAligned(lo, e);
    parent[lo] = x;
    if (s == lo) {
      todo.push_back({lo, e});
    } else {
      parent[s] = x;
      todo.push_back({lo, s});
      todo.push_back({s, e});
    }
  }
  return fromParents(parent);
}

Tree inorderBinaryTree(int n) {
  TUTTI_CHECK_ARG(n >= 1, "binary tree: nranks ", n, " must be >= 1");
  std::vector<int> parent(n);
  for (int r = 0; r < n; ++r) parent[r] = inorderParent(n, r);
  return fromParents(parent);
}

DoubleTree doubleBinaryTree(int n) {
  TUTTI_CHECK_ARG(n >= 1, "double binary tree: nranks ", n, " must be >= 1");
  DoubleTree dt;
  dt.t[0] = inorderBinaryTree(n);
  std::vector<int> parent(n, -1);
  if (n % 2 == 0) {
    // Mirror: rank r takes the place of n-1-r, so the interior ranks become the odd ones.
    for (int r = 0; r < n; ++r) {
      int p = inorderParent(n, n - 1 - r);
      parent[r] = p < 0 ? -1 : n - 1 - p;
    }
  } else if (n > 1) {
    // Odd n: an in-order tree over ranks 1..n-1 (position q = rank - 1; its interior
    // positions are even, i.e. odd ranks), and rank 0 as the second child of its root.
    int m = n - 1;
    for (int r = 1; r < n; ++r) {
      int p = inorderParent(m, r - 1);
      parent[r] = p < 0 ? -1 : p + 1;
    }
    parent[0] = 1;
  }
  dt.t[1] = fromParents(parent);
  return dt;
}

Tree binomialTree(int n, int root) {
  TUTTI_CHECK_ARG(n >= 1 && root >= 0 && root < n, "binomial tree: bad root ", root, " for ", n,
                  " ranks");
  std::vector<int> parent(n, -1);
  // Children per node with their subtree sizes, in the order they are found (larger blocks
  // first), sorted by size below.
  std::vector<std::vector<std::pair<int, int>>> kids(n);
  struct Part {
    int lo, hi, root;
  };
  std::vector<Part> todo = {{0, n, root}};
  while (!todo.empty()) {
    Part p = todo.back();
    todo.pop_back();
    while (p.hi - p.lo > 1) {
      int h = 1;
      while (2 * h < p.hi - p.lo) h *= 2;
      int mid = p.lo + h;
      bool left = p.root < mid;
      Part other = left ? Part{mid, p.hi, mid} : Part{p.lo, mid, p.lo};
      parent[other.root] = p.root;
      kids[p.root].push_back({other.hi - other.lo, other.root});
      todo.push_back(other);
      if (left)
        p.hi = mid;
      else
        p.lo = mid;
    }
  }
  Tree t;
  t.root = root;
  t.nodes.resize(n);
  for (int v = 0; v < n; ++v) {
    std::stable_sort(kids[v].begin(), kids[v].end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    t.nodes[v].parent = parent[v];
    for (const auto& k : kids[v]) t.nodes[v].children.push_back(k.second);
  }
  return t;
}

std::vector<int> broadcastSteps(const Tree& t) {
  std::vector<int> step(t.nodes.size(), -1);
  std::vector<int> todo = {t.root};
  while (!todo.empty()) {
    int v = todo.back();
    todo.pop_back();
    const auto& ch = t.nodes[v].children;
    for (size_t i = 0; i < ch.size(); ++i) {
      step[ch[i]] = step[v] + 1 + static_cast<int>(i);
      todo.push_back(ch[i]);
    }
  }
  return step;
}

Tree relabel(const Tree& t, std::span<const int> order) {
  int n = static_cast<int>(t.nodes.size());
  if (order.empty()) return t;
  std::vector<int> o = ringOrderOrIdentity(order, n);
  Tree out;
  out.root = o[t.root];
  out.nodes.resize(n);
  for (int p = 0; p < n; ++p) {
    TreeNode& nd = out.nodes[o[p]];
    nd.parent = t.nodes[p].parent < 0 ? -1 : o[t.nodes[p].parent];
    nd.children.reserve(t.nodes[p].children.size());
    for (int c : t.nodes[p].children) nd.children.push_back(o[c]);
  }
  return out;
}

std::vector<int> ringPositions(std::span<const int> order, int n) {
  std::vector<int> o = ringOrderOrIdentity(order, n);
  std::vector<int> pos(n);
  for (int p = 0; p < n; ++p) pos[o[p]] = p;
  return pos;
}

Tree allReduceTreeFor(std::span<const int> order, int n) { return relabel(binaryTree(n), order); }

DoubleTree dbtreeFor(std::span<const int> order, int n) {
  DoubleTree dt = doubleBinaryTree(n);
  for (Tree& t : dt.t) t = relabel(t, order);
  return dt;
}

Tree binomialFor(std::span<const int> order, int n, int root) {
  TUTTI_CHECK_ARG(root >= 0 && root < n, "binomial tree: bad root ", root, " for ", n, " ranks");
  std::vector<int> pos = ringPositions(order, n);
  return relabel(binomialTree(n, pos[root]), order);
}

std::vector<NamedTree> treesForOrder(std::span<const int> order, int n) {
  DoubleTree dt = dbtreeFor(order, n);
  return {{"tree", allReduceTreeFor(order, n)},
          {"dbtree[0]", dt.t[0]},
          {"dbtree[1]", dt.t[1]},
          {"binomial(root 0)", binomialFor(order, n, 0)}};
}

std::string treeLine(const NamedTree& t) {
  std::string s = t.name + ": root " + std::to_string(t.tree.root) + ", depth " +
                  std::to_string(t.tree.maxDepth()) + ", rank->parent";
  for (size_t r = 0; r < t.tree.nodes.size(); ++r)
    s += " " + std::to_string(r) + "->" + std::to_string(t.tree.nodes[r].parent);
  return s;
}

bool isPow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

int largestPow2AtMost(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int log2Floor(int n) {
  int l = 0;
  while ((1 << (l + 1)) <= n) ++l;
  return l;
}

Fold foldPow2(int n, int rank) {
  TUTTI_CHECK_ARG(n >= 1 && rank >= 0 && rank < n, "fold: rank ", rank, " out of range for ", n,
                  " ranks");
  Fold f;
  f.pof2 = largestPow2AtMost(n);
  f.rem = n - f.pof2;
  if (rank >= f.pof2) {
    f.extra = true;
    f.partner = rank - f.pof2;
  } else if (rank < f.rem) {
    f.partner = rank + f.pof2;
  }
  return f;
}

Range blockRange(size_t totalElems, size_t nblocks, size_t i, size_t elemSize) {
  TUTTI_CHECK_ARG(nblocks >= 1 && i < nblocks, "blockRange: block ", i, " of ", nblocks);
  size_t unit = (elemSize > 0 && elemSize <= 16 && 16 % elemSize == 0) ? 16 / elemSize : 1;
  if (totalElems < nblocks * unit) unit = 1;
  size_t units = totalElems / unit;
  size_t tail = totalElems - units * unit;
  size_t base = units / nblocks, extra = units % nblocks;
  size_t first = i * base + std::min(i, extra);
  size_t mine = base + (i < extra ? 1 : 0);
  Range r{first * unit, mine * unit};
  if (i == nblocks - 1) r.count += tail;
  return r;
}

size_t numChunks(size_t bytes, size_t chunkBytes, size_t maxChunks) {
  size_t c = chunkBytes ? (bytes + chunkBytes - 1) / chunkBytes : 1;
  return std::clamp<size_t>(c, 1, std::max<size_t>(maxChunks, 1));
}

}  // namespace tutti::algo::patterns
