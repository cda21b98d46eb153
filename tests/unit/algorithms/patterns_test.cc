// Exhaustive checks of the rank math for n = 1..64.
#include "algorithms/patterns/patterns.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "common/error.h"

namespace tutti::algo::patterns {
namespace {

std::vector<int> shuffled(int n, int seed) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(o[i], o[(i * 7 + seed * 13 + 5) % (i + 1)]);
  return o;
}

// Every non-root has exactly one parent, parent/children agree, all reach the root.
void expectTree(const Tree& t, int n, const char* what) {
  ASSERT_EQ(static_cast<int>(t.nodes.size()), n) << what;
  int roots = 0;
  std::vector<int> childCount(n, 0);
  for (int r = 0; r < n; ++r) {
    if (t.nodes[r].parent < 0) {
      ++roots;
      EXPECT_EQ(t.root, r) << what << " n=" << n;
    } else {
      ASSERT_LT(t.nodes[r].parent, n);
      const auto& ch = t.nodes[t.nodes[r].parent].children;
      EXPECT_EQ(std::count(ch.begin(), ch.end(), r), 1) << what << " n=" << n << " r=" << r;
    }
    for (int c : t.nodes[r].children) {
      ASSERT_GE(c, 0);
      ASSERT_LT(c, n);
      EXPECT_EQ(t.nodes[c].parent, r) << what << " n=" << n;
      ++childCount[c];
    }
    // No cycles: walking up reaches the root in < n steps.
    int steps = 0;
    for (int x = r; t.nodes[x].parent >= 0 && steps <= n; x = t.nodes[x].parent) ++steps;
    EXPECT_LT(steps, n) << what << " n=" << n << " r=" << r << " cycles";
  }
  EXPECT_EQ(roots, 1) << what << " n=" << n;
  for (int r = 0; r < n; ++r) EXPECT_EQ(childCount[r], r == t.root ? 0 : 1) << what;
}

TEST(Patterns, RingNeighboursAreInversePermutations) {
  for (int n = 1; n <= 64; ++n) {
    for (int seed = 0; seed < 3; ++seed) {
      std::vector<int> order = seed == 0 ? std::vector<int>{} : shuffled(n, seed);
      std::vector<int> next(n), prev(n), idx(n);
      for (int r = 0; r < n; ++r) {
        RingPos p = ringNeighbors(order, n, r);
        next[r] = p.next;
        prev[r] = p.prev;
        idx[r] = p.index;
      }
      std::set<int> indices(idx.begin(), idx.end());
      EXPECT_EQ(static_cast<int>(indices.size()), n);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(prev[next[r]], r) << "n=" << n;
        EXPECT_EQ(next[prev[r]], r) << "n=" << n;
        if (!order.empty()) {
          EXPECT_EQ(order[idx[r]], r);
        }
      }
      // next is one cycle through all ranks.
      int x = 0, len = 0;
      do {
        x = next[x];
        ++len;
      } while (x != 0 && len <= n);
      EXPECT_EQ(len, n);
    }
  }
}

TEST(Patterns, RingRejectsBadOrders) {
  EXPECT_THROW(ringNeighbors(std::vector<int>{0, 0, 1}, 3, 0), Error);
  EXPECT_THROW(ringNeighbors(std::vector<int>{0, 1}, 3, 0), Error);
  EXPECT_THROW(ringNeighbors(std::vector<int>{0, 1, 3}, 3, 0), Error);
  EXPECT_THROW(ringNeighbors({}, 3, 3), Error);
}

TEST(Patterns, TreesAreTrees) {
  for (int n = 1; n <= 64; ++n) {
    expectTree(binaryTree(n), n, "binary");
    expectTree(inorderBinaryTree(n), n, "inorder");
    Tree bt = binaryTree(n);
    for (const auto& nd : bt.nodes) EXPECT_LE(nd.children.size(), 2u);
    EXPECT_LE(bt.maxDepth(), log2Floor(n) + 1);
    for (int root = 0; root < n; ++root) {
      Tree b = binomialTree(n, root);
      expectTree(b, n, "binomial");
      EXPECT_EQ(b.root, root);
      EXPECT_LE(b.maxDepth(), log2Floor(n) + 1);
    }
  }
}

TEST(Patterns, DoubleBinaryTreeHasEveryRankInteriorInAtMostOne) {
  for (int n = 1; n <= 64; ++n) {
    DoubleTree dt = doubleBinaryTree(n);
    expectTree(dt.t[0], n, "dbtree0");
    expectTree(dt.t[1], n, "dbtree1");
    for (int r = 0; r < n; ++r) {
      bool in0 = !dt.t[0].nodes[r].children.empty();
      bool in1 = !dt.t[1].nodes[r].children.empty();
      EXPECT_FALSE(in0 && in1) << "n=" << n << " rank " << r << " interior in both trees";
      EXPECT_LE(dt.t[0].nodes[r].children.size(), 2u);
      EXPECT_LE(dt.t[1].nodes[r].children.size(), 2u);
    }
    // Depth stays logarithmic.
    EXPECT_LE(dt.t[0].maxDepth(), log2Floor(n) + 2) << n;
    EXPECT_LE(dt.t[1].maxDepth(), log2Floor(n) + 2) << n;
  }
}

TEST(Patterns, RelabelMapsPositionsToRanks) {
  for (int n = 1; n <= 64; ++n) {
    std::vector<int> order = shuffled(n, n);
    std::vector<int> pos = ringPositions(order, n);
    EXPECT_EQ(ringPositions({}, n)[n - 1], n - 1);
    for (const Tree& t : {binaryTree(n), doubleBinaryTree(n).t[1], binomialTree(n, n / 3)}) {
      Tree u = relabel(t, order);
      expectTree(u, n, "relabelled");
      EXPECT_EQ(u.root, order[t.root]);
      EXPECT_EQ(u.maxDepth(), t.maxDepth());
      for (int p = 0; p < n; ++p) {
        EXPECT_EQ(pos[order[p]], p);
        const TreeNode& a = t.nodes[p];
        const TreeNode& b = u.nodes[order[p]];
        EXPECT_EQ(b.parent, a.parent < 0 ? -1 : order[a.parent]) << "n=" << n << " p=" << p;
        ASSERT_EQ(b.children.size(), a.children.size());
        for (size_t k = 0; k < a.children.size(); ++k)
          EXPECT_EQ(b.children[k], order[a.children[k]]);
        EXPECT_EQ(u.depthOf(order[p]), t.depthOf(p));
      }
      // Empty order: unchanged.
      Tree same = relabel(t, {});
      for (int p = 0; p < n; ++p) EXPECT_EQ(same.nodes[p].parent, t.nodes[p].parent);
    }
  }
  std::vector<int> bad = {0, 2, 2};
  EXPECT_THROW(relabel(binaryTree(3), bad), Error);
  std::vector<int> shortOrder = {1, 0};
  EXPECT_THROW(relabel(binaryTree(3), shortOrder), Error);
}

TEST(Patterns, FoldAndButterflyPartners) {
  for (int n = 1; n <= 64; ++n) {
    int p = largestPow2AtMost(n);
    EXPECT_TRUE(isPow2(p));
    EXPECT_LE(p, n);
    EXPECT_GT(2 * p, n);
    int extras = 0;
    for (int r = 0; r < n; ++r) {
      Fold f = foldPow2(n, r);
      EXPECT_EQ(f.pof2, p);
      if (f.extra) {
        ++extras;
        ASSERT_GE(f.partner, 0);
        Fold g = foldPow2(n, f.partner);
        EXPECT_FALSE(g.extra);
        EXPECT_EQ(g.partner, r);
      } else if (f.partner >= 0) {
        EXPECT_EQ(foldPow2(n, f.partner).partner, r);
      }
    }
    EXPECT_EQ(extras, n - p);
    for (int k = 0; (1 << k) < p; ++k) {
      std::set<int> seen;
      for (int v = 0; v < p; ++v) {
        int q = rdPartner(v, k);
        EXPECT_NE(q, v);
        EXPECT_LT(q, p);
        EXPECT_EQ(rdPartner(q, k), v);  // involution
        seen.insert(q);
      }
      EXPECT_EQ(static_cast<int>(seen.size()), p);
    }
  }
}

TEST(Patterns, BlocksCoverExactly) {
  for (size_t es : {1, 2, 4, 8, 3}) {
    for (size_t total : {0, 1, 3, 7, 15, 16, 17, 63, 64, 100, 1000, 4099, 65537}) {
      for (size_t nb = 1; nb <= 64; ++nb) {
        size_t next = 0, minC = SIZE_MAX, maxC = 0;
        for (size_t i = 0; i < nb; ++i) {
          Range r = blockRange(total, nb, i, es);
          ASSERT_EQ(r.offset, next) << "total " << total << " nb " << nb << " i " << i;
          next = r.offset + r.count;
          minC = std::min(minC, r.count);
          maxC = std::max(maxC, r.count);
          size_t unit = 16 % es == 0 ? 16 / es : 1;
          if (total >= nb * unit && 16 % es == 0) {
            EXPECT_EQ(r.offset * es % 16, 0u);
          }
        }
        EXPECT_EQ(next, total);
        size_t unit = (16 % es == 0 && total >= nb * (16 / es)) ? 16 / es : 1;
        EXPECT_LE(maxC - minC, 2 * unit) << "total " << total << " nb " << nb << " es " << es;
      }
    }
  }
  EXPECT_EQ(numChunks(0, 512, 64), 1u);
  EXPECT_EQ(numChunks(1025, 512, 64), 3u);
  EXPECT_EQ(numChunks(1 << 30, 512, 64), 64u);
}

}  // namespace
}  // namespace tutti::algo::patterns
